import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, asc, eq, sql } from 'drizzle-orm';
import { notifications } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { onPostgres } from '../helpers/env.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { checkBigTrades } from '../../src/domains/alerts/big-trades.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';
import { kalshiTrade } from '../fakes/venues/kalshi-trades.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';
import { tradeRow } from '../fakes/venues/data-trades.js';
import { recordPublishes } from '../notifications/fixtures.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

/**
 * Big-trade alerts (docs/decisions.md §18.4, §18.5) end to end: an alert made through the route,
 * a trade appearing at the venue fake (Data v1 `/trades?market=…&filterType=CASH`, Kalshi
 * `/markets/trades`, docs/venues.md §8 B1, E2), price-sync run through the internal run-now route,
 * the notification stored and published. Two app instances share the database (once-only). Time is
 * the apps' injected clock; the fakes' trades are stamped against it.
 */
const MINUTE = 60_000;
const T0 = Math.ceil(Date.now() / MINUTE) * MINUTE - 60 * MINUTE;
let now = new Date(T0);
const clock = () => now;
const at = (ms: number) => {
  now = new Date(T0 + ms);
};
const sec = (ms: number) => Math.floor((T0 + ms) / 1000);

const TOKEN = 'internal-token-big-trades-0123456789';
const COND = (id: string) => `0x${id.padStart(64, '0')}`;
const WHALE = '0x1111111111111111111111111111111111111111';

let venues: FakeVenues;
let data: FakeDataApi;
let t: TestApp;
let second: TestApp;
let db2: DbHandle | undefined;

beforeAll(async () => {
  const pm = gammaEvent(
    '900',
    'big-trades-pm',
    'Big trades group',
    ['901', '902', '903', '904', '905'].map((id) => gammaMarket(id, `Market ${id}?`, 0.4, 1000, { groupItemTitle: `M${id}` })),
  );
  const ks = kalshiEvent(
    'KXBT-1',
    'KXBT',
    'Kalshi big trades',
    'Economics',
    ['A', 'B'].map((s) => kalshiMarket(`KXBT-1-${s}`, 'KXBT-1', 'Kalshi big trades', 0.3, 0.32, 0.31, 1000, { yes_sub_title: s })),
  );
  venues = await startFakeVenues({ gamma: [pm], kalshi: [ks] });
  venues.kalshi.state.series = [seriesRow('KXBT', 'Economics')];
  venues.kalshi.state.trades = [];
  data = await startFakeDataApi();
  const env = { ...venues.env, POLYMARKET_DATA_API_URL: data.url, INTERNAL_API_TOKEN: TOKEN };
  t = await buildTestApp(env, { clock });
  // A second instance on the same database; on PostgreSQL with its own connection pool.
  if (onPostgres) db2 = await createDb((t.db as DbHandle & { url: string }).url, { max: 5 });
  second = await buildTestApp(env, { db: db2 ?? t.db, clock });
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await second?.close();
  await db2?.close();
  await t?.close();
  await venues?.close();
  await data?.close();
});

const api = (method: 'GET' | 'POST' | 'PUT', url: string, auth: Record<string, string>, payload?: unknown) =>
  t.app.inject({ method, url: `/api/v1/alerts${url}`, headers: auth, ...(payload === undefined ? {} : { payload: payload as object }) });

async function create(auth: Record<string, string>, body: Record<string, unknown>) {
  const res = await api('POST', '', auth, body);
  if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`);
  return res.json<{ id: string } & Record<string, unknown>>();
}

/** price-sync through the run-now route of `app` (default: the first instance). */
async function priceSync(app: TestApp = t) {
  const res = await app.app.inject({
    method: 'POST',
    url: '/api/v1/internal/jobs/price-sync',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ ok: boolean; error?: string }>();
}

const firings = (alertId: string) =>
  t.app.db
    .select({ data: notifications.data, title: notifications.title, message: notifications.message })
    .from(notifications)
    .where(and(eq(notifications.type, 'price_alert_triggered'), sql`${notifications.data}->>'alertId' = ${alertId}`))
    .orderBy(asc(notifications.createdAt));

const alertOf = async (auth: Record<string, string>, id: string) =>
  (await api('GET', '', auth)).json<{ alerts: any[] }>().alerts.find((a) => a.id === id);

const pmTrade = (market: string, ms: number, usd: number, extra: Partial<Parameters<typeof tradeRow>[0]> = {}) => {
  const price = extra.price ?? 0.5;
  data.marketTrades.trades.push(tradeRow({ conditionId: COND(market), size: usd / price, price, timestamp: sec(ms), ...extra }));
};

describe('validation (§18.4)', () => {
  it('POST: minUsd required, 1,000–10,000,000; targetPrice, side, change, windowMinutes refused', async () => {
    at(0);
    const u = await createUser(t.app);
    const base = { marketId: 'pm-901', condition: 'big_trade', minUsd: 5000 };
    expect(await create(u.auth, base)).toMatchObject({
      condition: 'big_trade',
      minUsd: 5000,
      side: null,
      targetPrice: null,
      change: null,
      windowMinutes: null,
      repeat: false,
      cooldownMinutes: 60,
      triggerCount: 0,
      active: true,
    });
    expect(await create(u.auth, { ...base, minUsd: 1000, side: null, targetPrice: null })).toMatchObject({ minUsd: 1000 });
    expect(await create(u.auth, { ...base, minUsd: 10_000_000, repeat: true, cooldownMinutes: 5 })).toMatchObject({
      minUsd: 10_000_000,
      repeat: true,
    });
    const bads: Array<[Record<string, unknown>, string]> = [
      [{ ...base, minUsd: undefined }, 'minUsd'],
      [{ ...base, minUsd: null }, 'minUsd'],
      [{ ...base, minUsd: 999.99 }, 'minUsd'],
      [{ ...base, minUsd: 10_000_000.01 }, 'minUsd'],
      [{ ...base, minUsd: '5000' }, 'minUsd'],
      [{ ...base, targetPrice: 0.5 }, 'targetPrice'],
      [{ ...base, side: 'yes' }, 'side'],
      [{ ...base, change: 0.05 }, 'change'],
      [{ ...base, windowMinutes: 60 }, 'windowMinutes'],
      [{ marketId: 'pm-901', condition: 'above', targetPrice: 0.5, side: 'yes', minUsd: 5000 }, 'minUsd'],
      [{ marketId: 'pm-901', condition: 'moves', side: 'yes', change: 0.05, windowMinutes: 60, minUsd: 5000 }, 'minUsd'],
      [{ marketId: 'pm-901', condition: 'above', targetPrice: 0.5 }, 'side'],
    ];
    for (const [body, field] of bads) {
      const res = await api('POST', '', u.auth, body);
      expectProblem(res, 400, 'VALIDATION_ERROR');
      expect(JSON.stringify(res.json().errors), JSON.stringify(body)).toContain(field);
    }
  });

  it('PUT: switching to and from big_trade keeps only what the condition takes; a wrong field is 400', async () => {
    at(0);
    const u = await createUser(t.app);
    const crossing = await create(u.auth, { marketId: 'pm-902', condition: 'above', targetPrice: 0.6, side: 'no' });
    expectProblem(await api('PUT', `/${crossing.id}`, u.auth, { condition: 'big_trade' }), 400, 'VALIDATION_ERROR');
    expectProblem(
      await api('PUT', `/${crossing.id}`, u.auth, { condition: 'big_trade', minUsd: 2000, side: 'yes' }),
      400,
      'VALIDATION_ERROR',
    );
    const big = await api('PUT', `/${crossing.id}`, u.auth, { condition: 'big_trade', minUsd: 2000 });
    expect(big.statusCode, big.body).toBe(200);
    expect(big.json()).toMatchObject({ condition: 'big_trade', minUsd: 2000, side: null, targetPrice: null });
    expect((await api('PUT', `/${crossing.id}`, u.auth, { minUsd: 3000 })).json()).toMatchObject({ minUsd: 3000 });
    expectProblem(await api('PUT', `/${crossing.id}`, u.auth, { targetPrice: 0.5 }), 400, 'VALIDATION_ERROR');
    expectProblem(await api('PUT', `/${crossing.id}`, u.auth, { minUsd: 500 }), 400, 'VALIDATION_ERROR');
    // Back to a crossing alert: it needs targetPrice and side again, and drops minUsd.
    expectProblem(await api('PUT', `/${crossing.id}`, u.auth, { condition: 'below', targetPrice: 0.3 }), 400, 'VALIDATION_ERROR');
    const back = await api('PUT', `/${crossing.id}`, u.auth, { condition: 'below', targetPrice: 0.3, side: 'yes' });
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json()).toMatchObject({ condition: 'below', targetPrice: 0.3, side: 'yes', minUsd: null });
  });
});

describe('Polymarket (Data v1 /trades by market, filtered by cash)', () => {
  it('fires once for a trade of at least minUsd after the alert was made, naming the trade; one-shot goes inactive', async () => {
    at(10 * MINUTE);
    const u = await createUser(t.app);
    const published = recordPublishes(t.app);
    // A big trade from before the alert never counts.
    pmTrade('903', 9 * MINUTE, 50_000);
    const alert = await create(u.auth, { marketId: 'pm-903', condition: 'big_trade', minUsd: 10_000 });
    at(11 * MINUTE);
    pmTrade('903', 10.5 * MINUTE, 9_999); // below the threshold
    const before = data.server.requests.length;
    expect(await priceSync()).toMatchObject({ ok: true });
    expect(await firings(alert.id)).toEqual([]);
    const reads = data.server.requests.slice(before).filter((r) => r.path === '/trades');
    expect(reads.length).toBeGreaterThan(0);
    for (const r of reads) {
      expect(Object.fromEntries(r.query)).toMatchObject({ filterType: 'CASH', takerOnly: 'true', limit: '100' });
      expect(r.query.get('market')!.split(',').length).toBeLessThanOrEqual(20);
    }
    expect(reads.some((r) => r.query.get('market')!.split(',').includes(COND('903')))).toBe(true);

    at(13 * MINUTE);
    pmTrade('903', 12 * MINUTE, 12_000, { side: 'SELL', outcome: 'No', price: 0.4, proxyWallet: WHALE });
    pmTrade('903', 12.5 * MINUTE, 11_000);
    expect(await priceSync()).toMatchObject({ ok: true });
    const fired = await firings(alert.id);
    expect(fired).toHaveLength(1);
    expect(fired[0].data).toEqual({
      marketId: 'pm-903',
      alertId: alert.id,
      triggerCount: 1,
      usd: 12_000,
      side: 'sell',
      outcome: 'No',
      price: 0.4,
      walletAddress: WHALE,
      at: new Date(sec(12 * MINUTE) * 1000).toISOString(),
    });
    expect(fired[0].title).toBe('Big trade: M903');
    expect(await alertOf(u.auth, alert.id)).toMatchObject({ active: false, triggerCount: 1, triggeredPrice: 0.4 });
    // Streamed: the user's stream got it.
    expect(published.events.some((e) => JSON.stringify(e.payload).includes(alert.id))).toBe(true);
    published.stop();

    // Inactive: a larger trade later fires nothing.
    at(15 * MINUTE);
    pmTrade('903', 14 * MINUTE, 90_000);
    expect(await priceSync()).toMatchObject({ ok: true });
    expect(await firings(alert.id)).toHaveLength(1);
  });

  it('repeating: at most once per cooldown, for the largest trade since the last firing, at the first check after it', async () => {
    at(20 * MINUTE);
    const u = await createUser(t.app);
    const alert = await create(u.auth, { marketId: 'pm-904', condition: 'big_trade', minUsd: 5_000, repeat: true, cooldownMinutes: 10 });
    at(21 * MINUTE);
    pmTrade('904', 20.5 * MINUTE, 20_000);
    expect(await priceSync()).toMatchObject({ ok: true });
    expect((await firings(alert.id)).map((f) => (f.data as any).usd)).toEqual([20_000]);

    // In the cooldown (it ends at 31 min): trades are kept, nothing fires.
    at(24 * MINUTE);
    pmTrade('904', 23 * MINUTE, 15_000);
    pmTrade('904', 23.5 * MINUTE, 30_000, { proxyWallet: WHALE });
    expect(await priceSync()).toMatchObject({ ok: true });
    at(28 * MINUTE);
    pmTrade('904', 27 * MINUTE, 25_000);
    expect(await priceSync()).toMatchObject({ ok: true });
    expect(await firings(alert.id)).toHaveLength(1);

    // The first check after the cooldown fires for the largest since the last firing.
    at(31.5 * MINUTE);
    expect(await priceSync()).toMatchObject({ ok: true });
    const fired = await firings(alert.id);
    expect(fired.map((f) => [(f.data as any).usd, (f.data as any).triggerCount, (f.data as any).walletAddress])).toEqual([
      [20_000, 1, '0x00000000000000000000000000000000000000aa'],
      [30_000, 2, WHALE],
    ]);
    expect(await alertOf(u.auth, alert.id)).toMatchObject({ active: true, triggerCount: 2 });

    // After that cooldown, nothing qualifying since the last firing: nothing fires.
    at(43 * MINUTE);
    pmTrade('904', 31 * MINUTE, 40_000); // before the last firing (31.5 min), seen late: does not count
    pmTrade('904', 42 * MINUTE, 4_000); // too small
    expect(await priceSync()).toMatchObject({ ok: true });
    expect(await firings(alert.id)).toHaveLength(2);
    // Past the cooldown, a qualifying trade fires at once.
    at(44 * MINUTE);
    pmTrade('904', 43.5 * MINUTE, 6_000);
    expect(await priceSync()).toMatchObject({ ok: true });
    expect((await firings(alert.id)).map((f) => (f.data as any).usd)).toEqual([20_000, 30_000, 6_000]);
  });
});

describe('Kalshi (/markets/trades per ticker)', () => {
  it('fires for count × the price of the taker side; walletAddress null; reads since the watermark', async () => {
    at(50 * MINUTE);
    const u = await createUser(t.app);
    const alert = await create(u.auth, { marketId: 'ks-KXBT-1-A', condition: 'big_trade', minUsd: 1_000 });
    const trades = venues.kalshi.state.trades!;
    trades.push(kalshiTrade({ ticker: 'KXBT-1-A', count: 9000, yesPrice: 0.5, takerSide: 'yes', at: new Date(T0 + 49 * MINUTE) }));
    trades.push(kalshiTrade({ ticker: 'KXBT-1-A', count: 1500, yesPrice: 0.5, takerSide: 'yes', at: new Date(T0 + 50.2 * MINUTE) }));
    trades.push(kalshiTrade({ ticker: 'KXBT-1-B', count: 9000, yesPrice: 0.5, takerSide: 'yes', at: new Date(T0 + 50.3 * MINUTE) }));
    at(51 * MINUTE);
    const before = venues.kalshi.requests.length;
    expect(await priceSync()).toMatchObject({ ok: true });
    expect(await firings(alert.id)).toEqual([]);
    const reads = venues.kalshi.requests.slice(before).filter((r) => r.path === '/markets/trades');
    expect(reads.map((r) => [r.query.get('ticker'), r.query.get('limit')])).toEqual([['KXBT-1-A', '1000']]);
    expect(Number(reads[0].query.get('min_ts'))).toBe(sec(50 * MINUTE) - 60);

    // Taker bought NO at 0.70: 2,000 × 0.70 = 1,400 USD.
    trades.push(kalshiTrade({ ticker: 'KXBT-1-A', count: 2000, yesPrice: 0.3, takerSide: 'no', at: new Date(T0 + 51.5 * MINUTE) }));
    at(52 * MINUTE);
    const before2 = venues.kalshi.requests.length;
    expect(await priceSync()).toMatchObject({ ok: true });
    // The next read starts a minute before the newest trade the last one showed.
    const read2 = venues.kalshi.requests.slice(before2).find((r) => r.path === '/markets/trades')!;
    expect(Number(read2.query.get('min_ts'))).toBe(Math.floor((T0 + 50.2 * MINUTE) / 1000) - 60);
    const fired = await firings(alert.id);
    expect(fired).toHaveLength(1);
    expect(fired[0].data).toMatchObject({
      marketId: 'ks-KXBT-1-A',
      triggerCount: 1,
      side: 'buy',
      outcome: 'No',
      price: 0.7,
      walletAddress: null,
      at: new Date(T0 + 51.5 * MINUTE).toISOString(),
    });
    expect((fired[0].data as any).usd).toBeCloseTo(1400, 6);
    expect(await alertOf(u.auth, alert.id)).toMatchObject({ active: false, triggeredPrice: 0.7 });
  });
});

describe('once across instances', () => {
  it('price-sync on two instances at once, and the check run concurrently: one notification', async () => {
    at(60 * MINUTE);
    const u = await createUser(t.app);
    const pm = await create(u.auth, { marketId: 'pm-905', condition: 'big_trade', minUsd: 2_000 });
    const ks = await create(u.auth, { marketId: 'ks-KXBT-1-B', condition: 'big_trade', minUsd: 2_000, repeat: true, cooldownMinutes: 60 });
    at(61 * MINUTE);
    pmTrade('905', 60.5 * MINUTE, 3_000);
    venues.kalshi.state.trades!.push(
      kalshiTrade({ ticker: 'KXBT-1-B', count: 10_000, yesPrice: 0.25, takerSide: 'yes', at: new Date(T0 + 60.5 * MINUTE) }),
    );
    const runs = await Promise.all([
      priceSync(t),
      priceSync(second),
      checkBigTrades(t.app.jobs.deps()),
      checkBigTrades(second.app.jobs.deps()),
      checkBigTrades(t.app.jobs.deps()),
      checkBigTrades(second.app.jobs.deps()),
    ]);
    for (const r of runs.slice(0, 2)) expect(r).toMatchObject({ ok: true });
    expect(await firings(pm.id)).toHaveLength(1);
    expect(await firings(ks.id)).toHaveLength(1);
    expect((await firings(ks.id))[0].data).toMatchObject({ usd: 2500, outcome: 'Yes', price: 0.25 });
  });
});

describe('venue failures', () => {
  it('a Data API outage fails the run and fires nothing there; Kalshi alerts still fire', async () => {
    at(70 * MINUTE);
    const u = await createUser(t.app);
    const pm = await create(u.auth, { marketId: 'pm-901', condition: 'big_trade', minUsd: 2_000 });
    const ks = await create(u.auth, { marketId: 'ks-KXBT-1-A', condition: 'big_trade', minUsd: 2_000 });
    at(71 * MINUTE);
    pmTrade('901', 70.5 * MINUTE, 3_000);
    venues.kalshi.state.trades!.push(
      kalshiTrade({ ticker: 'KXBT-1-A', count: 10_000, yesPrice: 0.5, takerSide: 'yes', at: new Date(T0 + 70.5 * MINUTE) }),
    );
    data.server.down(true, 503);
    try {
      const run = await priceSync();
      expect(run).toMatchObject({ ok: false });
      expect(run.error).toMatch(/big-trade reads failed/);
    } finally {
      data.server.down(false);
    }
    expect(await firings(pm.id)).toEqual([]);
    expect(await firings(ks.id)).toHaveLength(1);
    // Back up: the trade is read on the next run.
    at(72 * MINUTE);
    expect(await priceSync()).toMatchObject({ ok: true });
    expect(await firings(pm.id)).toHaveLength(1);
  });
});
