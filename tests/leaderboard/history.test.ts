import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';

/**
 * Trader history (docs/decisions.md §14.1). Time is the app's injected clock:
 * every leaderboard-sync run below happens at a chosen instant, and the board
 * contents are scripted on the fake Data API before each run.
 */
const addr = (s: string) => `0x${createHash('sha1').update(`history-${s}`).digest('hex')}`;
const A = addr('a');
const B = addr('b');
const C = addr('c');
const V = addr('v'); // only ever on the volume ordering
const N = addr('never');
const fillers = Array.from({ length: 5 }, (_, i) => addr(`filler-${i}`));

const CATS = ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'];
const VP = ['DAY', 'WEEK', 'MONTH', 'ALL'];
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();
const dayOf = (ms: number) => iso(ms).slice(0, 10);

/**
 * The first day of the scripted timeline: a UTC midnight a month ahead of the
 * real date, so job_runs (pruned against the database's own clock) keeps the
 * runs the freshness reads. Written below as "day F".
 */
const F = Math.ceil(Date.now() / DAY) * DAY + 30 * DAY;
const f = (h: number, m: number, s = 0) => F + h * HOUR + m * MIN + s * 1000;

let fake: FakeDataApi;
let t: TestApp;
let now = F;

interface Row {
  wallet: string;
  pnl: number;
  vol?: number;
}
const wire = (r: Row) => ({
  proxyWallet: r.wallet,
  userName: `u-${r.wallet.slice(2, 8)}`,
  vol: r.vol ?? 1,
  pnl: r.pnl,
  verifiedBadge: r.wallet === A,
});

/** Scripts the OVERALL/ALL board (PNL ordering as given, VOL ordering as given) and a filler on every other board. */
function setBoards(pnl: Row[], vol: Row[] = []) {
  for (const c of CATS)
    for (const p of VP) {
      const filler = [{ proxyWallet: addr(`${c}-${p}`), userName: `${c}-${p}`, vol: 1, pnl: 1 }];
      fake.setBoard(c, p, 'PNL', filler);
      fake.setBoard(c, p, 'VOL', filler);
    }
  fake.setBoard('OVERALL', 'ALL', 'PNL', pnl.map(wire));
  fake.setBoard('OVERALL', 'ALL', 'VOL', vol.map(wire));
}

async function syncAt(iso: string | number, pnl: Row[], vol: Row[] = []) {
  now = typeof iso === 'number' ? iso : Date.parse(iso);
  setBoards(pnl, vol);
  const out = await t.app.jobs.run('leaderboard-sync');
  expect(out.ok, out.error).toBe(true);
}

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

const history = (wallet: string, query = '') => get(`/api/v1/leaderboard/${wallet}/history${query ? `?${query}` : ''}`);

async function entryOf(wallet: string, query: string) {
  const { status, body } = await get(`/api/v1/leaderboard?category=OVERALL&period=ALL&limit=100&${query}`);
  expect(status).toBe(200);
  return (body.traders as Array<{ walletAddress: string; rankChange: number | null; rank: number }>).find(
    (e) => e.walletAddress === wallet,
  );
}

beforeAll(async () => {
  fake = await startFakeDataApi();
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: fake.url }, { clock: () => new Date(now), venues: FAST_VENUES });
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('trader history', () => {
  it('before the first sync: no points, null changes, syncedAt null and stale', async () => {
    const { status, body, headers } = await history(A);
    expect(status).toBe(200);
    expect(headers['last-modified']).toBeUndefined();
    expect(body).toEqual({
      walletAddress: A,
      points: [],
      changes: { '1d': null, '7d': null, '30d': null },
      syncedAt: null,
      stale: true,
    });
  });

  it('keeps the last sync of each clock hour; a sync without the trader leaves no point; volume-only traders have a null rank', async () => {
    await syncAt(
      f(10, 5),
      [
        { wallet: A, pnl: 100 },
        { wallet: B, pnl: 90 },
        { wallet: C, pnl: 80 },
      ],
      [{ wallet: V, pnl: 1, vol: 999 }],
    );
    await syncAt(
      f(10, 25),
      [
        { wallet: B, pnl: 95 },
        { wallet: A, pnl: 92 },
        { wallet: C, pnl: 85 },
      ],
      [{ wallet: V, pnl: 2, vol: 999 }],
    );
    await syncAt(
      f(10, 45),
      [
        { wallet: A, pnl: 110 },
        { wallet: C, pnl: 100 },
      ],
      [{ wallet: V, pnl: 3, vol: 1000 }],
    );
    await syncAt(f(11, 15), [
      { wallet: C, pnl: 120 },
      { wallet: A, pnl: 111 },
      { wallet: B, pnl: 96 },
    ]);

    const a = await history(A);
    expect(a.status).toBe(200);
    expect(a.body.points).toEqual([
      { at: iso(f(10, 45)), rank: 1, pnl: 110, volume: 1 },
      { at: iso(f(11, 15)), rank: 2, pnl: 111, volume: 1 },
    ]);
    expect(a.body.syncedAt).toBe(iso(f(11, 15)));
    expect(a.body.stale).toBe(false);
    expect(a.headers['last-modified']).toBe(new Date(f(11, 15)).toUTCString());
    // B was not on the board at 10:45: hour 10 keeps its 10:25 point.
    const b = await history(B);
    expect(b.body.points.map((p: { at: string; rank: number }) => [p.at, p.rank])).toEqual([
      [iso(f(10, 25)), 1],
      [iso(f(11, 15)), 3],
    ]);
    // V was only on the volume ordering, and not on the board at 11:15 (no "now": changes null).
    const v = await history(V);
    expect(v.body.points).toEqual([{ at: iso(f(10, 45)), rank: null, pnl: 3, volume: 1000 }]);
    expect(v.body.changes).toEqual({ '1d': null, '7d': null, '30d': null });
    // No point a day old yet.
    expect(a.body.changes).toEqual({ '1d': null, '7d': null, '30d': null });
    expect((await entryOf(A, ''))!.rankChange).toBeNull();
  });

  it('any address case; a never-ranked address is 200 with no points; other boards are separate', async () => {
    const upper = await history(`0x${A.slice(2).toUpperCase()}`);
    expect(upper.status).toBe(200);
    expect(upper.body.walletAddress).toBe(A);
    expect(upper.body.points).toHaveLength(2);

    const never = await history(N);
    expect(never.status).toBe(200);
    expect(never.body).toEqual({
      walletAddress: N,
      points: [],
      changes: { '1d': null, '7d': null, '30d': null },
      syncedAt: iso(f(11, 15)),
      stale: false,
    });
    const other = await history(A, 'category=POLITICS&period=7D&days=365');
    expect(other.status).toBe(200);
    expect(other.body.points).toEqual([]);
    expect(other.body.syncedAt).toBe(iso(f(11, 15)));
  });

  it('rejects malformed addresses and parameters with 400', async () => {
    for (const url of [
      '/api/v1/leaderboard/0x123/history',
      `/api/v1/leaderboard/${A}zz/history`,
      `/api/v1/leaderboard/${A.replace('0x', '1x')}/history`,
      `/api/v1/leaderboard/${A}/history?days=0`,
      `/api/v1/leaderboard/${A}/history?days=366`,
      `/api/v1/leaderboard/${A}/history?days=1.5`,
      `/api/v1/leaderboard/${A}/history?period=WEEK`,
      `/api/v1/leaderboard/${A}/history?category=overall`,
      `/api/v1/leaderboard/${A}/history?limit=5`,
    ]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.json().code).toBe('VALIDATION_ERROR');
    }
  });

  it('is stale 30 minutes after the last sync and while the latest sync failed', async () => {
    now = f(11, 45);
    expect((await history(A)).body.stale).toBe(false);
    now = f(11, 45, 1);
    expect((await history(A)).body.stale).toBe(true);

    now = f(11, 50);
    fake.failWhen((req) => req.query.get('category') === 'CRYPTO');
    const failed = await t.app.jobs.run('leaderboard-sync');
    fake.failWhen(undefined);
    expect(failed.ok).toBe(false);
    const h = await history(A);
    // The OVERALL/ALL board did switch, but the run failed: stale.
    expect(h.body.syncedAt).toBe(iso(f(11, 50)));
    expect(h.body.stale).toBe(true);
    expect(h.body.points.at(-1).at).toBe(iso(f(11, 50)));
  });
});

/**
 * Ten days of syncs (days 0–9), four a day at 03:10, 09:10, 15:10 and 21:10 UTC, on a
 * the same board (after the syncs above). A's rank cycles 1–5 and its PnL
 * grows 10 a sync; C is on the board only at 03:10 and 09:10.
 */
describe('downsampling, changes and rankChange', () => {
  const D0 = F + 28 * DAY; // "day 0"; day F is 28 days before it
  const SLOTS = [3, 9, 15, 21];
  const at = (d: number, slot: number) => D0 + d * DAY + SLOTS[slot] * HOUR + 10 * 60_000;
  const rankOf = (k: number) => 1 + (k % 5);
  const pnlOf = (k: number) => 1000 + 10 * k;
  const LAST = 39;
  const kAt = (d: number, slot: number) => d * 4 + slot;
  const atK = (k: number) => at(Math.floor(k / 4), k % 4);

  function board(k: number): Row[] {
    const rows: Row[] = fillers.slice(0, rankOf(k) - 1).map((w, i) => ({ wallet: w, pnl: 1_000_000 - i }));
    rows.push({ wallet: A, pnl: pnlOf(k) });
    if (k % 4 < 2) rows.push({ wallet: C, pnl: 5 + k });
    rows.push({ wallet: B, pnl: 1 });
    return rows;
  }

  beforeAll(async () => {
    for (let d = 0; d < 10; d++) for (let s = 0; s < 4; s++) await syncAt(at(d, s), board(kAt(d, s)));
  });

  it('hourly points within 7 days of the last sync, one per UTC day (its last sync) before that', async () => {
    const { status, body } = await history(A, 'days=365');
    expect(status).toBe(200);
    const S = at(9, 3);
    expect(body.syncedAt).toBe(iso(S));
    // Boundary: the start of the hour 7 days before the last sync (day 2, 21:00). Before it, each
    // day's last sync: day 0 21:10, day 1 21:10, and day 2 15:10 (its 21:10 sync is an hourly point).
    const expected = [kAt(0, 3), kAt(1, 3), kAt(2, 2)];
    for (let k = kAt(2, 3); k <= LAST; k++) expected.push(k);
    // Day F's single point (the first block) comes first.
    expect(body.points[0]).toEqual({ at: iso(f(11, 50)), rank: 2, pnl: 111, volume: 1 });
    expect(body.points.slice(1)).toEqual(expected.map((k) => ({ at: iso(atK(k)), rank: rankOf(k), pnl: pnlOf(k), volume: 1 })));

    // C: only on the board at 03:10 and 09:10, so each old day's point is its 09:10 sync.
    const c = await history(C, 'days=365');
    const cMarch = c.body.points.filter((p: { at: string }) => Date.parse(p.at) >= D0).map((p: { at: string }) => p.at);
    expect(cMarch.slice(0, 3)).toEqual([iso(at(0, 1)), iso(at(1, 1)), iso(at(2, 1))]);
    expect(cMarch[3]).toBe(iso(at(3, 0)));
  });

  it('storage: one row per trader and hour for 7 days, one per day before', async () => {
    const [h] = await t.db.rows<{ n: number }>(sql`
      select count(*)::int as n from trader_history_hourly where category = 'OVERALL' and period = 'ALL' and wallet_address = ${A}`);
    const [d] = await t.db.rows<{ n: number }>(sql`
      select count(*)::int as n from trader_history_daily where category = 'OVERALL' and period = 'ALL' and wallet_address = ${A}`);
    expect(h.n).toBe(LAST - kAt(2, 3) + 1); // 29 hours
    expect(d.n).toBe(4); // day F, day 0, day 1, and day 2's first three syncs
  });

  it('days limits the window', async () => {
    const { body } = await history(A, 'days=5');
    const since = at(9, 3) - 5 * DAY;
    expect(body.points.length).toBe(21);
    expect(Date.parse(body.points[0].at)).toBe(since);
    const def = await history(A);
    expect(def.body.points.length).toBe((await history(A, 'days=90')).body.points.length);
  });

  it('changes against the newest point at least 1, 7 and 30 days old; rankChange is the 1-day rank change', async () => {
    const { body } = await history(A);
    // A day before the last sync is exactly the sync of day 8, 21:10 (k 35, rank 1, pnl 1350; inclusive);
    // 7 days: day 2, 21:10 (k 11, rank 2, pnl 1110); 30 days: day F's last point (rank 2, pnl 111).
    // Now: k 39, rank 5, pnl 1390.
    expect(body.changes).toEqual({
      '1d': { rank: -4, pnl: 40 },
      '7d': { rank: -3, pnl: 280 },
      '30d': { rank: -3, pnl: 1279 },
    });

    // Whatever the board's sort, direction or tab.
    for (const q of ['', 'sort=volume&sortDirection=asc', 'sort=roi', 'tab=kol', 'search=u-']) {
      const e = await entryOf(A, q);
      expect(e, q).toBeDefined();
      expect(e!.rankChange, q).toBe(body.changes['1d'].rank);
    }
  });

  it('rankChange and the 1-day change move with the next sync, set when the snapshot is written', async () => {
    // One hour later (k 41: rank 2, pnl 1410): the newest point at least a day old is still day 8, 21:10
    // (there was no sync at 22:10 that day).
    await syncAt(at(9, 3) + HOUR, board(41));
    const { body } = await history(A);
    expect(body.changes['1d']).toEqual({ rank: -1, pnl: 60 });
    expect((await entryOf(A, ''))!.rankChange).toBe(-1);
    const bHist = await history(B);
    expect(bHist.body.changes['1d']).not.toBeNull();
    expect((await entryOf(B, ''))!.rankChange).toBe(bHist.body.changes['1d'].rank);
  });

  it('keeps at least 400 days, then drops whole days', async () => {
    // 400 days after day 0, 12:00: day F is older than 400 days and goes; day 0 stays; every hour
    // older than 7 days is rolled into its day.
    await syncAt(D0 + 400 * DAY + 12 * HOUR, board(0));
    const days = async () =>
      (
        await t.db.rows<{ day: string; at: Date | string }>(sql`
          select day::text as day, at from trader_history_daily
          where category = 'OVERALL' and period = 'ALL' and wallet_address = ${A} order by day`)
      ).map((r) => [r.day, new Date(r.at).toISOString()]);
    const all = await days();
    expect(all.slice(0, 3)).toEqual([
      [dayOf(D0), iso(at(0, 3))],
      [dayOf(D0 + DAY), iso(at(1, 3))],
      [dayOf(D0 + 2 * DAY), iso(at(2, 3))], // the day already partly rolled up now ends at its last sync
    ]);
    expect(all.map((r) => r[0])).toEqual(Array.from({ length: 10 }, (_, d) => dayOf(D0 + d * DAY)));
    expect(all[9][1]).toBe(iso(at(9, 3) + HOUR));
    const hourly = await t.db.rows<{ at: Date | string }>(sql`
      select at from trader_history_hourly where category = 'OVERALL' and period = 'ALL' and wallet_address = ${A}`);
    expect(hourly.map((r) => new Date(r.at).toISOString())).toEqual([iso(D0 + 400 * DAY + 12 * HOUR)]);

    // A day later, day 0 is more than 400 days old: gone; day 1 stays.
    await syncAt(D0 + 401 * DAY + 12 * HOUR, board(0));
    const after = await days();
    expect(after[0]).toEqual([dayOf(D0 + DAY), iso(at(1, 3))]);

    // The last day holds both recent syncs (a day apart, inclusive). The 7-day change is against the
    // newest point at least 7 days old, however old: day 9's last (k 41: rank 2, pnl 1410).
    const { body } = await history(A, 'days=1');
    expect(body.points.map((p: { at: string }) => p.at)).toEqual([iso(D0 + 400 * DAY + 12 * HOUR), iso(D0 + 401 * DAY + 12 * HOUR)]);
    expect(body.changes).toEqual({ '1d': { rank: 0, pnl: 0 }, '7d': { rank: 1, pnl: -410 }, '30d': { rank: 1, pnl: -410 } });
  });

  it('hourly rows older than 7 days that the roll-up has not reached yet still show as one point per day', async () => {
    // The state a failed roll-up leaves: two hours of one day 8 days before the last sync, still hourly.
    const day = D0 + 393 * DAY;
    await t.db.rows(sql`
      insert into trader_history_hourly (category, period, wallet_address, hour, at, rank, pnl, volume) values
        ('OVERALL', 'ALL', ${A}, ${iso(day + HOUR)}::timestamptz, ${iso(day + HOUR + 10 * MIN)}::timestamptz, 7, 70, 1),
        ('OVERALL', 'ALL', ${A}, ${iso(day + 5 * HOUR)}::timestamptz, ${iso(day + 5 * HOUR + 10 * MIN)}::timestamptz, 8, 80, 1)`);
    const { body } = await history(A, 'days=30');
    expect(body.points).toEqual([
      { at: iso(day + 5 * HOUR + 10 * MIN), rank: 8, pnl: 80, volume: 1 },
      { at: iso(D0 + 400 * DAY + 12 * HOUR), rank: 1, pnl: 1000, volume: 1 },
      { at: iso(D0 + 401 * DAY + 12 * HOUR), rank: 1, pnl: 1000, volume: 1 },
    ]);
  });
});
