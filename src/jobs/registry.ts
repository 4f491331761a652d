import { checkPriceAlerts } from '../domains/alerts/service.js';
import type { JobDefinition, JobHooks } from './types.js';
import { eventsSyncJob } from './events-sync.js';
import { priceSyncJob } from './price-sync.js';
import { leaderboardEnrichJob } from './leaderboard-enrich.js';
import { leaderboardSyncJob } from './leaderboard-sync.js';
import { deliverySweepJob } from './delivery-sweep.js';
import { pushReceiptsJob } from './push-receipts.js';

/**
 * The cron table (docs/decisions.md §9): price-sync (60 s), events-sync (5 min),
 * leaderboard-sync (10 min), leaderboard-enrich (30 min), delivery-sweep (15 s),
 * push-receipts (5 min).
 */
export const jobDefinitions: JobDefinition[] = [
  eventsSyncJob,
  priceSyncJob,
  leaderboardSyncJob,
  leaderboardEnrichJob,
  deliverySweepJob,
  pushReceiptsJob,
];

/** Run by price-sync after each cycle with the prices that changed (the price-alert check). */
export const priceChangeHooks: JobHooks['onPricesChanged'] = [
  async (deps, changes) => {
    await checkPriceAlerts(deps, changes);
  },
];
