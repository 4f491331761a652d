import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';

/**
 * Connection counting for the WebSocket limits of docs/api-contract.md §8 (total, per user,
 * per IP), plus ceilings per IPv6 /56 and /48 (one allocation holds hundreds of /64s, each
 * with its own per-IP allowance) and a share of the total that only signed-in sockets may
 * take (an anonymous flood never refuses a user).
 *
 * Every instance keeps its own sockets in memory. With Redis the decision is
 * shared: each scope is a sorted set of socket ids scored by an expiry time
 * (Redis clock). Admission is one Lua script (prune expired, check every
 * scope, add to every scope), disconnect removes the ids, and a heartbeat
 * pushes the expiry of this instance's live sockets forward. A crashed
 * instance stops heart-beating, so its sockets stop counting within
 * `entryTtlMs`: counters never leak. While Redis is unreachable, decisions
 * fall back to this instance's own counts (and heal at the next heartbeat).
 */

export type LimitScope = 'total' | 'user' | 'ip' | 'network';

export interface ConnectionLimits {
  total: number;
  perUser: number;
  perIp: number;
  per56: number;
  per48: number;
  /** Of `total`, how many anonymous sockets may never take. */
  reservedForUsers: number;
}

export type Admission = { ok: true } | { ok: false; scope: LimitScope };

interface Slot {
  userId?: string;
  ip: string;
  /** The IPv6 /56 and /48 of `ip` (none for IPv4). */
  net56?: string;
  net48?: string;
}

/** The total an admission may reach: anonymous sockets leave the reserve to signed-in ones. */
const totalFor = (limits: ConnectionLimits, slot: Pick<Slot, 'userId'>) =>
  slot.userId ? limits.total : Math.max(0, limits.total - limits.reservedForUsers);

export interface ConnectionRegistry {
  /** Counts a new socket if every scope has room; otherwise names the full scope. */
  admit(socketId: string, slot: Slot): Promise<Admission>;
  /** Counts an admitted anonymous socket against a user (it signed in with `auth`). */
  admitUser(socketId: string, userId: string): Promise<Admission>;
  /** Stops counting a socket (idempotent). */
  release(socketId: string): void;
  /** Stops counting every socket of this instance (shutdown). */
  releaseAll(): Promise<void>;
  close(): void;
}

export interface RedisRegistryOptions {
  redis: Redis;
  prefix: string;
  isUp: () => boolean;
  log: FastifyBaseLogger;
  heartbeatMs: number;
  entryTtlMs: number;
}

const ADMIT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local member = ARGV[2]
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if not redis.call('ZSCORE', key, member) and redis.call('ZCARD', key) >= tonumber(ARGV[i + 2]) then
    return i
  end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + ttl, member)
  redis.call('PEXPIRE', key, ttl)
end
return 0
`;

const TOUCH_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ttl)
return #ARGV - 1
`;

type RedisWithScripts = Redis & {
  wsAdmit(numKeys: number, ...args: (string | number)[]): Promise<number>;
  wsTouch(key: string, ttl: number, ...members: string[]): Promise<number>;
};

/** The in-process part: every instance knows its own sockets. */
class LocalCounts {
  readonly slots = new Map<string, Slot>();
  private readonly users = new Map<string, number>();
  private readonly ips = new Map<string, number>();
  private readonly nets = new Map<string, number>();

  check(limits: ConnectionLimits, slot: Slot): Admission {
    if (this.slots.size >= totalFor(limits, slot)) return { ok: false, scope: 'total' };
    if (slot.userId && (this.users.get(slot.userId) ?? 0) >= limits.perUser) return { ok: false, scope: 'user' };
    if ((this.ips.get(slot.ip) ?? 0) >= limits.perIp) return { ok: false, scope: 'ip' };
    if (slot.net56 && (this.nets.get(slot.net56) ?? 0) >= limits.per56) return { ok: false, scope: 'network' };
    if (slot.net48 && (this.nets.get(slot.net48) ?? 0) >= limits.per48) return { ok: false, scope: 'network' };
    return { ok: true };
  }

  add(socketId: string, slot: Slot) {
    this.slots.set(socketId, slot);
    if (slot.userId) bump(this.users, slot.userId, 1);
    bump(this.ips, slot.ip, 1);
    if (slot.net56) bump(this.nets, slot.net56, 1);
    if (slot.net48) bump(this.nets, slot.net48, 1);
  }

  bindUser(socketId: string, userId: string) {
    const slot = this.slots.get(socketId);
    if (!slot || slot.userId) return;
    slot.userId = userId;
    bump(this.users, userId, 1);
  }

  userCount(userId: string): number {
    return this.users.get(userId) ?? 0;
  }

  remove(socketId: string): Slot | undefined {
    const slot = this.slots.get(socketId);
    if (!slot) return undefined;
    this.slots.delete(socketId);
    if (slot.userId) bump(this.users, slot.userId, -1);
    bump(this.ips, slot.ip, -1);
    if (slot.net56) bump(this.nets, slot.net56, -1);
    if (slot.net48) bump(this.nets, slot.net48, -1);
    return slot;
  }
}

function bump(map: Map<string, number>, key: string, by: number) {
  const n = (map.get(key) ?? 0) + by;
  if (n > 0) map.set(key, n);
  else map.delete(key);
}

/** One instance, no Redis: plain counters. */
export function createMemoryRegistry(limits: ConnectionLimits): ConnectionRegistry {
  const local = new LocalCounts();
  return {
    async admit(socketId, slot) {
      const verdict = local.check(limits, slot);
      if (verdict.ok) local.add(socketId, slot);
      return verdict;
    },
    async admitUser(socketId, userId) {
      if (local.userCount(userId) >= limits.perUser) return { ok: false, scope: 'user' };
      local.bindUser(socketId, userId);
      return { ok: true };
    },
    release(socketId) {
      local.remove(socketId);
    },
    async releaseAll() {
      for (const id of [...local.slots.keys()]) local.remove(id);
    },
    close() {},
  };
}

/** Several instances: the counts live in Redis (see the module comment). */
export function createRedisRegistry(limits: ConnectionLimits, opts: RedisRegistryOptions): ConnectionRegistry {
  const local = new LocalCounts();
  const r = opts.redis as unknown as RedisWithScripts;
  if (!(opts.redis as unknown as Partial<RedisWithScripts>).wsAdmit) {
    opts.redis.defineCommand('wsAdmit', { lua: ADMIT_LUA });
    opts.redis.defineCommand('wsTouch', { numberOfKeys: 1, lua: TOUCH_LUA });
  }
  const totalKey = `${opts.prefix}total`;
  const userKey = (id: string) => `${opts.prefix}user:${id}`;
  const ipKey = (ip: string) => `${opts.prefix}ip:${ip}`;
  const netKey = (net: string) => `${opts.prefix}net:${net}`;
  const netsOf = (slot: Slot): Array<[string, number]> => [
    ...(slot.net56 ? [[netKey(slot.net56), limits.per56] as [string, number]] : []),
    ...(slot.net48 ? [[netKey(slot.net48), limits.per48] as [string, number]] : []),
  ];
  const keysOf = (slot: Slot) => [
    totalKey,
    ipKey(slot.ip),
    ...netsOf(slot).map(([key]) => key),
    ...(slot.userId ? [userKey(slot.userId)] : []),
  ];
  let warned = false;
  const degraded = (err: unknown) => {
    if (!warned) opts.log.warn({ err }, 'Redis unavailable: WebSocket limits count this instance only');
    warned = true;
  };

  async function shared(socketId: string, keys: string[], maxes: number[], scopes: LimitScope[]): Promise<Admission | undefined> {
    if (!opts.isUp()) return undefined;
    try {
      const failed = Number(await r.wsAdmit(keys.length, ...keys, opts.entryTtlMs, socketId, ...maxes));
      warned = false;
      return failed === 0 ? { ok: true } : { ok: false, scope: scopes[failed - 1] };
    } catch (err) {
      degraded(err);
      return undefined;
    }
  }

  async function touch() {
    if (!opts.isUp() || local.slots.size === 0) return;
    const byKey = new Map<string, string[]>();
    for (const [id, slot] of local.slots) {
      for (const key of keysOf(slot)) {
        let list = byKey.get(key);
        if (!list) byKey.set(key, (list = []));
        list.push(id);
      }
    }
    const pipeline = opts.redis.pipeline();
    for (const [key, ids] of byKey) {
      for (let i = 0; i < ids.length; i += 1000) {
        void (pipeline as unknown as RedisWithScripts).wsTouch(key, opts.entryTtlMs, ...ids.slice(i, i + 1000));
      }
    }
    try {
      await pipeline.exec();
    } catch (err) {
      degraded(err);
    }
  }
  const heartbeat = setInterval(() => void touch(), opts.heartbeatMs);
  heartbeat.unref();

  async function forget(entries: [string, Slot][]) {
    if (!opts.isUp() || entries.length === 0) return; // the entries expire on their own
    const pipeline = opts.redis.pipeline();
    for (const [id, slot] of entries) for (const key of keysOf(slot)) pipeline.zrem(key, id);
    await pipeline.exec().catch((err) => degraded(err));
  }

  return {
    async admit(socketId, slot) {
      const nets = netsOf(slot);
      const scopes: LimitScope[] = ['total', 'ip', ...nets.map(() => 'network' as const), ...(slot.userId ? (['user'] as const) : [])];
      const maxes = [totalFor(limits, slot), limits.perIp, ...nets.map(([, max]) => max), ...(slot.userId ? [limits.perUser] : [])];
      const verdict = (await shared(socketId, keysOf(slot), maxes, scopes)) ?? local.check(limits, slot);
      if (verdict.ok) local.add(socketId, slot);
      return verdict;
    },
    async admitUser(socketId, userId) {
      if (!local.slots.has(socketId)) return { ok: true };
      const verdict =
        (await shared(socketId, [userKey(userId)], [limits.perUser], ['user'])) ??
        (local.userCount(userId) >= limits.perUser ? { ok: false as const, scope: 'user' as const } : { ok: true as const });
      if (verdict.ok) local.bindUser(socketId, userId);
      return verdict;
    },
    release(socketId) {
      const slot = local.remove(socketId);
      if (slot) void forget([[socketId, slot]]);
    },
    async releaseAll() {
      const all = [...local.slots.entries()];
      for (const [id] of all) local.remove(id);
      await forget(all);
    },
    close() {
      clearInterval(heartbeat);
    },
  };
}
