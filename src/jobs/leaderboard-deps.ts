import type { JobDeps } from './types.js';

/** What the leaderboard services need from a job run: the database, logging, publishing, the clock and the Data API. */
export function leaderboardDeps(deps: JobDeps) {
  return {
    dbh: deps.dbh,
    log: deps.log,
    publish: deps.publish,
    clock: deps.clock,
    api: { baseUrl: deps.config.POLYMARKET_DATA_API_URL },
  };
}
