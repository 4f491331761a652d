import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { createTestDb } from './helpers/app.js';
import { REDIS_URL } from './helpers/env.js';
import { startServer, waitForExit, waitForHttp } from './helpers/server-process.js';
import { freePort } from './helpers/services.js';
import { loadSampleData, startFakeVenues, type FakeVenues } from './fakes/venues/index.js';
import { solanaWallet } from './auth/helpers.js';
import { ack, closeAll, connect, next, record, sleep } from './realtime/helpers.js';

/**
 * Two real app processes (`node --import tsx src/server.ts`) on one
 * PostgreSQL database and the shared Redis, hit alternately over HTTP: what a
 * load balancer in front of several instances relies on. The processes use
 * the production key prefix (`pb:`), so every run isolates itself by
 * unique client IPs (X-Forwarded-For, TRUST_PROXY=127.0.0.1, the test's own address), fresh wallets and
 * users, and deletes the Redis keys carrying them afterwards.
 */

const TOKEN = `internal-${randomBytes(8).toString('hex')}`;
const JWT_SECRET = `multi-instance-${randomBytes(16).toString('hex')}`;
const INTERNAL = { authorization: `Bearer ${TOKEN}` };

// 198.18.0.0/15 (benchmarking range): never a real client; random per run.
const RUN = [randomBytes(1)[0] & 1, randomBytes(1)[0]];
let ipCounter = 0;
const ips: string[] = [];
function freshIp(): string {
  const ip = `198.${18 + RUN[0]}.${RUN[1]}.${++ipCounter}`;
  ips.push(ip);
  return ip;
}

interface Instance {
  name: string;
  url: string;
  proc: ChildProcess & { output: () => string };
}

let venues: FakeVenues;
let sql: postgres.Sql;
let A: Instance;
let B: Instance;
const markers: string[] = []; // substrings of the Redis keys this run created

async function startInstance(name: string, dbUrl: string): Promise<Instance> {
  const port = await freePort();
  const proc = startServer({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: dbUrl,
    REDIS_URL: REDIS_URL!,
    JWT_SECRET,
    INTERNAL_API_TOKEN: TOKEN,
    TRUST_PROXY: '127.0.0.1',
    JOBS: 'off',
    LOG_LEVEL: 'warn',
    ...venues.env,
  });
  return { name, url: `http://127.0.0.1:${port}`, proc };
}

async function stopInstance(i: Instance | undefined) {
  if (!i || i.proc.exitCode !== null) return;
  i.proc.kill('SIGTERM');
  await waitForExit(i.proc, 10_000); // SIGKILL after 10 s
}

async function call(
  i: Instance,
  method: string,
  path: string,
  opts: { ip?: string; headers?: Record<string, string>; body?: unknown } = {},
) {
  const res = await fetch(`${i.url}${path}`, {
    method,
    headers: {
      ...(opts.ip ? { 'x-forwarded-for': opts.ip } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

type Res = Awaited<ReturnType<typeof call>>;

function expectProblem(res: Res, status: number, code: string) {
  expect({ status: res.status, code: res.json?.code }, res.text).toEqual({ status, code });
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
}

const runJob = (i: Instance, job: string) => call(i, 'POST', `/api/v1/internal/jobs/${job}`, { headers: INTERNAL });

/** A fresh Solana wallet signed in with a nonce from `issuer` and the signature posted to `verifier`. */
async function signIn(issuer: Instance, verifier: Instance) {
  const wallet = await solanaWallet();
  markers.push(wallet.address);
  const ip = freshIp();
  const nonce = await call(issuer, 'GET', `/api/v1/auth/wallet/nonce?chain=solana&address=${wallet.address}`, { ip });
  expect(nonce.status, nonce.text).toBe(200);
  const signature = await wallet.sign(nonce.json.nonce);
  const res = await call(verifier, 'POST', '/api/v1/auth/wallet', {
    ip,
    body: { address: wallet.address, chain: 'solana', signature, nonce: nonce.json.nonce },
  });
  const setCookie = res.headers.getSetCookie().find((c) => c.startsWith('refresh_token='));
  const refreshToken = setCookie?.slice('refresh_token='.length).split(';')[0];
  if (res.status === 201) markers.push(res.json.user.id);
  return { res, wallet, refreshToken, accessToken: res.json?.accessToken as string, userId: res.json?.user?.id as string };
}

beforeAll(async () => {
  if (!REDIS_URL) {
    throw new Error(
      'tests/multi-instance.pg.test.ts needs REDIS_URL (the instances share rate limits, nonces and Socket.IO through Redis)',
    );
  }
  venues = await startFakeVenues(loadSampleData());
  const db = await createTestDb();
  const dbUrl = db.url;
  await db.close();
  sql = postgres(dbUrl, { max: 2, onnotice: () => {} });
  [A, B] = await Promise.all([startInstance('A', dbUrl), startInstance('B', dbUrl)]);
  for (const i of [A, B]) {
    try {
      const ready = await waitForHttp(`${i.url}/health/ready`, 60_000);
      expect(ready.status).toBe(200);
    } catch (err) {
      throw new Error(`instance ${i.name} did not start: ${String(err)}\n${i.proc.output()}`, { cause: err });
    }
  }
  // Markets to work with: the sample venues, ingested by A.
  const sync = await runJob(A, 'events-sync');
  expect(sync.json, sync.text).toMatchObject({ name: 'events-sync', ok: true });
}, 90_000);

afterAll(async () => {
  closeAll();
  await Promise.all([stopInstance(A), stopInstance(B)]);
  await sql?.end();
  await venues?.close();
  // Only the keys this run created (its IPs, wallets and users) under the shared prefix.
  if (REDIS_URL && markers.length + ips.length > 0) {
    const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      for (const m of [...ips, ...markers]) {
        let cursor = '0';
        do {
          const [nextCursor, keys] = await r.scan(cursor, 'MATCH', `pb:*${m}*`, 'COUNT', 1000);
          cursor = nextCursor;
          if (keys.length > 0) await r.del(...keys);
        } while (cursor !== '0');
      }
    } finally {
      r.disconnect();
    }
  }
}, 30_000);

describe('two instances on one PostgreSQL and one Redis', () => {
  it('share rate limits: 20 nonce requests alternating A/B from one IP, the 21st is 429 on either', async () => {
    const wallet = await solanaWallet();
    markers.push(wallet.address);
    const ip = freshIp();
    const path = `/api/v1/auth/wallet/nonce?chain=solana&address=${wallet.address}`;
    for (let n = 0; n < 20; n++) {
      const res = await call(n % 2 ? B : A, 'GET', path, { ip });
      expect(res.status, `request ${n + 1}: ${res.text}`).toBe(200);
    }
    for (const i of [A, B]) {
      const res = await call(i, 'GET', path, { ip });
      expectProblem(res, 429, 'RATE_LIMITED');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Another IP is unaffected.
    expect((await call(B, 'GET', path, { ip: freshIp() })).status).toBe(200);
  });

  it('verify on B a nonce issued by A (and each nonce only once across both)', async () => {
    const s = await signIn(A, B);
    expect(s.res.status, s.res.text).toBe(201);
    expect(s.res.json.user).toMatchObject({ walletAddress: s.wallet.address, chain: 'solana' });
    expect(s.refreshToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The access token B signed is accepted by A.
    const me = await call(A, 'GET', '/api/v1/notifications', { headers: { authorization: `Bearer ${s.accessToken}` } });
    expect(me.status, me.text).toBe(200);

    // A nonce consumed on A is gone for B too.
    const ip = freshIp();
    const nonce = (await call(B, 'GET', `/api/v1/auth/wallet/nonce?chain=solana&address=${s.wallet.address}`, { ip })).json.nonce;
    const body = { address: s.wallet.address, chain: 'solana', signature: await s.wallet.sign(nonce), nonce };
    expect((await call(A, 'POST', '/api/v1/auth/wallet', { ip, body })).status).toBe(201);
    expectProblem(await call(B, 'POST', '/api/v1/auth/wallet', { ip, body }), 401, 'INVALID_NONCE');
  });

  it('a refresh token rotated on A and reused on B revokes the family', async () => {
    const s = await signIn(B, A);
    expect(s.res.status, s.res.text).toBe(201);
    const rotated = await call(A, 'POST', '/api/v1/auth/refresh', { ip: freshIp(), body: { refreshToken: s.refreshToken } });
    expect(rotated.status, rotated.text).toBe(200);
    const successor = rotated.json.refreshToken as string;
    expect(successor).not.toBe(s.refreshToken);

    expectProblem(
      await call(B, 'POST', '/api/v1/auth/refresh', { ip: freshIp(), body: { refreshToken: s.refreshToken } }),
      401,
      'REFRESH_TOKEN_REUSED',
    );
    // The successor, held by whoever rotated first, is dead on both instances.
    expectProblem(
      await call(A, 'POST', '/api/v1/auth/refresh', { ip: freshIp(), body: { refreshToken: successor } }),
      401,
      'INVALID_REFRESH_TOKEN',
    );
    expectProblem(
      await call(B, 'POST', '/api/v1/auth/refresh', { ip: freshIp(), body: { refreshToken: successor } }),
      401,
      'INVALID_REFRESH_TOKEN',
    );
    const [{ n }] = await sql`select count(*)::int as n from refresh_tokens where user_id = ${s.userId} and revoked_at is null`;
    expect(Number(n)).toBe(0);
  });

  it('runs a job on one instance at a time: concurrent run-now on A and B both succeed, never overlapping', async () => {
    const before = await sql`select id from job_runs where name = 'events-sync'`;
    const results = await Promise.all([
      runJob(A, 'events-sync'),
      runJob(B, 'events-sync'),
      runJob(A, 'events-sync'),
      runJob(B, 'events-sync'),
    ]);
    for (const r of results) {
      expect(r.status, r.text).toBe(200);
      expect(r.json).toMatchObject({ name: 'events-sync', ok: true });
    }
    const runs = await sql<{ instance_id: string; started_at: Date; finished_at: Date | null }[]>`
      select instance_id, started_at, finished_at from job_runs where name = 'events-sync' order by started_at`;
    expect(runs).toHaveLength(before.length + 4);
    expect(new Set(runs.map((r) => r.instance_id)).size).toBe(2); // both instances ran it, in turn
    for (const r of runs) expect(r.finished_at).not.toBeNull();
    for (let i = 1; i < runs.length; i++) {
      // Sorted by start: each run starts no earlier than the previous one finished.
      expect(runs[i].started_at.getTime()).toBeGreaterThanOrEqual(runs[i - 1].finished_at!.getTime());
    }
  });

  it('fires a price alert once when price-sync runs on both instances at once', async () => {
    const s = await signIn(A, A);
    expect(s.res.status, s.res.text).toBe(201);
    const auth = { authorization: `Bearer ${s.accessToken}` };
    const market = 'pm-702101';
    const before = (await call(B, 'GET', '/api/v1/events/nba-champion-2027')).json.markets.find((m: any) => m.id === market)
      .yesPrice as number;
    const target = Math.round((before + 0.1) * 100) / 100;
    const alert = await call(B, 'POST', '/api/v1/alerts', {
      headers: auth,
      body: { marketId: market, targetPrice: target, condition: 'above', side: 'yes' },
    });
    expect(alert.status, alert.text).toBe(201);

    const crossed = Math.round((target + 0.05) * 100) / 100;
    const e = venues.gamma.state.events.find((x) => x.id === '30112');
    e.markets[0].outcomePrices = JSON.stringify([String(crossed), String(Math.round((1 - crossed) * 100) / 100)]);
    const runs = await Promise.all([runJob(A, 'price-sync'), runJob(B, 'price-sync'), runJob(B, 'price-sync'), runJob(A, 'price-sync')]);
    for (const r of runs) expect(r.json, r.text).toMatchObject({ name: 'price-sync', ok: true });

    const list = await call(B, 'GET', '/api/v1/notifications', { headers: auth });
    expect(list.status, list.text).toBe(200);
    const fired = list.json.notifications.filter((n: any) => n.type === 'price_alert_triggered');
    expect(fired).toHaveLength(1);
    expect(fired[0].data).toMatchObject({ marketId: market, alertId: alert.json.id });
    const [{ n }] = await sql`select count(*)::int as n from notifications where user_id = ${s.userId} and type = 'price_alert_triggered'`;
    expect(Number(n)).toBe(1);
    const after = await call(A, 'GET', '/api/v1/alerts', { headers: auth });
    expect(after.json.alerts).toEqual([expect.objectContaining({ id: alert.json.id, active: false, triggeredPrice: crossed })]);
  });

  it('carries Socket.IO publishes across instances: market:update from B to A, a notification from B to A', async () => {
    const market = 'pm-702101';
    const onA = await connect(A.url, { extraHeaders: { 'x-forwarded-for': freshIp() } });
    expect(await ack(onA, 'subscribe', { channel: `market:${market}` })).toEqual({ ok: true });
    const onB = await connect(B.url, { extraHeaders: { 'x-forwarded-for': freshIp() } });
    expect(await ack(onB, 'subscribe', { channel: 'market:ks-no-such-market' })).toEqual({ ok: true });
    const strays = record(onB, 'market:update');

    const e = venues.gamma.state.events.find((x) => x.id === '30112');
    const current = Number(JSON.parse(e.markets[0].outcomePrices)[0]);
    const price = current > 0.5 ? 0.12 : 0.88;
    e.markets[0].outcomePrices = JSON.stringify([String(price), String(Math.round((1 - price) * 100) / 100)]);
    const update = next<any>(onA, 'market:update', 10_000);
    const run = await runJob(B, 'price-sync');
    expect(run.json, run.text).toMatchObject({ ok: true });
    expect(await update).toMatchObject({ marketId: market, yesPrice: price });

    const s = await signIn(B, B);
    expect(s.res.status, s.res.text).toBe(201);
    const userOnA = await connect(A.url, { token: s.accessToken, extraHeaders: { 'x-forwarded-for': freshIp() } });
    expect(await ack(userOnA, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    const note = next<any>(userOnA, 'notification', 10_000);
    const raised = await call(B, 'POST', '/api/v1/internal/notifications', {
      headers: INTERNAL,
      body: { userId: s.userId, type: 'mission_completed', title: 'Across instances', message: 'Raised on B' },
    });
    expect(raised.status, raised.text).toBe(201);
    expect(await note).toMatchObject({ id: raised.json.id, title: 'Across instances' });
    await sleep(200);
    expect(strays).toEqual([]); // B's client subscribed to another market got nothing
  });
});
