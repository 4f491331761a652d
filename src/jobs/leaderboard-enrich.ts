import { enrichLeaderboard } from '../domains/leaderboard/enrich.js';
import { leaderboardJob } from './leaderboard-deps.js';

/** docs/decisions.md §9: figures of ranked traders from their positions and trades, every 30 minutes. */
export const leaderboardEnrichJob = leaderboardJob('leaderboard-enrich', '*/30 * * * *', enrichLeaderboard);
