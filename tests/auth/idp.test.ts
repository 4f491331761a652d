import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { getAddress } from 'viem';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeServer, type FakeServer } from '../fakes/server.js';
import { expectProblem } from '../support/problem.js';
import { evmWallet, nextIp, parseSetCookies, signIn } from '../support/users.js';

const ISSUER = 'https://id.example.com/';
const AUDIENCE = 'predict-api';

let fake: FakeServer;
let jwksApp: TestApp;
let userinfoApp: TestApp;
let bareApp: TestApp;
let key: CryptoKey;
let otherKey: CryptoKey;
let jwk: JWK;

/** Independent derivation of docs/decisions.md §3.4. */
const expectedAddress = (issuer: string, sub: string) =>
  getAddress(`0x${bytesToHex(keccak_256(new TextEncoder().encode(`idp:${issuer}:${sub}`))).slice(-40)}`);

function token(sub: string, opts: { iss?: string; aud?: string; exp?: string | number; key?: CryptoKey; kid?: string } = {}) {
  return new SignJWT({ scope: 'openid' })
    .setProtectedHeader({ alg: 'RS256', kid: opts.kid ?? 'k1', typ: 'at+jwt' })
    .setSubject(sub)
    .setIssuer(opts.iss ?? ISSUER)
    .setAudience(opts.aud ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? '10m')
    .sign(opts.key ?? key);
}

// A distinct client IP per call keeps these tests clear of the 10/min limit (tested in rate-limits.test.ts).
const postIdp = (app: TestApp, accessToken: unknown) =>
  app.app.inject({ method: 'POST', url: '/api/v1/auth/idp', payload: { accessToken }, remoteAddress: nextIp() });

beforeAll(async () => {
  ({ privateKey: key, publicKey: jwk } = await (async () => {
    const pair = await generateKeyPair('RS256');
    return { privateKey: pair.privateKey, publicKey: { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' } };
  })());
  otherKey = (await generateKeyPair('RS256')).privateKey;
  fake = await startFakeServer();
  fake.on('GET', '/.well-known/jwks.json', () => ({ body: { keys: [jwk] } }));
  // A userinfo endpoint in the OIDC shape: 200 { sub, ... } or 401 with WWW-Authenticate.
  fake.on('GET', '/userinfo', (req) => {
    const m = /^Bearer (good-(.+))$/.exec(String(req.headers.authorization ?? ''));
    if (!m) return { status: 401, body: { error: 'invalid_token' }, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } };
    return { body: { sub: m[2], email: `${m[2]}@example.com` } };
  });
  jwksApp = await buildTestApp({ IDP_JWKS_URL: `${fake.url}/.well-known/jwks.json`, IDP_ISSUER: ISSUER, IDP_AUDIENCE: AUDIENCE });
  userinfoApp = await buildTestApp({ IDP_USERINFO_URL: `${fake.url}/userinfo` }, { db: jwksApp.db });
  bareApp = await buildTestApp({}, { db: jwksApp.db });
});
afterAll(async () => {
  await bareApp?.close();
  await userinfoApp?.close();
  await jwksApp?.close();
  await fake?.close();
});

describe('POST /api/v1/auth/idp with JWKS', () => {
  it('verifies the token, creates an idp account at the synthetic address, sets the cookies', async () => {
    const res = await postIdp(jwksApp, await token('user-1'));
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body.user).toEqual({
      id: expect.any(String),
      walletAddress: expectedAddress(ISSUER, 'user-1'),
      chain: 'evm',
      username: null,
      avatarUrl: null,
    });
    expect(jwksApp.app.verifyAccessToken(body.accessToken).id).toBe(body.user.id);
    const c = parseSetCookies(res);
    expect(Object.keys(c).sort()).toEqual(['beta_access', 'logged_in', 'refresh_token']);
    const rows = await jwksApp.db.rows(sql`select auth_method, idp_issuer, idp_subject from users where id = ${body.user.id}`);
    expect(rows).toEqual([{ auth_method: 'idp', idp_issuer: ISSUER, idp_subject: 'user-1' }]);
    // The session is a normal one: it refreshes.
    const refreshed = await jwksApp.app.inject({
      method: 'POST',
      url: '/api/v1/auth/refresh',
      payload: { refreshToken: c.refresh_token.value },
    });
    expect(refreshed.statusCode).toBe(200);
  });

  it('the same external account is the same user every time; another sub is another user', async () => {
    const a = (await postIdp(jwksApp, await token('user-2'))).json().user.id;
    const b = (await postIdp(jwksApp, await token('user-2'))).json().user.id;
    const c = (await postIdp(jwksApp, await token('user-3'))).json().user.id;
    expect(a).toBe(b);
    expect(c).not.toBe(a);
  });

  it('is never merged with a wallet account', async () => {
    const wallet = await signIn(jwksApp.app, evmWallet());
    const idp = await postIdp(jwksApp, await token('user-4'));
    expect(idp.json().user.id).not.toBe(wallet.json().user.id);
    const rows = await jwksApp.db.rows<{ auth_method: string }>(
      sql`select auth_method from users where id in (${wallet.json().user.id}, ${idp.json().user.id}) order by auth_method`,
    );
    expect(rows.map((r) => r.auth_method)).toEqual(['idp', 'wallet']);
  });

  it('rejects wrong issuer, wrong audience, expired, foreign-key, HS256 and garbage tokens with 401 INVALID_IDP_TOKEN', async () => {
    const hs = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .setSubject('x')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('shared-secret-shared-secret-shared-secret'));
    const noExp = await new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
      .setSubject('x')
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .sign(key);
    const bad = [
      await token('x', { iss: 'https://evil.example.com/' }),
      await token('x', { aud: 'someone-else' }),
      await token('x', { exp: Math.floor(Date.now() / 1000) - 3600 }),
      await token('x', { key: otherKey }),
      hs,
      noExp,
      'not-a-jwt',
      'a.b.c',
    ];
    for (const t of bad) expectProblem(await postIdp(jwksApp, t), 401, 'INVALID_IDP_TOKEN');
  });

  it('answers 503 UNAVAILABLE when the JWKS endpoint is down', async () => {
    const cold = await buildTestApp(
      { IDP_JWKS_URL: `${fake.url}/.well-known/jwks.json`, IDP_ISSUER: ISSUER, IDP_AUDIENCE: AUDIENCE },
      { db: jwksApp.db },
    );
    fake.down(true);
    try {
      const res = await postIdp(cold, await token('user-5'));
      expectProblem(res, 503, 'UNAVAILABLE');
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      fake.down(false);
      await cold.close();
    }
  });

  it('validates the body', async () => {
    expectProblem(await postIdp(jwksApp, ''), 400, 'VALIDATION_ERROR');
    expectProblem(await postIdp(jwksApp, 42), 400, 'VALIDATION_ERROR');
  });
});

describe('POST /api/v1/auth/idp with userinfo', () => {
  it('asks the provider with the bearer token and keys the account by (userinfo URL, sub)', async () => {
    const res = await postIdp(userinfoApp, 'good-alice');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().user.walletAddress).toBe(expectedAddress(`${fake.url}/userinfo`, 'alice'));
    const call = fake.requests.filter((r) => r.path === '/userinfo').at(-1)!;
    expect(call.headers.authorization).toBe('Bearer good-alice');
    expect((await postIdp(userinfoApp, 'good-alice')).json().user.id).toBe(res.json().user.id);
  });

  it('a token the provider rejects is 401 INVALID_IDP_TOKEN', async () => {
    expectProblem(await postIdp(userinfoApp, 'stolen'), 401, 'INVALID_IDP_TOKEN');
  });

  it('a provider that does not know the token (404, 410, JSON or not) is 401 INVALID_IDP_TOKEN, never 503', async () => {
    fake.on('GET', '/userinfo-unknown', (req) => {
      const auth = String(req.headers.authorization ?? '');
      if (auth === 'Bearer html-404') return { status: 404, raw: '<html>Not Found</html>', headers: { 'content-type': 'text/html' } };
      if (auth === 'Bearer json-404') return { status: 404, body: { error: 'token_not_found' } };
      if (auth === 'Bearer gone') return { status: 410, raw: 'gone', headers: { 'content-type': 'text/plain' } };
      if (auth === 'Bearer html-200') return { status: 200, raw: '<html>sign in</html>', headers: { 'content-type': 'text/html' } };
      return { status: 500, raw: 'oops', headers: { 'content-type': 'text/plain' } };
    });
    const app = await buildTestApp({ IDP_USERINFO_URL: `${fake.url}/userinfo-unknown` }, { db: jwksApp.db });
    try {
      for (const t of ['html-404', 'json-404', 'gone', 'html-200']) {
        expectProblem(await postIdp(app, t), 401, 'INVALID_IDP_TOKEN');
      }
      // A provider failing (5xx, HTML or not) stays 503.
      expectProblem(await postIdp(app, 'boom'), 503, 'UNAVAILABLE');
    } finally {
      await app.close();
    }
  });

  it('the provider down or failing is 503 UNAVAILABLE, never 500', async () => {
    fake.down(true);
    try {
      expectProblem(await postIdp(userinfoApp, 'good-bob'), 503, 'UNAVAILABLE');
    } finally {
      fake.down(false);
    }
    fake.failNext(2, 500);
    expectProblem(await postIdp(userinfoApp, 'good-bob'), 503, 'UNAVAILABLE');
    expect((await postIdp(userinfoApp, 'good-bob')).statusCode).toBe(201);
  });

  it('an unreachable provider is 503', async () => {
    const dead = await buildTestApp({ IDP_USERINFO_URL: 'http://127.0.0.1:1/userinfo' }, { db: jwksApp.db });
    try {
      expectProblem(await postIdp(dead, 'good-carol'), 503, 'UNAVAILABLE');
    } finally {
      await dead.close();
    }
  });
});

describe('POST /api/v1/auth/idp unconfigured', () => {
  it('answers 503 UNAVAILABLE when neither IDP_JWKS_URL nor IDP_USERINFO_URL is set', async () => {
    expectProblem(await postIdp(bareApp, 'anything'), 503, 'UNAVAILABLE');
  });
});

describe('IdP hardening (docs/decisions.md §10.8)', () => {
  it('two identities whose idp:<iss>:<sub> strings collide are never merged: the second gets 409 ACCOUNT_CONFLICT', async () => {
    // Issuer "https://id.example.com/" with sub "x:collide", and issuer "https://id.example.com/:x" with sub "collide":
    // the same string, so the same synthetic address.
    const other = await buildTestApp(
      { IDP_JWKS_URL: `${fake.url}/.well-known/jwks.json`, IDP_ISSUER: `${ISSUER}:x`, IDP_AUDIENCE: AUDIENCE },
      { db: jwksApp.db },
    );
    try {
      expect(expectedAddress(ISSUER, 'x:collide')).toBe(expectedAddress(`${ISSUER}:x`, 'collide'));
      const first = await postIdp(jwksApp, await token('x:collide'));
      expect(first.statusCode, first.body).toBe(201);
      const second = await postIdp(other, await token('collide', { iss: `${ISSUER}:x` }));
      expectProblem(second, 409, 'ACCOUNT_CONFLICT');
      expect(second.headers['set-cookie']).toBeUndefined();
      // The first identity still signs into its own account.
      expect((await postIdp(jwksApp, await token('x:collide'))).json().user.id).toBe(first.json().user.id);
      const rows = await jwksApp.db.rows<{ idp_issuer: string; idp_subject: string }>(
        sql`select idp_issuer, idp_subject from users where wallet_address = ${expectedAddress(ISSUER, 'x:collide')}`,
      );
      expect(rows).toEqual([{ idp_issuer: ISSUER, idp_subject: 'x:collide' }]);
    } finally {
      await other.close();
    }
  });

  it('an account is found by (issuer, subject) exactly', async () => {
    const a = await postIdp(userinfoApp, 'good-exact');
    expect(a.statusCode).toBe(201);
    await jwksApp.db.rows(sql`update users set wallet_address = ${expectedAddress('moved', 'x')} where id = ${a.json().user.id}`);
    // The synthetic address no longer matches, the (issuer, subject) pair does: same account.
    const b = await postIdp(userinfoApp, 'good-exact');
    expect(b.statusCode, b.body).toBe(201);
    expect(b.json().user.id).toBe(a.json().user.id);
  });

  it('a token a header cannot carry is 401 INVALID_IDP_TOKEN, never 503, and is never sent', async () => {
    const before = fake.requests.filter((r) => r.path === '/userinfo').length;
    for (const bad of ['good-tök', 'good-a\nb', 'good-a\u0001b', 'good a', 'good-\u007f']) {
      expectProblem(await postIdp(userinfoApp, bad), 401, 'INVALID_IDP_TOKEN');
    }
    expect(fake.requests.filter((r) => r.path === '/userinfo').length).toBe(before);
  });
});
