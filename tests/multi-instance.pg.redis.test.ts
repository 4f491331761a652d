import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import { Redis } from 'ioredis';
import { createTestDb } from './helpers/app.js';
import { REDIS_URL } from './helpers/env.js';
import { startServer, waitForExit, waitForHttp } from './helpers/server-process.js';
import { freePort } from './support/net.js';
import { loadSampleData, startFakeVenues, type FakeVenues } from './fakes/venues/index.js';
import { gammaYesOf, setGammaYes } from './fakes/venues/prices.js';
import { kalshiTrade } from './fakes/venues/kalshi-trades.js';
import { parseSetCookies, signIn, solanaWallet } from './support/users.js';
import { ack, closeAll, connect, next, record, sleep } from './realtime/helpers.js';
import { eventually } from './support/eventually.js';

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

/**
 * Run-now calls sent at once, two per instance: the first on each instance runs (200, ok), a
 * second on the same instance while its first waits or runs answers 409 JOB_RUNNING (§9).
 * Both instances run it at least once; returns how many runs there were.
 */
function expectRunsOrJobRunning(results: { status: number; text: string; json: any }[], job: string): number {
  let ran = 0;
  for (const r of results) {
    if (r.status === 409) {
      expect(r.json, r.text).toMatchObject({ code: 'JOB_RUNNING' });
      continue;
    }
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ name: job, ok: true });
    ran++;
  }
  expect(ran).toBeGreaterThanOrEqual(2);
  return ran;
}

/** A fresh Solana wallet signed in with a nonce from `issuer` and the signature posted to `verifier`. */
async function session(issuer: Instance, verifier: Instance) {
  const wallet = await solanaWallet();
  markers.push(wallet.address);
  const res = await signIn(issuer.url, wallet, { ip: freshIp(), verifier: verifier.url });
  const refreshToken = parseSetCookies(res).refresh_token?.value;
  const json = res.statusCode === 201 ? res.json() : undefined;
  if (json) markers.push(json.user.id);
  return { res, json, wallet, refreshToken, accessToken: json?.accessToken as string, userId: json?.user?.id as string };
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
    const s = await session(A, B);
    expect(s.res.statusCode, s.res.body).toBe(201);
    expect(s.json.user).toMatchObject({ walletAddress: s.wallet.address, chain: 'solana' });
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
    const s = await session(B, A);
    expect(s.res.statusCode, s.res.body).toBe(201);
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
    // docs/decisions.md §9: a run-now on one instance waits for the other's run; a second run-now
    // on the same instance while its first waits or runs answers 409 JOB_RUNNING at once.
    const results = await Promise.all([
      runJob(A, 'events-sync'),
      runJob(B, 'events-sync'),
      runJob(A, 'events-sync'),
      runJob(B, 'events-sync'),
    ]);
    const ran = expectRunsOrJobRunning(results, 'events-sync');
    const runs = await sql<{ instance_id: string; started_at: Date; finished_at: Date | null }[]>`
      select instance_id, started_at, finished_at from job_runs where name = 'events-sync' order by started_at`;
    expect(runs).toHaveLength(before.length + ran);
    expect(new Set(runs.map((r) => r.instance_id)).size).toBe(2); // both instances ran it, in turn
    for (const r of runs) expect(r.finished_at).not.toBeNull();
    for (let i = 1; i < runs.length; i++) {
      // Sorted by start: each run starts no earlier than the previous one finished.
      expect(runs[i].started_at.getTime()).toBeGreaterThanOrEqual(runs[i - 1].finished_at!.getTime());
    }
  });

  it('fires a price alert once when price-sync runs on both instances at once', async () => {
    const s = await session(A, A);
    expect(s.res.statusCode, s.res.body).toBe(201);
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
    setGammaYes(e.markets[0], crossed);
    const runs = await Promise.all([runJob(A, 'price-sync'), runJob(B, 'price-sync'), runJob(B, 'price-sync'), runJob(A, 'price-sync')]);
    expectRunsOrJobRunning(runs, 'price-sync');

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

  it('fires a big-trade alert once when price-sync runs on both instances at once (docs/decisions.md §18.4)', async () => {
    const s = await session(A, A);
    expect(s.res.statusCode, s.res.body).toBe(201);
    const auth = { authorization: `Bearer ${s.accessToken}` };
    const market = 'ks-KXFEDCHAIR-27-KW';
    const alert = await call(B, 'POST', '/api/v1/alerts', {
      headers: auth,
      body: { marketId: market, condition: 'big_trade', minUsd: 5000 },
    });
    expect(alert.status, alert.text).toBe(201);
    // A Kalshi taker buying 20,000 NO at 0.40: 8,000 USD, one second after the alert was made.
    venues.kalshi.state.trades = [
      kalshiTrade({
        ticker: 'KXFEDCHAIR-27-KW',
        count: 20_000,
        yesPrice: 0.6,
        takerSide: 'no',
        at: new Date(Date.parse(alert.json.createdAt) + 1000),
      }),
    ];
    const runs = await Promise.all([runJob(A, 'price-sync'), runJob(B, 'price-sync'), runJob(B, 'price-sync'), runJob(A, 'price-sync')]);
    expectRunsOrJobRunning(runs, 'price-sync');
    const [{ n }] = await sql`select count(*)::int as n from notifications where user_id = ${s.userId} and type = 'price_alert_triggered'`;
    expect(Number(n)).toBe(1);
    const list = await call(A, 'GET', '/api/v1/notifications', { headers: auth });
    expect(list.json.notifications[0].data).toMatchObject({
      marketId: market,
      alertId: alert.json.id,
      usd: 8000,
      outcome: 'No',
      price: 0.4,
    });
    const after = await call(B, 'GET', '/api/v1/alerts', { headers: auth });
    expect(after.json.alerts).toEqual([
      expect.objectContaining({ id: alert.json.id, active: false, triggerCount: 1, triggeredPrice: 0.4 }),
    ]);
  });

  it('carries Socket.IO publishes across instances: market:update from B to A, a notification from B to A', async () => {
    const market = 'pm-702101';
    const onA = await connect(A.url, { extraHeaders: { 'x-forwarded-for': freshIp() } });
    expect(await ack(onA, 'subscribe', { channel: `market:${market}` })).toEqual({ ok: true });
    const onB = await connect(B.url, { extraHeaders: { 'x-forwarded-for': freshIp() } });
    expect(await ack(onB, 'subscribe', { channel: 'market:ks-no-such-market' })).toEqual({ ok: true });
    const strays = record(onB, 'market:update');

    const e = venues.gamma.state.events.find((x) => x.id === '30112');
    const current = gammaYesOf(e.markets[0]);
    const price = current > 0.5 ? 0.12 : 0.88;
    setGammaYes(e.markets[0], price);
    const update = next<any>(onA, 'market:update', 10_000);
    const run = await runJob(B, 'price-sync');
    expect(run.json, run.text).toMatchObject({ ok: true });
    expect(await update).toMatchObject({ marketId: market, yesPrice: price });

    const s = await session(B, B);
    expect(s.res.statusCode, s.res.body).toBe(201);
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

  it('keeps a user stream whole across instances (docs/decisions.md §12): a killed socket resumes on the other instance, badges agree', async () => {
    const s = await session(A, B);
    expect(s.res.statusCode, s.res.body).toBe(201);
    const auth = { authorization: `Bearer ${s.accessToken}` };
    const STREAM = ['notification', 'notification:updated', 'notification:deleted', 'notifications:read-all'];
    type Seen = { event: string; seq: number; unreadCount: number; at: number };
    const watch = (socket: Awaited<ReturnType<typeof connect>>) => {
      const seen: Seen[] = [];
      socket.onAny((event: string, p: { seq: number; unreadCount: number }) => {
        if (STREAM.includes(event)) seen.push({ event, seq: p.seq, unreadCount: p.unreadCount, at: Date.now() });
      });
      return seen;
    };
    const open = (i: Instance) => connect(i.url, { token: s.accessToken, extraHeaders: { 'x-forwarded-for': freshIp() } });

    // Three devices of the user (two on A, one on B) and the socket whose connection is killed.
    const devices = [await open(A), await open(B), await open(A)];
    const badges = devices.map(watch);
    for (const d of devices) expect(await ack(d, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    const victim = await open(A);
    const before = watch(victim);
    expect(await ack(victim, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    let after: Seen[] = [];
    let resumedAck: unknown;

    // Two writers, one per instance: 25 notifications each, reads (PATCH on the other
    // instance) and deletes in between; the victim is killed and resumes on B meanwhile.
    const lane = async (self: Instance, other: Instance, k: number) => {
      const mine: string[] = [];
      for (let i = 0; i < 25; i++) {
        const made = await call(self, 'POST', '/api/v1/internal/notifications', {
          headers: INTERNAL,
          body: { userId: s.userId, type: 'order_filled', title: `lane ${k} #${i}`, message: 'filled' },
        });
        expect(made.status, made.text).toBe(201);
        mine.push(made.json.id);
        if (i % 3 === 1) expect((await call(other, 'PATCH', `/api/v1/notifications/${mine[i - 1]}`, { headers: auth })).status).toBe(200);
        if (i % 5 === 4) expect((await call(self, 'DELETE', `/api/v1/notifications/${mine[i - 2]}`, { headers: auth })).status).toBe(204);
        if (k === 0 && i === 8) victim.io.engine.close(); // the connection dies mid-stream
        if (k === 0 && i === 16) {
          const lastSeq = before.at(-1)?.seq ?? 0;
          const resumed = await open(B);
          after = watch(resumed);
          resumedAck = await ack(resumed, 'subscribe', { channel: 'user:notifications', lastSeq });
        }
      }
    };
    await Promise.all([lane(A, B, 0), lane(B, A, 1)]);
    const readAll = await call(B, 'PATCH', '/api/v1/notifications/mark-all-read', { headers: auth });
    expect(readAll.status, readAll.text).toBe(200);
    const doneAt = Date.now();
    const final = await call(A, 'GET', '/api/v1/notifications?limit=1', { headers: auth });
    const N: number = final.json.seq;
    expect(N).toBeGreaterThanOrEqual(50 + 16 + 10);
    const all = Array.from({ length: N }, (_, i) => i + 1);

    // Badges: every device gets every event in order, the last within 1 s, and they agree.
    await eventually(() => badges.every((b) => b.length >= N), 10_000);
    await sleep(300);
    for (const b of badges) {
      expect(b.map((e) => e.seq)).toEqual(all);
      expect(b[N - 1].at - doneAt).toBeLessThan(1_000);
    }
    for (let i = 0; i < N; i++) {
      const at = badges.map((b) => b[i].at);
      expect(new Set(badges.map((b) => b[i].unreadCount)).size, `seq ${i + 1}`).toBe(1);
      expect(Math.max(...at) - Math.min(...at), `seq ${i + 1}`).toBeLessThan(1_000);
    }
    expect(badges[0][N - 1].unreadCount).toBe(final.json.unreadCount);
    expect(final.json.unreadCount).toBe(0);

    // The killed socket: what it saw before, then the resume on B: every event once, in order, none missing.
    await eventually(() => after.length > 0 && after.at(-1)!.seq === N, 10_000);
    expect(resumedAck).toMatchObject({ ok: true });
    expect(before.length).toBeGreaterThan(0);
    expect([...before, ...after].map((e) => e.seq)).toEqual(all);
    // Replayed events are the ones first emitted: the same events and badges the devices got.
    expect([...before, ...after].map((e) => [e.event, e.unreadCount])).toEqual(badges[1].map((e) => [e.event, e.unreadCount]));
  }, 60_000);
});
