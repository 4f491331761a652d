import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';

/**
 * Honest freshness (docs/decisions.md §11.4) on the leaderboard: `syncedAt`,
 * `stale` and `Last-Modified`, with the app's clock moved by hand.
 */
const addr = (s: string) => `0x${createHash('sha1').update(`fresh-${s}`).digest('hex')}`;
const MIN = 60_000;
const T0 = Math.floor(Date.now() / 1000) * 1000;
const TRADER = addr('trader');

let fake: FakeDataApi;
let t: TestApp;
let now = T0;

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}
const at = (ms: number) => {
  now = ms;
};

beforeAll(async () => {
  fake = await startFakeDataApi();
  for (const c of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'])
    for (const p of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
      const rows = Array.from({ length: 3 }, (_, k) => ({
        proxyWallet: k ? addr(`${c}${p}${k}`) : TRADER,
        userName: `u${k}`,
        vol: 9 - k,
        pnl: 9 - k,
      }));
      fake.setBoard(c, p, 'PNL', rows);
      fake.setBoard(c, p, 'VOL', rows);
    }
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: fake.url }, { venueClients: FAST_VENUES, clock: () => new Date(now) });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('before the first sync', () => {
  it('boards: syncedAt null, stale, no Last-Modified; biggest wins: no Last-Modified', async () => {
    const board = await get('/api/v1/leaderboard');
    expect(board.body).toEqual({ traders: [], nextCursor: null, syncedAt: null, stale: true });
    expect(board.headers['last-modified']).toBeUndefined();
    const wins = await get('/api/v1/leaderboard/biggest-wins');
    expect(wins.body).toEqual([]);
    expect(wins.headers['last-modified']).toBeUndefined();
  });
});

describe('after syncs', () => {
  it('a board carries its last successful sync, the same instant as Last-Modified, on every page and from the cache', async () => {
    at(T0);
    expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
    at(T0 + MIN);
    for (const q of ['', 'limit=1', 'tab=kol', 'search=u1', 'period=ALL&category=SPORTS']) {
      for (let k = 0; k < 2; k++) {
        // The second read is served from the page cache.
        const res = await get(`/api/v1/leaderboard?${q}`);
        expect(res.body.syncedAt, q).toBe(new Date(T0).toISOString());
        expect(res.body.stale, q).toBe(false);
        expect(res.headers['last-modified'], q).toBe(new Date(T0).toUTCString());
      }
    }
    const page1 = await get('/api/v1/leaderboard?limit=1');
    const page2 = await get(`/api/v1/leaderboard?limit=1&cursor=${encodeURIComponent(page1.body.nextCursor)}`);
    expect(page2.body).toMatchObject({ syncedAt: new Date(T0).toISOString(), stale: false });
  });

  it('stale 30 minutes after the last sync', async () => {
    at(T0 + 30 * MIN);
    expect((await get('/api/v1/leaderboard')).body.stale).toBe(false);
    at(T0 + 30 * MIN + 1000);
    const res = await get('/api/v1/leaderboard');
    expect(res.body.stale).toBe(true);
    expect(res.body.traders).toHaveLength(3);
    expect(res.headers['last-modified']).toBe(new Date(T0).toUTCString());
  });

  it('a failed sync: the last good board, stale, until a sync succeeds', async () => {
    at(T0 + 40 * MIN);
    expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
    at(T0 + 41 * MIN);
    const good = await get('/api/v1/leaderboard');
    expect(good.body).toMatchObject({ syncedAt: new Date(T0 + 40 * MIN).toISOString(), stale: false });
    at(T0 + 50 * MIN);
    fake.server.down(true);
    try {
      expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(false);
    } finally {
      fake.server.down(false);
    }
    const during = await get('/api/v1/leaderboard');
    expect(during.body).toEqual({ ...good.body, stale: true });
    expect(during.headers['last-modified']).toBe(new Date(T0 + 40 * MIN).toUTCString());
    at(T0 + 60 * MIN);
    expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
    expect((await get('/api/v1/leaderboard')).body).toMatchObject({ syncedAt: new Date(T0 + 60 * MIN).toISOString(), stale: false });
  });
});

describe('enriched data', () => {
  it('biggest wins send when enrichment last wrote them; a ranked profile its figures time, stale after 90 minutes', async () => {
    at(T0 + 61 * MIN);
    expect((await t.app.jobs.run('leaderboard-enrich')).ok).toBe(true);
    at(T0 + 62 * MIN);
    const wins = await get('/api/v1/leaderboard/biggest-wins?period=ALL');
    expect(wins.headers['last-modified']).toBe(new Date(T0 + 61 * MIN).toUTCString());
    const profile = await get(`/api/v1/leaderboard/${TRADER}?period=7D`);
    expect(profile.body).toMatchObject({ syncedAt: new Date(T0 + 61 * MIN).toISOString(), stale: false });
    expect(profile.headers['last-modified']).toBe(new Date(T0 + 61 * MIN).toUTCString());
    // Kept through a venue outage, stale once 90 minutes old.
    fake.server.down(true);
    try {
      at(T0 + 61 * MIN + 90 * MIN + 1000);
      const later = await get(`/api/v1/leaderboard/${TRADER}?period=7D`);
      expect(later.body).toEqual({ ...profile.body, stale: true });
    } finally {
      fake.server.down(false);
    }
  });

  it('an on-demand profile: when it was fetched', async () => {
    at(T0 + 200 * MIN);
    const stranger = addr('stranger');
    const res = await get(`/api/v1/leaderboard/${stranger}`);
    expect(res.body).toMatchObject({ syncedAt: new Date(T0 + 200 * MIN).toISOString(), stale: false });
    expect(res.headers['last-modified']).toBe(new Date(T0 + 200 * MIN).toUTCString());
  });
});
