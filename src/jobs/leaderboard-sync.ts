import { syncLeaderboards } from '../domains/leaderboard/sync.js';
import type { JobDefinition } from './types.js';

/** decisions.md §9: Polymarket leaderboard → one snapshot per (category, period), every 10 minutes. */
export const leaderboardSyncJob: JobDefinition = {
  name: 'leaderboard-sync',
  schedule: '*/10 * * * *',
  async run(deps) {
    const { items } = await syncLeaderboards({
      dbh: deps.dbh,
      log: deps.log,
      publish: deps.publish,
      clock: deps.clock,
      api: { baseUrl: deps.config.POLYMARKET_DATA_API_URL },
    });
    return { items };
  },
};
