import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { expectProblem } from '../support/problem.js';
import { evmWallet, getNonce, nextIp, postWallet, solanaWallet } from '../support/users.js';

// Two instances of the service on one database and one Redis (same key prefix):
// what a load balancer in front of several processes looks like.
let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  const keyPrefix = `pbtest:${randomBytes(6).toString('hex')}:`;
  a = await buildTestApp({}, { keyPrefix });
  b = await buildTestApp({}, { keyPrefix, db: a.db });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

describe('nonces shared through Redis', () => {
  it('a nonce issued by one instance signs in on another, once', async () => {
    const w = await solanaWallet();
    const ip = nextIp();
    const nonce = await getNonce(a.app, 'solana', w.address, ip);
    const body = { address: w.address, chain: 'solana', signature: await w.sign(nonce), nonce };
    const res = await postWallet(b.app, body, ip);
    expect(res.statusCode, res.body).toBe(201);
    expectProblem(await postWallet(a.app, body, ip), 401, 'INVALID_NONCE');
    expectProblem(await postWallet(b.app, body, ip), 401, 'INVALID_NONCE');
  });

  it('presented to both instances at once, exactly one attempt gets it', async () => {
    const w = evmWallet();
    const nonce = await getNonce(b.app, 'evm', w.address, nextIp());
    const body = { address: w.address.toLowerCase(), chain: 'evm', signature: await w.sign(nonce), nonce };
    const results = await Promise.all([a, b, a, b].map((x) => postWallet(x.app, body, nextIp())));
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(1);
    for (const r of results.filter((x) => x.statusCode !== 201)) expectProblem(r, 401, 'INVALID_NONCE');
  });

  it('the nonce lives in Redis under the app key prefix, with a TTL', async () => {
    const w = await solanaWallet();
    const nonce = await getNonce(a.app, 'solana', w.address, nextIp());
    const ttl = await a.redis!.pttl(`${a.keyPrefix}auth:nonce:${nonce}`);
    expect(ttl).toBeGreaterThan(5 * 60_000 - 5_000);
  });

  it('per-IP limits hold across instances', async () => {
    const w = await solanaWallet();
    const ip = nextIp();
    for (let i = 0; i < 20; i++) {
      const app = i % 2 ? a.app : b.app;
      expect(
        (
          await app.inject({
            method: 'GET',
            url: '/api/v1/auth/wallet/nonce',
            query: { chain: 'solana', address: w.address },
            remoteAddress: ip,
          })
        ).statusCode,
      ).toBe(200);
    }
    expectProblem(
      await a.app.inject({
        method: 'GET',
        url: '/api/v1/auth/wallet/nonce',
        query: { chain: 'solana', address: w.address },
        remoteAddress: ip,
      }),
      429,
      'RATE_LIMITED',
    );
  });
});
