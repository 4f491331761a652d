import { syncLeaderboards } from '../domains/leaderboard/sync.js';
import type { JobDefinition } from './types.js';
import { leaderboardDeps } from './leaderboard-deps.js';

/** docs/decisions.md §9: Polymarket leaderboard → one snapshot per (category, period), every 10 minutes. */
export const leaderboardSyncJob: JobDefinition = {
  name: 'leaderboard-sync',
  schedule: '*/10 * * * *',
  async run(deps) {
    try {
      const { items } = await syncLeaderboards(leaderboardDeps(deps));
      return { items };
    } finally {
      // Boards that switched before a failure are served at once too.
      deps.dataChanged('leaderboard');
    }
  },
};
