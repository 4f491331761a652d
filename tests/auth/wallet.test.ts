import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { base58 } from '@scure/base';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../support/problem.js';
import { evmWallet, getNonce, nextIp, postWallet, signIn, solanaWallet } from '../support/users.js';

let t: TestApp;
let now = Date.now();
beforeAll(async () => {
  t = await buildTestApp({}, { clock: () => new Date(now) });
});
afterAll(async () => t?.close());

describe('GET /api/v1/auth/wallet/nonce', () => {
  it('returns a long alphanumeric nonce and its expiry, 5 minutes out', async () => {
    const w = await solanaWallet();
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/wallet/nonce', query: { chain: 'solana', address: w.address } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.nonce).toMatch(/^[A-Za-z0-9]{22,}$/);
    expect(Date.parse(body.expiresAt) - now).toBe(5 * 60_000);
    const other = await getNonce(t.app, 'solana', w.address);
    expect(other).not.toBe(body.nonce);
  });

  it.each([
    ['solana', '0x52908400098527886E0F7030069857D2E4169EE7'],
    ['solana', 'not-base58-0OIl'],
    ['solana', base58.encode(new Uint8Array(31).fill(7))],
    ['evm', '52908400098527886E0F7030069857D2E4169EE7'],
    ['evm', '0x52908400098527886E0F7030069857D2E4169EE'],
    ['evm', '0xZZ908400098527886E0F7030069857D2E4169EE7'],
  ])('rejects a malformed %s address %s with 400', async (chain, address) => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/wallet/nonce', query: { chain, address } });
    expectProblem(res, 400, 'VALIDATION_ERROR');
  });

  it('rejects an unknown chain and a missing address with 400', async () => {
    expectProblem(
      await t.app.inject({ method: 'GET', url: '/api/v1/auth/wallet/nonce', query: { chain: 'btc', address: 'x' } }),
      400,
      'VALIDATION_ERROR',
    );
    expectProblem(
      await t.app.inject({ method: 'GET', url: '/api/v1/auth/wallet/nonce', query: { chain: 'evm' } }),
      400,
      'VALIDATION_ERROR',
    );
  });
});

describe('POST /api/v1/auth/wallet', () => {
  it('signs in with a Solana wallet end to end and the access token works on a bearer route', async () => {
    const w = await solanaWallet();
    const res = await signIn(t.app, w, { extra: { referralCode: 'FRIEND1' } });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body.user).toEqual({ id: expect.any(String), walletAddress: w.address, chain: 'solana', username: null, avatarUrl: null });
    expect(t.app.verifyAccessToken(body.accessToken)).toMatchObject({ id: body.user.id, walletAddress: w.address, chain: 'solana' });
    const logout = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: { authorization: `Bearer ${body.accessToken}` },
    });
    expect(logout.statusCode).toBe(204);
  });

  it('signs in with an EVM wallet and stores the address EIP-55', async () => {
    const w = evmWallet();
    const res = await signIn(t.app, { ...w, address: w.address.toLowerCase() });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().user).toMatchObject({ walletAddress: w.address, chain: 'evm' });
  });

  it('finds the same user again; EVM addresses are one account whatever their case', async () => {
    const s = await solanaWallet();
    const a = (await signIn(t.app, s)).json().user.id;
    const b = (await signIn(t.app, s)).json().user.id;
    expect(a).toBe(b);

    const e = evmWallet();
    const ids = new Set<string>();
    for (const address of [e.address, e.address.toLowerCase(), '0x' + e.address.slice(2).toUpperCase()]) {
      const res = await signIn(t.app, { ...e, address });
      expect(res.statusCode, res.body).toBe(201);
      ids.add(res.json().user.id);
    }
    expect(ids.size).toBe(1);
    const rows = await t.db.rows<{ n: number }>(
      sql`select count(*)::int as n from users where lower(wallet_address) = ${e.address.toLowerCase()}`,
    );
    expect(Number(rows[0].n)).toBe(1);
  });

  it('stores referralCode on first sign-up only', async () => {
    const w = await solanaWallet();
    await signIn(t.app, w, { extra: { referralCode: 'FIRST' } });
    await signIn(t.app, w, { extra: { referralCode: 'SECOND' } });
    const rows = await t.db.rows<{ referral_code: string | null }>(
      sql`select referral_code from users where wallet_address = ${w.address}`,
    );
    expect(rows).toEqual([{ referral_code: 'FIRST' }]);
  });

  it('concurrent first sign-ins of one wallet create exactly one user', async () => {
    const w = await solanaWallet();
    const results = await Promise.all(Array.from({ length: 6 }, () => signIn(t.app, w)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(6).fill(201));
    expect(new Set(results.map((r) => r.json().user.id)).size).toBe(1);
  });

  it('a replayed nonce is refused, even after a successful sign-in', async () => {
    const w = await solanaWallet();
    const ip = nextIp();
    const nonce = await getNonce(t.app, 'solana', w.address, ip);
    const body = { address: w.address, chain: 'solana', signature: await w.sign(nonce), nonce };
    expect((await postWallet(t.app, body, ip)).statusCode).toBe(201);
    expectProblem(await postWallet(t.app, body, ip), 401, 'INVALID_NONCE');
  });

  it('a failed attempt consumes the nonce too', async () => {
    const w = await solanaWallet();
    const ip = nextIp();
    const nonce = await getNonce(t.app, 'solana', w.address, ip);
    const forged = await w.sign('something else');
    expectProblem(await postWallet(t.app, { address: w.address, chain: 'solana', signature: forged, nonce }, ip), 401, 'INVALID_SIGNATURE');
    const good = await w.sign(nonce);
    expectProblem(await postWallet(t.app, { address: w.address, chain: 'solana', signature: good, nonce }, ip), 401, 'INVALID_NONCE');
  });

  it('an expired nonce is refused', async () => {
    const w = evmWallet();
    const ip = nextIp();
    const nonce = await getNonce(t.app, 'evm', w.address, ip);
    const signature = await w.sign(nonce);
    now += 5 * 60_000 + 1;
    try {
      expectProblem(await postWallet(t.app, { address: w.address, chain: 'evm', signature, nonce }, ip), 401, 'INVALID_NONCE');
    } finally {
      now = Date.now();
    }
  });

  it('a nonce issued for another address or chain is refused (and consumed)', async () => {
    const a = await solanaWallet();
    const b = await solanaWallet();
    const ip = nextIp();
    const nonce = await getNonce(t.app, 'solana', a.address, ip);
    expectProblem(
      await postWallet(t.app, { address: b.address, chain: 'solana', signature: await b.sign(nonce), nonce }, ip),
      401,
      'INVALID_NONCE',
    );
    expectProblem(
      await postWallet(t.app, { address: a.address, chain: 'solana', signature: await a.sign(nonce), nonce }, ip),
      401,
      'INVALID_NONCE',
    );

    const e = evmWallet();
    const evmNonce = await getNonce(t.app, 'evm', e.address, ip);
    // The same key material presented as the other chain: the binding is (chain, address).
    expectProblem(
      await postWallet(t.app, { address: a.address, chain: 'solana', signature: await a.sign(evmNonce), nonce: evmNonce }, ip),
      401,
      'INVALID_NONCE',
    );
  });

  it('an unknown nonce is refused', async () => {
    const w = await solanaWallet();
    const nonce = 'A'.repeat(32);
    expectProblem(
      await postWallet(t.app, { address: w.address, chain: 'solana', signature: await w.sign(nonce), nonce }, nextIp()),
      401,
      'INVALID_NONCE',
    );
  });

  it('a signature by another key is refused', async () => {
    const w = await solanaWallet();
    const thief = await solanaWallet();
    const ip = nextIp();
    const nonce = await getNonce(t.app, 'solana', w.address, ip);
    expectProblem(
      await postWallet(t.app, { address: w.address, chain: 'solana', signature: await thief.sign(nonce), nonce }, ip),
      401,
      'INVALID_SIGNATURE',
    );

    const e = evmWallet();
    const eThief = evmWallet();
    const n2 = await getNonce(t.app, 'evm', e.address, ip);
    expectProblem(
      await postWallet(t.app, { address: e.address, chain: 'evm', signature: await eThief.sign(n2), nonce: n2 }, ip),
      401,
      'INVALID_SIGNATURE',
    );
  });

  const solGarbage = async (good: string) => [
    good.slice(0, 40), // truncated
    base58.encode(new Uint8Array(63).fill(1)),
    base58.encode(new Uint8Array(65).fill(1)),
    base58.encode(new Uint8Array(64).fill(255)), // s >= L
    base58.encode(new Uint8Array(64)), // all zero
    '0OIl+/==', // not base58
    'x'.repeat(1000),
    '🙂',
  ];
  const evmGarbage = (good: string) => [
    good.slice(0, 100),
    good.slice(2),
    '0x' + '00'.repeat(65),
    '0x' + 'ff'.repeat(65),
    '0x' + 'zz'.repeat(65),
    good.slice(0, -2) + '1f', // v out of range
    '0x',
  ];

  it('garbage and truncated Solana signatures are 401/400, never 500', async () => {
    const w = await solanaWallet();
    const ip = nextIp();
    const probe = await w.sign('probe');
    for (const signature of await solGarbage(probe)) {
      const nonce = await getNonce(t.app, 'solana', w.address, ip);
      const res = await postWallet(t.app, { address: w.address, chain: 'solana', signature, nonce }, nextIp());
      expect([400, 401], `${signature}: ${res.body}`).toContain(res.statusCode);
      if (res.statusCode === 401) expect(res.json().code).toBe('INVALID_SIGNATURE');
    }
  });

  it('garbage and truncated EVM signatures are 401/400, never 500', async () => {
    const w = evmWallet();
    const ip = nextIp();
    const probe = await w.sign('probe');
    for (const signature of evmGarbage(probe)) {
      const nonce = await getNonce(t.app, 'evm', w.address, ip);
      const res = await postWallet(t.app, { address: w.address, chain: 'evm', signature, nonce }, nextIp());
      expect([400, 401], `${signature}: ${res.body}`).toContain(res.statusCode);
      if (res.statusCode === 401) expect(res.json().code).toBe('INVALID_SIGNATURE');
    }
  });

  it('malformed bodies are 400 VALIDATION_ERROR', async () => {
    const w = await solanaWallet();
    for (const body of [
      {},
      { address: w.address, chain: 'solana', nonce: 'abc' },
      { address: w.address, chain: 'tron', nonce: 'abc', signature: 'x' },
      { address: w.address, chain: 'solana', nonce: 'abc', signature: 'x', extra: 1 },
      { address: 'bad', chain: 'solana', nonce: 'A'.repeat(32), signature: 'x' },
      { address: w.address, chain: 'solana', nonce: 'abc', signature: 'x', referralCode: 'r'.repeat(65) },
    ]) {
      expectProblem(await postWallet(t.app, body, nextIp()), 400, 'VALIDATION_ERROR');
    }
  });
});
