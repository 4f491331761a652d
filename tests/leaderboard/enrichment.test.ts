import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, unredeemedLoser, type FakeDataApi } from '../fakes/venues/polymarket-data.js';

/**
 * Enrichment without bias (docs/decisions.md §11.6, docs/venues.md §2b): the
 * fake Data API orders closed positions by REALIZEDPNL DESC unless told
 * otherwise, like the venue, so a read in the default order under the page
 * cap would keep only the biggest wins.
 */
const addr = (s: string) => `0x${createHash('sha1').update(`enrich-${s}`).digest('hex')}`;
const NOW = Math.floor(Date.now() / 1000);
const DAY = 86_400;
const MIXED = addr('mixed'); // 1,000 old wins, then 100 recent losses
const BROKEN = addr('broken'); // good rows first, malformed ones later
const LOSER = addr('loser'); // leaves resolved losers unredeemed, behind 520 open positions

const closed = (wallet: string, k: number, realizedPnl: number, timestamp: number) => ({
  proxyWallet: wallet,
  asset: `${k}`,
  conditionId: `0x${'a'.repeat(64)}`,
  avgPrice: 0.5,
  totalBought: 100,
  realizedPnl,
  curPrice: realizedPnl > 0 ? 1 : 0,
  timestamp,
  title: `Market ${k}`,
  slug: 's',
  icon: '',
  eventSlug: 's',
  outcome: 'Yes',
  outcomeIndex: 0,
  oppositeOutcome: 'No',
  oppositeAsset: '1',
  endDate: '2026-01-01',
});

const isoDay = (sec: number) => new Date(sec * 1000).toISOString().slice(0, 10);
/** 520 open positions, then the unredeemed losers: only a read past the first page of 500 sees them. */
const openPositions = Array.from({ length: 520 }, (_, k) => ({
  ...unredeemedLoser(LOSER, `open-${k}`, { size: 10, endDate: isoDay(NOW + 30 * DAY) }),
  redeemable: false,
  curPrice: 0.5,
  currentValue: 5,
  cashPnl: 0,
}));
// Two resolved losers never redeemed, and one the venue already lists in /closed-positions too.
const loserPositions = [
  unredeemedLoser(LOSER, 'lost-1', { endDate: isoDay(NOW - 2 * DAY) }),
  unredeemedLoser(LOSER, 'lost-2', { endDate: isoDay(NOW - 2 * DAY) }),
  unredeemedLoser(LOSER, 'lost-3', { endDate: isoDay(NOW - 2 * DAY) }),
];
const loserClosed = [closed(LOSER, 1, 40, NOW - DAY), { ...closed(LOSER, 0, -50, NOW - DAY), asset: 'lost-3' }];

// Wins: 1,000 of them, 10+ days old, the older the bigger. Losses: 100 within the last 3 days.
const wins = Array.from({ length: 1000 }, (_, k) => closed(MIXED, k, 10 + k, NOW - 10 * DAY - k * 600));
const losses = Array.from({ length: 100 }, (_, k) => closed(MIXED, 5000 + k, -20, NOW - 3 * DAY + k * 600));

let fake: FakeDataApi;
let t: TestApp;
/** What the first enrichment asked the venue about MIXED. */
let mixedReads: FakeDataApi['server']['requests'] = [];

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}
const entry = async (period: string, wallet: string) =>
  (await get(`/api/v1/leaderboard?period=${period}&limit=100`)).body.traders.find((e: any) => e.walletAddress === wallet);

beforeAll(async () => {
  fake = await startFakeDataApi();
  for (const c of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'])
    for (const p of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
      const rows = [{ proxyWallet: addr(`${c}-${p}`), userName: `${c}-${p}`, vol: 1, pnl: 1 }];
      fake.setBoard(c, p, 'PNL', rows);
      fake.setBoard(c, p, 'VOL', rows);
    }
  const ranked = [
    { proxyWallet: MIXED, userName: 'mixed', vol: 5, pnl: 5 },
    { proxyWallet: BROKEN, userName: 'broken', vol: 4, pnl: 4 },
    { proxyWallet: LOSER, userName: 'loser', vol: 3, pnl: 3 },
  ];
  for (const p of ['WEEK', 'ALL']) fake.setBoard('OVERALL', p, 'PNL', ranked);
  fake.setUser(MIXED, { closed: [...wins, ...losses] });
  fake.setUser(LOSER, { positions: [...openPositions, ...loserPositions], closed: loserClosed });
  fake.setUser(BROKEN, {
    closed: [closed(BROKEN, 1, 40, NOW - DAY), closed(BROKEN, 2, -10, NOW - 2 * DAY)],
    trades: [
      {
        proxyWallet: BROKEN,
        side: 'BUY',
        asset: '1',
        conditionId: `0x${'b'.repeat(64)}`,
        size: 10,
        price: 0.5,
        timestamp: NOW - DAY,
        title: 't',
        outcome: 'Yes',
      },
    ],
  });
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: fake.url }, { venueClients: FAST_VENUES });
  expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
  const enrich = await t.app.jobs.run('leaderboard-enrich');
  expect(enrich.ok, enrich.error).toBe(true);
  mixedReads = fake.server.requests.filter((r) => r.path === '/closed-positions' && r.query.get('user') === MIXED);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('closed positions newest first (docs/venues.md §2b)', () => {
  it('the fake answers in the venue default order, REALIZEDPNL DESC, when no order is asked', async () => {
    const res = await fetch(`${fake.url}/closed-positions?user=${MIXED}&limit=50`);
    const rows = (await res.json()) as Array<{ realizedPnl: number }>;
    expect(rows.map((r) => r.realizedPnl)).toEqual(Array.from({ length: 50 }, (_, k) => 1009 - k));
  });

  it('enrichment asks TIMESTAMP DESC and reads at most 20 pages of 50', () => {
    const reads = mixedReads;
    expect(reads.map((r) => r.query.get('offset'))).toEqual(Array.from({ length: 20 }, (_, k) => String(k * 50)));
    for (const r of reads) {
      expect(r.query.get('sortBy')).toBe('TIMESTAMP');
      expect(r.query.get('sortDirection')).toBe('DESC');
      expect(r.query.get('limit')).toBe('50');
    }
  });

  it('the 7D board shows the losses of the last 7 days, not the old wins', async () => {
    const e = await entry('7D', MIXED);
    expect(e).toMatchObject({ wins: 0, losses: 100, winRate: 0, bestTrade: -20, tradeCount: 0 });
    expect(e.sparkline).toHaveLength(30);
    expect(e.sparkline.at(-1)).toBe(-2000);
    expect(e.roi).toBeCloseTo(-2000 / 5000, 9);
  });

  it('the ALL board: the newest 1,000 closed positions, losses included', async () => {
    const e = await entry('ALL', MIXED);
    // 100 losses + the 900 newest wins (pnl 10…909); the 100 oldest (biggest) wins are past the page cap.
    expect(e).toMatchObject({ wins: 900, losses: 100, bestTrade: 909 });
    expect(e.winRate).toBeCloseTo(0.9, 9);
    expect(e.sparkline.at(-1)).toBe((900 * (10 + 909)) / 2 - 2000);
  });

  it('biggest wins come from the same rows: the largest one read, not the largest one the venue has', async () => {
    const all = (await get('/api/v1/leaderboard/biggest-wins?period=ALL&limit=50')).body.filter((w: any) => w.walletAddress === MIXED);
    expect(all[0].pnl).toBe(909);
    const week = (await get('/api/v1/leaderboard/biggest-wins?period=7D&limit=50')).body;
    expect(week.some((w: any) => w.walletAddress === MIXED)).toBe(false);
  });
});

describe('unredeemed losses (docs/venues.md "What we call")', () => {
  // One win of +40 and three losses of −50, each on a cost of 50: returns 0.8, −1, −1, −1.
  const expected = { wins: 1, losses: 3, winRate: 0.25, bestTrade: 40, sharpeRatio: -0.611111 };

  it('the fake serves a resolved loser as the venue does: in /positions, redeemable, curPrice 0', async () => {
    const res = await fetch(`${fake.url}/positions?user=${LOSER}&sizeThreshold=0&redeemable=true&limit=500`);
    const rows = (await res.json()) as Array<Record<string, unknown>>;
    expect(rows.map((r) => r.asset)).toEqual(['lost-1', 'lost-2', 'lost-3']);
    expect(rows[0]).toMatchObject({ redeemable: true, curPrice: 0, currentValue: 0, cashPnl: -50 });
  });

  it('enrichment pages /positions past 500', () => {
    const reads = fake.server.requests.filter(
      (r) => r.path === '/positions' && r.query.get('user') === LOSER && !r.query.has('redeemable'),
    );
    expect(reads.map((r) => [r.query.get('offset'), r.query.get('limit'), r.query.get('sizeThreshold')])).toEqual([
      ['0', '500', '0'],
      ['500', '500', '0'],
    ]);
  });

  it('a loser never redeemed counts as a loss once, also when /closed-positions holds it', async () => {
    for (const period of ['7D', 'ALL']) {
      const e = await entry(period, LOSER);
      expect(e, period).toMatchObject({ wins: 1, losses: 3, winRate: 0.25, bestTrade: 40 });
      expect(e.sharpeRatio, period).toBeCloseTo(expected.sharpeRatio, 5);
      expect(e.sparkline.at(-1), period).toBe(40 - 150);
    }
  });

  it('after the trader redeems, /closed-positions alone gives the same figures (never counted again)', async () => {
    fake.setUser(LOSER, {
      positions: openPositions,
      closed: [
        ...loserClosed,
        { ...closed(LOSER, 0, -50, NOW - 2 * DAY), asset: 'lost-1' },
        { ...closed(LOSER, 0, -50, NOW - 2 * DAY), asset: 'lost-2' },
      ],
    });
    await t.db.rows(sql`update trader_period_stats set enriched_at = now() - interval '1 hour' where wallet_address = ${LOSER}`);
    const run = await t.app.jobs.run('leaderboard-enrich');
    expect(run.ok, run.error).toBe(true);
    const e = await entry('7D', LOSER);
    expect(e).toMatchObject({ wins: 1, losses: 3, winRate: 0.25, bestTrade: 40 });
    expect(e.sharpeRatio).toBeCloseTo(expected.sharpeRatio, 5);
  });
});

describe('malformed venue rows', () => {
  it('a trader whose rows are all malformed keeps the figures it had, never zeros', async () => {
    const before = await entry('7D', BROKEN);
    expect(before).toMatchObject({ wins: 1, losses: 1, tradeCount: 1, bestTrade: 40 });
    fake.setUser(BROKEN, {
      closed: [{ ...closed(BROKEN, 1, 40, NOW - DAY), realizedPnl: 'forty' }, { proxyWallet: BROKEN }],
      trades: [{ proxyWallet: BROKEN, side: 'HOLD' }],
      positions: [],
    });
    await t.db.rows(sql`update trader_period_stats set enriched_at = now() - interval '1 hour'`);
    const run = await t.app.jobs.run('leaderboard-enrich');
    expect(run.ok, run.error).toBe(true);
    expect(await entry('7D', BROKEN)).toEqual(before);
    expect(await entry('ALL', BROKEN)).toMatchObject({ wins: 1, losses: 1, bestTrade: 40 });
    // The others were refreshed as usual.
    expect(await entry('7D', MIXED)).toMatchObject({ losses: 100 });
  });
});
