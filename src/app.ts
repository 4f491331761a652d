import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import cors from '@fastify/cors';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { serializerCompiler } from './lib/serializer.js';
import type { Redis } from 'ioredis';
import type { Config } from './config.js';
import type { DbHandle } from './db/index.js';
import { AppError, problem, unavailable } from './errors.js';
import { serializeError } from './lib/log-errors.js';
import { lazyChildLogger, RequestLogController } from './lib/request-log.js';
import { errorsPlugin, sendProblem } from './plugins/errors.js';
import { securityHeaders } from './plugins/security-headers.js';
import { contextPlugin } from './plugins/context.js';
import { dbPlugin } from './plugins/db.js';
import { redisPlugin } from './plugins/redis.js';
import { signalsPlugin, type DataTopic } from './plugins/signals.js';
import { publishPlugin } from './domains/realtime/publish.js';
import { clientAddressPlugin } from './plugins/client-address.js';
import { metricsPlugin } from './plugins/metrics.js';
import { overloadPlugin, type OverloadGuard, type OverloadOptions } from './plugins/overload.js';
import { rateLimitPlugin } from './plugins/rate-limit.js';
import { authPlugin } from './domains/auth/guard.js';
import { docsPlugin, internalDocsRoutes } from './plugins/docs.js';
import { healthRoutes } from './domains/health/plugin.js';
import { authRoutes } from './domains/auth/plugin.js';
import { internalAuthRoutes } from './domains/auth/internal-routes.js';
import { devTokenRoutes } from './domains/auth/dev-token.js';
import { eventsRoutes } from './domains/events/plugin.js';
import { marketRoutes } from './domains/events/markets-plugin.js';
import { messengerRoutes } from './domains/messenger/plugin.js';
import {
  internalDeliveryRoutes,
  internalNotificationRoutes,
  notificationRoutes,
  notificationsPlugin,
} from './domains/notifications/plugin.js';
import { createPushChannel } from './domains/push/channel.js';
import { createMessengerChannel } from './domains/messenger/channel.js';
import { createFloodControl } from './domains/messenger/flood.js';
import type { NotificationChannel } from './domains/notifications/types.js';
import { alertRoutes } from './domains/alerts/plugin.js';
import { watchlistRoutes } from './domains/watchlist/plugin.js';
import { pushRoutes } from './domains/push/plugin.js';
import { leaderboardRoutes } from './domains/leaderboard/plugin.js';
import { followRoutes, traderRoutes } from './domains/follows/plugin.js';
import { realtimePlugin, type RealtimeOptions } from './domains/realtime/plugin.js';
import { userStreams, type UserStreamOptions } from './domains/notifications/stream-hub.js';
import { hotMarketsPlugin, type HotMarketsPluginOptions } from './domains/events/hot-markets-plugin.js';
import { realtimeDocument } from './domains/realtime/schemas.js';
import { asyncApiDocument } from './domains/realtime/asyncapi.js';
import { jobsPlugin } from './jobs/plugin.js';
import { handlePriceChanges } from './jobs/price-changes.js';
import { jobRoutes } from './jobs/routes.js';
import { jobDefinitions } from './jobs/registry.js';
import type { JobDefinition } from './jobs/types.js';
import { createVenueClients, type VenueClientOptions } from './venues/clients.js';

export const BODY_LIMIT = 64 * 1024;
export const REQUEST_TIMEOUT_MS = 30_000;
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

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
  /** WebSocket limits and timings (tests shrink them); defaults are docs/api-contract.md §8's. */
  realtime?: Partial<RealtimeOptions & UserStreamOptions>;
  /** Hot-market registry, lease and venue-socket timings (tests shrink them); defaults meet docs/decisions.md §11.2. */
  hotMarkets?: HotMarketsPluginOptions;
  /** Telegram's gap between two messages to one chat (tests of other behaviour shrink it). */
  messengerChatGapMs?: number;
  /** Replace the notify path's delivery channels (tests: shorter provider timeouts). */
  deliveryChannels?: NotificationChannel[];
  /** Overload thresholds (tests force the refusal path with them). */
  overload?: OverloadOptions;
  /** Venue client options (tests raise the request budgets so they run fast). */
  venueClients?: VenueClientOptions;
  /** Markets with a `market:<id>` subscriber on any instance (price tracking); default: this instance's rooms. */
  subscribedMarketIds?: () => Promise<string[]>;
}

export function loggerOptions(config: Config, opts: { pretty?: boolean } = {}): FastifyServerOptions['logger'] {
  return {
    level: config.LOG_LEVEL,
    // Database errors by their query's shape, never its values (src/lib/log-errors.ts).
    serializers: { err: serializeError },
    // pino-pretty in a worker thread; redaction below still happens before it.
    ...(opts.pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } } : {}),
    // docs/decisions.md §3.11: never log tokens, signatures, cookies or secrets.
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
    // Access log opt-in (LOG_REQUESTS), request loggers built on first use (src/lib/request-log.ts).
    logController: new RequestLogController(config.LOG_REQUESTS),
    childLoggerFactory: lazyChildLogger,
    bodyLimit: BODY_LIMIT,
    // Off on purpose: the client address is ours (plugins/client-address.ts, docs/decisions.md §10.1).
    trustProxy: false,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    // Our own closing guard answers problem+json instead of Fastify's default body.
    return503OnClosing: false,
    // Router-level failures (malformed URL encoding, over-long path parameters)
    // never reach setErrorHandler: answer them as problem+json too.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id);
      const tooLong = err.code === 'FST_ERR_MAX_PARAM_LENGTH';
      void sendProblem(
        reply,
        problem(tooLong ? 414 : 400, 'VALIDATION_ERROR', tooLong ? 'A path parameter is too long' : 'The URL is not valid'),
      );
    },
    routerOptions: { maxParamLength: 500 },
    // docs/decisions.md §15.3: a request (headers and body) must arrive within 30 s, checked
    // every 5 s (a half-sent body no longer holds a connection for minutes); idle keep-alive
    // connections close after 72 s (longer than the usual load balancer's 60 s idle timeout).
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    http: { headersTimeout: REQUEST_TIMEOUT_MS, connectionsCheckingInterval: 5_000 },
    // Opening the database and migrating (PGlite first starts a WASM PostgreSQL)
    // can outlast the 10 s default on a loaded machine (tests/bench/RESULTS.md).
    pluginTimeout: 120_000,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  await app.register(errorsPlugin);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // The one onRequest hook every request runs: request id, security headers
  // and the closing guard. Hooks that run on every request are callback-style,
  // not async (each async hook costs a promise and a microtask turn), and one
  // hook is cheaper than three (each is a step of Fastify's hook runner).
  const security = securityHeaders(config.isProduction);
  // Set once the overload plugin is registered below; its refusal runs in this same hook.
  let overload: OverloadGuard | undefined;
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    reply.headers(request.url.startsWith('/docs') ? security.docs : security.api);
    if (closing) return done(unavailable('The server is shutting down, retry on another instance', 1));
    // A reply sent from a hook ends the request; done() is not called then.
    if (overload === undefined || !overload.overloaded || !overload.refuse(request, reply)) done();
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
  } else {
    // No CORS: a browser's preflight gets a problem+json that says why and how to enable it,
    // not a bare 404 (issue 35); any other OPTIONS request is unknown, as before.
    app.options('/*', { config: { public: true }, schema: { hide: true } }, (request, reply) => {
      if (request.headers.origin === undefined || request.headers['access-control-request-method'] === undefined) {
        return reply.callNotFound();
      }
      throw new AppError(
        403,
        'ORIGIN_NOT_ALLOWED',
        'CORS is not enabled on this service, so no browser page on another origin may call it. To enable it, set CORS_ORIGINS to a comma list of the allowed origins (e.g. CORS_ORIGINS=https://app.example.com,http://localhost:5173) and restart the service; see docs/configuration.md.',
      );
    });
  }

  // One HTTP client and rate limiter per venue API for the whole process (docs/venues.md "What we call").
  await app.register(contextPlugin, { config, clock: overrides.clock, venues: createVenueClients(config, overrides.venueClients) });
  await app.register(dbPlugin, { db: overrides.db, migrate: overrides.migrate });
  await app.register(redisPlugin, { redis: overrides.redis, keyPrefix: overrides.keyPrefix });
  await app.register(signalsPlugin);
  await app.register(publishPlugin);

  // docs/decisions.md §15.1: its onResponse hook sees every route registered below.
  if (config.METRICS_PORT !== 0) await app.register(metricsPlugin);
  else app.decorate('metrics', undefined);
  // docs/decisions.md §15.3: refuse early under overload, before any other per-request work.
  if (config.OVERLOAD_GUARD) {
    await app.register(overloadPlugin, { ...overrides.overload, hook: false });
    overload = app.overloadGuard;
  }

  app.addHook('onSend', (_request, reply, payload, done) => {
    // Responses finished while draining close their keep-alive connection,
    // so the server can stop as soon as the last in-flight request is done.
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  await app.register(clientAddressPlugin);
  await app.register(rateLimitPlugin);
  // Before auth: the docs plugin marks /docs routes public as they are added,
  // and the auth plugin attaches its guard to each non-public route.
  await app.register(docsPlugin, { extensions: { 'x-realtime': realtimeDocument() }, asyncapi: asyncApiDocument() });
  await app.register(authPlugin);

  // The notify path's out-of-app delivery channels, in delivery order: the
  // notifications domain knows none by name. Routes and jobs share this state.
  // Telegram flood control is one per app, shared by notifications and command replies
  // (docs/decisions.md §13.3), across instances through Redis when it is set.
  const flood = createFloodControl({
    redis: app.redisClient,
    keyPrefix: app.keyPrefix,
    botId: config.MESSENGER_BOT_TOKEN?.split(':')[0] ?? 'none',
    perSecond: config.MESSENGER_MAX_PER_SECOND,
    chatGapMs: overrides.messengerChatGapMs,
  });
  await app.register(notificationsPlugin, {
    channels: overrides.deliveryChannels ?? [createPushChannel(), createMessengerChannel(flood)],
  });

  // Domains, each under its /api/v1 prefix
  await app.register(healthRoutes);
  await app.register(authRoutes, { prefix: '/api/v1/auth' });
  // `npm run token` beside a running service on the embedded database (docs/development.md); never in production.
  if (!config.isProduction) await app.register(devTokenRoutes);
  await app.register(eventsRoutes, { prefix: '/api/v1/events' });
  await app.register(marketRoutes, { prefix: '/api/v1/markets' });
  await app.register(notificationRoutes, { prefix: '/api/v1/notifications' });
  await app.register(alertRoutes, { prefix: '/api/v1/alerts' });
  await app.register(watchlistRoutes, { prefix: '/api/v1/watchlist' });
  await app.register(pushRoutes, { prefix: '/api/v1/push' });
  await app.register(leaderboardRoutes, { prefix: '/api/v1/leaderboard' });
  await app.register(traderRoutes, { prefix: '/api/v1/traders' });
  await app.register(followRoutes, { prefix: '/api/v1/follows' });
  await app.register(messengerRoutes, { prefix: '/api/v1/messenger-bot', flood });

  // docs/decisions.md §11.2: before realtime, so it hears of the market rooms (signal `marketRoom`) from the first socket on.
  // The feed's stored prices take the one price-change path (it published them already).
  const priceChangeDeps = {
    db: app.db,
    config: app.config,
    log: app.log.child({ component: 'hot-markets' }),
    clock: app.clock,
    publish: app.publish,
    delivery: app.delivery,
    dataChanged: (topic: DataTopic) => app.signals.emit('dataChanged', topic),
  };
  await app.register(hotMarketsPlugin, {
    ...overrides.hotMarkets,
    onPriceChanges: (changes) => handlePriceChanges(priceChangeDeps, changes, { published: true }),
  });
  // docs/decisions.md §12.3: the users' streams are the notifications domain's; realtime serves them.
  const { streamGapWaitMs, streamPageSize, ...realtime } = overrides.realtime ?? {};
  await app.register(realtimePlugin, {
    ...realtime,
    userStreams: userStreams(
      { db: app.db, log: app.log, changed: (userId) => app.signals.emit('userStreamChanged', userId) },
      { streamGapWaitMs, streamPageSize },
    ),
  });
  await app.register(jobsPlugin, {
    definitions: overrides.jobs ?? jobDefinitions,
    onJobFinished: app.metrics?.jobFinished,
    // docs/decisions.md §11.2: markets with a subscriber on any instance (the hot-market registry).
    subscribedMarketIds: overrides.subscribedMarketIds ?? (() => app.hotMarkets.subscribedMarketIds()),
  });
  if (config.INTERNAL_API_TOKEN) {
    // docs/decisions.md §6: the whole /api/v1/internal tree is 404 while the token is unset.
    await app.register(jobRoutes, { prefix: '/api/v1/internal' });
    await app.register(internalNotificationRoutes, { prefix: '/api/v1/internal' });
    await app.register(internalDeliveryRoutes, { prefix: '/api/v1/internal' });
    await app.register(internalAuthRoutes, { prefix: '/api/v1/internal' });
    await app.register(internalDocsRoutes, { prefix: '/api/v1/internal' });
  }

  return app;
}
