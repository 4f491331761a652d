import { randomBytes } from 'node:crypto';
import { base58 } from '@scure/base';
import type { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';

/** decisions.md §3.2: nonces live 5 minutes. */
export const NONCE_TTL_MS = 5 * 60 * 1000;

export interface NonceBinding {
  chain: string;
  address: string;
}

/**
 * Single-use sign-in nonces bound to (chain, address). With Redis every
 * instance can consume a nonce another one issued; `take` is atomic (GETDEL),
 * so of two attempts presenting one nonce exactly one gets its binding.
 */
export interface NonceStore {
  issue(binding: NonceBinding): Promise<{ nonce: string; expiresAt: Date }>;
  /** Removes the nonce and returns what it was bound to, or undefined if unknown/expired/used. */
  take(nonce: string): Promise<NonceBinding | undefined>;
  close(): void;
}

export interface NonceStoreDeps {
  redis: Redis | undefined;
  redisReady: () => boolean;
  keyPrefix: string;
  clock: () => Date;
  log: FastifyBaseLogger;
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
  let warned = false;
  const warnOnce = (err: unknown) => {
    if (warned) return;
    warned = true;
    deps.log.warn({ err: { message: (err as Error).message } }, 'nonce store: Redis failed, using the in-process store');
  };

  const takeLocal = (nonce: string): NonceBinding | undefined => {
    const entry = local.get(nonce);
    if (!entry) return undefined;
    local.delete(nonce);
    return entry.expiresAt > deps.clock().getTime() ? entry.binding : undefined;
  };

  return {
    async issue(binding) {
      const nonce = generateNonce();
      const expiresAt = new Date(deps.clock().getTime() + NONCE_TTL_MS);
      // The expiry travels with the value and is checked against the app clock on take;
      // Redis's own TTL (a little longer) only collects garbage.
      const value = `${expiresAt.getTime()}:${binding.chain}:${binding.address}`;
      if (deps.redis && deps.redisReady()) {
        try {
          await deps.redis.set(key(nonce), value, 'PX', NONCE_TTL_MS + 60_000);
          warned = false;
          return { nonce, expiresAt };
        } catch (err) {
          warnOnce(err);
        }
      }
      if (local.size >= maxLocal) {
        const oldest = local.keys().next().value;
        if (oldest !== undefined) local.delete(oldest);
      }
      local.set(nonce, { binding, expiresAt: expiresAt.getTime() });
      return { nonce, expiresAt };
    },

    async take(nonce) {
      if (!NONCE_SHAPE.test(nonce)) return undefined;
      if (deps.redis && deps.redisReady()) {
        try {
          const value = await deps.redis.getdel(key(nonce));
          if (value !== null) {
            const [expires, chain, ...rest] = value.split(':');
            if (Number(expires) <= deps.clock().getTime()) return undefined;
            return { chain, address: rest.join(':') };
          }
        } catch (err) {
          warnOnce(err);
        }
      }
      // Also issued while Redis was unreachable, or no Redis at all.
      return takeLocal(nonce);
    },

    close() {
      clearInterval(sweeper);
      local.clear();
    },
  };
}
