import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { FastifyInstance } from 'fastify';
import { RedisSlidingWindow } from '../src/lib/sliding-window.js';
import { buildTestApp, createTestDb } from './helpers/app.js';
import { REDIS_URL } from './helpers/env.js';

describe('Redis sliding window', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(REDIS_URL!);
  });
  afterAll(() => redis.disconnect());

  it('is shared and exact across clients', async () => {
    const prefix = `pbtest:${randomBytes(4).toString('hex')}:`;
    const a = new RedisSlidingWindow(redis, prefix);
    const other = new Redis(REDIS_URL!);
    const b = new RedisSlidingWindow(other, prefix);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).hit('ip', 60_000, 6)));
    expect(results.filter((r) => r.current <= 6)).toHaveLength(6);
    expect(results.filter((r) => r.current > 6)).toHaveLength(4);
    const ttl = await redis.pttl(`${prefix}ip`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    other.disconnect();
  });
});

describe('rate limits across instances', () => {
  const routes = (app: FastifyInstance) => {
    app.get('/api/v1/test/limited', { config: { public: true, rateLimit: { max: 3, timeWindow: 60_000 } } }, async () => ({ ok: true }));
  };
  it('is shared by two instances through Redis', async () => {
    const db = await createTestDb();
    const keyPrefix = `pbtest:${randomBytes(4).toString('hex')}:`;
    const a = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, { db, keyPrefix, extend: routes });
    const b = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, { db, keyPrefix, extend: routes });
    const h = { 'x-forwarded-for': '198.51.100.1' };
    const codes: number[] = [];
    for (const app of [a, b, a, b])
      codes.push((await app.app.inject({ method: 'GET', url: '/api/v1/test/limited', headers: h })).statusCode);
    expect(codes).toEqual([200, 200, 200, 429]);
    await a.close();
    await b.close();
    await db.close();
  });
});
