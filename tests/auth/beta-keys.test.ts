import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createBetaKeys, parseBetaKeysArgs, UsageError } from '../../src/cli/beta-keys.js';
import { expectProblem } from '../support/problem.js';
import { nextIp, parseSetCookies, signIn, solanaWallet } from '../support/users.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const activate = (key: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/activate-key', payload: { key }, headers, remoteAddress: nextIp() });

describe('beta-keys CLI arguments', () => {
  it('parses create --count --uses with defaults', () => {
    expect(parseBetaKeysArgs(['create', '--count', '5', '--uses', '3'])).toEqual({ count: 5, uses: 3 });
    expect(parseBetaKeysArgs(['create'])).toEqual({ count: 1, uses: 1 });
  });

  it.each([
    [[]],
    [['delete']],
    [['create', '--count', '0']],
    [['create', '--count', 'x']],
    [['create', '--uses', '-1']],
    [['create', '--bogus']],
  ])('refuses %j', (argv) => {
    expect(() => parseBetaKeysArgs(argv)).toThrow(UsageError);
  });
});

describe('POST /api/v1/auth/activate-key', () => {
  it('redeems a key once, sets the beta_access cookie, stores only the hash', async () => {
    const [key] = await createBetaKeys(t.db, { count: 1, uses: 1 });
    expect(key).toMatch(/^beta_[A-Za-z0-9_-]{22}$/);
    const stored = await t.db.rows<{ key_hash: string }>(sql`select key_hash from beta_keys`);
    expect(stored.some((r) => r.key_hash === key)).toBe(false);

    const res = await activate(key);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ betaAccess: true });
    const c = parseSetCookies(res).beta_access;
    expect(c.value).toBe('1');
    expect(c.attrs).toMatchObject({ path: '/', 'max-age': String(90 * 24 * 3600) });
    expect(c.attrs.httponly).toBeUndefined();

    expectProblem(await activate(key), 400, 'INVALID_BETA_KEY');
  });

  it('a key with M uses redeems exactly M times, also under concurrency', async () => {
    const [key] = await createBetaKeys(t.db, { count: 1, uses: 3 });
    const results = await Promise.all(Array.from({ length: 8 }, () => activate(key)));
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(3);
    for (const r of results.filter((x) => x.statusCode !== 200)) expectProblem(r, 400, 'INVALID_BETA_KEY');
  });

  it('mints distinct keys', async () => {
    const keys = await createBetaKeys(t.db, { count: 20, uses: 1 });
    expect(new Set(keys).size).toBe(20);
  });

  it('unknown and revoked keys are 400 INVALID_BETA_KEY', async () => {
    expectProblem(await activate('beta_nope'), 400, 'INVALID_BETA_KEY');
    const [key] = await createBetaKeys(t.db, { count: 1, uses: 5 });
    await t.db.rows(sql`update beta_keys set revoked_at = now() where uses = 0 and max_uses = 5`);
    expectProblem(await activate(key), 400, 'INVALID_BETA_KEY');
  });

  it('with a bearer token, records the redeeming user and flags the account', async () => {
    const signedIn = (await signIn(t.app, await solanaWallet())).json();
    const [key] = await createBetaKeys(t.db, { count: 1, uses: 1 });
    const res = await activate(key, { authorization: `Bearer ${signedIn.accessToken}` });
    expect(res.statusCode, res.body).toBe(200);
    const rows = await t.db.rows<{ user_id: string; beta_access: boolean }>(sql`
      select r.user_id, u.beta_access from beta_key_redemptions r join users u on u.id = r.user_id where r.user_id = ${signedIn.user.id}`);
    expect(rows).toEqual([{ user_id: signedIn.user.id, beta_access: true }]);
  });

  it('an invalid bearer token is 401 and does not use the key', async () => {
    const [key] = await createBetaKeys(t.db, { count: 1, uses: 1 });
    expectProblem(await activate(key, { authorization: 'Bearer not.a.jwt' }), 401, 'UNAUTHORIZED');
    expect((await activate(key)).statusCode).toBe(200);
  });

  it('validates the body', async () => {
    expectProblem(await activate(''), 400, 'VALIDATION_ERROR');
    expectProblem(await activate('k'.repeat(200)), 400, 'VALIDATION_ERROR');
    expectProblem(await activate(7), 400, 'VALIDATION_ERROR');
  });
});
