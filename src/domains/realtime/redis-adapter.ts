import { createAdapter } from '@socket.io/redis-adapter';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Server } from 'socket.io';

/**
 * Makes an ioredis client's promise-returning calls used by the adapter safe
 * to ignore: the adapter fires `publish`/`subscribe` without awaiting them, so
 * a Redis outage would otherwise surface as unhandled rejections.
 */
function swallowRejections(client: Redis, onError: (err: unknown) => void) {
  for (const name of ['publish', 'subscribe', 'psubscribe', 'unsubscribe', 'punsubscribe'] as const) {
    const original = (client[name] as (...args: unknown[]) => Promise<unknown>).bind(client);
    (client as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      const p = original(...args);
      p.catch(onError);
      return p;
    };
  }
}

/**
 * Puts `@socket.io/redis-adapter` under `io`, so every publish and
 * `serverSideEmit` reaches every instance. It runs on two connections of its
 * own, duplicated from `redis`: a subscriber that queues its SUBSCRIBE until
 * connected and re-subscribes after reconnects, and a publisher that fails
 * fast while Redis is down (local delivery still happens; the outage is
 * logged once per outage). Returns what closes those connections.
 */
export async function attachRedisAdapter(
  io: Server,
  { redis, keyPrefix, log }: { redis: Redis; keyPrefix: string; log: FastifyBaseLogger },
): Promise<{ close(): void }> {
  let warned = false;
  const onRedisError = (err: unknown) => {
    if (!warned) log.warn({ err }, 'Socket.IO Redis adapter: Redis unavailable, publishes reach this instance only');
    warned = true;
  };
  const sub = redis.duplicate({ lazyConnect: true, enableOfflineQueue: true, maxRetriesPerRequest: null });
  const pub = redis.duplicate({ lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  for (const c of [pub, sub]) {
    c.on('error', onRedisError);
    c.on('ready', () => (warned = false));
    swallowRejections(c, onRedisError);
  }
  await Promise.all([pub.connect().catch(onRedisError), sub.connect().catch(onRedisError)]);
  // A prefix of our own (ecosystem.md F5: adapters on one Redis must not share `socket.io#`),
  // under keyPrefix so parallel apps (tests, staging) never receive each other's packets.
  io.adapter(createAdapter(pub, sub, { key: `${keyPrefix}socket.io`, publishOnSpecificResponseChannel: true }));
  return {
    close() {
      pub.disconnect();
      sub.disconnect();
    },
  };
}
