import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDb } from '../helpers/app.js';
import { REDIS_URL } from '../helpers/env.js';
import { startServer, waitForExit, waitForHttp } from '../helpers/server-process.js';
import { freePort } from '../support/net.js';
import { eventually } from '../support/eventually.js';
import { signIn, solanaWallet, type Wallet } from '../support/users.js';
import { closeAll, connect, next } from '../realtime/helpers.js';

/**
 * docs/decisions.md §10.6 across two real app processes on one PostgreSQL and
 * one Redis: a session ended on one instance is refused on the other (bearer
 * 401 SESSION_REVOKED, sockets told and dropped) within 2 s, while the user's
 * other sessions keep working. Client addresses are unique per run
 * (X-Forwarded-For from the listed proxy 127.0.0.1).
 */
const JWT_SECRET = `revocation-${randomBytes(16).toString('hex')}`;
const RUN = randomBytes(1)[0];
let ipCounter = 0;
const freshIp = () => `198.19.${RUN}.${++ipCounter}`;

interface Instance {
  url: string;
  proc: ChildProcess & { output: () => string };
}
let A: Instance;
let B: Instance;

async function start(dbUrl: string): Promise<Instance> {
  const port = await freePort();
  const proc = startServer({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: dbUrl,
    REDIS_URL: REDIS_URL!,
    JWT_SECRET,
    TRUST_PROXY: '127.0.0.1',
    JOBS: 'off',
    LOG_LEVEL: 'warn',
    POLYMARKET_MARKET_WS_URL: '',
  });
  return { url: `http://127.0.0.1:${port}`, proc };
}

async function call(i: Instance, method: string, path: string, opts: { token?: string; body?: unknown; ip?: string } = {}) {
  const res = await fetch(`${i.url}${path}`, {
    method,
    headers: {
      'x-forwarded-for': opts.ip ?? freshIp(),
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
}

async function session(on: Instance, wallet: Wallet) {
  const res = await signIn(on.url, wallet, { ip: freshIp() });
  expect(res.statusCode, res.body).toBe(201);
  const accessToken = res.json().accessToken as string;
  return { accessToken, sid: JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()).sid as string };
}

/** How long after `since` it took until `check` held (it has 10 s). */
async function within(since: number, check: () => Promise<boolean>): Promise<number> {
  await eventually(check, { timeoutMs: 10_000 - (Date.now() - since), intervalMs: 50, what: 'within 10 s' });
  return Date.now() - since;
}

beforeAll(async () => {
  const db = await createTestDb();
  const dbUrl = db.url;
  await db.close();
  [A, B] = await Promise.all([start(dbUrl), start(dbUrl)]);
  for (const i of [A, B]) {
    try {
      expect((await waitForHttp(`${i.url}/health/ready`, 60_000)).status).toBe(200);
    } catch (err) {
      throw new Error(`an instance did not start: ${String(err)}\n${i.proc.output()}`, { cause: err });
    }
  }
}, 90_000);

afterAll(async () => {
  closeAll();
  for (const i of [A, B]) {
    if (i && i.proc.exitCode === null) {
      i.proc.kill('SIGTERM');
      await waitForExit(i.proc, 10_000);
    }
  }
}, 30_000);

describe('ending a session reaches every instance within 2 s', () => {
  it('ended on A: bearer requests on B get 401 SESSION_REVOKED and its socket on B is told and dropped; the other session lives', async () => {
    const wallet = await solanaWallet();
    const ended = await session(A, wallet);
    const kept = await session(B, wallet);
    expect((await call(B, 'GET', '/api/v1/notifications', { token: ended.accessToken })).status).toBe(200);
    const socket = await connect(B.url, { token: ended.accessToken, extraHeaders: { 'x-forwarded-for': freshIp() } });
    const keptSocket = await connect(B.url, { token: kept.accessToken, extraHeaders: { 'x-forwarded-for': freshIp() } });
    const told = next<{ code: string }>(socket, 'auth:revoked', 10_000);
    const dropped = next<string>(socket, 'disconnect', 10_000);

    const res = await call(A, 'DELETE', `/api/v1/auth/sessions/${ended.sid}`, { token: kept.accessToken });
    expect(res.status, res.text).toBe(204);
    const answeredAt = Date.now();
    const bearerMs = await within(answeredAt, async () => {
      const r = await call(B, 'GET', '/api/v1/notifications', { token: ended.accessToken });
      if (r.status === 401) expect(r.json.code).toBe('SESSION_REVOKED');
      return r.status === 401;
    });
    expect(bearerMs).toBeLessThan(2_000);
    expect(await told).toMatchObject({ code: 'SESSION_REVOKED' });
    expect(await dropped).toBe('io server disconnect');
    expect(Date.now() - answeredAt).toBeLessThan(2_500);

    expect((await call(B, 'GET', '/api/v1/notifications', { token: kept.accessToken })).status).toBe(200);
    expect(keptSocket.connected).toBe(true);
    // A handshake on either instance with the ended session's token is refused.
    for (const i of [A, B]) {
      await expect(connect(i.url, { token: ended.accessToken, extraHeaders: { 'x-forwarded-for': freshIp() } })).rejects.toThrow(
        'SESSION_REVOKED',
      );
    }
  }, 30_000);

  it('logout on B reaches A', async () => {
    const wallet = await solanaWallet();
    const s = await session(A, wallet);
    const out = await call(B, 'POST', '/api/v1/auth/logout', { token: s.accessToken });
    expect(out.status).toBe(204);
    const ms = await within(
      Date.now(),
      async () => (await call(A, 'GET', '/api/v1/notifications', { token: s.accessToken })).status === 401,
    );
    expect(ms).toBeLessThan(2_000);
  }, 30_000);

  it('an instance started after the revocation still refuses the token (it catches up from Redis)', async () => {
    const wallet = await solanaWallet();
    const s = await session(A, wallet);
    expect((await call(A, 'POST', '/api/v1/auth/logout', { token: s.accessToken })).status).toBe(204);
    const db = await createTestDb();
    const dbUrl = db.url;
    await db.close();
    const C = await start(dbUrl);
    try {
      expect((await waitForHttp(`${C.url}/health/ready`, 60_000)).status).toBe(200);
      const r = await call(C, 'GET', '/api/v1/notifications', { token: s.accessToken });
      expect(r.status, r.text).toBe(401);
      expect(r.json.code).toBe('SESSION_REVOKED');
    } finally {
      C.proc.kill('SIGTERM');
      await waitForExit(C.proc, 10_000);
    }
  }, 90_000);
});
