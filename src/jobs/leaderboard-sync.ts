import { syncLeaderboards } from '../domains/leaderboard/sync.js';
import { leaderboardJob } from './leaderboard-deps.js';

/** docs/decisions.md §9: Polymarket leaderboard → one snapshot per (category, period), every 10 minutes. */
export const leaderboardSyncJob = leaderboardJob('leaderboard-sync', '*/10 * * * *', syncLeaderboards);
