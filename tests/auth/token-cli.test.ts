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
import { fetchWhenReady, startServer, TEST_JWT_SECRET, TSX_LOADER, waitForExit } from '../helpers/server-process.js';
import { signDevTokenProof } from '../../src/domains/auth/dev-token.js';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';

const CLI = fileURLToPath(new URL('../../src/cli/token.ts', import.meta.url));
const BETA_KEYS_CLI = fileURLToPath(new URL('../../src/cli/beta-keys.ts', import.meta.url));
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

function runCli(args: string[], env: Record<string, string>, cwd: string, cli = CLI) {
  return promisify(execFile)(process.execPath, ['--import', TSX_LOADER, cli, ...args], {
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

  it('answers --help (both CLIs) with its usage and exit code 0, touching no database', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'pb-help-'));
    dirs.push(cwd);
    for (const [cli, usage] of [
      [CLI, /usage: npm run token -- <address\|userId>/],
      [BETA_KEYS_CLI, /usage: npm run beta-keys -- create/],
    ] as const) {
      for (const flag of ['--help', '-h']) {
        const r = await runCli([flag], { DATABASE_URL: 'postgres://127.0.0.1:1/none' }, cwd, cli);
        expect(r.code, r.stderr).toBe(0);
        expect(r.stdout).toMatch(usage);
      }
    }
    expect(parseTokenArgs(['--help'])).toMatchObject({ help: true });
  }, 120_000);

  it('works beside a running `npm start` on the embedded database: the service issues the token', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'pb-token-live-'));
    dirs.push(cwd);
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    // The service and the CLI share cwd: the same .data/jwt-secret development key and pglite directory.
    const env = { DATABASE_URL: 'pglite:./.data/pglite', PORT: String(port), JOBS: 'off', JWT_SECRET: undefined };
    const service = startServer(env, { cwd });
    try {
      expect((await fetchWhenReady(`http://127.0.0.1:${port}/health/ready`, {}, 90_000)).status).toBe(200);
      const address = '0x52908400098527886e0f7030069857d2e4169ee7';
      const r = await runCli([address, '--minutes', '30'], { DATABASE_URL: 'pglite:./.data/pglite', PORT: String(port) }, cwd);
      expect(r.stderr).toMatch(/issued by the running service/);
      expect(r.code).toBe(0);
      const token = r.stdout.trim();
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/notifications`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      const secret = readFileSync(join(cwd, '.data', 'jwt-secret'), 'utf8').trim();
      const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), { algorithms: ['HS256'] });
      expect(payload).toMatchObject({ walletAddress: '0x52908400098527886E0F7030069857D2E4169EE7', chain: 'evm' });
      expect(payload.exp! - payload.iat!).toBe(30 * 60);
      // A bad subject is the CLI's error, exit 1, as without a running service.
      const bad = await runCli(['0x1234'], { DATABASE_URL: 'pglite:./.data/pglite', PORT: String(port) }, cwd);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/neither a user id nor a valid EVM/);
    } finally {
      service.kill('SIGTERM');
      await waitForExit(service, 30_000);
    }
  }, 180_000);

  it('POST /dev/token: loopback only, a proof signed with the JWT key only, never in production', async () => {
    const url = '/dev/token';
    const payload = { subject: '0x52908400098527886e0f7030069857d2e4169ee7', minutes: 5 };
    const proof = await signDevTokenProof(t.config);
    const ok = await t.app.inject({ method: 'POST', url, payload, headers: { authorization: `Bearer ${proof}` } });
    expect(ok.statusCode).toBe(200);
    const issued = ok.json().accessToken as string;
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: { authorization: `Bearer ${issued}` } });
    expect(me.statusCode).toBe(200);

    const remote = await t.app.inject({
      method: 'POST',
      url,
      payload,
      headers: { authorization: `Bearer ${proof}`, 'x-forwarded-for': '127.0.0.1' },
      remoteAddress: '192.0.2.7',
    });
    expect(remote.statusCode).toBe(404);
    expect((await t.app.inject({ method: 'POST', url, payload })).statusCode).toBe(401);
    const otherKey = await signDevTokenProof({ JWT_SECRET: 'another-secret-another-secret-another-secret' });
    expect((await t.app.inject({ method: 'POST', url, payload, headers: { authorization: `Bearer ${otherKey}` } })).statusCode).toBe(401);
    // An access token is not a proof (no dev-token audience).
    expect((await t.app.inject({ method: 'POST', url, payload, headers: { authorization: `Bearer ${issued}` } })).statusCode).toBe(401);
    const invalid = await t.app.inject({
      method: 'POST',
      url,
      payload: { subject: '0x12' },
      headers: { authorization: `Bearer ${proof}` },
    });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.headers['content-type']).toMatch(/problem\+json/);
    // Hidden from the API document.
    expect((await t.app.inject({ method: 'GET', url: '/docs/json' })).json().paths['/dev/token']).toBeUndefined();

    const prod = await buildApp(
      testConfig({
        NODE_ENV: 'production',
        JWT_SECRET: TEST_JWT_SECRET,
        SIGN_IN_DOMAIN: 'example.com',
        SIGN_IN_URI: 'https://example.com',
      }),
      { logger: false },
    );
    try {
      const refused = await prod.inject({
        method: 'POST',
        url,
        payload,
        headers: { authorization: `Bearer ${await signDevTokenProof({ JWT_SECRET: TEST_JWT_SECRET })}` },
      });
      expect(refused.statusCode).toBe(404);
    } finally {
      await prod.close();
    }
  });

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
