import { describe, expect, it } from 'vitest';
import { createResponseCache, type ReadyResponse } from '../../src/domains/events/cache.js';
import { lastModifiedOf } from '../../src/domains/events/freshness.js';

/** The cached body as text (the cache keeps bytes), or undefined on a miss. */
const text = (r: ReadyResponse | undefined) => r?.body.toString('utf8');

describe('events response cache', () => {
  it('peek answers only a produced, fresh entry; misses share one production; clear and TTL drop entries', async () => {
    let now = 1_000;
    const cache = createResponseCache({ ttlMs: 5_000, maxEntries: 2, maxBytes: 1_000_000, now: () => now });
    let produced = 0;
    let release!: (v: string) => void;
    const pending = new Promise<string>((r) => (release = r));
    const produce = () => {
      produced++;
      return pending;
    };
    const a = cache.get('k', produce);
    const b = cache.get('k', produce);
    expect(cache.peek('k')).toBeUndefined(); // still being produced
    release('body');
    expect(await a).toBe('body');
    expect(await b).toBe('body');
    expect(produced).toBe(1);
    expect(text(cache.peek('k'))).toBe('body');

    now += 5_000; // TTL reached
    expect(cache.peek('k')).toBeUndefined();
    await cache.get('k', async () => 'fresh');
    expect(text(cache.peek('k'))).toBe('fresh');
    cache.clear();
    expect(cache.peek('k')).toBeUndefined();

    // A failed production is not kept; the oldest entry leaves when the cache is full.
    await expect(cache.get('bad', async () => Promise.reject(new Error('db down')))).rejects.toThrow('db down');
    expect(cache.peek('bad')).toBeUndefined();
    await cache.get('x', async () => 'x');
    await cache.get('y', async () => 'y');
    await cache.get('z', async () => 'z');
    expect([text(cache.peek('x')), text(cache.peek('y')), text(cache.peek('z'))]).toEqual([undefined, 'y', 'z']);
  });

  it('is bounded by a byte budget, not only a count: the oldest bodies leave, an oversized one is not kept', async () => {
    const cache = createResponseCache({ ttlMs: 60_000, maxEntries: 1_000, maxBytes: 10_000 });
    for (let i = 0; i < 20; i++) await cache.get(`k${i}`, async () => 'x'.repeat(3_000));
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
    expect(cache.peek('k19')).toBeDefined();
    expect(cache.peek('k0')).toBeUndefined();
    await cache.get('huge', async () => 'y'.repeat(20_000));
    expect(cache.peek('huge')).toBeUndefined();
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
    cache.clear();
    expect(cache.bytes).toBe(0);
  });

  it('keeps a body as its UTF-8 bytes with its Last-Modified, and counts bytes, not characters', async () => {
    const cache = createResponseCache({ ttlMs: 60_000, maxEntries: 10, maxBytes: 1_000_000 });
    const body = '{"syncedAt":"2026-11-26T05:28:17.123Z","stale":false,"title":"Élection présidentielle 🇫🇷"}';
    await cache.get('fr', async () => body);
    const hit = cache.peek('fr')!;
    expect(Buffer.isBuffer(hit.body)).toBe(true);
    expect(hit.body.toString('utf8')).toBe(body);
    expect(hit.lastModified).toBe('Thu, 26 Nov 2026 05:28:17 GMT');
    expect(cache.bytes).toBe(Buffer.byteLength(body));
    expect(cache.bytes).toBeGreaterThan(body.length);
    await cache.get('none', async () => '{"syncedAt":null,"stale":true}');
    expect(cache.peek('none')!.lastModified).toBeUndefined();
  });
});

describe('lastModifiedOf (Last-Modified from a cached body)', () => {
  it('gives each body its own date, whatever was asked before, and none without syncedAt', () => {
    const a = '{"syncedAt":"2026-11-26T05:28:17.123Z","stale":false}';
    const b = '{"syncedAt":"2026-01-02T03:04:05.000Z","stale":true}';
    for (let i = 0; i < 3; i++) {
      expect(lastModifiedOf(a)).toBe('Thu, 26 Nov 2026 05:28:17 GMT');
      expect(lastModifiedOf(b)).toBe('Fri, 02 Jan 2026 03:04:05 GMT');
      expect(lastModifiedOf(a)).toBe('Thu, 26 Nov 2026 05:28:17 GMT');
    }
    expect(lastModifiedOf('{"syncedAt":null,"stale":true}')).toBeUndefined();
    expect(lastModifiedOf('{"syncedAt":"not a date"}')).toBeUndefined();
    expect(lastModifiedOf(a)).toBe('Thu, 26 Nov 2026 05:28:17 GMT');
  });
});
