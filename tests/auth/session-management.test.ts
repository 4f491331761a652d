import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { createSigner } from 'fast-jwt';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import type { DbHandle } from '../../src/db/index.js';
import { ack, closeAll, connect, listen, next, refusal } from '../realtime/helpers.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problem.js';
import { parseSetCookies, signIn, solanaWallet, type Wallet } from '../support/users.js';

/** docs/decisions.md §10.4–§10.6 and §3.6: sessions you can see and end, and what ending reaches. */
const SECRET = 'test-secret-test-secret-test-secret-0123456789';
const PAGE = 'https://app.example.com';
let db: DbHandle;
let t: TestApp;
let grace: TestApp;
let url: string;

beforeAll(async () => {
  db = await createTestDb();
  t = await buildTestApp({ JWT_SECRET: SECRET, CORS_ORIGINS: PAGE }, { db });
  grace = await buildTestApp({ JWT_SECRET: SECRET, REFRESH_REUSE_GRACE_SECONDS: '10' }, { db });
  url = await listen(t.app);
});
afterEach(() => closeAll());
afterAll(async () => {
  closeAll();
  await grace?.close();
  await t?.close();
  await db?.close();
});

const hash = (s: string) => createHash('sha256').update(s).digest('hex');
const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function session(app = t.app, wallet?: Wallet, headers: Record<string, string> = {}) {
  const w = wallet ?? (await solanaWallet());
  const res = await signIn(app, w, { headers });
  expect(res.statusCode, res.body).toBe(201);
  const accessToken = res.json().accessToken as string;
  return {
    wallet: w,
    accessToken,
    refreshToken: parseSetCookies(res).refresh_token.value,
    user: res.json().user,
    sid: claims(accessToken).sid as string,
  };
}

const list = (token: string, app = t.app) => app.inject({ method: 'GET', url: '/api/v1/auth/sessions', headers: bearer(token) });
const end = (token: string, id: string) => t.app.inject({ method: 'DELETE', url: `/api/v1/auth/sessions/${id}`, headers: bearer(token) });
const endOthers = (token: string) => t.app.inject({ method: 'DELETE', url: '/api/v1/auth/sessions', headers: bearer(token) });
const prefs = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/push/preferences', headers: bearer(token) });
const refreshBody = (refreshToken: string, app = t.app) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken } });
const refreshCookie = (refreshToken: string, headers: Record<string, string> = {}, app = t.app) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/refresh', cookies: { refresh_token: refreshToken }, headers });

describe('sid and the sessions list', () => {
  it('access tokens carry sid; refreshes keep it; GET /auth/sessions lists live sessions, most recently used first', async () => {
    const w = await solanaWallet();
    const a = await session(t.app, w, { 'user-agent': 'agent-a' });
    const b = await session(t.app, w, { 'user-agent': 'agent-b' });
    expect(a.sid).toMatch(/^[0-9a-f-]{36}$/);
    expect(b.sid).not.toBe(a.sid);
    const r = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/refresh',
      payload: { refreshToken: a.refreshToken },
      headers: { 'user-agent': 'agent-a/2' },
      remoteAddress: '203.0.113.44',
    });
    expect(claims(r.json().accessToken).sid).toBe(a.sid);

    const res = await list(b.accessToken);
    expect(res.statusCode, res.body).toBe(200);
    const sessions = res.json().sessions as Array<Record<string, unknown>>;
    expect(sessions.map((s) => s.id)).toEqual([a.sid, b.sid]); // a was used last (its refresh)
    expect(sessions.map((s) => s.current)).toEqual([false, true]);
    // As seen at the last sign-in or refresh.
    expect(sessions[0]).toMatchObject({ userAgent: 'agent-a/2', ip: '203.0.113.44' });
    expect(sessions[1]).toMatchObject({ userAgent: 'agent-b', ip: expect.stringMatching(/^10\./) });
    for (const s of sessions) {
      expect(Date.parse(s.expiresAt as string) - Date.parse(s.lastUsedAt as string)).toBe(90 * 24 * 3600 * 1000);
      expect(Date.parse(s.createdAt as string)).toBeLessThanOrEqual(Date.parse(s.lastUsedAt as string));
    }
    // Another user sees only their own.
    const other = await session();
    expect((await list(other.accessToken)).json().sessions.map((s: { id: string }) => s.id)).toEqual([other.sid]);
  });
});

describe('ending sessions', () => {
  it('DELETE /auth/sessions/:id ends that session only: its refresh and access tokens stop, the others keep working', async () => {
    const w = await solanaWallet();
    const a = await session(t.app, w);
    const b = await session(t.app, w);
    const res = await end(b.accessToken, a.sid);
    expect(res.statusCode).toBe(204);
    expect(parseSetCookies(res)).toEqual({}); // not the caller's own session: cookies untouched
    expectProblem(await refreshBody(a.refreshToken), 401, 'INVALID_REFRESH_TOKEN');
    expectProblem(await prefs(a.accessToken), 401, 'SESSION_REVOKED');
    expect((await prefs(b.accessToken)).statusCode).toBe(200);
    expect((await refreshBody(b.refreshToken)).statusCode).toBe(200);
    expect((await list(b.accessToken)).json().sessions.map((s: { id: string }) => s.id)).toEqual([b.sid]);
  });

  it("another user's, unknown, malformed or already ended id is 404", async () => {
    const mine = await session();
    const theirs = await session();
    expectProblem(await end(mine.accessToken, theirs.sid), 404, 'NOT_FOUND');
    expect((await prefs(theirs.accessToken)).statusCode).toBe(200);
    expectProblem(await end(mine.accessToken, '00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND');
    expectProblem(await end(mine.accessToken, 'not-a-uuid'), 404, 'NOT_FOUND');
    expectProblem(await end(mine.accessToken, `${'a'.repeat(99)}`), 404, 'NOT_FOUND');
    const extra = await session(t.app, mine.wallet);
    expect((await end(mine.accessToken, extra.sid)).statusCode).toBe(204);
    expectProblem(await end(mine.accessToken, extra.sid), 404, 'NOT_FOUND');
  });

  it('ending the current session clears the three cookies', async () => {
    const s = await session();
    const res = await end(s.accessToken, s.sid);
    expect(res.statusCode).toBe(204);
    const c = parseSetCookies(res);
    for (const name of ['refresh_token', 'logged_in', 'beta_access']) expect(c[name].attrs['max-age']).toBe('0');
    expectProblem(await prefs(s.accessToken), 401, 'SESSION_REVOKED');
  });

  it('DELETE /auth/sessions ends every other session and says how many', async () => {
    const w = await solanaWallet();
    const others = [await session(t.app, w), await session(t.app, w)];
    const me = await session(t.app, w);
    const res = await endOthers(me.accessToken);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ revoked: 2 });
    for (const o of others) expectProblem(await prefs(o.accessToken), 401, 'SESSION_REVOKED');
    expect((await prefs(me.accessToken)).statusCode).toBe(200);
    expect((await endOthers(me.accessToken)).json()).toEqual({ revoked: 0 });
  });

  it('logout ends every session: access tokens of all of them are refused with SESSION_REVOKED at once', async () => {
    const w = await solanaWallet();
    const a = await session(t.app, w);
    const b = await session(t.app, w);
    const out = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: bearer(a.accessToken) });
    expect(out.statusCode).toBe(204);
    expectProblem(await prefs(a.accessToken), 401, 'SESSION_REVOKED');
    expectProblem(await prefs(b.accessToken), 401, 'SESSION_REVOKED');
  });

  it('reuse detection ends the session for access tokens too', async () => {
    const s = await session();
    expect((await refreshBody(s.refreshToken)).statusCode).toBe(200);
    expectProblem(await refreshBody(s.refreshToken), 401, 'REFRESH_TOKEN_REUSED');
    expectProblem(await prefs(s.accessToken), 401, 'SESSION_REVOKED');
  });

  it('revocation wins over expiry', async () => {
    const s = await session();
    const expired = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 1_000, clockTimestamp: Date.now() - 3_600_000 })({
      sub: s.user.id,
      walletAddress: s.user.walletAddress,
      chain: 'solana',
      sid: s.sid,
    });
    expectProblem(await prefs(expired), 401, 'UNAUTHORIZED');
    expect((await end(s.accessToken, s.sid)).statusCode).toBe(204);
    expectProblem(await prefs(expired), 401, 'SESSION_REVOKED');
  });

  it('a token verified before is still refused once its session ends or it expires (remembered verifications change neither)', async () => {
    const s = await session();
    expect((await prefs(s.accessToken)).statusCode).toBe(200); // verified: now remembered
    expect((await end(s.accessToken, s.sid)).statusCode).toBe(204);
    expectProblem(await prefs(s.accessToken), 401, 'SESSION_REVOKED');

    const live = await session();
    const exp = Math.floor(Date.now() / 1000) + 2;
    const shortLived = createSigner({ key: SECRET, algorithm: 'HS256' })({
      sub: live.user.id,
      walletAddress: live.user.walletAddress,
      chain: 'solana',
      sid: live.sid,
      exp,
    });
    expect((await prefs(shortLived)).statusCode).toBe(200);
    expect((await prefs(shortLived)).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 50));
    expectProblem(await prefs(shortLived), 401, 'UNAUTHORIZED');
  });

  it('a token from before sessions belongs to none: accepted, current nowhere, DELETE /auth/sessions ends all', async () => {
    const w = await solanaWallet();
    const a = await session(t.app, w);
    const legacy = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 600_000 })({
      sub: a.user.id,
      walletAddress: a.user.walletAddress,
      chain: 'solana',
    });
    expect((await prefs(legacy)).statusCode).toBe(200);
    const sessions = (await list(legacy)).json().sessions as Array<{ current: boolean }>;
    expect(sessions).toHaveLength(1);
    expect(sessions[0].current).toBe(false);
    expect((await endOthers(legacy)).json()).toEqual({ revoked: 1 });
    expectProblem(await prefs(a.accessToken), 401, 'SESSION_REVOKED');
    expect((await prefs(legacy)).statusCode).toBe(200);
  });
});

describe('revocation reaches sockets (docs/decisions.md §10.6)', () => {
  it("the session's sockets get auth:revoked and are disconnected; another session's socket stays", async () => {
    const w = await solanaWallet();
    const a = await session(t.app, w);
    const b = await session(t.app, w);
    const sa = await connect(url, { token: a.accessToken });
    const sb = await connect(url, { token: b.accessToken });
    expect(await ack(sa, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    const revoked = next(sa, 'auth:revoked');
    const gone = next(sa, 'disconnect');
    expect((await end(b.accessToken, a.sid)).statusCode).toBe(204);
    expect(await revoked).toEqual({ code: 'SESSION_REVOKED', message: expect.any(String) });
    expect(await gone).toBe('io server disconnect');
    expect(sb.connected).toBe(true);
    expect(await ack(sb, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
  });

  it('a handshake or `auth` with a token of an ended session is refused with SESSION_REVOKED', async () => {
    const w = await solanaWallet();
    const a = await session(t.app, w);
    const b = await session(t.app, w);
    const anon = await connect(url);
    expect((await end(b.accessToken, a.sid)).statusCode).toBe(204);
    expect(await refusal(url, { token: a.accessToken })).toBe('SESSION_REVOKED');
    expect(await ack(anon, 'auth', { token: a.accessToken })).toMatchObject({ ok: false, error: { code: 'SESSION_REVOKED' } });
    expect(await ack(anon, 'auth', { token: b.accessToken })).toEqual({ ok: true });
    // Signed in through `auth`, the socket now belongs to session b: ending b drops it.
    const gone = next(anon, 'disconnect');
    expectProblem(await endOthers(a.accessToken), 401, 'SESSION_REVOKED');
    const c = await session(t.app, w);
    expect((await end(c.accessToken, b.sid)).statusCode).toBe(204);
    expect(await gone).toBe('io server disconnect');
    await eventually(() => !anon.connected);
  });
});

describe('cookie refresh needs a trusted origin (docs/decisions.md §10.4)', () => {
  it('another site (and Origin: null) gets 403 ORIGIN_NOT_ALLOWED: nothing rotated, cookies left as they are', async () => {
    const s = await session();
    const refused: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'http://app.example.com' }, // scheme matters
      { 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of refused) {
      const res = await refreshCookie(s.refreshToken, headers);
      expectProblem(res, 403, 'ORIGIN_NOT_ALLOWED');
      expect(res.headers['set-cookie'], JSON.stringify(headers)).toBeUndefined();
    }
    const rows = await db.rows<{ used: boolean }>(
      sql`select used_at is not null as used from refresh_tokens where token_hash = ${hash(s.refreshToken)}`,
    );
    expect(rows).toEqual([{ used: false }]);
    expect((await refreshCookie(s.refreshToken, { origin: PAGE })).statusCode).toBe(200);
  });

  it("a listed origin, the service's own origin, or no Origin with a same-site Sec-Fetch-Site rotate", async () => {
    const allowed: Record<string, string>[] = [
      { origin: PAGE },
      { origin: 'http://localhost', host: 'localhost' },
      { 'sec-fetch-site': 'same-origin' },
      { 'sec-fetch-site': 'same-site' },
      { 'sec-fetch-site': 'none' },
      {},
    ];
    for (const headers of allowed) {
      const s = await session();
      const res = await refreshCookie(s.refreshToken, headers);
      expect(res.statusCode, JSON.stringify(headers) + res.body).toBe(200);
      expect(parseSetCookies(res).refresh_token.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
  });

  it('a body-token refresh is never subject to the rule, and carries the new token in the body', async () => {
    const s = await session();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/refresh',
      payload: { refreshToken: s.refreshToken },
      headers: { origin: 'https://evil.example' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().refreshToken).toBe(parseSetCookies(res).refresh_token.value);
  });
});

describe('optional reuse grace (REFRESH_REUSE_GRACE_SECONDS, docs/decisions.md §10.3)', () => {
  it('the rotated token, presented again inside the window, gets the same successor (body and cookie); repeatable', async () => {
    const s = await session(grace.app);
    const first = await refreshBody(s.refreshToken, grace.app);
    expect(first.statusCode).toBe(200);
    const successor = first.json().refreshToken as string;
    for (let i = 0; i < 2; i++) {
      const again = await refreshBody(s.refreshToken, grace.app);
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json().refreshToken).toBe(successor);
      expect(parseSetCookies(again).refresh_token.value).toBe(successor);
      const access = claims(again.json().accessToken);
      expect(access.sid).toBe(s.sid);
      expect((access.exp as number) - Math.floor(Date.now() / 1000)).toBeGreaterThan(890);
    }
    // At rest the successor is sealed, never in clear.
    const [row] = await db.rows<{ successor_sealed: string }>(
      sql`select successor_sealed from refresh_tokens where token_hash = ${hash(s.refreshToken)}`,
    );
    expect(row.successor_sealed).toBeTruthy();
    expect(row.successor_sealed).not.toContain(successor);
    expect(Buffer.from(row.successor_sealed, 'base64url').toString('latin1')).not.toContain(successor);
    // Once the successor is used, the old token is a reuse: the session ends.
    const next2 = await refreshBody(successor, grace.app);
    expect(next2.statusCode).toBe(200);
    expectProblem(await refreshBody(s.refreshToken, grace.app), 401, 'REFRESH_TOKEN_REUSED');
    expectProblem(await refreshBody(next2.json().refreshToken, grace.app), 401, 'INVALID_REFRESH_TOKEN');
  });

  it('two concurrent refreshes of one token both succeed with the same successor', async () => {
    const s = await session(grace.app);
    const results = await Promise.all([refreshBody(s.refreshToken, grace.app), refreshBody(s.refreshToken, grace.app)]);
    expect(results.map((r) => r.statusCode)).toEqual([200, 200]);
    expect(results[0].json().refreshToken).toBe(results[1].json().refreshToken);
  });

  it('after the window, or for an older token, the family is revoked; sealed successors are cleared', async () => {
    const s = await session(grace.app);
    const t1 = (await refreshBody(s.refreshToken, grace.app)).json().refreshToken as string;
    await db.rows(sql`update refresh_tokens set used_at = now() - interval '11 seconds' where token_hash = ${hash(s.refreshToken)}`);
    expectProblem(await refreshBody(s.refreshToken, grace.app), 401, 'REFRESH_TOKEN_REUSED');
    expectProblem(await refreshBody(t1, grace.app), 401, 'INVALID_REFRESH_TOKEN');

    const o = await session(grace.app);
    const o1 = (await refreshBody(o.refreshToken, grace.app)).json().refreshToken as string;
    const o2 = (await refreshBody(o1, grace.app)).json().refreshToken as string;
    expectProblem(await refreshBody(o.refreshToken, grace.app), 401, 'REFRESH_TOKEN_REUSED'); // two generations back
    expectProblem(await refreshBody(o2, grace.app), 401, 'INVALID_REFRESH_TOKEN');

    // Rotations clear sealed successors past the window.
    await db.rows(sql`update refresh_tokens set used_at = now() - interval '1 minute' where successor_sealed is not null`);
    const p = await session(grace.app);
    expect((await refreshBody(p.refreshToken, grace.app)).statusCode).toBe(200);
    const left = await db.rows<{ n: number }>(
      sql`select count(*)::int as n from refresh_tokens where successor_sealed is not null and used_at < now() - interval '10 seconds'`,
    );
    expect(Number(left[0].n)).toBe(0);
  });

  it('without the setting (default 0) the second presentation is a reuse', async () => {
    const s = await session();
    expect((await refreshBody(s.refreshToken)).statusCode).toBe(200);
    expectProblem(await refreshBody(s.refreshToken), 401, 'REFRESH_TOKEN_REUSED');
    const [row] = await db.rows<{ successor_sealed: string | null }>(
      sql`select successor_sealed from refresh_tokens where token_hash = ${hash(s.refreshToken)}`,
    );
    expect(row.successor_sealed).toBeNull();
  });
});
