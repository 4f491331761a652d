import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import helmet from '@fastify/helmet';
import cors from '@fastify/cors';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { DbHandle } from './db/index.js';
import { unavailable } from './errors.js';
import { errorsPlugin } from './plugins/errors.js';
import { infraPlugin } from './plugins/infra.js';
import { rateLimitPlugin } from './plugins/rate-limit.js';
import { authPlugin } from './plugins/auth.js';
import { docsPlugin } from './plugins/docs.js';
import { healthRoutes } from './domains/health/plugin.js';
import { leaderboardRoutes } from './domains/leaderboard/plugin.js';
import { jobsPlugin } from './jobs/plugin.js';
import { jobRoutes } from './jobs/routes.js';
import { jobDefinitions } from './jobs/registry.js';
import type { JobDefinition } from './jobs/types.js';

export const BODY_LIMIT = 64 * 1024;

export interface BuildOverrides {
  /** Share a database handle (tests); the caller closes it. */
  db?: DbHandle;
  /** Share a Redis client (tests); the caller closes it. */
  redis?: Redis;
  /** Prefix of every Redis key (tests isolate runs with it). Default `pb:`. */
  keyPrefix?: string;
  clock?: () => Date;
  /** Replace the cron table (tests). */
  jobs?: JobDefinition[];
  logger?: FastifyServerOptions['logger'];
  /** Skip migrations when the caller already applied them. */
  migrate?: boolean;
}

export function loggerOptions(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
    // decisions.md §3.11: never log tokens, signatures, cookies or secrets.
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-telegram-bot-api-secret-token"]',
        'res.headers["set-cookie"]',
        '*.authorization',
        '*.cookie',
        '*.accessToken',
        '*.refreshToken',
        '*.token',
        '*.signature',
        '*.secret',
        '*.password',
        '*.key',
      ],
      censor: '[redacted]',
    },
  };
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Builds the whole application without listening, reading process.env or
 * exiting. The registration order below is the table of contents
 * (style.md habit 2).
 */
export async function buildApp(config: Config, overrides: BuildOverrides = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: overrides.logger ?? loggerOptions(config),
    bodyLimit: BODY_LIMIT,
    trustProxy: config.TRUST_PROXY,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // Our own closing guard answers problem+json instead of Fastify's default body.
    return503OnClosing: false,
    routerOptions: { maxParamLength: 500 },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  await app.register(errorsPlugin);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await app.register(helmet, {
    // The API serves JSON; the only HTML is the /docs UI, whose plugin sets its own CSP.
    contentSecurityPolicy: false,
    crossOriginResourcePolicy: { policy: 'same-site' },
  });
  if (config.CORS_ORIGINS.length > 0) {
    const allowed = new Set(config.CORS_ORIGINS);
    await app.register(cors, {
      origin: (origin, cb) => cb(null, origin !== undefined && allowed.has(origin)),
      credentials: true,
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
      exposedHeaders: ['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-Request-Id'],
      maxAge: 600,
    });
  }

  await app.register(infraPlugin, {
    config,
    db: overrides.db,
    redis: overrides.redis,
    keyPrefix: overrides.keyPrefix,
    clock: overrides.clock,
    migrate: overrides.migrate,
  });

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async () => {
    if (closing) throw unavailable('The server is shutting down, retry on another instance', 1);
  });
  app.addHook('onSend', async (_request, reply) => {
    // Responses finished while draining close their keep-alive connection,
    // so the server can stop as soon as the last in-flight request is done.
    if (closing) reply.header('connection', 'close');
  });

  await app.register(rateLimitPlugin);
  await app.register(authPlugin);
  await app.register(docsPlugin);

  // Domains
  await app.register(healthRoutes);
  await app.register(leaderboardRoutes, { prefix: '/api/v1/leaderboard' });

  await app.register(jobsPlugin, { definitions: overrides.jobs ?? jobDefinitions });
  if (config.INTERNAL_API_TOKEN) {
    // decisions.md §6: the whole /api/v1/internal tree is 404 while the token is unset.
    await app.register(jobRoutes, { prefix: '/api/v1/internal' });
  }

  return app;
}
