import type { Redis } from 'ioredis';
import type { DbHandle } from '../../db/index.js';

/** docs/decisions.md §9: each dependency's state; `off` when REDIS_URL is unset. */
export interface Readiness {
  database: 'ok' | 'down';
  redis: 'ok' | 'down' | 'off';
}

const withTimeout = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('timeout')), ms).unref())]);

/**
 * Pings the database and, when configured, Redis (2 s each); nothing else decides readiness.
 * Only the database makes the service unready: with Redis down every instance serves on its
 * in-process fallbacks (docs/decisions.md §9).
 */
export async function checkReadiness(deps: { dbh: Pick<DbHandle, 'ping'>; redis: Pick<Redis, 'ping'> | undefined }): Promise<Readiness> {
  const [database, redis] = await Promise.all([
    withTimeout(deps.dbh.ping(), 2_000).then(
      () => 'ok' as const,
      () => 'down' as const,
    ),
    deps.redis
      ? withTimeout(deps.redis.ping(), 2_000).then(
          () => 'ok' as const,
          () => 'down' as const,
        )
      : Promise.resolve('off' as const),
  ]);
  return { database, redis };
}
