import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound, problemResponses } from '../errors.js';
import { lastRuns } from './runs.js';

const JobOutcomeSchema = z
  .object({
    name: z.string(),
    ok: z.boolean(),
    startedAt: z.string(),
    finishedAt: z.string(),
    items: z.number().int(),
    error: z.string().optional(),
  })
  .meta({ id: 'JobOutcome' });

/** docs/decisions.md §9: run a job now, list the last run of each. Internal token only. */
export const jobRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/jobs/:name',
    {
      config: { internal: true },
      schema: {
        operationId: 'runJob',
        tags: ['internal'],
        summary: 'Run a background job now and return its outcome',
        description:
          'Answers 200 whether the job succeeded or not (`ok: false` and `error` when it failed). Waits while another instance runs the same job.',
        params: z.object({ name: z.string().min(1).max(64) }),
        response: { 200: JobOutcomeSchema, ...problemResponses(401, 404) },
      },
    },
    async (request) => {
      if (!app.jobs.names().includes(request.params.name)) throw notFound(`Job ${request.params.name.slice(0, 64)}`);
      return app.jobs.run(request.params.name);
    },
  );

  app.get(
    '/jobs',
    {
      config: { internal: true },
      schema: {
        operationId: 'listJobs',
        tags: ['internal'],
        summary: 'The last run of each job',
        response: { 200: z.object({ jobs: z.array(JobOutcomeSchema) }), ...problemResponses(401) },
      },
    },
    async () => ({ jobs: await lastRuns(app.db, app.jobs.names()) }),
  );
};
