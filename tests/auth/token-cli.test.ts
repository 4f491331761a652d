import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTokenArgs, resolveTokenUser, signDevAccessToken, UsageError } from '../../src/cli/token.js';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import { TEST_JWT_SECRET, TSX_LOADER } from '../helpers/server-process.js';

const CLI = fileURLToPath(new URL('../../src/cli/token.ts', import.meta.url));
const INTERNAL = 'internal-token-internal-token';
let t: TestApp;
let db: Awaited<ReturnType<typeof createTestDb>>;
const dirs: string[] = [];

beforeAll(async () => {
  db = await createTestDb();
  t = await buildTestApp({ INTERNAL_API_TOKEN: INTERNAL }, { db });
});
afterAll(async () => {
  await t?.close();
  await db?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function runCli(args: string[], env: Record<string, string>, cwd: string) {
  return promisify(execFile)(process.execPath, ['--import', TSX_LOADER, CLI, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    timeout: 90_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe('npm run token -- <address|userId>', () => {
  it('parses its arguments strictly', () => {
    expect(parseTokenArgs(['0xabc'])).toEqual({ subject: '0xabc', chain: undefined, minutes: 15 });
    expect(parseTokenArgs(['x', '--chain', 'solana', '--minutes', '60'])).toMatchObject({ chain: 'solana', minutes: 60 });
    expect(() => parseTokenArgs([])).toThrow(UsageError);
    expect(() => parseTokenArgs(['a', 'b'])).toThrow(UsageError);
    expect(() => parseTokenArgs(['a', '--chain', 'btc'])).toThrow(UsageError);
    expect(() => parseTokenArgs(['a', '--minutes', '0'])).toThrow(UsageError);
    expect(() => parseTokenArgs(['a', '--minutes', '1441'])).toThrow(UsageError);
    expect(() => parseTokenArgs(['a', '--nope'])).toThrow(UsageError);
  });

  it('creates the wallet account for a new address once, and its token is accepted by the service', async () => {
    const address = '0x52908400098527886e0f7030069857d2e4169ee7';
    const user = await resolveTokenUser(t.db, { subject: address });
    expect(user.chain).toBe('evm');
    expect(user.wallet_address).toBe('0x52908400098527886E0F7030069857D2E4169EE7'); // EIP-55, as a sign-in stores it
    expect((await resolveTokenUser(t.db, { subject: address.toUpperCase().replace('0X', '0x') })).id).toBe(user.id);
    const byId = await resolveTokenUser(t.db, { subject: user.id });
    expect(byId).toEqual(user);

    const token = await signDevAccessToken(t.config, user, 15);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    const wrongKey = await signDevAccessToken({ JWT_SECRET: 'another-secret-another-secret-another-secret' }, user, 15);
    const refused = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: { authorization: `Bearer ${wrongKey}` } });
    expect(refused.statusCode).toBe(401);
  });

  it('refuses unknown user ids and malformed addresses', async () => {
    await expect(resolveTokenUser(t.db, { subject: '00000000-0000-4000-8000-00000000dead' })).rejects.toThrow(/no user has id/);
    await expect(resolveTokenUser(t.db, { subject: '0x1234' })).rejects.toThrow(/neither a user id nor a valid EVM/);
    await expect(resolveTokenUser(t.db, { subject: 'not base58 0OIl' })).rejects.toThrow(/Solana/);
  });

  it('refuses to run with NODE_ENV=production', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'pb-token-'));
    dirs.push(cwd);
    const r = await runCli(['0x52908400098527886e0f7030069857d2e4169ee7'], { NODE_ENV: 'production', JWT_SECRET: TEST_JWT_SECRET }, cwd);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refuses to run with NODE_ENV=production/);
    expect(r.stdout).toBe('');
  });

  it('as a process: prints a token signed with the development key kept in .data', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'pb-token-'));
    dirs.push(cwd);
    const databaseUrl = db.kind === 'postgres' ? db.url : `pglite:${join(cwd, 'pglite')}`;
    const solana = '4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T';
    const r = await runCli([solana], { DATABASE_URL: databaseUrl }, cwd);
    expect(r.stderr).toMatch(/access token for user/);
    expect(r.code).toBe(0);
    const secret = readFileSync(join(cwd, '.data', 'jwt-secret'), 'utf8').trim();
    const { payload } = await jwtVerify(r.stdout.trim(), new TextEncoder().encode(secret), { algorithms: ['HS256'] });
    expect(payload).toMatchObject({ walletAddress: solana, chain: 'solana' });
    expect(payload.exp! - payload.iat!).toBe(15 * 60);
  }, 120_000);

  it('POST /api/v1/internal/beta-keys mints redeemable keys while the service runs (internal token only)', async () => {
    const denied = await t.app.inject({ method: 'POST', url: '/api/v1/internal/beta-keys', payload: { count: 1 } });
    expect(denied.statusCode).toBe(401);
    const bad = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/beta-keys',
      headers: { authorization: `Bearer ${INTERNAL}` },
      payload: { count: 0 },
    });
    expect(bad.statusCode).toBe(400);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/beta-keys',
      headers: { authorization: `Bearer ${INTERNAL}` },
      payload: { count: 2, uses: 1 },
    });
    expect(res.statusCode).toBe(201);
    const { keys, uses } = res.json();
    expect(uses).toBe(1);
    expect(keys).toHaveLength(2);
    for (const key of keys) {
      const ok = await t.app.inject({ method: 'POST', url: '/api/v1/auth/activate-key', payload: { key }, remoteAddress: '192.0.2.10' });
      expect(ok.statusCode).toBe(200);
      const again = await t.app.inject({ method: 'POST', url: '/api/v1/auth/activate-key', payload: { key }, remoteAddress: '192.0.2.11' });
      expect(again.statusCode).toBe(400);
    }
  });
});
