import { leaderboardEnrichJob } from './leaderboard-enrich.js';
import { leaderboardSyncJob } from './leaderboard-sync.js';
import type { JobDefinition } from './types.js';

/**
 * The cron table (decisions.md §9). Each domain adds its jobs here:
 * price-sync (60 s), events-sync (5 min), leaderboard-sync (10 min),
 * leaderboard-enrich (30 min).
 */
export const jobDefinitions: JobDefinition[] = [leaderboardSyncJob, leaderboardEnrichJob];
