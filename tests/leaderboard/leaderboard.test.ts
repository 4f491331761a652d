import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { leaderboardCurrent, leaderboardSnapshots } from '../../drizzle/index.js';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { MonitorUpdateSchema } from '../../src/domains/realtime/schemas.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';

const addr = (i: number) => `0x${createHash('sha1').update(`trader-${i}`).digest('hex')}`;
const NOW = Math.floor(Date.now() / 1000);
const DAY = 86_400;

interface Trader {
  i: number;
  wallet: string;
  userName: string;
  xUsername: string;
  pnl: number;
  vol: number;
  kol: boolean;
}

const SPECIAL: Record<number, string> = {
  5: '100% Degen',
  6: '100x Degen',
  7: 'under_score',
  8: 'underXscore',
  9: `O'Brien "Quote"`,
  10: '',
  11: '',
  12: 'back\\slash',
};
const traders: Trader[] = Array.from({ length: 135 }, (_, i) => ({
  i,
  wallet: addr(i),
  userName: i in SPECIAL ? SPECIAL[i] : `Trader ${i}`,
  xUsername: i === 11 ? 'only_x' : '',
  // 50 distinct values over 130 traders: plenty of ties broken by wallet.
  pnl: i === 0 ? 1_000_000 : ((i * 37) % 50) * 100 - 1000,
  vol: 1000 + ((i * 53) % 97) * 10,
  kol: i % 4 === 0,
}));
const inPnlBoard = traders.filter((t) => t.i < 130);
const HERO = traders[0];
const WHALE = traders[1];

const wire = (t: Trader) => ({
  proxyWallet: t.wallet,
  userName: t.userName,
  vol: t.vol,
  pnl: t.pnl,
  profileImage: t.i % 3 === 0 ? `https://img.example/${t.i}.png` : '',
  xUsername: t.xUsername,
  verifiedBadge: t.kol,
});

const CATS = ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'];
const VP = ['DAY', 'WEEK', 'MONTH', 'ALL'];

function seedBoards(fake: FakeDataApi, bump = 0) {
  let n = 1000;
  for (const c of CATS)
    for (const p of VP) {
      const filler = [{ proxyWallet: addr(n++), userName: `${c}-${p}`, vol: 10, pnl: 5 + bump }];
      fake.setBoard(c, p, 'PNL', filler);
      fake.setBoard(c, p, 'VOL', filler);
    }
  // The hero is on the all-time board too, so both its 7-day and all-time figures are computed.
  fake.setBoard('OVERALL', 'ALL', 'PNL', [wire(HERO)]);
  const byPnl = [...inPnlBoard].sort((a, b) => b.pnl - a.pnl);
  fake.setBoard('OVERALL', 'WEEK', 'PNL', byPnl.map(wire));
  fake.setBoard('OVERALL', 'WEEK', 'VOL', [...traders].sort((a, b) => b.vol - a.vol).map(wire));
  const day = [0, 1, 2].map((k) => ({ proxyWallet: addr(2000 + k), userName: `day-${k}`, vol: 1, pnl: 30 - k + bump }));
  fake.setBoard('OVERALL', 'DAY', 'PNL', day);
  fake.setBoard('OVERALL', 'DAY', 'VOL', day);
  fake.setBoard('POLITICS', 'WEEK', 'VOL', []);
  fake.setBoard('POLITICS', 'WEEK', 'PNL', [
    { proxyWallet: addr(3000), userName: 'pol-a', vol: 1, pnl: 9 },
    { proxyWallet: addr(3001), userName: 'pol-b', vol: 1, pnl: 8 },
    { proxyWallet: addr(3002), userName: 'pol-bad', vol: 'lots', pnl: 7 }, // malformed: skipped
    { rank: 4, proxyWallet: addr(3003), vol: 1, pnl: 6 }, // rank must be a string: skipped
  ]);
}

const closedRow = (asset: string, avgPrice: number, totalBought: number, realizedPnl: number, timestamp: number, outcome = 'Yes') => ({
  proxyWallet: HERO.wallet,
  asset,
  conditionId: `0x${'c'.repeat(64)}`,
  avgPrice,
  totalBought,
  realizedPnl,
  curPrice: realizedPnl > 0 ? 1 : 0,
  timestamp,
  title: `Market ${asset}`,
  slug: 's',
  icon: '',
  eventSlug: 's',
  outcome,
  outcomeIndex: 0,
  oppositeOutcome: 'No',
  oppositeAsset: '9',
  endDate: '2026-01-01',
});
const tradeRow = (side: 'BUY' | 'SELL', size: number, price: number, timestamp: number) => ({
  proxyWallet: HERO.wallet,
  side,
  asset: '1',
  conditionId: `0x${'d'.repeat(64)}`,
  size,
  price,
  timestamp,
  title: 'Hero market',
  slug: 's',
  icon: '',
  eventSlug: 's',
  outcome: 'Yes',
  outcomeIndex: 0,
  name: 'Hero',
  pseudonym: 'Hero-P',
  bio: '',
  profileImage: '',
  profileImageOptimized: '',
  transactionHash: '0x1',
});

let fake: FakeDataApi;
let t: TestApp;
const published: Array<{ channel: string; event: string; payload: any }> = [];

async function get(url: string) {
  const res = await t.app.inject({ method: 'GET', url });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

async function walk(query: string, limit: number) {
  const all: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const { status, body } = await get(
      `/api/v1/leaderboard?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(status).toBe(200);
    expect(body.traders.length).toBeLessThanOrEqual(limit);
    all.push(...body.traders);
    cursor = body.nextCursor;
    if (++pages > 500) throw new Error('runaway pagination');
  } while (cursor);
  return all;
}

async function runJob(name: string) {
  return t.app.jobs.run(name);
}

beforeAll(async () => {
  fake = await startFakeDataApi();
  seedBoards(fake);
  // The hand-checked fixture of figures.test.ts, on the venue.
  fake.setUser(HERO.wallet, {
    closed: [
      closedRow('A', 0.4, 100, 60, NOW - 10 * DAY),
      closedRow('B', 0.5, 200, -100, NOW - 5 * DAY, 'No'),
      closedRow('C', 0.25, 400, 300, NOW - 3600),
      closedRow('D', 0.5, 10, 0, NOW - 7200),
    ],
    positions: [
      {
        proxyWallet: HERO.wallet,
        asset: '77',
        conditionId: `0x${'e'.repeat(64)}`,
        size: 100,
        avgPrice: 0.55,
        initialValue: 55,
        currentValue: 75,
        cashPnl: 20,
        percentPnl: 36.36,
        totalBought: 100,
        realizedPnl: 0,
        percentRealizedPnl: 0,
        curPrice: 0.75,
        redeemable: false,
        mergeable: false,
        title: 'Open market',
        slug: 'o',
        icon: '',
        eventId: '1',
        eventSlug: 'o',
        outcome: 'Yes',
        outcomeIndex: 0,
        oppositeOutcome: 'No',
        oppositeAsset: '78',
        endDate: '2026-12-31',
        negativeRisk: false,
      },
    ],
    trades: [tradeRow('BUY', 100, 0.4, NOW - 9 * DAY), tradeRow('BUY', 300, 0.6, NOW - 4 * DAY), tradeRow('SELL', 50, 0.9, NOW - 60)],
  });
  fake.setUser(WHALE.wallet, {
    closed: [{ ...closedRow('W1', 0.5, 100_000, 50_000, NOW - 600), proxyWallet: WHALE.wallet, title: 'Whale market' }],
  });
  // Budgets far above the venue's: these tests check behaviour, venue-budget.test.ts checks the budget.
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: fake.url }, { venueClients: FAST_VENUES });
  t.app.bus.on('publish', (m) => published.push(m));
  const sync = await runJob('leaderboard-sync');
  expect(sync).toMatchObject({ ok: true });
  const enrich = await runJob('leaderboard-enrich');
  expect(enrich).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

describe('GET /api/v1/leaderboard', () => {
  it('answers every LeaderboardEntry field, typed, with the defaults (7D, OVERALL, pnl desc, 50)', async () => {
    const { status, body } = await get('/api/v1/leaderboard');
    expect(status).toBe(200);
    expect(body.traders).toHaveLength(50);
    expect(typeof body.nextCursor).toBe('string');
    for (const [k, e] of body.traders.entries()) {
      expect(e.rank).toBe(k + 1);
      expect(e.walletAddress).toMatch(/^0x[0-9a-f]{40}$/);
      expect(typeof e.displayName).toBe('string');
      expect(e.displayName.length).toBeGreaterThan(0);
      expect(e.avatarUrl).toMatch(/^https?:\/\//);
      expect(typeof e.isKol).toBe('boolean');
      for (const f of ['pnl', 'roi', 'winRate', 'volume', 'bestTrade', 'sharpeRatio', 'avgEntry', 'avgTrade'])
        expect(Number.isFinite(e[f])).toBe(true);
      for (const f of ['tradeCount', 'wins', 'losses']) expect(Number.isInteger(e[f])).toBe(true);
      expect(Array.isArray(e.sparkline)).toBe(true);
      expect(e.sparkline.length).toBeLessThanOrEqual(30);
      expect(e.sparkline.every((x: unknown) => typeof x === 'number')).toBe(true);
    }
    expect(body.traders[0].walletAddress).toBe(HERO.wallet);
  });

  it('walking all pages returns each trader exactly once, in (pnl desc, wallet asc) order', async () => {
    const all = await walk('', 17);
    const expected = [...traders].sort((a, b) => b.pnl - a.pnl || cmp(a.wallet, b.wallet)).map((x) => x.wallet);
    expect(all.map((e) => e.walletAddress)).toEqual(expected);
    expect(all.map((e) => e.rank)).toEqual(expected.map((_, k) => k + 1));
    const last = await get(`/api/v1/leaderboard?limit=100`);
    expect(last.body.nextCursor).not.toBeNull();
    const exact = await get(`/api/v1/leaderboard?limit=100&cursor=${encodeURIComponent(last.body.nextCursor)}`);
    expect(exact.body.traders).toHaveLength(35);
    expect(exact.body.nextCursor).toBeNull();
  });

  const SORTS: Record<string, string> = {
    pnl: 'pnl',
    roi: 'roi',
    winrate: 'winRate',
    volume: 'volume',
    avgEntry: 'avgEntry',
    avgTrade: 'avgTrade',
    sharpeRatio: 'sharpeRatio',
    tradeCount: 'tradeCount',
  };
  for (const [sort, field] of Object.entries(SORTS)) {
    for (const dir of ['asc', 'desc'] as const) {
      it(`sort=${sort} sortDirection=${dir}: full ordering, ties by wallet ascending, consecutive ranks`, async () => {
        const all = await walk(`sort=${sort}&sortDirection=${dir}`, 40);
        expect(all).toHaveLength(traders.length);
        expect(new Set(all.map((e) => e.walletAddress)).size).toBe(traders.length);
        expect(all.map((e) => e.rank)).toEqual(all.map((_, k) => k + 1));
        for (let k = 1; k < all.length; k++) {
          const a = all[k - 1];
          const b = all[k];
          if (a[field] === b[field]) expect(cmp(a.walletAddress, b.walletAddress)).toBe(-1);
          else expect(dir === 'asc' ? a[field] < b[field] : a[field] > b[field]).toBe(true);
        }
        // Enrichment made the non-venue keys vary.
        expect(new Set(all.map((e) => e[field])).size).toBeGreaterThan(2);
      });
    }
  }

  it('rank is stable under search and paging', async () => {
    const full = await walk('sort=volume&sortDirection=asc', 100);
    const rankOf = new Map(full.map((e) => [e.walletAddress, e.rank]));
    const hits = await walk('sort=volume&sortDirection=asc&search=trader%201', 2);
    expect(hits.length).toBeGreaterThan(5);
    for (const h of hits) {
      expect(h.displayName.toLowerCase()).toContain('trader 1');
      expect(h.rank).toBe(rankOf.get(h.walletAddress));
    }
    expect(hits.map((h) => h.rank)).toEqual([...hits.map((h) => h.rank)].sort((a, b) => a - b));
    // Deep pages carry their rank too.
    const p2 = await get('/api/v1/leaderboard?sort=volume&sortDirection=asc&limit=30');
    const next = await get(`/api/v1/leaderboard?sort=volume&sortDirection=asc&limit=30&cursor=${encodeURIComponent(p2.body.nextCursor)}`);
    expect(next.body.traders[0].rank).toBe(31);
    expect(next.body.traders[0].walletAddress).toBe(full[30].walletAddress);
  });

  it('kol tab: verified traders only, ranked among themselves', async () => {
    const all = await walk('tab=kol', 7);
    const expected = traders
      .filter((x) => x.kol)
      .sort((a, b) => b.pnl - a.pnl || cmp(a.wallet, b.wallet))
      .map((x) => x.wallet);
    expect(all.map((e) => e.walletAddress)).toEqual(expected);
    expect(all.every((e) => e.isKol)).toBe(true);
    expect(all.map((e) => e.rank)).toEqual(expected.map((_, k) => k + 1));
  });

  it('period and category select the right snapshot', async () => {
    const day = await get('/api/v1/leaderboard?period=1D');
    expect(day.body.traders.map((e: any) => e.displayName)).toEqual(['day-0', 'day-1', 'day-2']);
    const pol = await get('/api/v1/leaderboard?category=POLITICS');
    expect(pol.body.traders.map((e: any) => e.displayName)).toEqual(['pol-a', 'pol-b']); // malformed venue rows skipped
    const cr = await get('/api/v1/leaderboard?category=CRYPTO&period=30D');
    expect(cr.body.traders.map((e: any) => e.displayName)).toEqual(['CRYPTO-MONTH']);
    expect(cr.body.nextCursor).toBeNull();
  });

  it('display name and avatar fall back when the venue has none', async () => {
    const all = await walk('', 100);
    const by = new Map(all.map((e) => [e.walletAddress, e]));
    expect(by.get(traders[10].wallet).displayName).toBe(`${traders[10].wallet.slice(0, 6)}…${traders[10].wallet.slice(-4)}`);
    expect(by.get(traders[11].wallet).displayName).toBe('@only_x');
    expect(by.get(traders[3].wallet).avatarUrl).toBe('https://img.example/3.png');
    expect(by.get(traders[1].wallet).avatarUrl).toContain(traders[1].wallet);
  });

  it('search is a case-insensitive substring with %, _, \\ and quotes taken literally', async () => {
    const names = async (s: string) => (await walk(`search=${encodeURIComponent(s)}`, 100)).map((e) => e.displayName).sort();
    expect(await names('100%')).toEqual(['100% Degen']);
    expect(await names('%')).toEqual(['100% Degen']);
    expect(await names('r_s')).toEqual(['under_score']);
    expect(await names('_')).toEqual(['@only_x', 'under_score']);
    expect(await names(`o'brien "q`)).toEqual([`O'Brien "Quote"`]);
    expect(await names('k\\s')).toEqual(['back\\slash']);
    expect(await names('DEGEN')).toEqual(['100% Degen', '100x Degen']);
    const w = traders[42].wallet;
    const byAddr = await walk(`search=${w.slice(5, 17).toUpperCase()}`, 100);
    expect(byAddr.map((e) => e.walletAddress)).toContain(w);
    expect(await walk('search=nobody-has-this', 10)).toEqual([]);
  });

  it('limit bounds and unknown values → 400 VALIDATION_ERROR', async () => {
    for (const q of [
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'sort=rank',
      'sortDirection=up',
      'period=1W',
      'category=ESPORTS',
      'tab=all',
      `search=${'a'.repeat(101)}`,
      'unknown=1',
    ]) {
      const { status, body } = await get(`/api/v1/leaderboard?${q}`);
      expect(status, q).toBe(400);
      expect(body.code, q).toBe('VALIDATION_ERROR');
    }
    expect((await get('/api/v1/leaderboard?limit=1')).body.traders).toHaveLength(1);
    expect((await get('/api/v1/leaderboard?limit=100')).body.traders).toHaveLength(100);
  });

  it('a changed, forged or foreign cursor → 400 INVALID_CURSOR', async () => {
    const { body } = await get('/api/v1/leaderboard?limit=5');
    const c: string = body.nextCursor;
    const [payload, mac] = c.split('.');
    const forged = JSON.parse(Buffer.from(payload, 'base64url').toString());
    forged.r = 0;
    const cases = [
      `${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${mac}`,
      `${payload}.${mac.slice(0, -2)}AA`,
      'garbage',
      `${c}x`,
    ];
    for (const bad of cases) {
      const res = await get(`/api/v1/leaderboard?limit=5&cursor=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_CURSOR');
    }
    for (const other of ['sort=roi', 'sortDirection=asc', 'tab=kol', 'period=30D', 'category=SPORTS', 'search=trader']) {
      const res = await get(`/api/v1/leaderboard?limit=5&${other}&cursor=${encodeURIComponent(c)}`);
      expect(res.status, other).toBe(400);
      expect(res.body.code).toBe('INVALID_CURSOR');
    }
    // The limit may change between pages.
    expect((await get(`/api/v1/leaderboard?limit=7&cursor=${encodeURIComponent(c)}`)).body.traders[0].rank).toBe(6);
  });
});

describe('enrichment', () => {
  it('writes the 7-day figures onto the 7D board: losses included, older positions left out (docs/decisions.md §11.6)', async () => {
    const { body } = await get('/api/v1/leaderboard?limit=1');
    const hero = body.traders[0];
    expect(hero.walletAddress).toBe(HERO.wallet);
    expect(hero.pnl).toBe(1_000_000); // venue PnL for the period
    // Closed within 7 days: B (−100, 5 days ago), D (0, 2 h), C (+300, 1 h); A (10 days ago) is not.
    expect(hero.wins).toBe(1);
    expect(hero.losses).toBe(1);
    expect(hero.winRate).toBe(0.5);
    expect(hero.bestTrade).toBe(300);
    // Returns −1, 0, 3: mean 2/3, sample sd √(13/3).
    expect(hero.sharpeRatio).toBeCloseTo(2 / 3 / Math.sqrt(13 / 3), 6);
    // (200 realized + 20 open) / (100 + 5 + 100 + 55 cost).
    expect(hero.roi).toBeCloseTo(220 / 260, 6);
    // Trades within 7 days: BUY 300 @ 0.6, SELL 50 @ 0.9.
    expect(hero.tradeCount).toBe(2);
    expect(hero.avgEntry).toBeCloseTo(0.6, 6);
    expect(hero.avgTrade).toBeCloseTo((180 + 45) / 2, 6);
    expect(hero.sparkline).toEqual([-100, -100, 200]);
  });

  it('writes the all-time figures (the hand-checked fixture of figures.test.ts) onto the ALL board', async () => {
    const { body } = await get('/api/v1/leaderboard?period=ALL&limit=1');
    const hero = body.traders[0];
    expect(hero.walletAddress).toBe(HERO.wallet);
    expect(hero.wins).toBe(2);
    expect(hero.losses).toBe(1);
    expect(hero.winRate).toBeCloseTo(2 / 3, 6);
    expect(hero.bestTrade).toBe(300);
    expect(hero.sharpeRatio).toBeCloseTo(0.5, 9);
    expect(hero.roi).toBeCloseTo(280 / 300, 6);
    expect(hero.tradeCount).toBe(3);
    expect(hero.avgEntry).toBeCloseTo(0.55, 6);
    expect(hero.avgTrade).toBeCloseTo(265 / 3, 6);
    expect(hero.sparkline).toEqual([60, -40, -40, 260]);
  });

  it('asks the venue with the documented parameters', () => {
    const q = (path: string) => fake.server.requests.find((r) => r.path === path && r.query.get('user') === HERO.wallet)!.query;
    expect(Object.fromEntries(q('/positions'))).toEqual({ user: HERO.wallet, sizeThreshold: '0', limit: '500', offset: '0' });
    expect(Object.fromEntries(q('/closed-positions'))).toEqual({
      user: HERO.wallet,
      sortBy: 'TIMESTAMP',
      sortDirection: 'DESC',
      limit: '50',
      offset: '0',
    });
    expect(Object.fromEntries(q('/trades'))).toEqual({ user: HERO.wallet, limit: '500', takerOnly: 'false' });
    const lb = fake.server.requests.find((r) => r.path === '/v1/leaderboard')!.query;
    expect([...lb.keys()].sort()).toEqual(['category', 'limit', 'offset', 'orderBy', 'timePeriod']);
    expect(lb.get('limit')).toBe('50');
  });

  it('a re-run resumes: traders refreshed moments ago are skipped', async () => {
    fake.server.reset();
    const again = await runJob('leaderboard-enrich');
    expect(again).toMatchObject({ ok: true, items: 0 });
    expect(fake.server.requests).toHaveLength(0);
  });
});

describe('GET /api/v1/leaderboard/biggest-wins', () => {
  it('largest realized wins within the period, default 1D and 10', async () => {
    const { status, body } = await get('/api/v1/leaderboard/biggest-wins');
    expect(status).toBe(200);
    expect(body.length).toBeGreaterThan(1);
    expect(body.length).toBeLessThanOrEqual(10);
    expect(body[0]).toEqual({
      walletAddress: WHALE.wallet,
      displayName: WHALE.userName,
      marketTitle: 'Whale market',
      pnl: 50_000,
      side: 'yes',
      entryPrice: 0.5,
      exitPrice: 1,
      resolvedAt: new Date((NOW - 600) * 1000).toISOString(),
    });
    for (const w of body) expect(Date.now() - Date.parse(w.resolvedAt)).toBeLessThanOrEqual(DAY * 1000 + 60_000);
    for (let k = 1; k < body.length; k++) expect(body[k - 1].pnl).toBeGreaterThanOrEqual(body[k].pnl);
  });

  it('period and limit', async () => {
    const all = await get('/api/v1/leaderboard/biggest-wins?period=ALL&limit=50');
    expect(all.body.length).toBeGreaterThan(10);
    const day = await get('/api/v1/leaderboard/biggest-wins?period=1D&limit=50');
    expect(all.body.length).toBeGreaterThan(day.body.length);
    expect((await get('/api/v1/leaderboard/biggest-wins?limit=3')).body).toHaveLength(3);
    for (const q of ['limit=51', 'limit=0', 'period=2D'])
      expect((await get(`/api/v1/leaderboard/biggest-wins?${q}`)).body.code).toBe('VALIDATION_ERROR');
  });
});

describe('GET /api/v1/leaderboard/:address', () => {
  it('a ranked trader comes from stored data, whatever the address case', async () => {
    fake.server.reset();
    const res = await get(`/api/v1/leaderboard/${HERO.wallet.toUpperCase().replace('0X', '0x')}?period=7D`);
    expect(res.status).toBe(200);
    // The 7-day figures; totalPnl is the venue's PnL for the period.
    expect(res.body).toMatchObject({
      walletAddress: HERO.wallet,
      displayName: HERO.userName,
      totalPnl: 1_000_000,
      totalTrades: 2,
      stale: false,
    });
    expect(res.body.winRate).toBe(0.5);
    expect(res.body.roi).toBeCloseTo(220 / 260, 6);
    expect(res.headers['last-modified']).toBe(new Date(res.body.syncedAt).toUTCString());
    expect(res.body.topPositions).toEqual([
      {
        marketId: `0x${'e'.repeat(64)}`,
        marketTitle: 'Open market',
        outcome: 'Yes',
        size: 100,
        avgPrice: 0.55,
        currentPrice: 0.75,
        value: 75,
        pnl: 20,
      },
    ]);
    expect(res.body.recentTrades[0]).toEqual({
      marketId: `0x${'d'.repeat(64)}`,
      marketTitle: 'Hero market',
      side: 'sell',
      outcome: 'Yes',
      price: 0.9,
      size: 50,
      timestamp: new Date((NOW - 60) * 1000).toISOString(),
    });
    const all = await get(`/api/v1/leaderboard/${HERO.wallet}?period=ALL`);
    expect(all.body).toMatchObject({ totalPnl: HERO.pnl, totalTrades: 3 });
    expect(all.body.winRate).toBeCloseTo(2 / 3, 6);
    expect(all.body.recentTrades).toHaveLength(3);
    expect(res.body.recentTrades).toHaveLength(2); // trades within the period
    expect(fake.server.requests).toHaveLength(0);
  });

  it('an unranked address is fetched on demand (figures within the period), then cached', async () => {
    const stranger = addr(9999);
    fake.setUser(stranger, {
      closed: [
        { ...closedRow('S1', 0.5, 100, 50, NOW - 2 * DAY), proxyWallet: stranger },
        { ...closedRow('S2', 0.5, 100, -50, NOW - 40 * DAY), proxyWallet: stranger },
      ],
      trades: [{ ...tradeRow('BUY', 10, 0.5, NOW - 2 * DAY), proxyWallet: stranger, name: '', pseudonym: 'Stranger-P' }],
    });
    fake.server.reset();
    const res = await get(`/api/v1/leaderboard/${stranger}?period=7D`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      walletAddress: stranger,
      displayName: 'Stranger-P',
      totalPnl: 50,
      roi: 1,
      winRate: 1,
      totalTrades: 1,
      topPositions: [],
    });
    expect(res.body.recentTrades).toHaveLength(1);
    const calls = fake.server.requests.length;
    expect(calls).toBeGreaterThanOrEqual(3);
    const all = await get(`/api/v1/leaderboard/${stranger}?period=ALL`);
    expect(all.body).toMatchObject({ totalPnl: 0, winRate: 0.5 });
    const again = await get(`/api/v1/leaderboard/${stranger}?period=7D`);
    expect(again.body).toEqual(res.body);
    expect(fake.server.requests.length).toBe(calls + 3);
  });

  it('an unknown address with no activity → 200 with zeros and empty arrays; default period 30D', async () => {
    const nobody = addr(8888);
    fake.setUser(nobody, {});
    const res = await get(`/api/v1/leaderboard/${nobody}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      walletAddress: nobody,
      displayName: `${nobody.slice(0, 6)}…${nobody.slice(-4)}`,
      totalPnl: 0,
      roi: 0,
      winRate: 0,
      totalTrades: 0,
      topPositions: [],
      recentTrades: [],
      syncedAt: expect.any(String),
      stale: false,
    });
  });

  it('a malformed address or period → 400', async () => {
    for (const a of ['0x123', 'abc', `0x${'g'.repeat(40)}`, `${'a'.repeat(42)}`]) {
      const res = await get(`/api/v1/leaderboard/${a}`);
      expect(res.status, a).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
    }
    expect((await get(`/api/v1/leaderboard/${addr(1)}?period=1Y`)).status).toBe(400);
  });

  it('the venue down on an uncached address → 503 UNAVAILABLE with Retry-After', async () => {
    fake.server.down(true);
    try {
      const res = await get(`/api/v1/leaderboard/${addr(7777)}`);
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('UNAVAILABLE');
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      fake.server.down(false);
    }
  });
});

describe('leaderboard-sync', () => {
  it('published a monitor update on monitor:leaderboard after the sync and after the enrichment', () => {
    // The first two: the sync and the enrichment of beforeAll.
    const updates = published.filter((p) => p.channel === 'monitor:leaderboard').slice(0, 2);
    expect(updates.map((p) => p.event)).toEqual(['monitor:update', 'monitor:update']);
    const payloads = updates.map((p) => MonitorUpdateSchema.parse(p.payload));
    expect(payloads.map((p) => [p.name, p.kind])).toEqual([
      ['leaderboard', 'sync'],
      ['leaderboard', 'enrich'],
    ]);
    for (const p of payloads) expect(new Date(p.syncedAt).toISOString()).toBe(p.syncedAt);
  });

  it('the jobs signal the page cache, and it drops at once', async () => {
    const topics: string[] = [];
    const onSignal = (topic: string) => topics.push(topic);
    t.app.signals.on('dataChanged', onSignal);
    try {
      expect((await runJob('leaderboard-enrich')).ok).toBe(true);
    } finally {
      t.app.signals.off('dataChanged', onSignal);
    }
    expect(topics).toEqual(['leaderboard']);
    // The listening side: a cached page is gone as soon as the signal comes (pointers are otherwise kept 1 s).
    const first = (await get('/api/v1/leaderboard?limit=5')).body.traders[0];
    const rename = async (to: string) => {
      await t.db.rows(sql`update leaderboard_entries set display_name = ${to} where wallet_address = ${first.walletAddress}`);
      t.app.signals.emit('dataChanged', 'leaderboard');
    };
    await rename('Renamed in place');
    expect((await get('/api/v1/leaderboard?limit=5')).body.traders[0].displayName).toBe('Renamed in place');
    await rename(first.displayName);
    expect((await get('/api/v1/leaderboard?limit=5')).body.traders[0].displayName).toBe(first.displayName);
  });

  it('a cursor finishes its walk on the snapshot it started on, across a sync', async () => {
    const first = await get('/api/v1/leaderboard?limit=60');
    const sync = await runJob('leaderboard-sync');
    expect(sync.ok).toBe(true);
    const second = await get(`/api/v1/leaderboard?limit=100&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.status).toBe(200);
    expect(second.body.traders[0].rank).toBe(61);
    expect([...first.body.traders, ...second.body.traders].map((e: any) => e.walletAddress)).toHaveLength(135);
    expect(new Set([...first.body.traders, ...second.body.traders].map((e: any) => e.walletAddress)).size).toBe(135);
  });

  it('the venue down: every board keeps its last good snapshot, the run reports failure', async () => {
    const before = await t.db.db.select().from(leaderboardCurrent);
    const page = await get('/api/v1/leaderboard?limit=100');
    fake.server.down(true);
    let outcome;
    try {
      outcome = await runJob('leaderboard-sync');
    } finally {
      fake.server.down(false);
    }
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/16 of 16 boards kept their last snapshot/);
    const after = await t.db.db.select().from(leaderboardCurrent);
    expect(after.map((r) => r.snapshotId).sort()).toEqual(before.map((r) => r.snapshotId).sort());
    // The last good board, marked stale (docs/decisions.md §11.4).
    expect(page.body.stale).toBe(false);
    const during = await get('/api/v1/leaderboard?limit=100');
    expect(during.body).toEqual({ ...page.body, stale: true });
    expect(during.headers['last-modified']).toBe(page.headers['last-modified']);
  });

  it('a partial board (one page failing) keeps its last snapshot while the others switch', async () => {
    const before = new Map((await t.db.db.select().from(leaderboardCurrent)).map((r) => [`${r.category}|${r.period}`, r.snapshotId]));
    seedBoards(fake, 1); // every filler board changes
    fake.failWhen(
      (r) =>
        r.path === '/v1/leaderboard' &&
        r.query.get('category') === 'OVERALL' &&
        r.query.get('timePeriod') === 'WEEK' &&
        r.query.get('offset') === '50',
    );
    let outcome;
    try {
      outcome = await runJob('leaderboard-sync');
    } finally {
      fake.failWhen(undefined);
    }
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toContain('OVERALL/7D');
    const after = new Map((await t.db.db.select().from(leaderboardCurrent)).map((r) => [`${r.category}|${r.period}`, r.snapshotId]));
    expect(after.get('OVERALL|7D')).toBe(before.get('OVERALL|7D'));
    expect(after.get('OVERALL|1D')).not.toBe(before.get('OVERALL|1D'));
    expect((await walk('', 100)).length).toBe(135);
    expect((await get('/api/v1/leaderboard?period=1D')).body.traders[0].pnl).toBe(31);
  });

  it('replaced snapshots are pruned after the retention; a cursor that outlived its snapshot continues on the current one', async () => {
    const first = await get('/api/v1/leaderboard?limit=60');
    const [old] = await t.db.db
      .select()
      .from(leaderboardCurrent)
      .where(and(eq(leaderboardCurrent.category, 'OVERALL'), eq(leaderboardCurrent.period, '7D')));
    expect((await runJob('leaderboard-sync')).ok).toBe(true);
    await t.db.db
      .update(leaderboardSnapshots)
      .set({ createdAt: new Date(Date.now() - 3_600_000) })
      .where(eq(leaderboardSnapshots.id, old.snapshotId));
    expect((await runJob('leaderboard-sync')).ok).toBe(true);
    expect(await t.db.db.select().from(leaderboardSnapshots).where(eq(leaderboardSnapshots.id, old.snapshotId))).toHaveLength(0);
    const rest = await get(`/api/v1/leaderboard?limit=100&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(rest.status).toBe(200);
    expect(rest.body.traders[0].rank).toBe(61);
    const expected = [...traders].sort((a, b) => b.pnl - a.pnl || cmp(a.wallet, b.wallet)).map((x) => x.wallet);
    expect(rest.body.traders.map((e: any) => e.walletAddress)).toEqual(expected.slice(60));
  });
});
