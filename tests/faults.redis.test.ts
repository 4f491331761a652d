import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, type TestApp } from './helpers/app.js';
import { startOwnRedis, type OwnRedis } from './helpers/services.js';
import { signIn, solanaWallet } from './support/users.js';

describe('Redis down and back', () => {
  let redis: OwnRedis;
  let t: TestApp;
  const warnings: string[] = [];
  beforeAll(async () => {
    redis = await startOwnRedis();
    const stream = {
      write: (line: string) => {
        const o = JSON.parse(line);
        if (o.level >= 40) warnings.push(o.msg);
      },
    };
    t = await buildTestApp(
      { REDIS_URL: redis.url, TRUST_PROXY: '127.0.0.1' },
      {
        redis: undefined, // let the app open (and reconnect) its own client
        logger: { level: 'warn', stream } as never,
        extend: (app: FastifyInstance) => {
          app.get('/api/v1/test/limited', { config: { public: true, rateLimit: { max: 3, timeWindow: 60_000 } } }, async () => ({
            ok: true,
          }));
        },
      },
    );
  }, 30_000);
  afterAll(async () => {
    await t?.close();
    await redis?.stop();
  });

  it('keeps serving with in-process limits, says so, and shares limits again when Redis returns', async () => {
    const hit = (ip: string) => t.app.inject({ method: 'GET', url: '/api/v1/test/limited', headers: { 'x-forwarded-for': ip } });
    expect((await hit('192.0.2.1')).statusCode).toBe(200);
    const probe = new Redis(redis.url);
    expect((await probe.keys(`${t.keyPrefix}rl:*`)).length).toBe(1);
    probe.disconnect();

    await redis.stop();
    for (let i = 0; i < 20 && t.app.redisReady(); i++) await new Promise((r) => setTimeout(r, 50));
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await hit('192.0.2.2')).statusCode);
    expect(codes).toEqual([200, 200, 200, 429]); // still limited, per instance
    // Sign-in (nonce and limit fused in one Redis script when Redis answers) still works, in process.
    expect((await signIn(t.app, await solanaWallet())).statusCode).toBe(201);
    expect(warnings.some((w) => /fall back/.test(w))).toBe(true);
    const ready = await t.app.inject({ method: 'GET', url: '/health/ready' });
    // decisions §9: Redis down is `degraded` (200), never 503.
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'degraded', database: 'ok', redis: 'down' });
    expect((await t.app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);

    await redis.start();
    for (let i = 0; i < 100 && !t.app.redisReady(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(t.app.redisReady()).toBe(true);
    expect((await hit('192.0.2.3')).statusCode).toBe(200);
    const again = new Redis(redis.url);
    expect((await again.keys(`${t.keyPrefix}rl:*`)).length).toBe(1); // counted in Redis again
    again.disconnect();
    // And through Redis again: the nonce and both sign-in limits are there.
    expect((await signIn(t.app, await solanaWallet())).statusCode).toBe(201);
    const after = new Redis(redis.url);
    expect((await after.keys(`${t.keyPrefix}rl:*`)).length).toBe(3);
    after.disconnect();
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
  }, 60_000);
});
