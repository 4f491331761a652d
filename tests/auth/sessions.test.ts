import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { createSigner } from 'fast-jwt';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../support/problem.js';
import { evmWallet, parseSetCookies, signIn, solanaWallet } from '../support/users.js';

const SECRET = 'test-secret-test-secret-test-secret-0123456789';
const NINETY_DAYS = 90 * 24 * 3600;

let t: TestApp;
let prod: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ JWT_SECRET: SECRET });
  prod = await buildTestApp(
    {
      JWT_SECRET: SECRET,
      NODE_ENV: 'production',
      COOKIE_DOMAIN: 'example.com',
      SIGN_IN_DOMAIN: 'app.example.com',
      SIGN_IN_URI: 'https://app.example.com',
      SIGN_IN_BARE_NONCE: 'true',
    },
    { db: t.db },
  );
});
afterAll(async () => {
  await prod?.close();
  await t?.close();
});

const hash = (s: string) => createHash('sha256').update(s).digest('hex');

async function session(app = t.app) {
  const res = await signIn(app, await solanaWallet());
  expect(res.statusCode, res.body).toBe(201);
  const cookies = parseSetCookies(res);
  return { accessToken: res.json().accessToken as string, refreshToken: cookies.refresh_token.value, user: res.json().user, res };
}

const refreshBody = (refreshToken: string, app = t.app) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken } });
const refreshCookie = (refreshToken: string, app = t.app) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/refresh', cookies: { refresh_token: refreshToken } });

function expectCleared(res: Awaited<ReturnType<typeof refreshBody>>) {
  const c = parseSetCookies(res);
  for (const name of ['refresh_token', 'logged_in', 'beta_access']) {
    expect(c[name], name).toBeDefined();
    expect(c[name].value).toBe('');
    expect(c[name].attrs['max-age']).toBe('0');
  }
  expect(c.refresh_token.attrs.path).toBe('/api/v1/auth');
  expect(c.logged_in.attrs.path).toBe('/');
}

describe('cookies', () => {
  it('development: refresh_token httpOnly on /api/v1/auth, markers readable on /, SameSite=Lax, 90 days', async () => {
    const { res, refreshToken } = await session();
    const c = parseSetCookies(res);
    expect(refreshToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(c.refresh_token.attrs).toMatchObject({ httponly: true, path: '/api/v1/auth', 'max-age': String(NINETY_DAYS), samesite: 'Lax' });
    expect(c.refresh_token.attrs.secure).toBeUndefined();
    for (const name of ['logged_in', 'beta_access']) {
      expect(c[name].value).toBe('1');
      expect(c[name].attrs).toMatchObject({ path: '/', 'max-age': String(NINETY_DAYS), samesite: 'Lax' });
      expect(c[name].attrs.httponly).toBeUndefined();
      expect(c[name].attrs.domain).toBeUndefined();
    }
  });

  it('production: SameSite=None; Secure and the configured Domain on all three, also when cleared', async () => {
    const { res, refreshToken, accessToken } = await session(prod.app);
    const c = parseSetCookies(res);
    expect(c.refresh_token.attrs).toMatchObject({
      httponly: true,
      secure: true,
      samesite: 'None',
      domain: 'example.com',
      path: '/api/v1/auth',
    });
    expect(c.logged_in.attrs).toMatchObject({ secure: true, samesite: 'None', domain: 'example.com', path: '/' });
    expect(c.beta_access.attrs).toMatchObject({ secure: true, samesite: 'None', domain: 'example.com', path: '/' });
    const rotated = await refreshCookie(refreshToken, prod.app);
    expect(rotated.statusCode).toBe(200);
    expect(parseSetCookies(rotated).refresh_token.attrs).toMatchObject({ secure: true, samesite: 'None' });
    const out = await prod.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { authorization: `Bearer ${accessToken}` } });
    expect(out.statusCode).toBe(204);
    expectCleared(out);
    for (const cookie of Object.values(parseSetCookies(out)))
      expect(cookie.attrs).toMatchObject({ secure: true, samesite: 'None', domain: 'example.com' });
  });
});

describe('POST /api/v1/auth/refresh', () => {
  it('rotates from the cookie: new access and refresh tokens, same family, 90-day expiry, new cookies', async () => {
    const s = await session();
    const res = await refreshCookie(s.refreshToken);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.user).toEqual({ id: s.user.id, walletAddress: s.user.walletAddress, chain: 'solana' });
    expect(t.app.verifyAccessToken(body.accessToken).id).toBe(s.user.id);
    // docs/decisions.md §3.6: a cookie refresh never shows the refresh token to page script.
    expect(body).not.toHaveProperty('refreshToken');
    expect(res.body).not.toContain(parseSetCookies(res).refresh_token.value);
    const c = parseSetCookies(res);
    expect(c.refresh_token.value).not.toBe(s.refreshToken);
    body.refreshToken = c.refresh_token.value;
    expect(c.logged_in.value).toBe('1');
    expect(c.beta_access.value).toBe('1');

    const rows = await t.db.rows<{ token_hash: string; family: string; used: boolean; days: number }>(
      sql`select token_hash, family, used_at is not null as used,
                 extract(epoch from (expires_at - now())) / 86400 as days
          from refresh_tokens where token_hash in (${hash(s.refreshToken)}, ${hash(body.refreshToken)})`,
    );
    const old = rows.find((r) => r.token_hash === hash(s.refreshToken))!;
    const next = rows.find((r) => r.token_hash === hash(body.refreshToken))!;
    expect(old.used).toBe(true);
    expect(next.used).toBe(false);
    expect(next.family).toBe(old.family);
    expect(Number(next.days)).toBeGreaterThan(89.99);
    expect(Number(next.days)).toBeLessThanOrEqual(90);
  });

  it('rotates from the body for clients without cookies, and chains', async () => {
    const s = await session();
    let token = s.refreshToken;
    for (let i = 0; i < 3; i++) {
      const res = await refreshBody(token);
      expect(res.statusCode, res.body).toBe(200);
      token = res.json().refreshToken;
    }
    const rows = await t.db.rows<{ n: number }>(
      sql`select count(distinct family)::int as n from refresh_tokens where user_id = ${s.user.id}`,
    );
    expect(Number(rows[0].n)).toBe(1);
  });

  it('reuse of a used token revokes the whole family (committed) and says REFRESH_TOKEN_REUSED', async () => {
    const s = await session();
    const first = await refreshBody(s.refreshToken);
    expect(first.statusCode).toBe(200);
    const successor = first.json().refreshToken;

    const reuse = await refreshBody(s.refreshToken);
    expectProblem(reuse, 401, 'REFRESH_TOKEN_REUSED');
    expectCleared(reuse);
    // The successor (held by whoever refreshed first) is dead too.
    expectProblem(await refreshBody(successor), 401, 'INVALID_REFRESH_TOKEN');
    // Presenting the used token again, after the family is revoked, is still a reuse.
    expectProblem(await refreshBody(s.refreshToken), 401, 'REFRESH_TOKEN_REUSED');
    const rows = await t.db.rows<{ n: number }>(
      sql`select count(*)::int as n from refresh_tokens where user_id = ${s.user.id} and revoked_at is null`,
    );
    expect(Number(rows[0].n)).toBe(0);
  });

  it('reuse revokes only that family: another sign-in of the same user keeps working', async () => {
    const w = evmWallet();
    const a = parseSetCookies(await signIn(t.app, w)).refresh_token.value;
    const b = parseSetCookies(await signIn(t.app, w)).refresh_token.value;
    expect((await refreshBody(a)).statusCode).toBe(200);
    expectProblem(await refreshBody(a), 401, 'REFRESH_TOKEN_REUSED');
    expect((await refreshBody(b)).statusCode).toBe(200);
  });

  it('two concurrent refreshes with one token: exactly one succeeds', async () => {
    for (let round = 0; round < 3; round++) {
      const s = await session();
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) => (i % 2 ? refreshCookie(s.refreshToken) : refreshBody(s.refreshToken))),
      );
      const ok = results.filter((r) => r.statusCode === 200);
      expect(ok).toHaveLength(1);
      for (const r of results.filter((x) => x.statusCode !== 200)) expectProblem(r, 401, 'REFRESH_TOKEN_REUSED');
      const rows = await t.db.rows<{ n: number }>(sql`select count(*)::int as n from refresh_tokens where user_id = ${s.user.id}`);
      expect(Number(rows[0].n)).toBe(2); // the original and exactly one successor: the family never forks
    }
  });

  it('unknown, missing, expired and revoked tokens are INVALID_REFRESH_TOKEN and clear the cookies', async () => {
    const unknown = await refreshBody('A'.repeat(43));
    expectProblem(unknown, 401, 'INVALID_REFRESH_TOKEN');
    expectCleared(unknown);
    const missing = await t.app.inject({ method: 'POST', url: '/api/v1/auth/refresh' });
    expectProblem(missing, 401, 'INVALID_REFRESH_TOKEN');
    expectCleared(missing);

    const s = await session();
    await t.db.rows(sql`update refresh_tokens set expires_at = now() - interval '1 second' where token_hash = ${hash(s.refreshToken)}`);
    expectProblem(await refreshCookie(s.refreshToken), 401, 'INVALID_REFRESH_TOKEN');
  });

  it('rejects a malformed body with 400', async () => {
    expectProblem(
      await t.app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken: 5 } }),
      400,
      'VALIDATION_ERROR',
    );
    expectProblem(
      await t.app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken: 'x'.repeat(300) } }),
      400,
      'VALIDATION_ERROR',
    );
  });
});

describe('POST /api/v1/auth/logout', () => {
  it('revokes every family of the user, clears the cookies, and needs a bearer token', async () => {
    const w = await solanaWallet();
    const first = await signIn(t.app, w);
    const second = await signIn(t.app, w);
    const tokens = [first, second].map((r) => parseSetCookies(r).refresh_token.value);
    // A third family, rotated once.
    const third = (await refreshBody(parseSetCookies(await signIn(t.app, w)).refresh_token.value)).json().refreshToken;
    const other = await session(); // another user is untouched

    expectProblem(await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout' }), 401, 'UNAUTHORIZED');
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: { authorization: `Bearer ${first.json().accessToken}` },
    });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expectCleared(res);
    for (const token of [...tokens, third]) expectProblem(await refreshBody(token), 401, 'INVALID_REFRESH_TOKEN');
    expect((await refreshBody(other.refreshToken)).statusCode).toBe(200);
  });
});

describe('access tokens on the bearer guard', () => {
  const logoutWith = (token: string) =>
    t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { authorization: `Bearer ${token}` } });
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

  it('are HS256 JWTs with sub, walletAddress, chain and a 15-minute exp', async () => {
    const s = await session();
    const [h, p] = s.accessToken.split('.');
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toMatchObject({ alg: 'HS256' });
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    expect(claims).toMatchObject({ sub: s.user.id, walletAddress: s.user.walletAddress, chain: 'solana' });
    expect(claims.exp - claims.iat).toBe(900);
    expect((await logoutWith(s.accessToken)).statusCode).toBe(204);
  });

  it('refuses expired, tampered, alg-none and wrong-algorithm tokens with 401', async () => {
    const s = await session();
    const claims = { sub: s.user.id, walletAddress: s.user.walletAddress, chain: 'solana' };
    const expired = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 60_000, clockTimestamp: Date.now() - 3_600_000 })(claims);
    const [h, p, sig] = s.accessToken.split('.');
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const tampered = `${h}.${b64({ ...payload, sub: '00000000-0000-0000-0000-000000000000' })}.${sig}`;
    const none = `${b64({ alg: 'none', typ: 'JWT' })}.${p}.`;
    const hs512 = createSigner({ key: SECRET, algorithm: 'HS512', expiresIn: 600_000 })(claims);
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rs256 = createSigner({
      key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
      algorithm: 'RS256',
      expiresIn: 600_000,
    })(claims);
    const otherSecret = createSigner({ key: 'another-secret-another-secret-another-1', algorithm: 'HS256', expiresIn: 600_000 })(claims);
    for (const token of [expired, tampered, none, hs512, rs256, otherSecret, 'garbage', `${h}.${p}`]) {
      expectProblem(await logoutWith(token), 401, 'UNAUTHORIZED');
    }
    // The genuine token still works after all that.
    expect((await logoutWith(s.accessToken)).statusCode).toBe(204);
  });

  it('accepts tokens signed with JWT_SECRET_PREVIOUS during a key rotation', async () => {
    const rotated = await buildTestApp(
      { JWT_SECRET: 'new-secret-new-secret-new-secret-0123456', JWT_SECRET_PREVIOUS: SECRET },
      { db: t.db },
    );
    try {
      const s = await session(); // signed by the app holding the old secret
      const res = await rotated.app.inject({
        method: 'POST',
        url: '/api/v1/auth/logout',
        headers: { authorization: `Bearer ${s.accessToken}` },
      });
      expect(res.statusCode).toBe(204);
      // New tokens from the rotated app are signed with the new secret.
      const fresh = await session(rotated.app);
      expectProblem(await logoutWith(fresh.accessToken), 401, 'UNAUTHORIZED');
    } finally {
      await rotated.close();
    }
  });
});
