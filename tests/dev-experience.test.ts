import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { loadDevEnv } from '../src/lib/dev-env.js';
import { isAlive } from '../src/db/dir-lock.js';
import { fetchWhenReady, ROOT, startServer, TEST_JWT_SECRET, waitForExit } from './helpers/server-process.js';
import { eventually } from './support/eventually.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pb-dev-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const freePort = () => 20_000 + Math.floor(Math.random() * 20_000);

describe('development environment (loadDevEnv)', () => {
  it('keeps one JWT_SECRET in .data/jwt-secret, readable by the owner only, the same on every start', () => {
    const cwd = tempDir();
    const first = loadDevEnv({}, cwd);
    expect(first.jwtSecretFile).toBe(join(cwd, '.data', 'jwt-secret'));
    expect(first.env.JWT_SECRET!.length).toBeGreaterThanOrEqual(32);
    expect(statSync(first.jwtSecretFile!).mode & 0o777).toBe(0o600);
    const second = loadDevEnv({ NODE_ENV: 'development' }, cwd);
    expect(second.env.JWT_SECRET).toBe(first.env.JWT_SECRET);
    expect(readFileSync(first.jwtSecretFile!, 'utf8').trim()).toBe(first.env.JWT_SECRET);
  });

  it('never makes a key in production, and never replaces a configured one', () => {
    const cwd = tempDir();
    const prod = loadDevEnv({ NODE_ENV: 'production' }, cwd);
    expect(prod.env.JWT_SECRET).toBeUndefined();
    expect(prod.jwtSecretFile).toBeUndefined();
    expect(() => statSync(join(cwd, '.data', 'jwt-secret'))).toThrow();
    const set = loadDevEnv({ JWT_SECRET: TEST_JWT_SECRET }, cwd);
    expect(set.env.JWT_SECRET).toBe(TEST_JWT_SECRET);
    expect(set.jwtSecretFile).toBeUndefined();
  });

  it('reads .env when present; the environment wins over it', () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, '.env'), '# a comment\nLOG_LEVEL=debug\nPORT=4000\nJWT_SECRET=from-dot-env-from-dot-env-from-dot-env-123\n');
    const { env, envFile, jwtSecretFile } = loadDevEnv({ PORT: '5000' }, cwd);
    expect(envFile).toBe(join(cwd, '.env'));
    expect(env.LOG_LEVEL).toBe('debug');
    expect(env.PORT).toBe('5000');
    expect(env.JWT_SECRET).toBe('from-dot-env-from-dot-env-from-dot-env-123');
    expect(jwtSecretFile).toBeUndefined();
  });

  it('pretty logs only when asked (server.ts asks for a terminal in development), redaction kept', () => {
    const config = testConfig();
    const plain = loggerOptions(config) as Record<string, unknown>;
    expect(plain.transport).toBeUndefined();
    const pretty = loggerOptions(config, { pretty: true }) as Record<string, any>;
    expect(pretty.transport.target).toBe('pino-pretty');
    expect(pretty.redact).toEqual(plain.redact);
  });
});

describe('the server process', () => {
  let child: ReturnType<typeof startServer> | undefined;
  afterAll(() => child?.kill('SIGKILL'));

  it('without JWT_SECRET in development, signs with the key kept in .data (tokens survive restarts)', async () => {
    const cwd = tempDir();
    const port = freePort();
    child = startServer({ PORT: String(port), DATABASE_URL: 'pglite:memory', JOBS: 'off', JWT_SECRET: undefined }, { cwd });
    expect((await fetchWhenReady(`http://127.0.0.1:${port}/health/live`, {}, 90_000)).status).toBe(200);
    const secret = readFileSync(join(cwd, '.data', 'jwt-secret'), 'utf8').trim();
    const token = await new SignJWT({ walletAddress: '0x0000000000000000000000000000000000000001', chain: 'evm' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('00000000-0000-4000-8000-000000000001')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(secret));
    // The overload guard may still refuse with 503 while start-up lags the event loop.
    const res = await fetchWhenReady(`http://127.0.0.1:${port}/api/v1/notifications`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    child.kill('SIGTERM');
    expect(await waitForExit(child)).toBe(0);
    expect(child.output()).toContain('development key kept in .data');
  }, 120_000);
});

describe('npm start', () => {
  let npm: ReturnType<typeof spawn> | undefined;
  let serverPid: number | undefined;
  afterAll(() => {
    npm?.kill('SIGKILL');
    if (serverPid && isAlive(serverPid)) process.kill(serverPid, 'SIGKILL');
  });

  it('stops the server when npm itself gets SIGTERM (no orphan left listening)', async () => {
    const port = freePort();
    npm = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: String(port),
        DATABASE_URL: 'pglite:memory',
        JOBS: 'off',
        METRICS_PORT: '0',
        JWT_SECRET: TEST_JWT_SECRET,
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout!.on('data', (d) => (out += d));
    npm.stderr!.on('data', (d) => (out += d));
    expect((await fetchWhenReady(`http://127.0.0.1:${port}/health/live`, {}, 90_000)).status).toBe(200);
    serverPid = Number(/"pid":(\d+)/.exec(out)?.[1]);
    expect(serverPid).toBeGreaterThan(0);
    expect(isAlive(serverPid)).toBe(true);

    npm.kill('SIGTERM');
    await waitForExit(npm);
    const pid = serverPid;
    await eventually(() => !isAlive(pid), { timeoutMs: 15_000, intervalMs: 100, what: 'the server process gone' });
    expect(isAlive(serverPid)).toBe(false);
    expect(out).toContain('shutting down');
    await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
  }, 120_000);
});
