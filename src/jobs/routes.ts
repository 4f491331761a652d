import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound, problemResponses } from '../errors.js';
import { listJobRuns } from './runs.js';

const JobOutcomeSchema = z
  .object({
    name: z.string(),
    ok: z.boolean(),
    startedAt: z.string(),
    finishedAt: z.string(),
    items: z.number().int(),
    skipped: z.number().int().optional().meta({
      description:
        'Venue rows the run skipped as malformed (one event, market or board row each); present only when above 0: the run is ok but degraded',
    }),
    error: z.string().optional(),
  })
  .meta({ id: 'JobOutcome' });

const JobStatusSchema = z
  .object({
    name: z.string(),
    schedule: z
      .string()
      .meta({ description: 'The cron expression (node-cron; six fields when it has seconds), in the server’s time zone' }),
    running: z.boolean().meta({
      description: 'A run is in progress on some instance right now (the job’s PostgreSQL advisory lock is held)',
    }),
    runningSince: z.iso.datetime().optional().meta({ description: 'When the run in progress started (present while `running`)' }),
    nextRunAt: z.string().nullable().meta({
      description: 'When this instance’s schedule fires next; null with JOBS=off (only run-now runs jobs) or while shutting down',
    }),
    lastSuccessAt: z
      .string()
      .nullable()
      .meta({ description: 'When a run last finished successfully, on any instance; null before the first' }),
    ok: z.boolean().optional().meta({ description: 'The last finished run: whether it succeeded (absent before the first run)' }),
    startedAt: z.iso.datetime().optional(),
    finishedAt: z.iso.datetime().optional(),
    items: z.number().int().optional(),
    skipped: z.number().int().optional().meta({
      description:
        'Venue rows the run skipped as malformed (one event, market or board row each); present only when above 0: the run is ok but degraded',
    }),
    error: z.string().optional().meta({ description: 'Why the last finished run failed' }),
  })
  .meta({ id: 'JobStatus' });

const JobRunSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    instanceId: z.string().meta({ description: 'The instance that ran it' }),
    state: z.enum(['running', 'succeeded', 'failed', 'abandoned']).meta({
      description: '`abandoned`: never finished and no longer running (its instance stopped mid-run)',
    }),
    startedAt: z.iso.datetime(),
    finishedAt: z.iso.datetime().nullable(),
    items: z.number().int(),
    skipped: z.number().int().optional().meta({
      description:
        'Venue rows the run skipped as malformed (one event, market or board row each); present only when above 0: the run is ok but degraded',
    }),
    error: z.string().optional(),
  })
  .meta({ id: 'JobRun' });

const JobNameParamsSchema = z.object({
  name: z
    .string()
    .max(64)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/)
    .meta({ description: 'A job name such as `price-sync`' }),
});

/** docs/decisions.md §9, §15.2: run a job now, see each job's state and its recent runs. Internal token only. */
export const jobRoutes: FastifyPluginAsyncZod = async (app) => {
  const known = (name: string) => {
    if (!app.jobs.names().includes(name)) throw notFound(`Job ${name.slice(0, 64)}`);
  };

  app.post(
    '/jobs/:name',
    {
      config: { internal: true },
      schema: {
        operationId: 'runJob',
        tags: ['internal'],
        summary: 'Run a background job now and return its outcome',
        description:
          'Answers 200 whether the job succeeded or not (`ok: false` and `error` when it failed). While another instance runs ' +
          'the same job, waits for that run to end (up to 120 s, then 409 JOB_RUNNING) without holding a database connection, ' +
          'then runs it. A second call for the same job on this instance while one waits or runs there (a scheduled run ' +
          'included) answers 409 JOB_RUNNING at once; `detail` gives the ISO 8601 start of the run in progress. A run ' +
          'aborted by shutdown answers 503 UNAVAILABLE (docs/decisions.md §9). `events-sync` performs the full reconcile of both ' +
          'venues; `?mode=increment` runs only its increments (new and changed events, new markets in known groups). Other jobs ignore `mode`.',
        params: JobNameParamsSchema,
        querystring: z.strictObject({
          mode: z
            .enum(['full', 'increment'])
            .optional()
            .meta({ description: '`increment`: events-sync runs only its ≤ 5-minute increments; default `full`' }),
        }),
        response: { 200: JobOutcomeSchema, ...problemResponses(400, 401, 404, 409, 503) },
      },
    },
    async (request) => {
      known(request.params.name);
      return app.jobs.run(request.params.name, { mode: request.query.mode });
    },
  );

  app.get(
    '/jobs',
    {
      config: { internal: true },
      schema: {
        operationId: 'listJobs',
        tags: ['internal'],
        summary: 'Every job: its last finished run, last success, next scheduled run and whether it runs now',
        description: [
          'One entry per job, in the cron table’s order, whether or not it has run yet.',
          '`ok`, `startedAt`, `finishedAt`, `items`, `skipped` and `error` describe the last finished run and are absent before the first.',
          '`running` holds across instances (the job’s advisory lock); `nextRunAt` is this instance’s schedule (null with JOBS=off).',
        ].join(' '),
        response: { 200: z.object({ jobs: z.array(JobStatusSchema) }), ...problemResponses(401) },
      },
    },
    async () => ({ jobs: await app.jobs.statuses() }),
  );

  app.get(
    '/jobs/:name/runs',
    {
      config: { internal: true },
      schema: {
        operationId: 'listJobRuns',
        tags: ['internal'],
        summary: 'Recent runs of one job, newest first',
        description:
          'Runs of every instance, kept 14 days. `limit` 1–100 (default 20). A run that never finished and is not running any more is `abandoned`. Unknown job → 404.',
        params: JobNameParamsSchema,
        querystring: z.strictObject({ limit: z.coerce.number().int().min(1).max(100).default(20) }),
        response: { 200: z.object({ name: z.string(), runs: z.array(JobRunSchema) }), ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => {
      known(request.params.name);
      return { name: request.params.name, runs: await listJobRuns(app.dbh, request.params.name, request.query.limit) };
    },
  );
};
