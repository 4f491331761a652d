import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson, UpstreamError, buildUrl } from '../src/lib/http.js';
import { decodeCursor, encodeCursor } from '../src/lib/cursor.js';
import { AppError } from '../src/errors.js';
import { mapLimit } from '../src/lib/map-limit.js';
import { bearerToken } from '../src/lib/bearer.js';
import { safeEqual, sha256Hex } from '../src/lib/hash.js';
import { startFakeServer, type FakeServer } from './fakes/server.js';

let fake: FakeServer;
beforeAll(async () => {
  fake = await startFakeServer();
  fake.on('GET', '/items/:id', (req) => ({ body: { id: req.params.id, q: req.query.get('q') } }));
  fake.on('GET', '/slow', async () => {
    await new Promise((r) => setTimeout(r, 500));
    return { body: {} };
  });
  fake.on('GET', '/bad-json', () => ({ raw: '<html>' }));
  fake.on('GET', '/missing', () => ({ status: 404, body: { error: 'nope' } }));
});
afterAll(async () => fake.close());

describe('requestJson', () => {
  it('returns parsed JSON', async () => {
    expect(await requestJson<unknown>(buildUrl(fake.url, '/items/7', { q: 'x y', skip: undefined }))).toEqual({ id: '7', q: 'x y' });
  });

  it('retries 5xx and 429 with backoff, then succeeds', async () => {
    fake.reset();
    fake.failNext(1, 503);
    fake.failNext(1, 429);
    const out = await requestJson<unknown>(`${fake.url}/items/1`, { backoffMs: 5, attempts: 3 });
    expect(out).toMatchObject({ id: '1' });
    expect(fake.requests).toHaveLength(3);
  });

  it('gives up after its attempts with an UpstreamError carrying the status', async () => {
    fake.reset();
    fake.failNext(5, 500);
    const err = (await requestJson<unknown>(`${fake.url}/items/1`, { backoffMs: 1, attempts: 2 }).catch(
      (e: unknown) => e,
    )) as UpstreamError;
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.status).toBe(500);
    expect(fake.requests).toHaveLength(2);
  });

  it('does not retry other 4xx', async () => {
    fake.reset();
    const err = (await requestJson<unknown>(`${fake.url}/missing`, { backoffMs: 1 }).catch((e: unknown) => e)) as UpstreamError;
    expect(err.status).toBe(404);
    expect(err.body).toEqual({ error: 'nope' });
    expect(fake.requests).toHaveLength(1);
  });

  it('times out, and reports unreachable hosts and non-JSON bodies', async () => {
    const slow = (await requestJson<unknown>(`${fake.url}/slow`, { timeoutMs: 50, attempts: 1 }).catch((e: unknown) => e)) as UpstreamError;
    expect(slow).toBeInstanceOf(UpstreamError);
    expect(slow.status).toBeUndefined();
    const down = (await requestJson<unknown>('http://127.0.0.1:1/x', { attempts: 1 }).catch((e: unknown) => e)) as UpstreamError;
    expect(down.message).toMatch(/unreachable/);
    const bad = (await requestJson<unknown>(`${fake.url}/bad-json`, { attempts: 1 }).catch((e: unknown) => e)) as UpstreamError;
    expect(bad.message).toMatch(/not JSON/);
  });
});

describe('UpstreamError', () => {
  it('keeps only the origin of the failed URL, never a credential in its path or query', async () => {
    const err = (await requestJson<unknown>(`${fake.url}/bot123456:SECRET-token/sendMessage?key=hidden`, { attempts: 1 }).catch(
      (e: unknown) => e,
    )) as UpstreamError;
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.origin).toBe(fake.url);
    const logged = JSON.stringify({ ...err, message: err.message });
    expect(logged).not.toContain('SECRET');
    expect(logged).not.toContain('hidden');
  });
});

describe('cursors', () => {
  it('round-trip and refuse altered or foreign cursors', () => {
    const c = encodeCursor('k'.repeat(32), 'list', { v: 12.5, a: '0xabc' });
    expect(decodeCursor('k'.repeat(32), 'list', c)).toEqual({ v: 12.5, a: '0xabc' });
    const tampered = Buffer.from(JSON.stringify({ v: 99, a: '0xabc' })).toString('base64url') + c.slice(c.indexOf('.'));
    for (const bad of [tampered, c + 'x', 'garbage', '', c.replace('.', '')]) {
      expect(() => decodeCursor('k'.repeat(32), 'list', bad)).toThrow(AppError);
    }
    expect(() => decodeCursor('k'.repeat(32), 'other', c)).toThrow(/cursor/);
    expect(() => decodeCursor('j'.repeat(32), 'list', c)).toThrow(/cursor/);
  });
});

describe('mapLimit', () => {
  const tick = () => new Promise((r) => setImmediate(r));

  it('keeps the order of the items and never has more than `limit` calls in flight', async () => {
    let active = 0;
    let most = 0;
    const out = await mapLimit([5, 1, 4, 2, 3, 0], 2, async (n, i) => {
      active++;
      most = Math.max(most, active);
      for (let k = 0; k < n; k++) await tick();
      active--;
      return `${i}:${n * 10}`;
    });
    expect(out).toEqual(['0:50', '1:10', '2:40', '3:20', '4:30', '5:0']);
    expect(most).toBe(2);
  });

  it('runs one at a time for a limit below 1, and maps an empty list to []', async () => {
    for (const limit of [0, -3, Number.NaN]) {
      let active = 0;
      let most = 0;
      const out = await mapLimit([1, 2, 3], limit, async (n) => {
        most = Math.max(most, ++active);
        await tick();
        active--;
        return n;
      });
      expect(out).toEqual([1, 2, 3]);
      expect(most).toBe(1);
    }
    expect(await mapLimit([], 4, async () => 1)).toEqual([]);
  });

  it('rejects with the first error and starts no further item after it', async () => {
    const started: number[] = [];
    const err = await mapLimit([0, 1, 2, 3, 4, 5, 6, 7], 2, async (n) => {
      started.push(n);
      await tick();
      if (n === 1) throw new Error('venue down');
      return n;
    }).catch((e: unknown) => e);
    expect(err).toEqual(new Error('venue down'));
    await new Promise((r) => setTimeout(r, 20));
    // Items 0 and 1 run together; 2 starts when 0 finishes, before 1 fails; nothing after that.
    expect(started).toEqual([0, 1, 2]);
  });
});

describe('bearerToken', () => {
  it('takes the token of a well-formed header only', () => {
    expect(bearerToken('Bearer abc.def-ghi')).toBe('abc.def-ghi');
    expect(bearerToken('bearer   tok  ')).toBe('tok');
    for (const bad of [undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearer a b', 'Bearerabc', ['Bearer a', 'Bearer b']]) {
      expect(bearerToken(bad)).toBeUndefined();
    }
  });
});

describe('sha256Hex and safeEqual', () => {
  it('sha256Hex is the lowercase hex digest', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('safeEqual compares secrets of any length, strings or bytes', () => {
    expect(safeEqual('secret', 'secret')).toBe(true);
    expect(safeEqual('secret', 'secreT')).toBe(false);
    expect(safeEqual('secret', 'secret-longer')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual(Buffer.from('ab'), Buffer.from('ab'))).toBe(true);
    expect(safeEqual(Buffer.from('ab'), Buffer.from('abc'))).toBe(false);
  });
});
