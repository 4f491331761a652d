import type { FastifyInstance } from 'fastify';

const withTimeout = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('timeout')), ms).unref())]);

export async function checkReadiness(app: FastifyInstance): Promise<Record<string, 'ok' | 'failed' | 'disabled'>> {
  const [database, redis] = await Promise.all([
    withTimeout(app.dbh.ping(), 2_000).then(
      () => 'ok' as const,
      () => 'failed' as const,
    ),
    app.redisClient
      ? withTimeout(app.redisClient.ping(), 2_000).then(
          () => 'ok' as const,
          () => 'failed' as const,
        )
      : Promise.resolve('disabled' as const),
  ]);
  return { database, redis };
}
