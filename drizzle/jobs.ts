import { bigserial, boolean, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** One row per job run, kept 14 days; the internal jobs endpoints (docs/decisions.md §9, §15.2) read it. */
export const jobRuns = pgTable(
  'job_runs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    name: text('name').notNull(),
    instanceId: text('instance_id').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    ok: boolean('ok'),
    items: integer('items').notNull().default(0),
    /** Venue rows the run skipped as malformed (docs/decisions.md §9, docs/venues.md "What we call"): > 0 on an ok run = degraded. */
    skipped: integer('skipped').notNull().default(0),
    error: text('error'),
  },
  (t) => [index('job_runs_name_started_idx').on(t.name, t.startedAt.desc())],
);
