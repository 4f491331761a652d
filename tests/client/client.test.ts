import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigner } from 'fast-jwt';
import type { FastifyInstance } from 'fastify';
import { createApiClient, unwrap, ApiError } from '../../client/src/index.js';
import { clientFetch, memoryStorage } from './helpers.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { solanaWallet, evmWallet } from '../support/users.js';
import { startFakeServer, type FakeServer } from '../fakes/server.js';

const SECRET = 'test-secret-test-secret-test-secret-0123456789';
const INTERNAL = 'internal-token-internal-token';
let t: TestApp;
let base: string;
let idp: FakeServer;

beforeAll(async () => {
  // An identity provider's userinfo endpoint: a known access token maps to a subject.
  idp = await startFakeServer();
  idp.on('GET', '/userinfo', (req) =>
    req.headers.authorization === 'Bearer idp-good-token'
      ? { body: { sub: 'idp-user-42', email: 'a@example.com' } }
      : { status: 401, body: { error: 'invalid_token' } },
  );
  t = await buildTestApp({ TRUST_PROXY: '127.0.0.1', INTERNAL_API_TOKEN: INTERNAL, IDP_USERINFO_URL: `${idp.url}/userinfo` });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await t?.close();
  await idp?.close();
});

/** A browser's cookie jar, for cookie mode under Node. */
function withCookieJar(inner: typeof fetch) {
  const jar = new Map<string, { value: string; path: string }>();
  const f: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    const path = new URL(req.url).pathname;
    const cookie = [...jar]
      .filter(([, c]) => path.startsWith(c.path))
      .map(([k, c]) => `${k}=${c.value}`)
      .join('; ');
    const headers = new Headers(req.headers);
    if (cookie) headers.set('cookie', cookie);
    const res = await inner(new Request(req, { headers }));
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      const p = attrs.find((a) => a.toLowerCase().startsWith('path='))?.slice(5) ?? '/';
      const cleared = value === '' || attrs.some((a) => /^max-age=0$/i.test(a) || /^expires=thu, 01 jan 1970/i.test(a));
      if (cleared) jar.delete(name);
      else jar.set(name, { value, path: p });
    }
    return res;
  };
  return { fetch: f, jar };
}

const expired = (user: { id: string; walletAddress: string; chain: string }) =>
  createSigner({ key: SECRET, algorithm: 'HS256', clockTimestamp: Date.now() - 3_600_000, expiresIn: 60_000 })({
    sub: user.id,
    walletAddress: user.walletAddress,
    chain: user.chain,
  });

function setAccessToken(session: object, token: string) {
  (session as { accessToken: string }).accessToken = token;
}

describe('client: token mode (mobile)', () => {
  it('20 concurrent calls with an expired access token cause exactly one refresh, and all succeed', async () => {
    const { fetch: f, calls } = clientFetch();
    const storage = memoryStorage();
    const c = createApiClient({ baseUrl: base, mode: 'token', storage, fetch: f });
    const wallet = await solanaWallet();
    const user = await c.session.signInWithWallet({ address: wallet.address, chain: 'solana', signMessage: wallet.sign });
    expect(user.walletAddress).toBe(wallet.address);
    expect(storage.value).toBeTruthy(); // the refresh token, taken from the sign-in answer
    const firstRefresh = storage.value;

    setAccessToken(c.session, expired(user));
    const results = await Promise.all(Array.from({ length: 20 }, () => c.api.GET('/api/v1/notifications')));
    expect(results.map((r) => r.response.status)).toEqual(Array(20).fill(200));
    expect(calls.refresh).toBe(1);
    expect(storage.value).not.toBe(firstRefresh); // rotated, kept from the refresh body
  });

  it('a failed refresh calls onLoggedOut once and every waiting call gets its 401', async () => {
    const { fetch: f, calls } = clientFetch();
    let loggedOut = 0;
    const storage = memoryStorage();
    const c = createApiClient({ baseUrl: base, mode: 'token', storage, fetch: f, onLoggedOut: () => loggedOut++ });
    const wallet = evmWallet();
    const user = await c.session.signInWithWallet({ address: wallet.address, chain: 'evm', signMessage: wallet.sign });
    // Another device logs out everywhere: every refresh token of the user is revoked.
    const other = await fetch(`${base}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${c.session.token}` } });
    expect(other.status).toBe(204);

    setAccessToken(c.session, expired(user));
    const results = await Promise.all(Array.from({ length: 5 }, () => c.api.GET('/api/v1/alerts')));
    expect(results.map((r) => r.response.status)).toEqual(Array(5).fill(401));
    expect(calls.refresh).toBe(1);
    expect(loggedOut).toBe(1);
    expect(c.session.signedIn).toBe(false);
    expect(storage.value).toBeNull();
  });
});

describe('client: cookie mode (browser)', () => {
  it('signs in, and after a reload (no access token in memory) refreshes from the cookie alone', async () => {
    const { fetch: f, calls } = clientFetch();
    const { fetch: browser, jar } = withCookieJar(f);
    const c = createApiClient({ baseUrl: base, mode: 'cookie', fetch: browser });
    const wallet = await solanaWallet();
    await c.session.signInWithWallet({ address: wallet.address, chain: 'solana', signMessage: wallet.sign });
    expect(jar.has('refresh_token')).toBe(true);
    expect(jar.get('logged_in')?.value).toBe('1');

    const reloaded = createApiClient({ baseUrl: base, mode: 'cookie', fetch: browser });
    expect(reloaded.session.signedIn).toBe(false);
    const prefs = await unwrap(reloaded.api.GET('/api/v1/push/preferences'));
    expect(prefs).toMatchObject({ enabled: true });
    expect(calls.refresh).toBe(1);
    expect(reloaded.session.signedIn).toBe(true);
  });

  it('logout clears the session and the cookies', async () => {
    const { fetch: f } = clientFetch();
    const { fetch: browser, jar } = withCookieJar(f);
    const c = createApiClient({ baseUrl: base, mode: 'cookie', fetch: browser });
    const wallet = await solanaWallet();
    await c.session.signInWithWallet({ address: wallet.address, chain: 'solana', signMessage: wallet.sign });
    await c.session.logout();
    expect(c.session.signedIn).toBe(false);
    expect(jar.has('refresh_token')).toBe(false);
  });
});

describe('client: auth-state events and restoring a session on app start', () => {
  it('token mode: signedIn, refreshed, then signedOut on logout; a new app run restores from storage', async () => {
    const { fetch: f, calls } = clientFetch();
    const storage = memoryStorage();
    const c = createApiClient({ baseUrl: base, mode: 'token', storage, fetch: f });
    const events: Array<[string, string | null]> = [];
    c.session.onAuthStateChange((event, user) => events.push([event, user?.id ?? null]));
    const payloads: unknown[] = [];
    c.session.on('signedIn', (p) => payloads.push(p));
    const wallet = await solanaWallet();
    const user = await c.session.signInWithWallet({ address: wallet.address, chain: 'solana', signMessage: wallet.sign });
    expect(payloads).toEqual([{ user: expect.objectContaining({ id: user.id }), restored: false }]);

    setAccessToken(c.session, expired(user));
    expect((await c.api.GET('/api/v1/alerts')).response.status).toBe(200);
    expect(events).toEqual([
      ['signedIn', user.id],
      ['refreshed', user.id],
    ]);

    // The app is closed and opened again: a new client with the same storage.
    const next = createApiClient({ baseUrl: base, mode: 'token', storage, fetch: f });
    const restoredPayloads: unknown[] = [];
    next.session.on('signedIn', (p) => restoredPayloads.push(p));
    const restored = await next.session.restore();
    expect(restored?.id).toBe(user.id);
    expect(restoredPayloads).toEqual([{ user: expect.objectContaining({ id: user.id }), restored: true }]);
    expect(next.session.signedIn).toBe(true);
    expect(calls.refresh).toBe(2);
    expect(await unwrap(next.api.GET('/api/v1/alerts'))).toBeDefined();

    const out: unknown[] = [];
    next.session.on('signedOut', (p) => out.push(p));
    await next.session.logout();
    expect(out).toEqual([{ reason: 'logout' }]);
    // Logged out everywhere: the first client's next refresh fails, which it reports as expired.
    setAccessToken(c.session, expired(user));
    expect((await c.api.GET('/api/v1/alerts')).response.status).toBe(401);
    expect(events.at(-1)).toEqual(['signedOut', null]);
  });

  it('restore() resolves null without events when nothing is stored or the stored token is dead', async () => {
    const { fetch: f, calls } = clientFetch();
    let loggedOut = 0;
    const storage = memoryStorage();
    const c = createApiClient({ baseUrl: base, mode: 'token', storage, fetch: f, onLoggedOut: () => loggedOut++ });
    const events: string[] = [];
    c.session.onAuthStateChange((e) => events.push(e));
    expect(await c.session.restore()).toBeNull();
    expect(calls.refresh).toBe(0); // nothing stored: no request

    storage.value = 'not-a-refresh-token';
    expect(await c.session.restore()).toBeNull();
    expect(calls.refresh).toBe(1);
    expect(storage.value).toBeNull(); // the dead token is cleared
    expect(events).toEqual([]);
    expect(loggedOut).toBe(0);
  });

  it('cookie mode: after a reload, restore() brings the session back from the cookie', async () => {
    const { fetch: f } = clientFetch();
    const { fetch: browser } = withCookieJar(f);
    const c = createApiClient({ baseUrl: base, mode: 'cookie', fetch: browser });
    expect(await c.session.restore()).toBeNull(); // no cookie yet
    const wallet = evmWallet();
    const user = await c.session.signInWithWallet({ address: wallet.address, chain: 'evm', signMessage: wallet.sign });

    const reloaded = createApiClient({ baseUrl: base, mode: 'cookie', fetch: browser });
    const seen: string[] = [];
    reloaded.session.onAuthStateChange((e) => seen.push(e));
    expect((await reloaded.session.restore())?.id).toBe(user.id);
    expect(reloaded.session.user?.walletAddress).toBe(wallet.address);
    expect(seen).toEqual(['signedIn']);
  });
});

describe('client: domain-bound sign-in and sessions (docs/decisions.md §10.5, §10.7)', () => {
  it("signs the server's ready-to-sign message, not the bare nonce", async () => {
    const signed: string[] = [];
    const wallet = await solanaWallet();
    const c = createApiClient({ baseUrl: base, mode: 'token', storage: memoryStorage(), fetch: clientFetch().fetch });
    await c.session.signInWithWallet({
      address: wallet.address,
      chain: 'solana',
      signMessage: (m) => {
        signed.push(m);
        return wallet.sign(m);
      },
    });
    expect(signed).toHaveLength(1);
    expect(signed[0]).toMatch(/^127\.0\.0\.1:\d+ wants you to sign in with your Solana account:\n/);
    expect(signed[0]).toContain(`\n${wallet.address}\n`);
  });

  it('lists sessions, ends the others, and ending the current one signs the client out', async () => {
    const wallet = evmWallet();
    const other = createApiClient({ baseUrl: base, mode: 'token', storage: memoryStorage(), fetch: clientFetch().fetch });
    await other.session.signInWithWallet({ address: wallet.address, chain: 'evm', signMessage: wallet.sign });
    const storage = memoryStorage();
    const c = createApiClient({ baseUrl: base, mode: 'token', storage, fetch: clientFetch().fetch });
    await c.session.signInWithWallet({ address: wallet.address, chain: 'evm', signMessage: wallet.sign });
    const sessions = await c.session.listSessions();
    expect(sessions).toHaveLength(2);
    expect(sessions.filter((x) => x.current)).toHaveLength(1);
    expect(await c.session.endOtherSessions()).toBe(1);
    const err = await other.session.listSessions().catch((e: unknown) => e);
    expect((err as ApiError).status).toBe(401); // its session is over; its refresh fails too
    expect(other.session.signedIn).toBe(false);

    const mine = (await c.session.listSessions())[0];
    expect(mine.current).toBe(true);
    await c.session.endSession(mine.id);
    expect(c.session.signedIn).toBe(false);
    expect(storage.value).toBeNull();
  });
});

describe('client: identity-provider sign-in', () => {
  it('signs in with the provider token (same account every time) and rejects a bad one as ApiError', async () => {
    const c = createApiClient({ baseUrl: base, mode: 'token', storage: memoryStorage(), fetch: clientFetch().fetch });
    const first = await c.session.signInWithIdp('idp-good-token');
    expect(first.chain).toBe('evm');
    expect(first.walletAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const again = await createApiClient({
      baseUrl: base,
      mode: 'token',
      storage: memoryStorage(),
      fetch: clientFetch().fetch,
    }).session.signInWithIdp('idp-good-token');
    expect(again.id).toBe(first.id);
    const err = await c.session.signInWithIdp('idp-bad-token').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(401);
    expect((err as ApiError).code).toBe('INVALID_IDP_TOKEN');
  });
});

describe('client: errors', () => {
  it('problem+json answers are thrown as ApiError with status and code', async () => {
    const c = createApiClient({ baseUrl: base, mode: 'token', storage: memoryStorage(), fetch: clientFetch().fetch });
    const err = await unwrap(c.api.GET('/api/v1/events/{slug}', { params: { path: { slug: 'no-such-event' } } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(404);
    expect((err as ApiError).code).toBe('NOT_FOUND');
    const bad = await unwrap(c.api.GET('/api/v1/events', { params: { query: { limit: 500 } } })).catch((e: unknown) => e);
    expect((bad as ApiError).code).toBe('VALIDATION_ERROR');
    expect((bad as ApiError).errors[0].path).toBe('limit');
    const signIn = await c.session
      .signInWithWallet({ address: (await solanaWallet()).address, chain: 'solana', signMessage: async () => '1111' })
      .catch((e: unknown) => e);
    expect(signIn).toBeInstanceOf(ApiError);
    expect((signIn as ApiError).status).toBeGreaterThanOrEqual(400);
  });
});

export { t as _testApp };
export type { FastifyInstance };
