import { EventEmitter } from 'node:events';
import { createVenueClients, type VenueClientOptions, type VenueClients } from '../venues/clients.js';
import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import type { Config } from '../config.js';
import { createDb, type Db, type DbHandle } from '../db/index.js';
import { runMigrations } from '../db/migrate.js';
import { FallbackSlidingWindow, MemorySlidingWindow, RedisSlidingWindow } from '../lib/sliding-window.js';
import type { Published, PublishFn } from '../domains/realtime/channels.js';

/** Typed against the realtime contract (src/domains/realtime/schemas.ts REALTIME_EVENTS). */
export type { PublishFn } from '../domains/realtime/channels.js';

/** Stored data a job changed; per-instance read caches listen (src/domains/events, src/domains/leaderboard). */
export type DataTopic = 'events' | 'leaderboard';

/**
 * In-process signals, apart from the socket bus: a job emits `dataChanged`
 * after it writes, and the domain plugins drop their cached reads. They reach
 * this instance only; other instances' caches expire on their own TTL.
 */
export type Signals = EventEmitter<{
  dataChanged: [topic: DataTopic];
  /** A change to this user's notifications reached its stream, from this instance or another one (notifications/stream-hub.ts). */
  userStreamChanged: [userId: string];
  /** A `market:<id>` room of this instance got its first socket (open) or lost its last (the realtime layer; the hot-market registry listens). */
  marketRoom: [marketId: string, open: boolean];
}>;

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    dbh: DbHandle;
    db: Db;
    /** Set only when REDIS_URL is configured. */
    redisClient: Redis | undefined;
    /** true while the Redis connection is usable. */
    redisReady(): boolean;
    /** Prefix of every Redis key this app writes (tests isolate runs with it). */
    keyPrefix: string;
    instanceId: string;
    limiter: FallbackSlidingWindow;
    clock: () => Date;
    /**
     * The one way domains reach live clients: publish(channel, event, payload),
     * typed against the realtime contract. The realtime plugin forwards it to
     * Socket.IO rooms (across instances with Redis).
     */
    publish: PublishFn;
    /** In-process bus behind publish() (untyped transport); the realtime plugin and tests listen on it. */
    bus: EventEmitter<{ publish: [Published] }>;
    /** Cache-invalidation signals inside this process (not sent to clients). */
    signals: Signals;
    /**
     * One HTTP client and rate limiter per venue API for the whole process
     * (docs/venues.md "What we call"): jobs and on-demand paths share them.
     */
    venues: VenueClients;
  }
}

export interface InfraOptions {
  config: Config;
  db?: DbHandle;
  redis?: Redis;
  keyPrefix?: string;
  clock?: () => Date;
  migrate?: boolean;
  /** Options of the venue clients (tests raise the budgets to run fast). */
  venueClients?: VenueClientOptions;
}

/**
 * Database, Redis and the shared stores. Whoever opens a resource closes it:
 * connections this plugin opens are closed in onClose; ones handed in by a
 * caller (tests sharing one database) are left to the caller.
 */
export const infraPlugin = fp<InfraOptions>(
  async (app, opts) => {
    const { config } = opts;
    app.decorate('config', config);
    const instanceId = randomUUID();
    app.decorate('instanceId', instanceId);
    app.decorate('clock', opts.clock ?? (() => new Date()));
    app.decorate('venues', createVenueClients(config, opts.venueClients));
    app.decorate('keyPrefix', opts.keyPrefix ?? 'pb:');

    // An application_name of its own lets PostgreSQL tell this instance's
    // connections apart (the metrics plugin's pool gauge reads them).
    const dbh = opts.db ?? (await createDb(config.DATABASE_URL, { applicationName: `predict-backend ${instanceId.slice(0, 8)}` }));
    if (!opts.db) app.addHook('onClose', async () => dbh.close());
    if (opts.migrate !== false) await runMigrations(dbh);
    app.decorate('dbh', dbh);
    app.decorate('db', dbh.db);

    let redis: Redis | undefined = opts.redis;
    if (!redis && config.REDIS_URL) {
      redis = new Redis(config.REDIS_URL, {
        // Fail fast while disconnected so callers fall back instead of queueing.
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        connectTimeout: 3_000,
        retryStrategy: (times) => Math.min(times * 200, 2_000),
        lazyConnect: true,
        // Commands issued in the same event-loop turn (concurrent requests'
        // rate-limit hits, nonce reads) share one socket write: a write to a
        // peer that sleeps is expensive in CPU (tests/bench/RESULTS.md).
        enableAutoPipelining: true,
      });
      let warned = false;
      redis.on('error', (err) => {
        if (!warned) app.log.warn({ err: { message: err.message } }, 'Redis connection error');
        warned = true;
      });
      redis.on('ready', () => {
        warned = false;
      });
      try {
        await redis.connect();
      } catch (err) {
        app.log.warn({ err }, 'Redis is not reachable at start; in-process stores answer until it is');
      }
      const owned = redis;
      app.addHook('onClose', async () => {
        owned.disconnect();
      });
    }
    app.decorate('redisClient', redis);
    const r = redis;
    app.decorate('redisReady', () => r?.status === 'ready');

    const memory = new MemorySlidingWindow();
    app.addHook('onClose', async () => memory.close());
    const limiter = new FallbackSlidingWindow(
      r ? new RedisSlidingWindow(r, `${app.keyPrefix}rl:`) : undefined,
      memory,
      app.log,
      () => r?.status === 'ready',
    );
    app.decorate('limiter', limiter);

    const bus = new EventEmitter<{ publish: [Published] }>();
    bus.setMaxListeners(0);
    app.decorate('bus', bus);
    const publish: PublishFn = (channel, event, payload) => {
      bus.emit('publish', { channel, event, payload });
    };
    app.decorate('publish', publish);

    const signals: Signals = new EventEmitter();
    signals.setMaxListeners(0);
    app.decorate('signals', signals);
  },
  { name: 'infra', fastify: '5.x' },
);
