import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSiweMessage, parseSiweMessage } from 'viem/siwe';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import type { DbHandle } from '../../src/db/index.js';
import { parseSignInMessage } from '../../src/domains/auth/wallet-message.js';
import { expectProblem } from '../support/problem.js';
import { evmWallet, nextIp, postWallet, solanaWallet, type Wallet } from '../support/users.js';

/** docs/decisions.md §10.7: domain-bound wallet messages (EIP-4361 and Sign-In With Solana). */
const PAGE = 'https://app.example.com';
let db: DbHandle;
let t: TestApp;
let fixed: TestApp;
let strict: TestApp;

beforeAll(async () => {
  db = await createTestDb();
  t = await buildTestApp({ CORS_ORIGINS: PAGE }, { db });
  fixed = await buildTestApp(
    { SIGN_IN_DOMAIN: 'trade.example.org', SIGN_IN_URI: 'https://trade.example.org/login', SIGN_IN_CHAIN_ID: '8453' },
    { db },
  );
  strict = await buildTestApp({ SIGN_IN_BARE_NONCE: 'false' }, { db });
});
afterAll(async () => {
  await strict?.close();
  await fixed?.close();
  await t?.close();
  await db?.close();
});

async function nonceFor(app: TestApp, w: Wallet, headers: Record<string, string> = {}, ip = nextIp()) {
  const res = await app.app.inject({
    method: 'GET',
    url: '/api/v1/auth/wallet/nonce',
    query: { chain: w.chain, address: w.address },
    headers,
    remoteAddress: ip,
  });
  expect(res.statusCode, res.body).toBe(200);
  return { ...res.json<{ nonce: string; expiresAt: string; message: string }>(), ip };
}

async function signInWith(app: TestApp, w: Wallet, nonce: string, message: string | undefined, signed = message) {
  const body: Record<string, unknown> = { address: w.address, chain: w.chain, nonce, signature: await w.sign(signed ?? nonce) };
  if (message !== undefined) body.message = message;
  return postWallet(app.app, body, nextIp());
}

describe('GET /auth/wallet/nonce returns a ready-to-sign message', () => {
  it('evm: EIP-4361 with the service origin, chain id 1, the nonce, Issued At now and Expiration Time = expiresAt', async () => {
    const w = evmWallet();
    const n = await nonceFor(t, w);
    const m = parseSiweMessage(n.message);
    expect(m).toMatchObject({
      domain: '127.0.0.1:3000',
      address: w.address,
      uri: 'http://127.0.0.1:3000',
      version: '1',
      chainId: 1,
      nonce: n.nonce,
    });
    expect(Math.abs(m.issuedAt!.getTime() - Date.now())).toBeLessThan(5_000);
    expect(m.expirationTime!.toISOString()).toBe(n.expiresAt);
    expect(n.message.startsWith('127.0.0.1:3000 wants you to sign in with your Ethereum account:\n')).toBe(true);
  });

  it('solana: the Sign-In With Solana text with Chain ID mainnet', async () => {
    const w = await solanaWallet();
    const n = await nonceFor(t, w);
    const lines = n.message.split('\n');
    expect(lines.slice(0, 7)).toEqual([
      '127.0.0.1:3000 wants you to sign in with your Solana account:',
      w.address,
      '',
      'URI: http://127.0.0.1:3000',
      'Version: 1',
      'Chain ID: mainnet',
      `Nonce: ${n.nonce}`,
    ]);
    expect(lines[8]).toBe(`Expiration Time: ${n.expiresAt}`);
  });

  it("a listed Origin (the page the wallet is asked from) is the message's domain and URI; an unlisted one is not", async () => {
    const w = evmWallet();
    expect(parseSiweMessage((await nonceFor(t, w, { origin: PAGE })).message)).toMatchObject({ domain: 'app.example.com', uri: PAGE });
    expect(parseSiweMessage((await nonceFor(t, w, { origin: 'https://phish.example' })).message)).toMatchObject({
      domain: '127.0.0.1:3000',
    });
  });

  it('never takes the domain from Host or X-Forwarded-Host: a phishing site gets our listening address, not its own name', async () => {
    const w = evmWallet();
    for (const headers of [
      { host: 'phish.example' },
      { 'x-forwarded-host': 'phish.example' },
      { host: 'phish.example', 'x-forwarded-proto': 'https' },
    ] as Array<Record<string, string>>) {
      const n = await nonceFor(t, w, headers);
      expect(n.message).not.toContain('phish.example');
      expect(parseSiweMessage(n.message)).toMatchObject({ domain: '127.0.0.1:3000', uri: 'http://127.0.0.1:3000' });
    }
  });

  it('SIGN_IN_DOMAIN, SIGN_IN_URI and SIGN_IN_CHAIN_ID win', async () => {
    const w = evmWallet();
    const m = parseSiweMessage((await nonceFor(fixed, w, { origin: PAGE })).message);
    expect(m).toMatchObject({ domain: 'trade.example.org', uri: 'https://trade.example.org/login', chainId: 8453 });
  });
});

describe('POST /auth/wallet with the signed message', () => {
  it('signs in with the issued message, both chains; any address case for evm', async () => {
    for (const w of [evmWallet(), await solanaWallet()]) {
      const n = await nonceFor(t, w, { origin: PAGE });
      const res = await signInWith(t, w, n.nonce, n.message);
      expect(res.statusCode, res.body).toBe(201);
    }
    const w = evmWallet();
    const n = await nonceFor(t, w);
    const lower = n.message.replace(w.address, w.address.toLowerCase());
    const res = await signInWith(t, { ...w, address: w.address.toLowerCase() }, n.nonce, lower);
    expect(res.statusCode, res.body).toBe(201);
  });

  it('accepts a message the client built itself in the same format, with a statement', async () => {
    const w = evmWallet();
    const n = await nonceFor(t, w, { origin: PAGE });
    const built = createSiweMessage({
      domain: 'app.example.com',
      address: w.address as `0x${string}`,
      statement: 'Sign in to the prediction market.',
      uri: PAGE,
      version: '1',
      chainId: 1,
      nonce: n.nonce,
      issuedAt: new Date(),
      resources: ['https://app.example.com/terms'],
    });
    expect((await signInWith(t, w, n.nonce, built)).statusCode).toBe(201);

    const s = await solanaWallet();
    const sn = await nonceFor(t, s);
    const siws = [
      `127.0.0.1:3000 wants you to sign in with your Solana account:`,
      s.address,
      '',
      'Sign in to the prediction market.',
      '',
      'URI: http://127.0.0.1:3000',
      'Version: 1',
      'Chain ID: mainnet',
      `Nonce: ${sn.nonce}`,
      `Issued At: ${new Date().toISOString()}`,
    ].join('\n');
    const res = await signInWith(t, s, sn.nonce, siws);
    expect(res.statusCode, res.body).toBe(201);
  });

  it('a message that differs from what was issued is 401 INVALID_MESSAGE, and the attempt consumes the nonce', async () => {
    const w = evmWallet();
    const cases: Array<(m: string, nonce: string) => string> = [
      (m) => m.replace('127.0.0.1:3000 wants', 'phish.example wants'),
      (m) => m.replace('URI: http://127.0.0.1:3000', 'URI: https://phish.example'),
      (m) => m.replace('Chain ID: 1', 'Chain ID: 137'),
      (m, nonce) => m.replace(`Nonce: ${nonce}`, 'Nonce: abcdefgh12345'),
      (m) => m.replace('Version: 1', 'Version: 2'),
      (m) => m.replace(/Issued At: .*/, `Issued At: ${new Date(Date.now() - 5 * 60_000).toISOString()}`),
      (m) => m.replace(/Expiration Time: .*/, `Expiration Time: ${new Date(Date.now() + 3_600_000).toISOString()}`),
      (m) => m.replace(/0x[0-9a-fA-F]{40}/, evmWallet().address),
      (m) => `${m}\nExtra: line`,
      (m) => m.replace('\n\n\nURI', '\n\nURI'),
      (m) => m.replace(/Issued At: .*/, 'Issued At: yesterday'),
    ];
    for (const mutate of cases) {
      const n = await nonceFor(t, w);
      const message = mutate(n.message, n.nonce);
      expect(message).not.toBe(n.message);
      const res = await signInWith(t, w, n.nonce, message);
      expectProblem(res, 401, 'INVALID_MESSAGE');
      // Consumed: even the genuine message cannot use this nonce now.
      expectProblem(await signInWith(t, w, n.nonce, n.message), 401, 'INVALID_NONCE');
    }
  });

  it('a message for another chain is INVALID_MESSAGE; a signature over other text is INVALID_SIGNATURE', async () => {
    const s = await solanaWallet();
    const n = await nonceFor(t, s);
    expectProblem(await signInWith(t, s, n.nonce, n.message.replace('Solana account', 'Ethereum account')), 401, 'INVALID_MESSAGE');
    const n2 = await nonceFor(t, s);
    expectProblem(await signInWith(t, s, n2.nonce, n2.message, n2.nonce), 401, 'INVALID_SIGNATURE');
  });

  it('the bare nonce stays accepted by default; SIGN_IN_BARE_NONCE=false requires the message', async () => {
    const w = await solanaWallet();
    const n = await nonceFor(t, w);
    expect((await signInWith(t, w, n.nonce, undefined)).statusCode).toBe(201);

    const s = await nonceFor(strict, w);
    expectProblem(
      await postWallet(strict.app, { address: w.address, chain: 'solana', nonce: s.nonce, signature: await w.sign(s.nonce) }),
      401,
      'INVALID_MESSAGE',
    );
    const again = await nonceFor(strict, w);
    expect((await signInWith(strict, w, again.nonce, again.message)).statusCode).toBe(201);
  });
});

describe('parseSignInMessage', () => {
  it('reads what viem builds, with and without the optional fields', () => {
    const base = {
      domain: 'example.com',
      address: '0xA0Cf798816D4b9b9866b5330EEa46a18382f251e' as const,
      uri: 'https://example.com/path',
      version: '1' as const,
      chainId: 1,
      nonce: 'foobarbaz1',
      issuedAt: new Date('2026-01-01T00:00:00Z'),
    };
    expect(parseSignInMessage('evm', createSiweMessage(base))).toMatchObject({ domain: 'example.com', statement: undefined, chainId: '1' });
    const full = createSiweMessage({
      ...base,
      scheme: 'https',
      statement: 'Hello',
      expirationTime: new Date('2026-01-01T00:05:00Z'),
      notBefore: new Date('2026-01-01T00:00:00Z'),
      requestId: 'r-1',
      resources: ['https://example.com/a', 'ipfs://x'],
    });
    expect(parseSignInMessage('evm', full)).toMatchObject({
      scheme: 'https',
      statement: 'Hello',
      expirationTime: '2026-01-01T00:05:00.000Z',
      requestId: 'r-1',
      resources: ['https://example.com/a', 'ipfs://x'],
    });
    expect(parseSignInMessage('solana', full)).toBeUndefined();
    expect(parseSignInMessage('evm', full.replace('\n', '\r\n'))).toBeUndefined();
    expect(parseSignInMessage('evm', full.replace('Nonce', 'Nonce: x\nNonce'))).toBeUndefined();
    expect(parseSignInMessage('evm', `${full}\n`)).toBeUndefined();
  });
});
