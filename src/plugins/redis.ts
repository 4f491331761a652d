import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { FallbackSlidingWindow, MemorySlidingWindow, RedisSlidingWindow } from '../lib/sliding-window.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Set only when REDIS_URL is configured. */
    redisClient: Redis | undefined;
    /** true while the Redis connection is usable. */
    redisReady(): boolean;
    /** Prefix of every Redis key this app writes (tests isolate runs with it). */
    keyPrefix: string;
    limiter: FallbackSlidingWindow;
  }
}

export interface RedisOptions {
  /** A client shared by the caller (tests), who closes it. */
  redis?: Redis;
  /** Prefix of every Redis key. Default `pb:`. */
  keyPrefix?: string;
}

/**
 * Redis (when REDIS_URL is set) and the shared rate-limit store over it.
 * Whoever opens a resource closes it: a connection opened here is closed in
 * onClose; one handed in by a caller (tests) is left to the caller.
 */
export const redisPlugin = fp<RedisOptions>(
  async (app, opts) => {
    const { config } = app;
    app.decorate('keyPrefix', opts.keyPrefix ?? 'pb:');

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
        if (!warned) app.log.warn({ err }, `Redis connection error: ${err.message}`);
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
  },
  { name: 'redis', fastify: '5.x', dependencies: ['context'] },
);
