import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { sendProblem } from '../../plugins/errors.js';
import { problem } from '../../errors.js';
import { keepServingUnderPressure } from '../../plugins/overload.js';
import { checkReadiness } from './service.js';

const Checks = z.record(z.string(), z.enum(['ok', 'failed', 'disabled']));

/**
 * GET /health/live and GET /health/ready (docs/decisions.md §9). Both keep
 * answering while the service sheds load (docs/decisions.md §15.3).
 */
export const healthRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = { dbh: app.dbh, redis: app.redisClient };
  app.get(
    '/health/live',
    {
      config: { public: true, pressureHandler: keepServingUnderPressure },
      schema: {
        operationId: 'healthLive',
        tags: ['health'],
        summary: 'The process is up',
        response: { 200: z.object({ status: z.literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/health/ready',
    {
      config: { public: true, pressureHandler: keepServingUnderPressure },
      schema: {
        operationId: 'healthReady',
        tags: ['health'],
        summary: 'The database (and Redis, when configured) answer',
        description: 'Venues, the identity provider, push and Telegram never make this 503.',
        response: {
          200: z.object({ status: z.literal('ok'), checks: Checks }),
          503: z.object({
            type: z.string(),
            title: z.string(),
            status: z.number(),
            code: z.string(),
            detail: z.string(),
            checks: Checks,
          }),
        },
      },
    },
    async (_request, reply) => {
      const checks = await checkReadiness(deps);
      const failed = Object.entries(checks)
        .filter(([, v]) => v === 'failed')
        .map(([k]) => k);
      if (failed.length === 0) return { status: 'ok' as const, checks };
      return sendProblem(reply, { ...problem(503, 'UNAVAILABLE', `Not ready: ${failed.join(', ')} unreachable`), checks } as never, {
        'retry-after': 5,
      });
    },
  );
};
