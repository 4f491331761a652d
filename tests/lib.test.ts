import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson, UpstreamError, buildUrl } from '../src/lib/http.js';
import { decodeCursor, encodeCursor } from '../src/lib/cursor.js';
import { AppError } from '../src/errors.js';
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
