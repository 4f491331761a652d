import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { sendProblem } from '../../plugins/errors.js';
import { problem } from '../../errors.js';
import { keepServingUnderPressure } from '../../plugins/overload.js';
import { checkReadiness } from './service.js';

const DatabaseState = z.enum(['ok', 'down']).meta({ description: 'The database answers a ping within 2 s' });
const RedisState = z.enum(['ok', 'down', 'off']).meta({ description: 'Redis answers a ping within 2 s; `off` when REDIS_URL is unset' });

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
        summary: 'The database answers (Redis down is degraded, not unready)',
        description:
          '503 naming the database when it is unreachable (with Retry-After); else 200 with each dependency: `status` is ' +
          '`degraded` while Redis is down (every instance then serves on its in-process fallbacks, and a shared Redis ' +
          'outage must not take every instance out of the load balancer at once). Venues, the identity provider, push ' +
          'and Telegram never change it (docs/decisions.md §9).',
        response: {
          200: z.object({ status: z.enum(['ok', 'degraded']), database: z.literal('ok'), redis: RedisState }),
          503: z.object({
            type: z.string(),
            title: z.string(),
            status: z.number(),
            code: z.string(),
            detail: z.string(),
            database: DatabaseState,
            redis: RedisState,
          }),
        },
      },
    },
    async (_request, reply) => {
      const { database, redis } = await checkReadiness(deps);
      if (database === 'ok') return { status: redis === 'down' ? ('degraded' as const) : ('ok' as const), database, redis };
      return sendProblem(reply, { ...problem(503, 'UNAVAILABLE', 'Not ready: database unreachable'), database, redis } as never, {
        'retry-after': 5,
      });
    },
  );
};
