import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';
import { setGammaYes } from '../fakes/venues/prices.js';
import { createUser } from '../support/users.js';

/**
 * Tracked prices and freshness (docs/decisions.md §11.2–§11.4, docs/venues.md
 * "Tracked markets", "Prices", "Titles and outcome labels") against fakes
 * that enforce the batch caps (500 tokens, 100 tickers), answer decimal
 * strings and leave book-less and never-traded tokens out.
 */
let venues: FakeVenues;
let t: TestApp;
let subscribed: string[] = [];

const BIG_PM = 520; // markets of the biggest Polymarket group: two CLOB batches
const BIG_KS = 150; // markets of the biggest Kalshi group: two ticker batches
const tokenOf = (marketId: string) => `${marketId}1111111111111111111111`;

beforeAll(async () => {
  const bigPm = gammaEvent(
    '500',
    'big-pm',
    'Big Polymarket group',
    Array.from({ length: BIG_PM }, (_, i) =>
      gammaMarket(String(700000 + i), `Big ${i}?`, 0.3, 100000, { groupItemTitle: `Big ${i}`, volume24hr: 10_000 }),
    ),
    { volume24hr: 1e9 },
  );
  const small = gammaEvent(
    '501',
    'small-pm',
    'Small group',
    [
      gammaMarket('800001', 'Small A?', 0.4, 10, { groupItemTitle: 'A' }),
      // No quote and no trade anywhere: null, never 0 or 0.5.
      gammaMarket('800002', 'Small B?', 0.5, 0, { groupItemTitle: 'B', bestBid: undefined, bestAsk: undefined, lastTradePrice: undefined }),
      // A placeholder that never opened: not one of the group's markets.
      gammaMarket('800003', 'Placeholder?', 0.5, 0, { active: false, closed: false }),
    ],
    // Many unordered tags: the first rule whose slug appears wins (POLITICS before CRYPTO).
    {
      volume24hr: 1,
      tags: [
        { id: '1', label: 'Solana', slug: 'solana' },
        { id: '2', label: 'Crypto', slug: 'crypto' },
        { id: '3', label: 'Politics', slug: 'politics' },
      ],
    },
  );
  const updown = gammaEvent(
    '502',
    'btc-up-down',
    'Bitcoin Up or Down',
    [gammaMarket('800010', 'Bitcoin Up or Down?', 0.58, 50, { outcomes: '["Up", "Down"]' })],
    {
      volume24hr: 2,
    },
  );
  const bigKs = kalshiEvent(
    'KXBIG-1',
    'KXBIG',
    'Big Kalshi group',
    'Sports',
    Array.from({ length: BIG_KS }, (_, i) =>
      kalshiMarket(`KXBIG-1-M${i}`, 'KXBIG-1', 'Big Kalshi group', 0.2, 0.22, 0.21, 1e7, {
        yes_sub_title: `Strike ${i}`,
        volume_24h_fp: '1000000.00',
      }),
    ),
  );
  const untraded = kalshiEvent('KXUNT-1', 'KXUNT', 'Untraded strikes', 'Economics', [
    kalshiMarket('KXUNT-1-A', 'KXUNT-1', 'Untraded strikes', 0, 1, 0, 0, { yes_sub_title: 'Above 5%', volume_24h_fp: '0.00' }),
    kalshiMarket('KXUNT-1-B', 'KXUNT-1', 'Untraded strikes', 0, 1, 0, 0, { yes_sub_title: 'Above 6%', volume_24h_fp: '0.00' }),
    kalshiMarket('KXUNT-1-C', 'KXUNT-1', 'Untraded strikes', 0, 1, 0, 0, { status: 'initialized', volume_24h_fp: '0.00' }),
  ]);
  venues = await startFakeVenues({ gamma: [bigPm, small, updown], kalshi: [bigKs, untraded] });
  venues.kalshi.state.series = [seriesRow('KXBIG', 'Sports'), seriesRow('KXUNT', 'Economics')];
  venues.clob.state.books = {};
  t = await buildTestApp({ ...venues.env, PRICE_TRACK_TOP: '2' }, { subscribedMarketIds: async () => subscribed });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

const get = (url: string) => t.app.inject({ method: 'GET', url });
const midpointTokens = () =>
  venues.clob.requests.filter((r) => r.path === '/midpoints').flatMap((r) => (r.body as any[]).map((x) => x.token_id));
const kalshiTickers = () =>
  venues.kalshi.requests.filter((r) => r.path === '/markets').flatMap((r) => (r.query.get('tickers') ?? '').split(','));

describe('freshness before and after the first runs', () => {
  it('before any refresh: syncedAt null, stale, no Last-Modified', async () => {
    const res = await get('/api/v1/events');
    expect(res.json()).toMatchObject({ syncedAt: null, stale: true, total: 0 });
    expect(res.headers['last-modified']).toBeUndefined();
  });

  it('after the catalogue: syncedAt and Last-Modified (to the second), fresh', async () => {
    expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
    const res = await get('/api/v1/events');
    const body = res.json();
    expect(body.stale).toBe(false);
    expect(res.headers['last-modified']).toBe(new Date(Date.parse(body.syncedAt)).toUTCString());
  });
});

describe('what the catalogue maps (docs/venues.md "What we call")', () => {
  it('Polymarket: groupItemTitle titles, first-rule category among many tags, placeholders left out, null without quote or trade', async () => {
    const list = (await get('/api/v1/events?limit=100')).json().events;
    expect(list.find((e: any) => e.id === 'pm-501')).toMatchObject({ category: 'POLITICS', marketCount: 2 });
    const detail = (await get('/api/v1/events/small-pm')).json();
    expect(detail.markets.map((m: any) => [m.id, m.title, m.outcome, m.yesPrice])).toEqual([
      ['pm-800001', 'A', 'Yes', 0.4],
      ['pm-800002', 'B', 'Yes', null],
    ]);
  });

  it('Polymarket Up/Down: the first outcome is priced and named', async () => {
    const m = (await get('/api/v1/events/btc-up-down')).json().markets[0];
    expect(m).toMatchObject({ title: 'Bitcoin Up or Down?', outcome: 'Up', yesPrice: 0.58 });
  });

  it('Kalshi: shared titles → yes_sub_title; untraded strikes (bid 0, ask 1, last 0, no volume) → null; initialized left out', async () => {
    const detail = (await get('/api/v1/events/kxunt-1')).json();
    expect(detail.category).toBe('ECONOMICS');
    expect(detail.markets.map((m: any) => [m.title, m.yesPrice, m.outcome])).toEqual([
      ['Above 5%', null, 'Yes'],
      ['Above 6%', null, 'Yes'],
    ]);
  });
});

describe('the tracked set (price-sync)', () => {
  it('asks only the tracked markets, through batches of at most 500 tokens and 100 tickers with limit', async () => {
    venues.clob.reset();
    venues.kalshi.reset();
    // The pages read above are tracked from now on, with the PRICE_TRACK_TOP = 2 biggest groups.
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    const mids = venues.clob.requests.filter((r) => r.path === '/midpoints');
    expect(mids.length).toBeGreaterThanOrEqual(2);
    for (const r of mids) expect((r.body as unknown[]).length).toBeLessThanOrEqual(500);
    const tokens = new Set(midpointTokens());
    expect(tokens.has(tokenOf('700000'))).toBe(true);
    expect(tokens.has(tokenOf('800001'))).toBe(true);
    const markets = venues.kalshi.requests.filter((r) => r.path === '/markets');
    expect(markets.length).toBeGreaterThanOrEqual(2);
    for (const r of markets) {
      const n = r.query.get('tickers')!.split(',').length;
      expect(n).toBeLessThanOrEqual(100);
      expect(r.query.get('limit')).toBe(String(n));
    }
    expect(new Set(kalshiTickers()).size).toBe(BIG_KS + 2);
  });

  it('a group nobody read, with no alert or subscriber, outside the top is not asked', async () => {
    // Forget the reads of the tests above.
    await t.db.rows((await import('drizzle-orm')).sql`update event_groups set read_at = null`);
    venues.clob.reset();
    venues.kalshi.reset();
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    const tokens = new Set(midpointTokens());
    expect(tokens.has(tokenOf('700000'))).toBe(true);
    expect(tokens.has(tokenOf('800001'))).toBe(false);
    expect(kalshiTickers()).not.toContain('KXUNT-1-A');
  });

  it('reading a group, an alert or a subscription makes a market tracked in the next cycle', async () => {
    const user = await createUser(t.app);
    const alert = await t.app.inject({
      method: 'POST',
      url: '/api/v1/alerts',
      headers: user.auth,
      payload: { marketId: 'ks-KXUNT-1-A', targetPrice: 0.5, condition: 'above', side: 'yes' },
    });
    expect(alert.statusCode).toBe(201);
    subscribed = ['pm-800010'];
    expect((await get('/api/v1/events/small-pm')).statusCode).toBe(200);
    venues.clob.reset();
    venues.kalshi.reset();
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    const tokens = new Set(midpointTokens());
    expect(tokens.has(tokenOf('800001'))).toBe(true);
    expect(tokens.has(tokenOf('800010'))).toBe(true);
    expect(kalshiTickers()).toContain('KXUNT-1-A');
    // Tracked and just refreshed: fresh under the 3-minute bound.
    const detail = await get('/api/v1/events/small-pm');
    expect(detail.json().stale).toBe(false);
    expect(detail.headers['last-modified']).toBeDefined();
  });

  it('Polymarket: the midpoint of a tight book, the last trade of a wide one, the last known price when the CLOB has nothing', async () => {
    setGammaYes(venues.gamma.state.events[1].markets[0], 0.4);
    venues.clob.state.books![tokenOf('800001')] = { bid: 0.2, ask: 0.5, last: 0.33 };
    venues.clob.reset();
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    const lastTrades = venues.clob.requests
      .filter((r) => r.path === '/last-trades-prices')
      .flatMap((r) => (r.body as any[]).map((x) => x.token_id));
    expect(lastTrades).toContain(tokenOf('800001'));
    let markets = (await get('/api/v1/events/small-pm')).json().markets;
    expect(markets.find((m: any) => m.id === 'pm-800001').yesPrice).toBe(0.33);
    // Gone from every answer: keeps 0.33; a market that never had a price stays null.
    venues.clob.state.books![tokenOf('800001')] = {};
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    markets = (await get('/api/v1/events/small-pm')).json().markets;
    expect(markets.find((m: any) => m.id === 'pm-800001')).toMatchObject({ yesPrice: 0.33, priceUpdatedAt: expect.any(String) });
    expect(markets.find((m: any) => m.id === 'pm-800002').yesPrice).toBeNull();
  });

  it('Kalshi tracked: an untraded market read through markets?tickers stays null, never 0', async () => {
    const m = (await get('/api/v1/events/kxunt-1')).json().markets.find((x: any) => x.id === 'ks-KXUNT-1-A');
    expect(m.yesPrice).toBeNull();
    expect(m.priceUpdatedAt).not.toBeNull();
  });
});

describe('charts are ours (docs/decisions.md §11.5)', () => {
  it('range=ALL keeps the stored points after the market resolves, and the detail shows the settlement', async () => {
    const before = (await get('/api/v1/events/small-pm/chart?range=ALL&markets=2')).json();
    const line = before.outcomes.find((o: any) => o.marketId === 'pm-800001');
    expect(line.dataPoints.length).toBeGreaterThan(0);
    const m = venues.gamma.state.events[1].markets[0];
    Object.assign(m, { closed: true, umaResolutionStatus: 'resolved', outcomePrices: '["1", "0"]' });
    try {
      expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
      const detail = (await get('/api/v1/events/small-pm')).json();
      expect(detail.markets.find((x: any) => x.id === 'pm-800001')).toMatchObject({ status: 'resolved', yesPrice: 1 });
      const after = (await get('/api/v1/events/small-pm/chart?range=ALL&markets=2')).json();
      const points = after.outcomes.find((o: any) => o.marketId === 'pm-800001').dataPoints;
      expect(points.length).toBeGreaterThanOrEqual(line.dataPoints.length);
      expect(points[0].timestamp).toBe(line.dataPoints[0].timestamp);
      expect(points.at(-1).price).toBe(1);
    } finally {
      Object.assign(m, { closed: false, umaResolutionStatus: undefined });
    }
  });
});
