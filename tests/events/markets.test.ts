import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';

/**
 * GET /api/v1/markets/:id and /markets/:id/book (docs/decisions.md §16.3,
 * §16.4, §16.5) against fakes serving CLOB `GET /book` (strings, bids
 * ascending, asks descending, best LAST) and Kalshi's `orderbook_fp` bid
 * pairs (a NO bid at p is a YES ask at 1 − p).
 */
const T0 = Date.parse('2026-06-01T12:00:00.000Z');
let now = T0;
let venues: FakeVenues;
let t: TestApp;
/** The fake's YES token of Gamma market 93001 (gammaMarket). */
const TOKEN = `93001${'1'.repeat(22)}`;

beforeAll(async () => {
  const gamma = [
    gammaEvent('930', 'book-pm', 'Book on Polymarket', [
      gammaMarket('93001', 'Will it rain?', 0.5, 1000, { endDate: '2026-07-01T00:00:00Z', volume24hr: 12 }),
      // Resolved inside an open group.
      gammaMarket('93101', 'Done?', 1, 1000, {
        closed: true,
        umaResolutionStatus: 'resolved',
        outcomePrices: '["1", "0"]',
        bestBid: undefined,
        bestAsk: undefined,
      }),
    ]),
  ];
  const kalshi = [
    kalshiEvent('KXBOOK-26', 'KXBOOK', 'Book on Kalshi', 'Economics', [
      kalshiMarket('KXBOOK-26-A', 'KXBOOK-26', 'A', 0.42, 0.44, 0.43, 100),
      kalshiMarket('KXBOOK-26-B', 'KXBOOK-26', 'B', 0.1, 0.12, 0.11, 100),
    ]),
  ];
  venues = await startFakeVenues({ gamma, kalshi });
  venues.kalshi.state.series = [seriesRow('KXBOOK', 'Economics')];
  venues.clob.state.books = {
    [TOKEN]: {
      bid: 0.48,
      ask: 0.52,
      levels: {
        // As the venue sends them: best last on both sides.
        bids: [
          [0.01, 14225.02],
          [0.46, 10],
          [0.48, 6461.8],
        ],
        asks: [
          [0.99, 12817.44],
          [0.55, 20],
          [0.52, 3552.96],
        ],
      },
    },
  };
  venues.kalshi.state.orderbooks = {
    'KXBOOK-26-A': {
      yes_dollars: [
        ['0.0100', '200.00'],
        ['0.1500', '100.00'],
        ['0.4100', '10.00'],
        ['0.4200', '13.00'],
      ],
      no_dollars: [
        ['0.0100', '100.00'],
        ['0.1600', '3.00'],
        ['0.5600', '17.00'],
      ],
    },
    // An empty side left out, the other null.
    'KXBOOK-26-B': { no_dollars: null },
  };
  t = await buildTestApp({ ...venues.env, PRICE_TRACK_TOP: '0' }, { clock: () => new Date(now) });
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

const get = (url: string) => t.app.inject({ method: 'GET', url });
const bookReads = () => venues.clob.requests.filter((r) => r.path === '/book').length;

describe('GET /markets/:id', () => {
  it('one market with its group; unknown id 404', async () => {
    const res = await get('/api/v1/markets/pm-93001');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      syncedAt: expect.any(String),
      stale: false,
      id: 'pm-93001',
      title: 'Will it rain?',
      outcome: 'Yes',
      yesPrice: 0.5,
      volume: 1000,
      volume24h: 12,
      change24h: 0.01,
      status: 'active',
      endDate: '2026-07-01T00:00:00.000Z',
      priceUpdatedAt: expect.any(String),
      event: { id: 'pm-930', slug: 'book-pm', title: 'Book on Polymarket', category: 'CRYPTO', venue: 'polymarket' },
    });
    expect(res.headers['last-modified']).toBeDefined();
    const missing = await get('/api/v1/markets/pm-404404');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('reading it makes the market tracked; reading a book does not', async () => {
    expect((await get('/api/v1/markets/ks-KXBOOK-26-A')).statusCode).toBe(200);
    expect((await get('/api/v1/markets/ks-KXBOOK-26-B/book')).statusCode).toBe(200);
    venues.kalshi.reset();
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    const asked = venues.kalshi.requests.filter((r) => r.path === '/markets').flatMap((r) => (r.query.get('tickers') ?? '').split(','));
    expect(asked).toContain('KXBOOK-26-A');
    expect(asked).not.toContain('KXBOOK-26-B');
  });
});

describe('GET /markets/:id/book', () => {
  it('Polymarket: the CLOB book best first, numbers, cut to depth, midpoint and spread', async () => {
    now += 10_000;
    const res = await get('/api/v1/markets/pm-93001/book?depth=2');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      marketId: 'pm-93001',
      outcome: 'Yes',
      bids: [
        { price: 0.48, size: 6461.8 },
        { price: 0.46, size: 10 },
      ],
      asks: [
        { price: 0.52, size: 3552.96 },
        { price: 0.55, size: 20 },
      ],
      midpoint: 0.5,
      spread: 0.04,
      fetchedAt: new Date(now).toISOString(),
      stale: false,
    });
    const req = venues.clob.requests.filter((r) => r.path === '/book').at(-1)!;
    expect(req.query.get('token_id')).toBe(TOKEN);
    expect((await get('/api/v1/markets/pm-93001/book')).json().bids).toHaveLength(3);
  });

  it('Kalshi: YES bids, NO bids as YES asks at 1 − p; a missing or null side is empty', async () => {
    const a = (await get('/api/v1/markets/ks-KXBOOK-26-A/book?depth=3')).json();
    expect(a.bids).toEqual([
      { price: 0.42, size: 13 },
      { price: 0.41, size: 10 },
      { price: 0.15, size: 100 },
    ]);
    expect(a.asks).toEqual([
      { price: 0.44, size: 17 },
      { price: 0.84, size: 3 },
      { price: 0.99, size: 100 },
    ]);
    expect(a).toMatchObject({ midpoint: 0.43, spread: 0.02, stale: false });
    const b = (await get('/api/v1/markets/ks-KXBOOK-26-B/book')).json();
    expect(b).toMatchObject({ bids: [], asks: [], midpoint: null, spread: null });
  });

  it('depth outside 1–50 is 400; unknown market 404; closed market 200 with empty sides and no venue read', async () => {
    for (const d of ['0', '51', 'x']) expect((await get(`/api/v1/markets/pm-93001/book?depth=${d}`)).statusCode).toBe(400);
    expect((await get('/api/v1/markets/pm-404404/book')).statusCode).toBe(404);
    const before = bookReads();
    const closed = await get('/api/v1/markets/pm-93101/book');
    expect(closed.statusCode).toBe(200);
    expect(closed.json()).toMatchObject({ bids: [], asks: [], midpoint: null, spread: null, stale: false });
    expect(bookReads()).toBe(before);
  });

  it('one venue read per market per 5 s serves every request and depth, concurrent ones included', async () => {
    now += 60_000;
    const before = bookReads();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => get(`/api/v1/markets/pm-93001/book?depth=${(i % 3) + 1}`)));
    expect(answers.every((r) => r.statusCode === 200)).toBe(true);
    expect(new Set(answers.map((r) => r.json().fetchedAt)).size).toBe(1);
    expect(answers[2].json().bids).toHaveLength(3);
    expect(bookReads() - before).toBe(1);
    now += 4_000;
    expect((await get('/api/v1/markets/pm-93001/book')).statusCode).toBe(200);
    expect(bookReads() - before).toBe(1);
    now += 1_000;
    expect((await get('/api/v1/markets/pm-93001/book')).json().fetchedAt).toBe(new Date(now).toISOString());
    expect(bookReads() - before).toBe(2);
  });

  it('when the venue fails: the last book of the last 60 s, stale; else 503 with Retry-After', async () => {
    const fresh = (await get('/api/v1/markets/pm-93001/book')).json();
    venues.clob.down(true, 503);
    try {
      now += 30_000;
      const stale = await get('/api/v1/markets/pm-93001/book');
      expect(stale.statusCode).toBe(200);
      expect(stale.json()).toMatchObject({ stale: true, fetchedAt: fresh.fetchedAt, bids: fresh.bids });
      now += 31_000;
      const gone = await get('/api/v1/markets/pm-93001/book');
      expect(gone.statusCode).toBe(503);
      expect(gone.json()).toMatchObject({ code: 'UNAVAILABLE' });
      expect(Number(gone.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    } finally {
      venues.clob.down(false);
    }
    // A 429 is a failure too; a Kalshi market never read is 503.
    now += 10_000;
    venues.kalshi.down(true, 429);
    try {
      const res = await get('/api/v1/markets/ks-KXBOOK-26-B/book');
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBeDefined();
    } finally {
      venues.kalshi.down(false);
    }
    now += 10_000;
    expect((await get('/api/v1/markets/pm-93001/book')).json()).toMatchObject({ stale: false });
  });

  it('an active market the venue has no book for: 200 with empty sides', async () => {
    venues.clob.state.books![TOKEN] = { closed: true };
    now += 10_000;
    const res = await get('/api/v1/markets/pm-93001/book');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ bids: [], asks: [], midpoint: null, stale: false });
  });
});
