import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { FastifyInstance } from 'fastify';
import { MemorySlidingWindow, RedisSlidingWindow, FallbackSlidingWindow } from '../src/lib/sliding-window.js';
import { buildTestApp, type TestApp } from './helpers/app.js';

describe('in-process sliding window', () => {
  it('counts hits in a window that slides, not resets', () => {
    let now = 1_000_000;
    const w = new MemorySlidingWindow(100, () => now);
    expect(w.hitSync('k', 1000, 3).current).toBe(1);
    now += 400;
    expect(w.hitSync('k', 1000, 3).current).toBe(2);
    now += 400;
    expect(w.hitSync('k', 1000, 3).current).toBe(3);
    const refused = w.hitSync('k', 1000, 3);
    expect(refused.current).toBe(4);
    expect(refused.ttlMs).toBe(200); // the first hit leaves the window in 200 ms
    now += 201; // a fixed window started at the first hit would now reset all three
    expect(w.hitSync('k', 1000, 3).current).toBe(3); // only one slot freed
    expect(w.hitSync('k', 1000, 3).current).toBe(4);
    w.close();
  });

  it('refused hits are not counted', () => {
    let now = 0;
    const w = new MemorySlidingWindow(100, () => now);
    for (let i = 0; i < 10; i++) w.hitSync('k', 1000, 2);
    now = 1001;
    expect(w.hitSync('k', 1000, 2).current).toBe(1);
    w.close();
  });

  it('keeps memory bounded under many keys', () => {
    const w = new MemorySlidingWindow(50);
    for (let i = 0; i < 500; i++) w.hitSync(`k${i}`, 60_000, 5);
    expect((w as unknown as { logs: Map<string, number[]> }).logs.size).toBeLessThanOrEqual(50);
    w.close();
  });
});

describe('fallback when Redis is unreachable', () => {
  it('limits in process and recovers', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    dead.on('error', () => {});
    const warnings: string[] = [];
    const log = { warn: (_o: unknown, m: string) => warnings.push(m), info: () => {} } as never;
    const w = new FallbackSlidingWindow(new RedisSlidingWindow(dead, 'x:'), new MemorySlidingWindow(), log, () => true);
    const r = await Promise.all([1, 2, 3].map(() => w.hit('k', 60_000, 2)));
    expect(r.map((x) => x.current).sort()).toEqual([1, 2, 3]);
    expect(warnings).toHaveLength(1);
    dead.disconnect();
  });
});

describe('rate-limited routes', () => {
  let t: TestApp;
  const routes = (app: FastifyInstance) => {
    app.get('/api/v1/test/limited', { config: { public: true, rateLimit: { max: 3, timeWindow: 60_000 } } }, async () => ({ ok: true }));
    app.get('/api/v1/test/other', { config: { public: true, rateLimit: { max: 3, timeWindow: 60_000 } } }, async () => ({ ok: true }));
  };
  beforeAll(async () => {
    t = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, { extend: routes });
  });
  afterAll(async () => t?.close());

  it('answers 429 problem+json with Retry-After and RateLimit-* headers', async () => {
    const h = { 'x-forwarded-for': '203.0.113.7' };
    for (let i = 1; i <= 3; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/limited', headers: h });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      expect(res.headers['ratelimit-remaining']).toBe(String(3 - i));
    }
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/limited', headers: h });
    expect(res.statusCode).toBe(429);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
    expect(res.json()).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(res.headers['ratelimit-remaining']).toBe('0');
    expect(res.headers['ratelimit-reset']).toBeDefined();
  });

  it('keys by client IP (honouring TRUST_PROXY) and by route', async () => {
    const other = await t.app.inject({ method: 'GET', url: '/api/v1/test/limited', headers: { 'x-forwarded-for': '203.0.113.8' } });
    expect(other.statusCode).toBe(200);
    const otherRoute = await t.app.inject({ method: 'GET', url: '/api/v1/test/other', headers: { 'x-forwarded-for': '203.0.113.7' } });
    expect(otherRoute.statusCode).toBe(200);
  });
});
