import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';

/**
 * The catalogue fields of docs/decisions.md §16.2 and §16.5, read from the
 * venues in their real names and types (Gamma `endDate`, `createdAt`,
 * `volume24hr`, `oneDayPriceChange`; Kalshi `close_time`, `open_time`,
 * `volume_24h_fp`, `previous_price_dollars`) and kept as time passes: the
 * group's `endDate` is its earliest future close among active markets, its
 * `change24h` the largest move among active markets, ours from a reading
 * 23–25 h old when the market is tracked, else the venue's.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-06-01T12:00:00.000Z');
let now = T0;
const at = (ms: number) => new Date(ms).toISOString();

let venues: FakeVenues;
let t: TestApp;

beforeAll(async () => {
  const gamma = [
    gammaEvent(
      '900001',
      'fields-pm',
      'Fields on Polymarket',
      [
        gammaMarket('910001', 'A?', 0.5, 1000, {
          groupItemTitle: 'A',
          endDate: at(T0 + 10 * DAY),
          oneDayPriceChange: 0.03,
          volume24hr: 100,
        }),
        // Its close has passed but it still trades (awaiting resolution): not a future close.
        gammaMarket('910002', 'B?', 0.4, 1000, { groupItemTitle: 'B', endDate: at(T0 - DAY), oneDayPriceChange: -0.08, volume24hr: 50 }),
        // Resolved: neither its earlier close, its move nor its 24 h volume count for the group.
        gammaMarket('910003', 'C?', 1, 1000, {
          groupItemTitle: 'C',
          closed: true,
          umaResolutionStatus: 'resolved',
          outcomePrices: '["1", "0"]',
          bestBid: undefined,
          bestAsk: undefined,
          endDate: at(T0 + 2 * DAY),
          oneDayPriceChange: 0.5,
          volume24hr: 1000,
        }),
        // "Yes" in second place: the venue's change prices the first outcome, so it is mirrored.
        gammaMarket('910004', 'D?', 0.3, 1000, {
          groupItemTitle: 'D',
          outcomes: '["No", "Yes"]',
          outcomePrices: '["0.7", "0.3"]',
          bestBid: 0.695,
          bestAsk: 0.705,
          lastTradePrice: 0.7,
          endDate: at(T0 + 20 * DAY),
          oneDayPriceChange: 0.04,
          volume24hr: 7,
        }),
        // No quote and no trade: no price, so no change whatever the venue says.
        gammaMarket('910005', 'E?', 0.5, 0, {
          groupItemTitle: 'E',
          bestBid: undefined,
          bestAsk: undefined,
          lastTradePrice: undefined,
          endDate: undefined,
          oneDayPriceChange: 0.9,
          volume24hr: 3,
        }),
      ],
      { createdAt: '2025-02-27T16:20:31.112Z', volume24hr: 1 },
    ),
    gammaEvent(
      '900002',
      'closing-soon',
      'Closing soon',
      [
        gammaMarket('920001', 'Soon?', 0.5, 10, { groupItemTitle: 'Soon', endDate: at(T0 + HOUR), oneDayPriceChange: 0 }),
        gammaMarket('920002', 'Later?', 0.5, 10, { groupItemTitle: 'Later', endDate: at(T0 + 5 * DAY), oneDayPriceChange: 0 }),
      ],
      // A venue that says nothing of when it created the group.
      { createdAt: undefined },
    ),
  ];
  const kalshi = [
    kalshiEvent('KXFIELDS-26', 'KXFIELDS', 'Fields on Kalshi', 'Economics', [
      kalshiMarket('KXFIELDS-26-A', 'KXFIELDS-26', 'A', 0.4, 0.42, 0.41, 500, {
        yes_sub_title: 'A',
        open_time: '2025-03-01T10:00:00Z',
        close_time: '2026-09-30T14:00:00Z',
        previous_price_dollars: '0.3600',
        volume_24h_fp: '12.50',
      }),
      kalshiMarket('KXFIELDS-26-B', 'KXFIELDS-26', 'B', 0.6, 0.62, 0.61, 500, {
        yes_sub_title: 'B',
        open_time: '2025-02-01T10:00:00Z',
        close_time: '2026-08-31T14:00:00Z',
        previous_price_dollars: '0.6300',
        volume_24h_fp: '2.00',
      }),
      // A placeholder that never opened: not one of the group's markets, so not its creation either.
      kalshiMarket('KXFIELDS-26-C', 'KXFIELDS-26', 'C', 0, 1, 0, 0, {
        yes_sub_title: 'C',
        status: 'initialized',
        open_time: '2024-01-01T00:00:00Z',
      }),
    ]),
  ];
  venues = await startFakeVenues({ gamma, kalshi });
  venues.kalshi.state.series = [seriesRow('KXFIELDS', 'Economics')];
  // No venue history to backfill: the readings of this test are the only ones.
  venues.kalshi.state.candles = { 'KXFIELDS-26-A': [], 'KXFIELDS-26-B': [] };
  venues.clob.state.history = Object.fromEntries(
    ['910001', '910002', '910003', '910004', '910005', '920001', '920002'].map((id) => [`${id}1111111111111111111111`, []]),
  );
  // Nothing is tracked until someone reads it.
  t = await buildTestApp({ ...venues.env, PRICE_TRACK_TOP: '0' }, { clock: () => new Date(now) });
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

let n = 0;
/** A list query no earlier response was cached under (the cache keys on the query). */
const list = async () => (await t.app.inject({ method: 'GET', url: `/api/v1/events?limit=${100 - (n++ % 90)}` })).json().events as any[];
const summary = async (id: string) => (await list()).find((e) => e.id === id);
const detail = async (slug: string) => (await t.app.inject({ method: 'GET', url: `/api/v1/events/${slug}` })).json();

describe('Polymarket fields', () => {
  it('summary: venue, active 24 h volume, earliest future close of active markets, createdAt, largest active move', async () => {
    expect(await summary('pm-900001')).toMatchObject({
      venue: 'polymarket',
      volume24h: 100 + 50 + 7 + 3,
      endDate: at(T0 + 10 * DAY),
      createdAt: '2025-02-27T16:20:31.112Z',
      change24h: -0.08,
    });
    expect(await summary('pm-900002')).toMatchObject({ createdAt: null, endDate: at(T0 + HOUR), change24h: 0 });
  });

  it('detail markets: their own close past or future, 24 h volume and change', async () => {
    const d = await detail('fields-pm');
    const byId = Object.fromEntries(d.markets.map((m: any) => [m.id, m]));
    expect(byId['pm-910001']).toMatchObject({ endDate: at(T0 + 10 * DAY), volume24h: 100, change24h: 0.03 });
    expect(byId['pm-910002']).toMatchObject({ endDate: at(T0 - DAY), volume24h: 50, change24h: -0.08 });
    expect(byId['pm-910003']).toMatchObject({ status: 'resolved', endDate: at(T0 + 2 * DAY), change24h: 0.5 });
    expect(byId['pm-910004']).toMatchObject({ outcome: 'Yes', yesPrice: 0.3, change24h: -0.04 });
    expect(byId['pm-910005']).toMatchObject({ yesPrice: null, endDate: null, change24h: null });
  });
});

describe('Kalshi fields', () => {
  it('createdAt is the earliest open_time of its markets; endDate close_time; change last − previous', async () => {
    expect(await summary('ks-KXFIELDS-26')).toMatchObject({
      venue: 'kalshi',
      volume24h: 14.5,
      createdAt: '2025-02-01T10:00:00.000Z',
      endDate: '2026-08-31T14:00:00.000Z',
      change24h: 0.05,
    });
    const d = await detail('kxfields-26');
    const byId = Object.fromEntries(d.markets.map((m: any) => [m.id, m]));
    expect(byId['ks-KXFIELDS-26-A']).toMatchObject({ endDate: '2026-09-30T14:00:00.000Z', volume24h: 12.5, change24h: 0.05 });
    expect(byId['ks-KXFIELDS-26-B']).toMatchObject({ endDate: '2026-08-31T14:00:00.000Z', volume24h: 2, change24h: -0.02 });
  });
});

describe('as time passes', () => {
  it('a group whose earliest close passed shows its next one', async () => {
    now = T0 + 2 * HOUR;
    // Before any job ran: the passed close is not "still in the future".
    expect((await summary('pm-900002')).endDate).toBeNull();
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    expect((await summary('pm-900002')).endDate).toBe(at(T0 + 5 * DAY));
  });

  it('a tracked market’s change is ours, from our reading 24 h old, not the venue’s', async () => {
    // The detail read above tracked the Kalshi group; this price cycle reads it as tracked.
    now = T0 + 3 * HOUR;
    await detail('kxfields-26');
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    // Tracked, but no reading of ours is 23–25 h old yet: the venue's.
    expect((await summary('ks-KXFIELDS-26')).change24h).toBe(0.05);
    // A day after the catalogue's first reading (0.41 at T0), the venue moves A to 0.55 and says its previous price was 0.50.
    now = T0 + 24 * HOUR;
    Object.assign(venues.kalshi.state.events[0].markets[0], {
      yes_bid_dollars: '0.5400',
      yes_ask_dollars: '0.5600',
      last_price_dollars: '0.5500',
      previous_price_dollars: '0.5000',
    });
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    const d = await detail('kxfields-26');
    const a = d.markets.find((m: any) => m.id === 'ks-KXFIELDS-26-A');
    expect(a.yesPrice).toBe(0.55);
    expect(a.change24h).toBeCloseTo(0.55 - 0.41, 6);
    expect((await summary('ks-KXFIELDS-26')).change24h).toBeCloseTo(0.14, 6);
  });
});
