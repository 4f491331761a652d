import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';

/** On-demand profiles are bounded (docs/decisions.md §11.7). */
const addr = (s: string) => `0x${createHash('sha1').update(`on-demand-${s}`).digest('hex')}`;
const RANKED = addr('ranked');

let fake: FakeDataApi;
let t: TestApp;

async function get(url: string, client = '198.51.100.1') {
  const res = await t.app.inject({ method: 'GET', url, remoteAddress: client });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}
const venueCallsFor = (wallet: string) => fake.server.requests.filter((r) => r.query.get('user') === wallet).length;

beforeAll(async () => {
  fake = await startFakeDataApi();
  for (const c of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'])
    for (const p of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
      const rows = [{ proxyWallet: RANKED, userName: 'ranked', vol: 1, pnl: 1 }];
      fake.setBoard(c, p, 'PNL', rows);
      fake.setBoard(c, p, 'VOL', rows);
    }
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: fake.url }, { venueClients: FAST_VENUES });
  expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
  expect((await t.app.jobs.run('leaderboard-enrich')).ok).toBe(true);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('per client address: 30 a minute for addresses on no board', () => {
  it('cached answers count; the 31st is 429 RATE_LIMITED with Retry-After; other clients and ranked traders are not limited', async () => {
    const stranger = addr('popular');
    const client = '198.51.100.30';
    fake.server.reset();
    for (let k = 0; k < 30; k++) expect((await get(`/api/v1/leaderboard/${stranger}`, client)).status).toBe(200);
    expect(venueCallsFor(stranger)).toBe(3); // one fetch, then the cached copy
    const over = await get(`/api/v1/leaderboard/${stranger}`, client);
    expect(over.status).toBe(429);
    expect(over.body.code).toBe('RATE_LIMITED');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expect((await get(`/api/v1/leaderboard/${addr('other')}`, client)).status).toBe(429);
    expect((await get(`/api/v1/leaderboard/${stranger}`, '198.51.100.31')).status).toBe(200);
    expect((await get(`/api/v1/leaderboard/${RANKED}?period=7D`, client)).status).toBe(200);
  });

  it('503 answers count too', async () => {
    const client = '198.51.100.40';
    fake.server.down(true);
    try {
      for (let k = 0; k < 30; k++) {
        const res = await get(`/api/v1/leaderboard/${addr(`down-${k}`)}`, client);
        expect(res.status).toBe(503);
        expect(res.body.code).toBe('UNAVAILABLE');
      }
      expect((await get(`/api/v1/leaderboard/${addr('down-30')}`, client)).status).toBe(429);
    } finally {
      fake.server.down(false);
    }
  });
});

describe('venue fetches in flight', () => {
  it('at most 4 per instance; the others wait, then 503 UNAVAILABLE with Retry-After after 5 s', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    fake.server.reset();
    fake.server.intercept(async () => {
      await gate;
      return undefined;
    });
    try {
      const strangers = Array.from({ length: 6 }, (_, k) => addr(`slow-${k}`));
      const answers = strangers.map((a, k) => get(`/api/v1/leaderboard/${a}`, `198.51.100.${60 + k}`));
      // Two are refused once their 5 s are up; until then the venue sees 4 traders only.
      let refused = 0;
      await new Promise<void>((resolve) => {
        for (const p of answers) void p.then((r) => r.status === 503 && ++refused === 2 && resolve());
      });
      const users = new Set(fake.server.requests.map((r) => r.query.get('user')));
      expect(users.size).toBe(4);
      release();
      const res = await Promise.all(answers);
      expect(res.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 503, 503]);
      for (const r of res.filter((x) => x.status === 503)) {
        expect(r.body.code).toBe('UNAVAILABLE');
        expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
      }
    } finally {
      release();
      fake.server.intercept(undefined);
    }
  });
});

describe('cache', () => {
  it('an address with no activity is cached like any other', async () => {
    const nobody = addr('nobody');
    fake.setUser(nobody, {});
    fake.server.reset();
    const first = await get(`/api/v1/leaderboard/${nobody}?period=7D`);
    const second = await get(`/api/v1/leaderboard/${nobody}?period=7D`);
    expect(first.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(first.body).toMatchObject({ totalPnl: 0, totalTrades: 0, topPositions: [], recentTrades: [], stale: false });
    expect(venueCallsFor(nobody)).toBe(3);
  });

  it('past its 5 minutes with the venue down, the last copy is served, marked stale', async () => {
    const known = addr('known');
    const fresh = await get(`/api/v1/leaderboard/${known}?period=ALL`);
    expect(fresh.body.stale).toBe(false);
    await t.db.rows(sql`update trader_profiles set fetched_at = fetched_at - interval '10 minutes' where wallet_address = ${known}`);
    fake.server.down(true);
    try {
      const res = await get(`/api/v1/leaderboard/${known}?period=ALL`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...fresh.body, syncedAt: new Date(Date.parse(fresh.body.syncedAt) - 600_000).toISOString(), stale: true });
      expect(res.headers['last-modified']).toBe(new Date(res.body.syncedAt).toUTCString());
    } finally {
      fake.server.down(false);
    }
  });

  it('cached profiles older than 24 hours are pruned by leaderboard-sync', async () => {
    const old = addr('old');
    await get(`/api/v1/leaderboard/${old}?period=30D`);
    await t.db.rows(sql`update trader_profiles set fetched_at = now() - interval '25 hours' where wallet_address = ${old}`);
    const count = async (w: string) =>
      Number((await t.db.rows<{ n: string }>(sql`select count(*) as n from trader_profiles where wallet_address = ${w}`))[0].n);
    expect(await count(old)).toBe(1);
    expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
    expect(await count(old)).toBe(0);
    expect(await count(addr('known'))).toBe(1);
  });
});
