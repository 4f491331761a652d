import { randomBytes } from 'node:crypto';
import { base58 } from '@scure/base';
import type { FallbackSlidingWindow, GuardedOp, HitResult } from '../../lib/sliding-window.js';

/** docs/decisions.md §3.2: nonces live 5 minutes. */
export const NONCE_TTL_MS = 5 * 60 * 1000;

export interface NonceBinding {
  chain: string;
  address: string;
  /** The domain and URI of the ready-to-sign message issued with the nonce (docs/decisions.md §10.7). */
  domain: string;
  uri: string;
}

/** What `take` answers: the binding and when the nonce expires (ms). */
export interface TakenNonce extends NonceBinding {
  expiresAt: number;
}

/** The rate limit a nonce operation counts against (a sliding window key, docs/api-contract.md §8). */
export interface NonceLimit {
  key: string;
  windowMs: number;
  max: number;
}

/**
 * The limit's hit, and the operation's result. When the hit was refused
 * (`hit.current > max`) nothing was issued or taken and `value` is undefined.
 */
export interface WithHit<T> {
  hit: HitResult;
  value: T;
}

/**
 * Single-use sign-in nonces bound to (chain, address). With Redis every
 * instance can consume a nonce another one issued; `take` is atomic (GETDEL),
 * so of two attempts presenting one nonce exactly one gets its binding.
 *
 * Each operation carries the route's rate limit: with Redis, the limit's hit
 * and the nonce command run as one script (one round trip, the hot path of
 * every sign-in); a refused request neither issues nor consumes a nonce.
 */
export interface NonceStore {
  issue(binding: NonceBinding, limit: NonceLimit): Promise<WithHit<{ nonce: string; expiresAt: Date } | undefined>>;
  /** Removes the nonce and returns what it was bound to, or undefined if unknown/expired/used. */
  take(nonce: string, limit: NonceLimit): Promise<WithHit<TakenNonce | undefined>>;
  close(): void;
}

export interface NonceStoreDeps {
  keyPrefix: string;
  clock: () => Date;
  /**
   * The shared rate-limit window: its Redis (when set and answering) also
   * holds the nonces; otherwise both fall back to this instance, and the
   * limiter says so once in the log.
   */
  limiter: FallbackSlidingWindow;
  /** Bound on the in-process map (rate limits keep it far below this). */
  maxLocal?: number;
}

/** 24 random bytes = 192 bits, base58: alphanumeric, 32-33 characters. */
export function generateNonce(): string {
  return base58.encode(randomBytes(24));
}

const NONCE_SHAPE = /^[1-9A-HJ-NP-Za-km-z]{20,64}$/;

export function createNonceStore(deps: NonceStoreDeps): NonceStore {
  const local = new Map<string, { binding: NonceBinding; expiresAt: number }>();
  const maxLocal = deps.maxLocal ?? 100_000;
  const sweeper = setInterval(() => {
    const now = deps.clock().getTime();
    for (const [k, v] of local) if (v.expiresAt <= now) local.delete(k);
  }, 30_000);
  sweeper.unref();
  const key = (nonce: string) => `${deps.keyPrefix}auth:nonce:${nonce}`;

  const takeLocal = (nonce: string): TakenNonce | undefined => {
    const entry = local.get(nonce);
    if (!entry) return undefined;
    local.delete(nonce);
    return entry.expiresAt > deps.clock().getTime() ? { ...entry.binding, expiresAt: entry.expiresAt } : undefined;
  };

  // expiresAt LF chain LF address LF domain LF uri: none of them can hold a line feed.
  const encode = (expiresAt: number, b: NonceBinding) => [expiresAt, b.chain, b.address, b.domain, b.uri].join('\n');
  const parse = (value: string): TakenNonce | undefined => {
    const [expires, chain, address, domain, uri] = value.split('\n');
    const expiresAt = Number(expires);
    if (!(expiresAt > deps.clock().getTime()) || uri === undefined) return undefined;
    return { chain, address, domain, uri, expiresAt };
  };

  /**
   * The limit's hit fused with the Redis command when Redis answers;
   * otherwise the hit alone (the limiter falls back to this instance) and
   * `undefined` for the command, which the caller then runs in process.
   */
  const guarded = async (limit: NonceLimit, op: GuardedOp) => {
    const r = await deps.limiter.hitThen(limit.key, limit.windowMs, limit.max, op);
    if (r) return { hit: r.hit, redis: r.value };
    return { hit: await deps.limiter.hit(limit.key, limit.windowMs, limit.max), redis: undefined };
  };

  return {
    async issue(binding, limit) {
      const nonce = generateNonce();
      const expiresAt = new Date(deps.clock().getTime() + NONCE_TTL_MS);
      // The expiry travels with the value and is checked against the app clock on take;
      // Redis's own TTL (a little longer) only collects garbage.
      const value = encode(expiresAt.getTime(), binding);
      const { hit, redis } = await guarded(limit, { kind: 'set', key: key(nonce), value, px: NONCE_TTL_MS + 60_000 });
      if (hit.current > limit.max) return { hit, value: undefined };
      if (redis === undefined) {
        if (local.size >= maxLocal) {
          const oldest = local.keys().next().value;
          if (oldest !== undefined) local.delete(oldest);
        }
        local.set(nonce, { binding, expiresAt: expiresAt.getTime() });
      }
      return { hit, value: { nonce, expiresAt } };
    },

    async take(nonce, limit) {
      if (!NONCE_SHAPE.test(nonce)) {
        const hit = await deps.limiter.hit(limit.key, limit.windowMs, limit.max);
        return { hit, value: undefined };
      }
      const { hit, redis } = await guarded(limit, { kind: 'getdel', key: key(nonce) });
      if (hit.current > limit.max) return { hit, value: undefined };
      if (redis) return { hit, value: parse(redis) };
      // Not in Redis (or no Redis): it may have been issued while Redis was unreachable.
      return { hit, value: takeLocal(nonce) };
    },

    close() {
      clearInterval(sweeper);
      local.clear();
    },
  };
}
