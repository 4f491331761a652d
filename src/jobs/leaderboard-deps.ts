import type { JobDefinition, JobDeps } from './types.js';

/** What the leaderboard services need from a job run: the database, logging, publishing, the clock and the process's one Data API client (its limiter is shared with on-demand profiles). */
export function leaderboardDeps(deps: JobDeps) {
  return {
    dbh: deps.dbh,
    log: deps.log,
    publish: deps.publish,
    clock: deps.clock,
    api: deps.venues.data,
    signal: deps.signal,
  };
}

/**
 * A leaderboard job: runs `work` with the leaderboard deps and, even when it
 * fails part-way, tells the read caches that the boards changed, so batches
 * written before a failure are served at once too.
 */
export function leaderboardJob(
  name: string,
  schedule: string,
  work: (deps: ReturnType<typeof leaderboardDeps>) => Promise<{ items: number; skipped?: number }>,
): JobDefinition {
  return {
    name,
    schedule,
    async run(deps) {
      try {
        const { items, skipped } = await work(leaderboardDeps(deps));
        return { items, skipped };
      } finally {
        deps.dataChanged('leaderboard');
      }
    },
  };
}
