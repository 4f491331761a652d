import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../support/problem.js';
import { getNonce, nextIp, parseSetCookies, postWallet, signIn, solanaWallet } from '../support/users.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

function expect429(res: Awaited<ReturnType<typeof t.app.inject>>, limit: number) {
  expectProblem(res, 429, 'RATE_LIMITED');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  expect(res.headers['ratelimit-limit']).toBe(String(limit));
  expect(res.headers['ratelimit-remaining']).toBe('0');
}

describe('docs/api-contract.md §8 limits on the auth routes (sliding window, per IP unless said otherwise)', () => {
  it('GET /auth/wallet/nonce: 20 a minute per IP', async () => {
    const w = await solanaWallet();
    const ip = nextIp();
    const get = (remoteAddress: string) =>
      t.app.inject({ method: 'GET', url: '/api/v1/auth/wallet/nonce', query: { chain: 'solana', address: w.address }, remoteAddress });
    for (let i = 0; i < 20; i++) expect((await get(ip)).statusCode).toBe(200);
    expect429(await get(ip), 20);
    expect((await get(nextIp())).statusCode).toBe(200);
  });

  it('POST /auth/wallet: 10 a minute per IP, failed attempts included', async () => {
    const ip = nextIp();
    const post = (remoteAddress: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/wallet',
        payload: { address: 'x', chain: 'solana', signature: 'x', nonce: 'x' },
        remoteAddress,
      });
    for (let i = 0; i < 10; i++) expect((await post(ip)).statusCode).toBe(400);
    expect429(await post(ip), 10);
    expect((await post(nextIp())).statusCode).toBe(400);
  });

  it('the sign-in routes answer the limit headers; a refused (429) attempt neither issues nor consumes a nonce', async () => {
    const w = await solanaWallet();
    const ipA = nextIp();
    const first = await postWallet(t.app, { address: 'x', chain: 'solana', signature: 'x', nonce: 'x' }, ipA);
    expect(first.statusCode).toBe(400);
    expect(first.headers['ratelimit-limit']).toBe('10');
    expect(first.headers['ratelimit-remaining']).toBe('9');
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    for (let i = 1; i < 10; i++) await postWallet(t.app, { address: 'x', chain: 'solana', signature: 'x', nonce: 'x' }, ipA);

    const ipB = nextIp();
    const nonceRes = await t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/wallet/nonce',
      query: { chain: 'solana', address: w.address },
      remoteAddress: ipB,
    });
    expect(nonceRes.statusCode).toBe(200);
    expect(nonceRes.headers['ratelimit-limit']).toBe('20');
    expect(nonceRes.headers['ratelimit-remaining']).toBe('19');
    const nonce = nonceRes.json().nonce as string;
    const body = { address: w.address, chain: 'solana', signature: await w.sign(nonce), nonce };
    expect429(await postWallet(t.app, body, ipA), 10);
    // The refused attempt left the nonce alone: it still signs in, once.
    expect((await postWallet(t.app, body, nextIp())).statusCode).toBe(201);
    expectProblem(await postWallet(t.app, body, nextIp()), 401, 'INVALID_NONCE');

    // A refused nonce request issues nothing.
    const ipC = nextIp();
    for (let i = 0; i < 20; i++) await getNonce(t.app, 'solana', w.address, ipC);
    const refused = await t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/wallet/nonce',
      query: { chain: 'solana', address: w.address },
      remoteAddress: ipC,
    });
    expect429(refused, 20);
    expect(refused.json().nonce).toBeUndefined();
  });

  it('POST /auth/idp: 10 a minute per IP', async () => {
    const ip = nextIp();
    const post = (remoteAddress: string) =>
      t.app.inject({ method: 'POST', url: '/api/v1/auth/idp', payload: { accessToken: 'x' }, remoteAddress });
    for (let i = 0; i < 10; i++) expect((await post(ip)).statusCode).toBe(503); // no provider configured here
    expect429(await post(ip), 10);
  });

  it('POST /auth/activate-key: 5 a minute per IP', async () => {
    const ip = nextIp();
    const post = (remoteAddress: string) =>
      t.app.inject({ method: 'POST', url: '/api/v1/auth/activate-key', payload: { key: 'beta_unknown' }, remoteAddress });
    for (let i = 0; i < 5; i++) expect((await post(ip)).statusCode).toBe(400);
    expect429(await post(ip), 5);
    expect((await post(nextIp())).statusCode).toBe(400);
  });

  it('POST /auth/refresh: 60 a minute per token, whatever the IP; other tokens unaffected', async () => {
    const token = parseSetCookies(await signIn(t.app, await solanaWallet())).refresh_token.value;
    const other = parseSetCookies(await signIn(t.app, await solanaWallet())).refresh_token.value;
    const ipA = nextIp();
    const refresh = (refreshToken: string, remoteAddress: string, viaCookie = false) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/refresh',
        remoteAddress,
        ...(viaCookie ? { cookies: { refresh_token: refreshToken } } : { payload: { refreshToken } }),
      });
    expect((await refresh(token, ipA)).statusCode).toBe(200);
    for (let i = 1; i < 60; i++) {
      const res = await refresh(token, ipA, i % 2 === 0);
      expect(res.statusCode).toBe(401); // reuse: counted all the same
    }
    // The 61st presentation of the same token, from another IP and through the cookie.
    expect429(await refresh(token, nextIp(), true), 60);
    expect429(await refresh(token, nextIp()), 60);
    // Same IP, another token: its own budget.
    expect((await refresh(other, ipA)).statusCode).toBe(200);
  });
});

describe('limits behind a listed load balancer (docs/decisions.md §10.1)', () => {
  let lb: TestApp;
  beforeAll(async () => {
    lb = await buildTestApp({ TRUST_PROXY: '10.0.0.0/8' });
  });
  afterAll(async () => lb?.close());

  const nonce = (remoteAddress: string, xff: string | undefined, address: string) =>
    lb.app.inject({
      method: 'GET',
      url: '/api/v1/auth/wallet/nonce',
      query: { chain: 'solana', address },
      remoteAddress,
      headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
    });

  it('a client rotating the left-most X-Forwarded-For entry is still one client: 20, then 429', async () => {
    const w = await solanaWallet();
    // The load balancer (10.0.0.5) appends the real peer, 198.51.100.20; the client writes the rest.
    for (let i = 0; i < 20; i++) expect((await nonce('10.0.0.5', `192.0.2.${i}, 198.51.100.20`, w.address)).statusCode).toBe(200);
    expect429(await nonce('10.0.0.5', '192.0.2.99, 198.51.100.20', w.address), 20);
    // Through another balancer of the list, same client: the same budget.
    expect429(await nonce('10.9.9.9', '198.51.100.20', w.address), 20);
    // Another client behind the same balancer has its own.
    expect((await nonce('10.0.0.5', '192.0.2.1, 198.51.100.21', w.address)).statusCode).toBe(200);
  });

  it('a garbage entry is not a key of its own: the walk stops at the last valid address', async () => {
    const w = await solanaWallet();
    for (let i = 0; i < 20; i++) expect((await nonce('10.0.0.6', `garbage-${i}`, w.address)).statusCode).toBe(200);
    expect429(await nonce('10.0.0.6', 'x'.repeat(8000), w.address), 20);
  });

  it('a peer that is not a listed balancer is the client, whatever it forwards', async () => {
    const w = await solanaWallet();
    for (let i = 0; i < 20; i++) expect((await nonce('203.0.113.50', `198.51.100.${i}`, w.address)).statusCode).toBe(200);
    expect429(await nonce('203.0.113.50', '198.51.100.200', w.address), 20);
  });

  it('IPv6 clients are counted by their /64; the sessions list shows the full address', async () => {
    const w = await solanaWallet();
    for (let i = 0; i < 20; i++) {
      expect((await nonce('10.0.0.5', `2001:db8:aa:bb:${i.toString(16)}::1`, w.address)).statusCode).toBe(200);
    }
    expect429(await nonce('10.0.0.5', '2001:db8:aa:bb:ffff:1:2:3', w.address), 20);
    expect((await nonce('10.0.0.5', '2001:db8:aa:bc::1', w.address)).statusCode).toBe(200);

    const wallet = await solanaWallet();
    const client = '2001:db8:aa:cc:1234:5678:9abc:def0';
    const n = await nonce('10.0.0.5', client, wallet.address);
    const signedIn = await lb.app.inject({
      method: 'POST',
      url: '/api/v1/auth/wallet',
      payload: { address: wallet.address, chain: 'solana', nonce: n.json().nonce, signature: await wallet.sign(n.json().nonce) },
      remoteAddress: '10.0.0.5',
      headers: { 'x-forwarded-for': client, 'user-agent': 'test-agent/1.0' },
    });
    expect(signedIn.statusCode, signedIn.body).toBe(201);
    const list = await lb.app.inject({
      method: 'GET',
      url: '/api/v1/auth/sessions',
      headers: { authorization: `Bearer ${signedIn.json().accessToken}` },
    });
    expect(list.json().sessions).toEqual([expect.objectContaining({ ip: client, userAgent: 'test-agent/1.0', current: true })]);
  });

  it('POST /auth/refresh: 120 a minute per client address across random tokens (429 leaves the cookies)', async () => {
    const post = (i: number) =>
      lb.app.inject({
        method: 'POST',
        url: '/api/v1/auth/refresh',
        payload: { refreshToken: `random-token-${i}` },
        remoteAddress: '10.0.0.7',
        headers: { 'x-forwarded-for': `192.0.2.${i % 250}, 198.51.100.77` },
      });
    for (let i = 0; i < 120; i++) expectProblem(await post(i), 401, 'INVALID_REFRESH_TOKEN');
    const refused = await post(999);
    expect429(refused, 120);
    expect(parseSetCookies(refused)).toEqual({});
  });
});
