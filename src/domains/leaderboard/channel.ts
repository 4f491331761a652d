/** The monitor channel the leaderboard publishes on after a sync or an enrichment (decisions.md §8). */
export const LEADERBOARD_CHANNEL = 'monitor:leaderboard';
