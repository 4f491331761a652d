import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';

/**
 * The hot-market registry (docs/decisions.md §11.2): which markets have a
 * live `market:<id>` subscriber on ANY instance. Each instance keeps its own
 * set in Redis under a heartbeat and a TTL, so a crashed instance's markets
 * age out; in-process without Redis. The realtime layer tells it about this
 * instance's rooms (the `marketRoom` signal, hot-markets-plugin.ts).
 */

export interface RegistryOptions {
  /** How often an instance re-announces its markets, and how long an announcement lives. */
  heartbeatMs: number;
  entryTtlMs: number;
}

export interface HotMarketRegistry {
  /** A `market:<id>` room appeared on this instance. */
  add(marketId: string): void;
  /** It emptied. */
  remove(marketId: string): void;
  /** Markets with a live subscriber on any instance (this one's when Redis is down). */
  subscribedMarketIds(): Promise<string[]>;
  close(): Promise<void>;
}

export interface RegistryDeps {
  redis: Redis | undefined;
  /** Key prefix (the app's keyPrefix). */
  prefix: string;
  instanceId: string;
  log: FastifyBaseLogger;
  options: RegistryOptions;
}

export function createHotMarketRegistry(deps: RegistryDeps): HotMarketRegistry {
  const local = new Set<string>();
  const { redis } = deps;
  if (!redis) {
    return {
      add: (id) => void local.add(id),
      remove: (id) => void local.delete(id),
      subscribedMarketIds: () => Promise.resolve([...local]),
      close: () => Promise.resolve(),
    };
  }
  const instances = `${deps.prefix}hot:instances`;
  const mine = `${deps.prefix}hot:markets:${deps.instanceId}`;
  let warned = false;
  const onError = (err: unknown) => {
    if (!warned) deps.log.warn({ err }, 'hot markets: Redis unavailable, this instance counts only its own subscribers');
    warned = true;
  };
  const announce = () => {
    const ids = [...local];
    const m = redis.multi().del(mine);
    if (ids.length > 0) m.sadd(mine, ...ids).pexpire(mine, deps.options.entryTtlMs);
    m.zadd(instances, Date.now() + deps.options.entryTtlMs, deps.instanceId);
    m.exec().then(() => (warned = false), onError);
  };
  const timer = setInterval(announce, deps.options.heartbeatMs);
  timer.unref();
  return {
    add(id) {
      if (local.has(id)) return;
      local.add(id);
      redis
        .multi()
        .sadd(mine, id)
        .pexpire(mine, deps.options.entryTtlMs)
        .zadd(instances, Date.now() + deps.options.entryTtlMs, deps.instanceId)
        .exec()
        .catch(onError);
    },
    remove(id) {
      if (!local.delete(id)) return;
      redis.srem(mine, id).catch(onError);
    },
    async subscribedMarketIds() {
      try {
        const now = Date.now();
        const live = await redis.multi().zremrangebyscore(instances, '-inf', now).zrangebyscore(instances, now, '+inf').exec();
        const ids = (live?.[1]?.[1] as string[] | undefined) ?? [];
        const keys = ids.map((i) => `${deps.prefix}hot:markets:${i}`);
        const all = keys.length > 0 ? await redis.sunion(...keys) : [];
        return [...new Set([...all, ...local])];
      } catch (err) {
        onError(err);
        return [...local];
      }
    },
    async close() {
      clearInterval(timer);
      local.clear();
      await redis.multi().del(mine).zrem(instances, deps.instanceId).exec().catch(onError);
    },
  };
}
