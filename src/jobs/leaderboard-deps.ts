import type { JobDeps } from './types.js';

/** What the leaderboard services need from a job run: the database, logging, publishing, the clock and the process's one Data API client (its limiter is shared with on-demand profiles). */
export function leaderboardDeps(deps: JobDeps) {
  return {
    dbh: deps.dbh,
    log: deps.log,
    publish: deps.publish,
    clock: deps.clock,
    api: deps.venues.data,
  };
}
