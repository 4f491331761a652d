import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { createSigner } from 'fast-jwt';
import { buildTestApp, type TestApp } from './helpers/app.js';
import { AppError } from '../src/errors.js';
import { expectProblem as expectSharedProblem, type InjectedResponse } from './support/problem.js';

const SECRET = 'test-secret-test-secret-test-secret-0123456789';
const PREVIOUS = 'previous-secret-previous-secret-previous-0000';

function testRoutes(app: FastifyInstance) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(
    '/api/v1/test/me',
    { schema: { response: { 200: z.object({ id: z.string(), walletAddress: z.string(), chain: z.string() }) } } },
    async (req) => req.user,
  );
  r.post(
    '/api/v1/test/echo',
    {
      config: { public: true },
      schema: {
        body: z.object({ name: z.string().min(1), limit: z.number().int().min(1).max(100), kind: z.enum(['a', 'b']) }),
      },
    },
    async (req) => req.body,
  );
  r.get('/api/v1/test/boom', { config: { public: true } }, async () => {
    throw new Error('relation "secret_table" does not exist at /srv/app.ts:12');
  });
  r.get('/api/v1/test/db-down', { config: { public: true } }, async () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  });
  r.get('/api/v1/test/items/:id', { config: { public: true } }, async (req) => ({ id: (req.params as { id: string }).id }));
  r.get('/api/v1/test/data-exception', { config: { public: true } }, async () => {
    throw Object.assign(new Error('invalid input syntax for type uuid: "x"'), { code: '22P02' });
  });
  r.get('/api/v1/test/app-error', { config: { public: true } }, async () => {
    throw new AppError(409, 'ALERT_LIMIT', 'You already have 100 active alerts');
  });
}

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ JWT_SECRET_PREVIOUS: PREVIOUS, CORS_ORIGINS: 'https://app.example.com' }, { extend: testRoutes });
});
afterAll(async () => t?.close());

/** The shared check, plus the fields every problem carries (RFC 9457). */
function expectProblem(res: InjectedResponse, status: number, code: string) {
  const body = expectSharedProblem(res, status, code);
  expect(body).toMatchObject({ type: 'about:blank', status, code });
  expect(typeof body.title).toBe('string');
  return body;
}

describe('problem+json for every error (docs/decisions.md §2)', () => {
  it('unknown route → 404 NOT_FOUND', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/nowhere' });
    expectProblem(res, 404, 'NOT_FOUND');
    const res2 = await t.app.inject({ method: 'DELETE', url: '/totally/unknown?x=1' });
    expectProblem(res2, 404, 'NOT_FOUND');
  });

  it('malformed JSON → 400 VALIDATION_ERROR', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": "x", ',
    });
    expectProblem(res, 400, 'VALIDATION_ERROR');
  });

  it('schema failure lists each bad field', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/test/echo', payload: { name: '', limit: 500, kind: 'z' } });
    const body = expectProblem(res, 400, 'VALIDATION_ERROR');
    const paths = body.errors.map((e: { path: string }) => e.path).sort();
    expect(paths).toEqual(['kind', 'limit', 'name']);
    for (const e of body.errors) expect(e.message.length).toBeGreaterThan(0);
  });

  it('body over 64 KiB → 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/test/echo',
      payload: { name: 'x'.repeat(70 * 1024), limit: 1, kind: 'a' },
    });
    expectProblem(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('a body that is not JSON → 415', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/test/echo', headers: { 'content-type': 'text/xml' }, payload: '<a/>' });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
  });

  it('an unexpected error → 500 that hides internals', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/boom' });
    const body = expectProblem(res, 500, 'INTERNAL_ERROR');
    expect(JSON.stringify(body)).not.toMatch(/secret_table|srv|stack/);
  });

  it('a database connection failure → 503 UNAVAILABLE with Retry-After', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/db-down' });
    const body = expectProblem(res, 503, 'UNAVAILABLE');
    expect(res.headers['retry-after']).toBe('5');
    expect(JSON.stringify(body)).not.toContain('5432');
  });

  it('NUL characters anywhere in the request → 400 before any handler runs', async () => {
    for (const req of [
      { method: 'GET' as const, url: '/api/v1/test/items/%00' },
      { method: 'GET' as const, url: '/api/v1/test/items/x?q=a%00b' },
      { method: 'POST' as const, url: '/api/v1/test/echo', payload: { name: 'a\u0000b', limit: 1, kind: 'a' } },
    ]) {
      const body = expectProblem(await t.app.inject(req), 400, 'VALIDATION_ERROR');
      expect(body.detail).toMatch(/NUL/);
    }
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/test/items/fine' })).json()).toEqual({ id: 'fine' });
  });

  it('a database data exception (SQLSTATE 22xxx) → 400, not 500', async () => {
    const body = expectProblem(await t.app.inject({ method: 'GET', url: '/api/v1/test/data-exception' }), 400, 'VALIDATION_ERROR');
    expect(body.detail).not.toContain('uuid');
  });

  it('AppError renders its status and code', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/app-error' });
    expect(expectProblem(res, 409, 'ALERT_LIMIT').detail).toBe('You already have 100 active alerts');
  });
});

describe('bearer JWT by default', () => {
  const user = { id: '00000000-0000-4000-8000-000000000001', walletAddress: 'So1ana111', chain: 'solana' as const };

  it('a bearer route without a token → 401 UNAUTHORIZED', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/me' });
    expectProblem(res, 401, 'UNAUTHORIZED');
  });

  it('a valid token reaches the handler as { id, walletAddress, chain }', async () => {
    const token = t.app.signAccessToken(user);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/me', headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(user);
  });

  it('accepts JWT_SECRET_PREVIOUS during rotation', async () => {
    const sign = createSigner({ key: PREVIOUS, algorithm: 'HS256', expiresIn: 60_000 });
    const token = sign({ sub: user.id, walletAddress: user.walletAddress, chain: user.chain });
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/me', headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
  });

  it.each([
    ['garbage', 'not.a.jwt'],
    ['wrong key', createSigner({ key: 'z'.repeat(40), algorithm: 'HS256' })({ sub: 'u', walletAddress: 'w', chain: 'evm' })],
    [
      'expired',
      createSigner({ key: SECRET, algorithm: 'HS256', clockTimestamp: Date.now() - 3_600_000, expiresIn: 60_000 })({
        sub: 'u',
        walletAddress: 'w',
        chain: 'evm',
      }),
    ],
    [
      'alg none',
      `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"u","walletAddress":"w","chain":"evm"}').toString('base64url')}.`,
    ],
    [
      'HS512 with the right key',
      createSigner({ key: SECRET, algorithm: 'HS512', expiresIn: 60_000 })({ sub: 'u', walletAddress: 'w', chain: 'evm' }),
    ],
    ['claims missing', createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 60_000 })({ foo: 1 })],
  ])('rejects a %s token with 401', async (_name, token) => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/me', headers: { authorization: `Bearer ${token}` } });
    expectProblem(res, 401, 'UNAUTHORIZED');
  });

  it("the automatic HEAD route of a bearer GET is guarded too; a public GET's HEAD is not", async () => {
    for (const url of ['/api/v1/notifications', '/api/v1/alerts', '/api/v1/push/preferences']) {
      expect((await t.app.inject({ method: 'HEAD', url })).statusCode).toBe(401);
    }
    expect((await t.app.inject({ method: 'HEAD', url: '/api/v1/events' })).statusCode).toBe(200);
  });

  it('a page served from a cache (kept as bytes) has the same JSON content type and length as when it was produced, on GET and HEAD', async () => {
    for (const url of ['/api/v1/events', '/api/v1/leaderboard']) {
      const first = await t.app.inject({ method: 'GET', url });
      const cached = await t.app.inject({ method: 'GET', url });
      const head = await t.app.inject({ method: 'HEAD', url });
      for (const res of [first, cached, head]) {
        expect(res.statusCode, url).toBe(200);
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      }
      expect(cached.body).toBe(first.body);
      expect(Number(cached.headers['content-length'])).toBe(Buffer.byteLength(first.body));
      expect(head.headers['content-length']).toBe(cached.headers['content-length']);
      expect(head.body).toBe('');
    }
  });

  it('a malformed Authorization header → 401', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/me', headers: { authorization: 'Basic abc' } });
    expectProblem(res, 401, 'UNAUTHORIZED');
  });
});

describe('headers', () => {
  it('echoes a request id and sets security headers', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'abc-123' } });
    expect(res.headers['x-request-id']).toBe('abc-123');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['strict-transport-security']).toBeUndefined(); // only in production (served over TLS)
    const res2 = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'bad id with spaces' } });
    expect(res2.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('production adds HSTS', async () => {
    const p = await buildTestApp(
      { NODE_ENV: 'production', SIGN_IN_DOMAIN: 'app.example.com', SIGN_IN_URI: 'https://app.example.com' },
      { db: t.db },
    );
    const res = await p.app.inject({ method: 'GET', url: '/health/live' });
    expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    await p.close();
  });

  it('CORS allows listed origins with credentials and refuses others', async () => {
    const ok = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/test/me',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    });
    expect(ok.headers['access-control-allow-origin']).toBe('https://app.example.com');
    expect(ok.headers['access-control-allow-credentials']).toBe('true');
    const bad = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/v1/test/me',
      headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'GET' },
    });
    expect(bad.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('without CORS_ORIGINS, a preflight is a problem+json saying how to enable CORS; other OPTIONS stay 404', async () => {
    const plain = await buildTestApp();
    try {
      const res = await plain.app.inject({
        method: 'OPTIONS',
        url: '/api/v1/events',
        headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET' },
      });
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      expect(res.json()).toMatchObject({ status: 403, code: 'ORIGIN_NOT_ALLOWED', detail: expect.stringMatching(/set CORS_ORIGINS/) });
      const other = await plain.app.inject({ method: 'OPTIONS', url: '/api/v1/events' });
      expect(other.statusCode).toBe(404);
      expect(other.json()).toMatchObject({ code: 'NOT_FOUND' });
    } finally {
      await plain.close();
    }
  });
});
