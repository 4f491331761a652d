import Fastify from 'fastify';
import { serializerCompiler as zodSerializer, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBodyCache, type BodyCacheOptions, type CachedResponse } from '../src/lib/body-cache.js';
import { notCacheable, serveCached } from '../src/lib/serve-cached.js';
import { cachedBody } from '../src/lib/serializer.js';
import { serializerCompiler } from '../src/lib/serializer.js';

/**
 * The one per-instance body cache (src/lib/body-cache.ts) behind the events reads, the leaderboard's
 * pages and the first notification pages, and serveCached (src/lib/serve-cached.ts), which answers a
 * route from it.
 */

const res = (text: string, lastModified?: string): CachedResponse => ({ body: cachedBody(text), lastModified });
/** A kept body as text (the cache keeps bytes), or undefined on a miss. */
const text = (r: CachedResponse | undefined) => r?.body.toString('utf8');
const make = (over: Partial<BodyCacheOptions> = {}) => createBodyCache({ ttlMs: 1_000, maxBytes: 1_000, ...over });

describe('createBodyCache', () => {
  it('keeps a body per (group, key) and drops every body of a group on invalidate', () => {
    const c = make();
    c.store(c.begin('u1'), 'a', res('{"a":1}'));
    c.store(c.begin('u1'), 'b', res('{"b":1}'));
    c.store(c.begin('u2'), 'a', res('{"a":2}'));
    expect([text(c.peek('u1', 'a')), text(c.peek('u1', 'b')), text(c.peek('u2', 'a')), text(c.peek('u2', 'b'))]).toEqual([
      '{"a":1}',
      '{"b":1}',
      '{"a":2}',
      undefined,
    ]);
    c.invalidate('u1');
    expect([text(c.peek('u1', 'a')), text(c.peek('u1', 'b')), text(c.peek('u2', 'a'))]).toEqual([undefined, undefined, '{"a":2}']);
    expect(c.size).toBe(1);
  });

  it('does not keep what a read in flight during an invalidation read (generation guard)', () => {
    const c = make();
    const ticket = c.begin('u1');
    c.invalidate('u1'); // a change committed while the read ran
    expect(c.store(ticket, 'a', res('{"stale":true}'))).toBe(false);
    expect(c.peek('u1', 'a')).toBeUndefined();
    // A read begun after the change keeps its body.
    c.store(c.begin('u1'), 'a', res('{"fresh":true}'));
    expect(text(c.peek('u1', 'a'))).toBe('{"fresh":true}');
    // clear() is an invalidation of every group.
    const t2 = c.begin('u2');
    c.clear();
    c.store(t2, 'a', res('{"stale":true}'));
    expect(c.peek('u2', 'a')).toBeUndefined();
  });

  it('expires a body ttlMs after its read began; holds at most the byte budget, least recently filled group first', () => {
    let now = 0;
    const c = make({ now: () => now, maxBytes: 25 });
    c.store(c.begin('u1'), 'a', res('1234567890'));
    now = 500;
    c.store(c.begin('u2'), 'a', res('1234567890'));
    expect(c.bytes).toBe(20);
    c.store(c.begin('u3'), 'a', res('1234567890')); // 30 > 25: u1 leaves
    expect([text(c.peek('u1', 'a')), text(c.peek('u2', 'a')), text(c.peek('u3', 'a'))]).toEqual([undefined, '1234567890', '1234567890']);
    expect(c.bytes).toBe(20);
    c.store(c.begin('u4'), 'a', res('x'.repeat(26))); // alone over the budget: not kept
    expect(c.peek('u4', 'a')).toBeUndefined();
    const slow = c.begin('u5'); // a read that began at 500 ...
    now = 1_400;
    c.store(slow, 'a', res('1')); // ... and ended at 1,400: its body is as old as its start
    now = 1_600; // u2 and u3 were stored at 500: past 1 s
    expect([c.peek('u2', 'a'), c.peek('u3', 'a'), c.peek('u5', 'a')]).toEqual([undefined, undefined, undefined]);
  });

  it('is bounded by a byte budget and a count in one group: the oldest bodies leave, an oversized one is not kept', () => {
    const c = createBodyCache({ ttlMs: 60_000, maxEntries: 1_000, maxBytes: 10_000 });
    for (let i = 0; i < 20; i++) c.store(c.begin(''), `k${i}`, res('x'.repeat(3_000)));
    expect(c.bytes).toBe(9_000);
    expect(c.peek('', 'k19')).toBeDefined();
    expect(c.peek('', 'k0')).toBeUndefined();
    c.store(c.begin(''), 'huge', res('y'.repeat(20_000)));
    expect(c.peek('', 'huge')).toBeUndefined();
    c.store(c.begin(''), 'k19', res('z')); // replacing a body accounts for the old one
    expect(c.bytes).toBe(6_001);
    c.clear();
    expect([c.bytes, c.size]).toEqual([0, 0]);

    const counted = createBodyCache({ ttlMs: 60_000, maxEntries: 2, maxBytes: 1_000_000 });
    for (const k of ['a', 'b', 'c']) counted.store(counted.begin(''), k, res(k));
    expect([counted.peek('', 'a'), text(counted.peek('', 'b')), text(counted.peek('', 'c'))]).toEqual([undefined, 'b', 'c']);
  });

  it("holds at most one group's share: one user's many pages evict only that user's oldest, never everyone else's (issue #34)", () => {
    const c = make({ maxBytes: 1_000, maxGroupBytes: 100 });
    c.store(c.begin('victim'), 'a', res('v'.repeat(50)));
    for (let i = 0; i < 50; i++) c.store(c.begin('hog'), `k${i}`, res('h'.repeat(40)));
    expect(text(c.peek('victim', 'a'))).toBe('v'.repeat(50));
    expect([c.peek('hog', 'k47'), c.peek('hog', 'k48') !== undefined, c.peek('hog', 'k49') !== undefined]).toEqual([undefined, true, true]);
    expect(c.bytes).toBe(130);
    c.store(c.begin('hog'), 'big', res('h'.repeat(101))); // over the share alone: not kept
    expect(c.peek('hog', 'big')).toBeUndefined();
  });

  it('counts bytes, not characters, and keeps a body as its UTF-8 bytes with its Last-Modified', () => {
    const c = make({ maxBytes: 25 });
    c.store(c.begin('u1'), 'a', res('{"t":"élan"}', 'Thu, 26 Nov 2026 05:28:17 GMT')); // 12 characters, 13 bytes
    expect(Buffer.isBuffer(c.peek('u1', 'a')!.body)).toBe(true);
    expect(c.peek('u1', 'a')).toMatchObject({ lastModified: 'Thu, 26 Nov 2026 05:28:17 GMT' });
    expect(c.bytes).toBe(13);
    c.store(c.begin('u2'), 'a', res('é'.repeat(13))); // 13 characters, 26 bytes: over the budget alone
    expect(c.peek('u2', 'a')).toBeUndefined();
    expect(c.bytes).toBe(13);
  });

  it('is emptied and bypassed while invalidations cannot be trusted to arrive', () => {
    let up = true;
    const c = make({ usable: () => up });
    c.store(c.begin('u1'), 'a', res('{"a":1}'));
    up = false;
    expect(c.peek('u1', 'a')).toBeUndefined();
    expect(c.begin('u1')).toBeUndefined();
    c.store(c.begin('u1'), 'a', res('{"a":2}'));
    up = true;
    expect(c.peek('u1', 'a')).toBeUndefined(); // what was held before the outage is gone
    expect(c.bytes).toBe(0);
  });

  it('load: concurrent misses share one read; a failed read and a `keep: false` one are not kept', async () => {
    let now = 1_000;
    const c = createBodyCache({ ttlMs: 5_000, maxBytes: 1_000_000, now: () => now });
    let produced = 0;
    let release!: (v: CachedResponse) => void;
    const pending = new Promise<CachedResponse>((r) => (release = r));
    const produce = () => {
      produced++;
      return pending;
    };
    const a = c.load('', 'k', produce);
    const b = c.load('', 'k', produce);
    expect(c.peek('', 'k')).toBeUndefined(); // still being read
    release(res('body'));
    expect([text(await a), text(await b), produced]).toEqual(['body', 'body', 1]);
    expect(text(c.peek('', 'k'))).toBe('body');
    now += 5_000; // TTL reached
    expect(c.peek('', 'k')).toBeUndefined();

    // A read begun before a clear() is not shared with one begun after it.
    let first!: (v: CachedResponse) => void;
    const old = c.load('', 'j', () => new Promise((r) => (first = r)));
    c.clear();
    const fresh = c.load('', 'j', async () => res('new'));
    first(res('old'));
    expect([text(await old), text(await fresh), text(c.peek('', 'j'))]).toEqual(['old', 'new', 'new']);

    await expect(c.load('', 'bad', () => Promise.reject(new Error('db down')))).rejects.toThrow('db down');
    expect(c.peek('', 'bad')).toBeUndefined();
    expect(text(await c.load('', 'once', async () => ({ ...res('once'), keep: false })))).toBe('once');
    expect(c.peek('', 'once')).toBeUndefined();
  });
});

describe('serveCached', () => {
  const Body = z.object({ syncedAt: z.string().nullable(), n: z.number() });

  async function appWith(produce: (n: number) => object) {
    const app = Fastify().withTypeProvider<ZodTypeProvider>();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    const cache = createBodyCache({ ttlMs: 60_000, maxBytes: 1_000_000 });
    let reads = 0;
    app.get('/x', { schema: { response: { 200: Body } } }, (request, reply) =>
      serveCached(reply, cache, (request.query as { k?: string }).k, async () => produce(++reads), {
        lastModified: (b) => (b as { syncedAt: string | null }).syncedAt,
      }),
    );
    await app.ready();
    return { app, cache, reads: () => reads };
  }

  it("serialises the service's object with the route's compiled serializer (declared fields only), keeps it, sends Last-Modified", async () => {
    const { app, reads } = await appWith((n) => ({ syncedAt: '2026-11-26T05:28:17.123Z', n, secret: 'internal' }));
    const first = await app.inject('/x?k=a');
    expect(first.body).toBe('{"syncedAt":"2026-11-26T05:28:17.123Z","n":1}');
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(first.headers['last-modified']).toBe('Thu, 26 Nov 2026 05:28:17 GMT');
    const again = await app.inject('/x?k=a');
    expect([again.body, again.headers['last-modified'], reads()]).toEqual([first.body, first.headers['last-modified'], 1]);
    expect((await app.inject('/x')).json()).toEqual({ syncedAt: '2026-11-26T05:28:17.123Z', n: 2 }); // no key: not kept
    expect((await app.inject('/x')).json()).toMatchObject({ n: 3 });
    await app.close();
  });

  it('sends but does not keep a value marked notCacheable; no Last-Modified while syncedAt is null', async () => {
    const { app, reads } = await appWith((n) => notCacheable({ syncedAt: null, n }));
    const a = await app.inject('/x?k=a');
    expect(a.json()).toEqual({ syncedAt: null, n: 1 });
    expect(a.headers['last-modified']).toBeUndefined();
    expect((await app.inject('/x?k=a')).json()).toEqual({ syncedAt: null, n: 2 });
    expect(reads()).toBe(2);
    await app.close();
  });

  it('answers errors of the service as errors, and keeps nothing', async () => {
    const app = Fastify();
    app.setSerializerCompiler(zodSerializer);
    const cache = createBodyCache({ ttlMs: 60_000, maxBytes: 1_000_000 });
    app.get('/x', (_request, reply) => serveCached(reply, cache, 'k', () => Promise.reject(new Error('db down'))));
    expect((await app.inject('/x')).statusCode).toBe(500);
    expect(cache.size).toBe(0);
    await app.close();
  });
});
