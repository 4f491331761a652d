import { and, desc, eq, max, sql } from 'drizzle-orm';
import { jobRuns } from '../../drizzle/index.js';
import { lockKey, type Db, type DbHandle } from '../db/index.js';
import type { JobRun, JobStatus } from './types.js';

/** The advisory lock a job's runs hold (docs/decisions.md §9): one instance runs a job at a time. */
export function jobLockKey(name: string): bigint {
  return lockKey(`job:${name}`);
}

const iso = (v: unknown): string | undefined => (v == null ? undefined : new Date(v as string | Date).toISOString());

interface StatusRow {
  name: string;
  started_at: unknown;
  finished_at: unknown;
  ok: boolean | null;
  items: number | null;
  skipped: number | null;
  error: string | null;
  last_success_at: unknown;
  running_since: unknown;
}

/**
 * docs/decisions.md §9, §15.2: per job, its last finished run, when it last
 * succeeded, when its schedule fires next on this instance and whether a run
 * is in progress on any instance. `running` is whether the job's advisory
 * lock is held right now (a run row without `finishedAt` may be one a dead
 * instance left); `runningSince` is then the start of the newest run, when
 * it is unfinished.
 * One statement for the runs: each lateral read is a short backward walk of
 * the (name, started_at) index.
 */
export async function jobStatuses(
  dbh: DbHandle,
  jobs: Array<{ name: string; schedule: string; nextRunAt: Date | null }>,
): Promise<JobStatus[]> {
  if (jobs.length === 0) return [];
  const names = sql.join(
    jobs.map((j) => sql`(${j.name})`),
    sql`, `,
  );
  const [found, held] = await Promise.all([
    dbh.rows<StatusRow>(sql`
      select n.name, l.started_at, l.finished_at, l.ok, l.items, l.skipped, l.error,
        s.finished_at as last_success_at, case when r.finished_at is null then r.started_at end as running_since
      from (values ${names}) as n(name)
      left join lateral (
        select started_at, finished_at, ok, items, skipped, error from job_runs j
        where j.name = n.name and j.finished_at is not null order by j.started_at desc limit 1
      ) l on true
      left join lateral (
        select finished_at from job_runs j where j.name = n.name and j.ok order by j.started_at desc limit 1
      ) s on true
      left join lateral (
        select started_at, finished_at from job_runs j where j.name = n.name order by j.started_at desc limit 1
      ) r on true`),
    dbh.advisoryLocksHeld(jobs.map((j) => jobLockKey(j.name))),
  ]);
  const byName = new Map(found.map((r) => [r.name, r]));
  return jobs.map((job) => {
    const r = byName.get(job.name);
    const running = held.has(jobLockKey(job.name));
    const status: JobStatus = {
      name: job.name,
      schedule: job.schedule,
      running,
      nextRunAt: job.nextRunAt?.toISOString() ?? null,
      lastSuccessAt: iso(r?.last_success_at) ?? null,
    };
    if (running && r?.running_since) status.runningSince = iso(r.running_since);
    if (r?.started_at) {
      Object.assign(status, {
        ok: r.ok ?? false,
        startedAt: iso(r.started_at),
        finishedAt: iso(r.finished_at),
        items: r.items ?? 0,
        ...(r.skipped ? { skipped: r.skipped } : {}),
        ...(r.error ? { error: r.error } : {}),
      });
    }
    return status;
  });
}

/**
 * docs/decisions.md §15.2: the newest `limit` runs of one job, newest first.
 * An unfinished run is `running` when it is the newest one and the job's lock
 * is held, otherwise `abandoned` (its instance stopped mid-run).
 */
export async function listJobRuns(dbh: DbHandle, name: string, limit: number): Promise<JobRun[]> {
  const [rows, held] = await Promise.all([
    dbh.db.select().from(jobRuns).where(eq(jobRuns.name, name)).orderBy(desc(jobRuns.startedAt), desc(jobRuns.id)).limit(limit),
    dbh.advisoryLocksHeld([jobLockKey(name)]),
  ]);
  // Runs never overlap, so only the newest run can be the one holding the lock.
  return rows.map((r, i) => {
    const state: JobRun['state'] = r.finishedAt ? (r.ok ? 'succeeded' : 'failed') : i === 0 && held.size > 0 ? 'running' : 'abandoned';
    return {
      id: r.id,
      name: r.name,
      instanceId: r.instanceId,
      state,
      startedAt: r.startedAt.toISOString(),
      finishedAt: r.finishedAt?.toISOString() ?? null,
      items: r.items,
      ...(r.skipped ? { skipped: r.skipped } : {}),
      ...(r.error ? { error: r.error } : {}),
    };
  });
}

/**
 * When the job last started a run that succeeded (undefined before the first):
 * the watermark a job hands to incremental domain work. The run in progress is
 * recorded with `ok` unset, so it never counts.
 */
export async function lastSuccessAt(db: Db, name: string): Promise<Date | undefined> {
  const [row] = await db
    .select({ at: max(jobRuns.startedAt) })
    .from(jobRuns)
    .where(and(eq(jobRuns.name, name), eq(jobRuns.ok, true)));
  return row?.at ? new Date(row.at) : undefined;
}
