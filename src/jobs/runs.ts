import { and, desc, eq, max } from 'drizzle-orm';
import { jobRuns } from '../../drizzle/index.js';
import type { Db } from '../db/index.js';
import type { JobOutcome } from './types.js';

/** The last run of each named job, as GET /internal/jobs answers it. */
export async function lastRuns(db: Db, names: string[]): Promise<JobOutcome[]> {
  const out: JobOutcome[] = [];
  for (const name of names) {
    const [r] = await db.select().from(jobRuns).where(eq(jobRuns.name, name)).orderBy(desc(jobRuns.startedAt)).limit(1);
    if (!r) continue;
    out.push({
      name: r.name,
      ok: r.ok ?? false,
      startedAt: r.startedAt.toISOString(),
      finishedAt: (r.finishedAt ?? r.startedAt).toISOString(),
      items: r.items,
      ...(r.error ? { error: r.error } : r.finishedAt ? {} : { error: 'running' }),
    });
  }
  return out;
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
