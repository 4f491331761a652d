import { enrichLeaderboard } from '../domains/leaderboard/enrich.js';
import type { JobDefinition } from './types.js';
import { leaderboardDeps } from './leaderboard-deps.js';

/** docs/decisions.md §9: figures of ranked traders from their positions and trades, every 30 minutes. */
export const leaderboardEnrichJob: JobDefinition = {
  name: 'leaderboard-enrich',
  schedule: '*/30 * * * *',
  async run(deps) {
    try {
      const { items } = await enrichLeaderboard(leaderboardDeps(deps));
      return { items };
    } finally {
      // Batches written before a failure are served at once too.
      deps.dataChanged('leaderboard');
    }
  },
};
