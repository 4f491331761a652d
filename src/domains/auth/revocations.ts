import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';

/**
 * docs/decisions.md §10.6: ended sessions reach access tokens and sockets on
 * every instance within 2 s, without a database query per bearer request.
 *
 * Each instance keeps the ended session ids (`sid`) in memory for as long as
 * an access token naming them can still be presented (15 minutes plus a
 * margin); the bearer guard asks this map, synchronously. Ending a session
 * adds its id here at once and to a Redis sorted set (score = Redis time);
 * every instance polls that set for ids newer than the last it saw, well
 * inside the 2 s bound, and tells its listeners (the realtime plugin drops
 * the session's sockets). Polling rather than pub/sub: an instance that
 * starts, or whose Redis connection drops for a while, catches up from the
 * set instead of missing messages. Without Redis it holds on this instance.
 */
export interface RevocationStore {
  /** Whether access tokens of this session must be refused (O(1), in memory). */
  isRevoked(sid: string): boolean;
  /** Ends these sessions for every instance (local at once; Redis best effort, retried). */
  revoke(sids: readonly string[]): Promise<void>;
  /** Called with every newly ended session id this instance learns of (its own included). */
  onRevoked(listener: (sids: string[]) => void): () => void;
  /** Loads the ids ended recently and starts polling. */
  start(): Promise<void>;
  close(): void;
}

export interface RevocationStoreOptions {
  redis?: Redis;
  redisReady?: () => boolean;
  keyPrefix: string;
  log: FastifyBaseLogger;
  /** How long an ended id is kept: the access-token lifetime plus a margin. */
  retainMs: number;
  pollMs?: number;
}

type RedisWithScripts = Redis & {
  revokeSids(key: string, retainMs: number, ...sids: string[]): Promise<number>;
  revokedSince(key: string, sinceMs: number, retainMs: number): Promise<string[]>;
};

// Adds the ids at the Redis clock and drops ids past the retention.
const REVOKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return now
`;

// Ids scored at or after ARGV[1] (Redis ms), and the Redis clock now, as the last element.
const SINCE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since = tonumber(ARGV[1])
if since < now - tonumber(ARGV[2]) then since = now - tonumber(ARGV[2]) end
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], since, '+inf')
ids[#ids + 1] = tostring(now)
return ids
`;

export function createRevocationStore(opts: RevocationStoreOptions): RevocationStore {
  const local = new Map<string, number>(); // sid → forget after (local ms)
  const listeners = new Set<(sids: string[]) => void>();
  const pending = new Set<string>(); // ended here while Redis did not answer
  const key = `${opts.keyPrefix}auth:revoked-sessions`;
  const redis = opts.redis as RedisWithScripts | undefined;
  if (redis && !(redis as Partial<RedisWithScripts>).revokeSids) {
    redis.defineCommand('revokeSids', { numberOfKeys: 1, lua: REVOKE_LUA });
    redis.defineCommand('revokedSince', { numberOfKeys: 1, lua: SINCE_LUA });
  }
  const up = () => !!redis && (opts.redisReady?.() ?? true);
  let since = 0; // Redis ms of the last poll, minus an overlap
  let timer: NodeJS.Timeout | undefined;
  let warned = false;
  let polling = false;

  const warn = (err: unknown) => {
    if (!warned) opts.log.warn({ err }, 'Redis unavailable: ended sessions reach this instance only until it answers');
    warned = true;
  };

  function learn(sids: readonly string[]): string[] {
    const fresh: string[] = [];
    const until = Date.now() + opts.retainMs;
    for (const sid of sids) {
      if (!local.has(sid)) fresh.push(sid);
      local.set(sid, until);
    }
    if (fresh.length > 0) {
      for (const l of listeners) {
        try {
          l(fresh);
        } catch (err) {
          opts.log.error({ err }, 'session revocation listener failed');
        }
      }
    }
    return fresh;
  }

  function prune() {
    const now = Date.now();
    for (const [sid, until] of local) if (until <= now) local.delete(sid);
  }

  async function push(sids: string[]) {
    if (!redis || sids.length === 0) return;
    if (!up()) {
      for (const s of sids) pending.add(s);
      return;
    }
    try {
      await redis.revokeSids(key, opts.retainMs, ...sids);
      warned = false;
    } catch (err) {
      for (const s of sids) pending.add(s);
      warn(err);
    }
  }

  async function poll() {
    if (!redis || polling || !up()) return;
    polling = true;
    try {
      if (pending.size > 0) {
        const retry = [...pending];
        pending.clear();
        await push(retry);
      }
      const out = await redis.revokedSince(key, since, opts.retainMs);
      const now = Number(out.pop());
      // Overlap one second: an id added in the same millisecond as this read is seen next time.
      since = now - 1_000;
      learn(out);
      warned = false;
    } catch (err) {
      warn(err);
    } finally {
      polling = false;
    }
  }

  return {
    isRevoked(sid) {
      const until = local.get(sid);
      return until !== undefined && until > Date.now();
    },
    async revoke(sids) {
      if (sids.length === 0) return;
      learn(sids);
      await push([...sids]);
    },
    onRevoked(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async start() {
      if (redis) {
        since = 0;
        await poll();
        timer = setInterval(() => {
          prune();
          void poll();
        }, opts.pollMs ?? 500);
      } else {
        timer = setInterval(prune, 60_000);
      }
      timer.unref();
    },
    close() {
      if (timer) clearInterval(timer);
      listeners.clear();
      local.clear();
    },
  };
}
