import type { JobDefinition } from './types.js';
import { eventsSyncJob } from './events-sync.js';
import { priceSyncJob } from './price-sync.js';
import { leaderboardEnrichJob } from './leaderboard-enrich.js';
import { leaderboardSyncJob } from './leaderboard-sync.js';
import { deliverySweepJob } from './delivery-sweep.js';
import { pushReceiptsJob } from './push-receipts.js';
import { streamPruneJob } from './stream-prune.js';
import { followsPollJob } from './follows-poll.js';
import { watchlistCheckJob } from './watchlist-check.js';

/**
 * The cron table (docs/decisions.md §9): price-sync (60 s), events-sync (5 min),
 * leaderboard-sync (10 min), leaderboard-enrich (30 min), delivery-sweep (15 s),
 * push-receipts (5 min), stream-prune (hourly), follows-poll (60 s), watchlist-check (60 s). Each job composes the domain functions it runs;
 * nothing else hooks into a job.
 */
export const jobDefinitions: JobDefinition[] = [
  eventsSyncJob,
  priceSyncJob,
  leaderboardSyncJob,
  leaderboardEnrichJob,
  deliverySweepJob,
  pushReceiptsJob,
  streamPruneJob,
  followsPollJob,
  watchlistCheckJob,
];
