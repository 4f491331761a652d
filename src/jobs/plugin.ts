import fp from 'fastify-plugin';
import cron, { type ScheduledTask } from 'node-cron';
import { eq, and, desc, isNull, lt, sql } from 'drizzle-orm';
import { AppError, unavailable } from '../errors.js';
import { jobRuns } from '../../drizzle/index.js';
import { jobLockKey, jobStatuses } from './runs.js';
import { withSignal } from '../venues/clients.js';
import type { JobDefinition, JobDeps, JobOutcome, JobStatus } from './types.js';

declare module 'fastify' {
  interface FastifyInstance {
    jobs: {
      names(): string[];
      /**
       * Runs a job now (waits, holding no connection, up to 120 s for another instance's run to finish first)
       * and records it in job_runs. 409 JOB_RUNNING when this instance already runs or waits to run it.
       */
      run(name: string, opts?: { mode?: JobDeps['mode'] }): Promise<JobOutcome>;
      /** What a run gets (tests call domain functions with it). */
      deps(): JobDeps;
      /** docs/decisions.md §15.2: each job's last run, last success, next scheduled run and whether it runs now. */
      statuses(): Promise<JobStatus[]>;
    };
  }
}

const RETENTION_DAYS = 14;

export interface JobsOptions {
  definitions: JobDefinition[];
  /** Told each finished run's outcome (the metrics plugin counts runs, failures and durations). */
  onJobFinished?: (outcome: JobOutcome) => void;
  /** Markets with a `market:<id>` subscriber on any instance; default: this instance's Socket.IO rooms. */
  subscribedMarketIds?: () => Promise<string[]>;
}

/**
 * node-cron in the same process. Each run holds a PostgreSQL advisory lock so
 * one instance runs it per cycle; a cycle that finds the lock taken is
 * skipped; runs never overlap; every run is recorded in job_runs. With
 * JOBS=off nothing is scheduled, and the run-now endpoint still works.
 */
export const jobsPlugin = fp<JobsOptions>(
  async (app, opts) => {
    const defs = new Map(opts.definitions.map((d) => [d.name, d]));
    const running = new Set<Promise<unknown>>();
    const tasks = new Map<string, ScheduledTask>();
    /** Runs of this instance, waiting for the lock or running, by job name. */
    const active = new Map<string, { since: Date; startedAt?: Date }>();
    let closing = false;
    // docs/decisions.md §9: SIGTERM aborts running jobs (their venue calls are cancelled).
    const shutdown = new AbortController();
    const venues = withSignal(app.venues, shutdown.signal);

    // Without a cross-instance source, the market rooms this instance's sockets joined.
    const localSubscriptions = async (): Promise<string[]> => {
      if (!app.hasDecorator('io')) return [];
      const out: string[] = [];
      for (const room of app.io.of('/').adapter.rooms.keys()) if (room.startsWith('market:')) out.push(room.slice('market:'.length));
      return out;
    };

    const deps = (trigger: JobDeps['trigger'] = 'manual', mode?: JobDeps['mode']): JobDeps => ({
      db: app.db,
      dbh: app.dbh,
      config: app.config,
      log: app.log,
      publish: app.publish,
      clock: app.clock,
      redis: app.redisClient,
      dataChanged: (topic) => app.signals.emit('dataChanged', topic),
      delivery: app.delivery,
      venues,
      signal: shutdown.signal,
      subscribedMarketIds: opts.subscribedMarketIds ?? localSubscriptions,
      trigger,
      mode,
    });

    /** The start of the run in progress: this instance's, else the newest unfinished row of job_runs. */
    async function inProgressSince(name: string): Promise<Date> {
      const mine = active.get(name);
      if (mine?.startedAt) return mine.startedAt;
      const [row] = await app.db
        .select({ startedAt: jobRuns.startedAt })
        .from(jobRuns)
        .where(and(eq(jobRuns.name, name), isNull(jobRuns.finishedAt)))
        .orderBy(desc(jobRuns.startedAt))
        .limit(1);
      return row?.startedAt ?? mine?.since ?? app.clock();
    }

    const jobRunning = async (name: string) =>
      new AppError(409, 'JOB_RUNNING', `${name} is running (started ${(await inProgressSince(name)).toISOString()}); try again later`);

    async function execute(def: JobDefinition, wait: boolean, mode?: JobDeps['mode']): Promise<JobOutcome | undefined> {
      const log = app.log.child({ job: def.name });
      // docs/decisions.md §9: one run (waiting or running) per job on this instance.
      const entry: { since: Date; startedAt?: Date } = { since: app.clock() };
      active.set(def.name, entry);
      let locked;
      try {
        locked = await runLocked(def, wait, entry, log, mode);
      } finally {
        active.delete(def.name);
      }
      if (!locked.acquired) {
        if (wait && shutdown.signal.aborted) throw unavailable('The service is shutting down; run the job again on another instance');
        if (wait) throw await jobRunning(def.name);
        log.debug('skipped: another instance holds the lock');
        return undefined;
      }
      if (wait && shutdown.signal.aborted && !locked.value.ok) {
        throw unavailable('The run was aborted: the service is shutting down');
      }
      return locked.value;
    }

    function runLocked(def: JobDefinition, wait: boolean, entry: { startedAt?: Date }, log: typeof app.log, mode?: JobDeps['mode']) {
      return app.dbh.withAdvisoryLock(
        jobLockKey(def.name),
        async () => {
          const started = app.clock();
          entry.startedAt = started;
          const [row] = await app.db
            .insert(jobRuns)
            .values({ name: def.name, instanceId: app.instanceId, startedAt: started })
            .returning({ id: jobRuns.id });
          let outcome: JobOutcome;
          try {
            const { items, skipped } = await def.run(deps(wait ? 'manual' : 'schedule', mode));
            outcome = { name: def.name, ok: true, startedAt: started.toISOString(), finishedAt: app.clock().toISOString(), items };
            // docs/decisions.md §9: a run that skipped malformed venue rows says how many (a degraded run).
            if (skipped) outcome.skipped = skipped;
            if (skipped) log.warn({ items, skipped, ms: Date.now() - started.getTime() }, 'job finished, malformed venue rows skipped');
            else log.info({ items, ms: Date.now() - started.getTime() }, 'job finished');
          } catch (err) {
            const aborted = shutdown.signal.aborted;
            const message = aborted ? 'aborted: the service is shutting down' : err instanceof Error ? err.message : String(err);
            outcome = {
              name: def.name,
              ok: false,
              startedAt: started.toISOString(),
              finishedAt: app.clock().toISOString(),
              items: 0,
              error: message.slice(0, 500),
            };
            if (aborted) log.warn('job aborted by shutdown');
            else log.error({ err }, 'job failed');
          }
          opts.onJobFinished?.(outcome);
          await app.db
            .update(jobRuns)
            .set({
              finishedAt: new Date(outcome.finishedAt),
              ok: outcome.ok,
              items: outcome.items,
              skipped: outcome.skipped ?? 0,
              error: outcome.error ?? null,
            })
            .where(eq(jobRuns.id, row.id));
          await app.db
            .delete(jobRuns)
            .where(and(eq(jobRuns.name, def.name), lt(jobRuns.startedAt, sql`now() - make_interval(days => ${RETENTION_DAYS})`)));
          return outcome;
        },
        { wait, timeoutMs: 120_000, signal: shutdown.signal },
      );
    }

    function track<T>(p: Promise<T>): Promise<T> {
      running.add(p);
      p.finally(() => running.delete(p)).catch(() => {});
      return p;
    }

    app.decorate('jobs', {
      names: () => [...defs.keys()],
      deps: () => deps(),
      async run(name: string, runOpts: { mode?: JobDeps['mode'] } = {}) {
        const def = defs.get(name);
        if (!def) throw new Error(`unknown job ${name}`);
        if (active.has(name)) throw await jobRunning(name);
        const outcome = await track(execute(def, true, runOpts.mode));
        return outcome!;
      },
      statuses() {
        return jobStatuses(
          app.dbh,
          [...defs.values()].map((d) => ({
            name: d.name,
            schedule: d.schedule,
            // Only scheduled tasks have a next run: none with JOBS=off, none once closing.
            nextRunAt: closing ? null : (tasks.get(d.name)?.getNextRun() ?? null),
          })),
        );
      },
    });

    if (app.config.JOBS) {
      app.addHook('onReady', async () => {
        for (const def of defs.values()) {
          const tick = () => {
            if (closing || active.has(def.name)) return;
            track(execute(def, false)).catch((err) => app.log.error({ err, job: def.name }, 'job crashed'));
          };
          tasks.set(def.name, cron.schedule(def.schedule, tick, { name: def.name, noOverlap: true }));
          tick(); // docs/decisions.md §9: each runs once at start
        }
      });
    }

    app.addHook('preClose', async () => {
      closing = true;
      for (const t of tasks.values()) await t.destroy();
      shutdown.abort(new Error('aborted: the service is shutting down'));
    });
    app.addHook('onClose', async () => {
      await Promise.allSettled([...running]);
    });
  },
  { name: 'jobs', fastify: '5.x', dependencies: ['context', 'db', 'redis', 'signals', 'publish', 'notifications', 'realtime'] },
);
