import type { Redis } from 'ioredis';
import type { DbHandle } from '../../db/index.js';

export type Readiness = Record<'database' | 'redis', 'ok' | 'failed' | 'disabled'>;

const withTimeout = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('timeout')), ms).unref())]);

/** Pings the database and, when configured, Redis (2 s each); nothing else decides readiness. */
export async function checkReadiness(deps: { dbh: Pick<DbHandle, 'ping'>; redis: Pick<Redis, 'ping'> | undefined }): Promise<Readiness> {
  const [database, redis] = await Promise.all([
    withTimeout(deps.dbh.ping(), 2_000).then(
      () => 'ok' as const,
      () => 'failed' as const,
    ),
    deps.redis
      ? withTimeout(deps.redis.ping(), 2_000).then(
          () => 'ok' as const,
          () => 'failed' as const,
        )
      : Promise.resolve('disabled' as const),
  ]);
  return { database, redis };
}
