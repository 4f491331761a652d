import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';

/**
 * Sliding-window-log rate limiting. A hit is counted only when it is allowed;
 * `current > max` means "refuse", and `ttlMs` is how long until the oldest
 * counted hit leaves the window (the honest Retry-After).
 *
 * With Redis the log is a sorted set updated by one Lua script (atomic, Redis
 * clock), so every instance shares the limit. Without Redis, or while Redis is
 * unreachable, an in-process log with the same semantics answers instead.
 */
export interface HitResult {
  current: number;
  ttlMs: number;
}

export interface SlidingWindow {
  hit(key: string, windowMs: number, max: number): Promise<HitResult>;
  reset(key: string): Promise<void>;
}

export class MemorySlidingWindow implements SlidingWindow {
  private readonly logs = new Map<string, number[]>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly maxKeys = 200_000,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), 30_000);
    this.sweeper.unref();
  }

  private prune(key: string, windowMs: number): number[] {
    const t = this.now();
    const log = this.logs.get(key);
    if (!log) return [];
    let i = 0;
    while (i < log.length && log[i] <= t - windowMs) i++;
    if (i > 0) log.splice(0, i);
    return log;
  }

  async hit(key: string, windowMs: number, max: number): Promise<HitResult> {
    return this.hitSync(key, windowMs, max);
  }

  hitSync(key: string, windowMs: number, max: number): HitResult {
    const t = this.now();
    let log = this.prune(key, windowMs);
    if (!this.logs.has(key)) {
      if (this.logs.size >= this.maxKeys) {
        // Evict the oldest-inserted key: bounded memory under a flood of distinct keys.
        const first = this.logs.keys().next().value;
        if (first !== undefined) this.logs.delete(first);
      }
      log = [];
      this.logs.set(key, log);
    }
    let current: number;
    if (log.length < max) {
      log.push(t);
      current = log.length;
    } else {
      current = max + 1;
    }
    const ttlMs = log.length ? Math.max(1, log[0] + windowMs - t) : windowMs;
    return { current, ttlMs };
  }

  async reset(key: string): Promise<void> {
    this.logs.delete(key);
  }

  private sweep() {
    const t = this.now();
    for (const [key, log] of this.logs) {
      // Logs hold at most a window's worth; an hour covers every window we use.
      if (log.length === 0 || log[log.length - 1] < t - 3_600_000) this.logs.delete(key);
    }
  }

  close() {
    clearInterval(this.sweeper);
  }
}

// The hit itself: leaves n (the count, max + 1 when refused) and ttl.
const HIT_BODY = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local win = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - win)
local n = redis.call('ZCARD', KEYS[1])
if n < max then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  n = n + 1
else
  n = max + 1
end
redis.call('PEXPIRE', KEYS[1], win)
local o = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local ttl = win
if o[2] then ttl = tonumber(o[2]) + win - now end
if ttl < 1 then ttl = 1 end
`;

const HIT_LUA = `${HIT_BODY}
return {n, ttl}
`;

// A hit and, only when it is allowed, the one command it guards on KEYS[2]:
// SET value PX ms, or GETDEL. One round trip instead of two, and a refused
// request never touches the guarded key.
const HIT_THEN_LUA = `${HIT_BODY}
local r = false
if n <= max then
  if ARGV[4] == 'set' then
    redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6])
    r = 'OK'
  else
    r = redis.call('GETDEL', KEYS[2])
  end
end
return {n, ttl, r}
`;

/** The command a hit guards (hitThen): store a value with a TTL, or take one. */
export type GuardedOp = { kind: 'set'; key: string; value: string; px: number } | { kind: 'getdel'; key: string };

type RedisWithScripts = Redis & {
  slidingHit(key: string, windowMs: number, max: number, member: string): Promise<[number, number]>;
  slidingHitThen(
    key: string,
    guarded: string,
    windowMs: number,
    max: number,
    member: string,
    ...op: string[]
  ): Promise<[number, number, string | null]>;
};

export class RedisSlidingWindow implements SlidingWindow {
  private readonly redis: RedisWithScripts;
  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    if (!(redis as unknown as Partial<RedisWithScripts>).slidingHit) {
      redis.defineCommand('slidingHit', { numberOfKeys: 1, lua: HIT_LUA });
      redis.defineCommand('slidingHitThen', { numberOfKeys: 2, lua: HIT_THEN_LUA });
    }
    this.redis = redis as unknown as RedisWithScripts;
  }

  async hit(key: string, windowMs: number, max: number): Promise<HitResult> {
    const [current, ttlMs] = await this.redis.slidingHit(this.prefix + key, windowMs, max, randomUUID());
    return { current: Number(current), ttlMs: Number(ttlMs) };
  }

  /**
   * A hit and the operation it guards, atomically in one round trip; the
   * operation runs only when the hit is allowed (value: null otherwise, or
   * when GETDEL found nothing). The guarded key is used as given (no prefix).
   */
  async hitThen(key: string, windowMs: number, max: number, op: GuardedOp): Promise<{ hit: HitResult; value: string | null }> {
    const args = op.kind === 'set' ? ['set', op.value, String(op.px)] : ['getdel'];
    const [current, ttlMs, value] = await this.redis.slidingHitThen(this.prefix + key, op.key, windowMs, max, randomUUID(), ...args);
    return { hit: { current: Number(current), ttlMs: Number(ttlMs) }, value: value ?? null };
  }

  async reset(key: string): Promise<void> {
    await this.redis.del(this.prefix + key);
  }
}

/**
 * Redis when it answers, the in-process log when it does not: the service keeps
 * limiting (per instance) through a Redis outage, says so once in the log, and
 * goes back to the shared limit when Redis returns.
 */
export class FallbackSlidingWindow implements SlidingWindow {
  private degraded = false;
  constructor(
    private readonly primary: SlidingWindow | undefined,
    private readonly fallback: MemorySlidingWindow,
    private readonly log: FastifyBaseLogger,
    private readonly isUp: () => boolean = () => true,
  ) {}

  private async run<T>(fn: (w: SlidingWindow) => Promise<T>): Promise<T> {
    if (this.primary && this.isUp()) {
      try {
        const value = await fn(this.primary);
        this.markUp();
        return value;
      } catch (err) {
        this.markDegraded(err);
      }
    } else if (this.primary) {
      this.markDegraded(new Error('Redis connection is not ready'));
    }
    return fn(this.fallback);
  }

  private markUp() {
    if (this.degraded) {
      this.degraded = false;
      this.log.info('rate limiting is shared through Redis again');
    }
  }

  private markDegraded(err: unknown) {
    if (!this.degraded) {
      this.degraded = true;
      this.log.warn({ err }, 'Redis unavailable: rate limits (and sign-in nonces) fall back to this instance only');
    }
  }

  hit(key: string, windowMs: number, max: number) {
    return this.run((w) => w.hit(key, windowMs, max));
  }

  /**
   * The hit and a guarded Redis command in one round trip, when the shared
   * (Redis) window is up; undefined when it is not, and the caller then takes
   * the hit with hit() (the in-process window) and runs its operation locally.
   */
  async hitThen(key: string, windowMs: number, max: number, op: GuardedOp): Promise<{ hit: HitResult; value: string | null } | undefined> {
    if (!(this.primary instanceof RedisSlidingWindow)) return undefined;
    if (!this.isUp()) {
      this.markDegraded(new Error('Redis connection is not ready'));
      return undefined;
    }
    try {
      const r = await this.primary.hitThen(key, windowMs, max, op);
      this.markUp();
      return r;
    } catch (err) {
      this.markDegraded(err);
      return undefined;
    }
  }
  reset(key: string) {
    return this.run((w) => w.reset(key));
  }
}
