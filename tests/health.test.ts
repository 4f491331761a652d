import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { buildTestApp, type TestApp } from './helpers/app.js';

describe('health', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => t?.close());

  it('live → 200', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health/live' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('ready → 200 with each check', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', database: 'ok', redis: t.redis ? 'ok' : 'off' });
  });

  it('ready → 200 degraded when Redis is configured but down (decisions §9): a shared outage keeps instances in the balancer', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    dead.on('error', () => {});
    const d = await buildTestApp({ REDIS_URL: 'redis://127.0.0.1:1' }, { db: t.db, redis: dead });
    const res = await d.app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ status: 'degraded', database: 'ok', redis: 'down' });
    const live = await d.app.inject({ method: 'GET', url: '/health/live' });
    expect(live.statusCode).toBe(200);
    await d.close();
    dead.disconnect();
  });
});
