import { pollFollowedTraders } from '../domains/follows/poll.js';
import { withPriorityShare } from '../venues/clients.js';
import type { JobDefinition } from './types.js';

/** docs/venues.md "What we call": the follow poller takes at most half of Data's budget while it has work, served first. */
export const FOLLOWS_DATA_SHARE = 0.5;

/**
 * docs/decisions.md §18.3, §18.5: every 60 s, followed traders' new fills
 * (most-followed first, each as often as its delay bound needs) fanned out
 * as `trader_trade` notifications.
 */
export const followsPollJob: JobDefinition = {
  name: 'follows-poll',
  schedule: '* * * * *',
  async run(deps) {
    const outcome = await pollFollowedTraders({
      ...deps,
      dbh: deps.dbh,
      data: withPriorityShare(deps.venues.data, 'follows-poll', FOLLOWS_DATA_SHARE),
    });
    return { items: outcome.read };
  },
};
