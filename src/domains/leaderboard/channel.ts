/** The monitor channel the leaderboard publishes on after a sync or an enrichment (docs/decisions.md §8). */
export const LEADERBOARD_CHANNEL = 'monitor:leaderboard';
