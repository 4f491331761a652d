import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchKalshiMarketTrades } from '../../src/venues/kalshi/market-trades.js';
import { fetchMarketTrades } from '../../src/venues/polymarket/market-trades.js';
import { startFakeServer, type FakeServer } from '../fakes/server.js';
import { tradeRow } from '../fakes/venues/data-trades.js';
import { kalshiTrade, serveKalshiTrades } from '../fakes/venues/kalshi-trades.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';

/**
 * The big-trade venue calls (docs/venues.md "What we call", §8 B1 and E2) against fakes that keep
 * the venues' caps: Data v1 `/trades` by market (bare camelCase array, CASH filter, offset ≤ 10,000,
 * filterType and filterAmount together, market exclusive with eventId) and Kalshi
 * `/markets/trades` (limit ≤ 1000, cursor `""` on the last page, string counts and prices).
 */
let data: FakeDataApi;
let kalshi: FakeServer;
const ksTrades: any[] = [];
const C1 = `0x${'1'.padStart(64, '0')}`;
const C2 = `0x${'2'.padStart(64, '0')}`;
const T = 1_790_000_000;

beforeAll(async () => {
  data = await startFakeDataApi();
  kalshi = await startFakeServer();
  serveKalshiTrades(kalshi, { trades: ksTrades });
});
afterAll(async () => {
  await data?.close();
  await kalshi?.close();
});

const get = async (base: string, path: string) => {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: await res.json() };
};

describe('the fakes keep the venues’ rules', () => {
  it('Data /trades by market: CASH filter, newest first, caps and exclusive params', async () => {
    data.marketTrades.trades.push(
      tradeRow({ conditionId: C1, size: 1000, price: 0.5, timestamp: T }), // 500 USD
      tradeRow({ conditionId: C1, size: 20_000, price: 0.5, timestamp: T + 1 }), // 10,000 USD
      tradeRow({ conditionId: C2, size: 30_000, price: 0.2, timestamp: T + 2 }), // 6,000 USD
      tradeRow({ conditionId: C2, size: 90_000, price: 0.2, timestamp: T + 3, maker: true }),
    );
    const ok = await get(data.url, `/trades?market=${C1},${C2}&filterType=CASH&filterAmount=5000`);
    expect(ok.status).toBe(200);
    expect(ok.body.map((r: any) => [r.conditionId, r.timestamp])).toEqual([
      [C2, T + 2],
      [C1, T + 1],
    ]);
    expect(Object.keys(ok.body[0])).toEqual(expect.arrayContaining(['proxyWallet', 'conditionId', 'transactionHash', 'outcomeIndex']));
    expect(ok.body[0]).not.toHaveProperty('_maker');
    expect((await get(data.url, `/trades?market=${C2}&takerOnly=false`)).body).toHaveLength(2);
    expect((await get(data.url, `/trades?market=${C1}&filterType=CASH`)).status).toBe(400);
    expect((await get(data.url, `/trades?market=${C1}&filterType=USD&filterAmount=1`)).status).toBe(400);
    expect((await get(data.url, `/trades?market=${C1}&eventId=5`)).status).toBe(400);
    expect((await get(data.url, `/trades?market=${C1}&offset=10001`)).status).toBe(400);
    expect((await get(data.url, `/trades?market=${C1}&limit=20000`)).status).toBe(200); // clamped, not refused
  });

  it('Kalshi /markets/trades: limit ≤ 1000, cursor paging ending in "", min_ts, string fields', async () => {
    for (let i = 0; i < 5; i++)
      ksTrades.push(kalshiTrade({ ticker: 'KX-A', count: 10 + i, yesPrice: 0.4, takerSide: 'yes', at: new Date((T + i) * 1000) }));
    expect((await get(kalshi.url, '/markets/trades?ticker=KX-A&limit=1001')).status).toBe(400);
    const p1 = await get(kalshi.url, `/markets/trades?ticker=KX-A&min_ts=${T + 1}&limit=3`);
    expect(p1.body.trades.map((t: any) => t.count_fp)).toEqual(['14.00', '13.00', '12.00']);
    expect(p1.body.cursor).not.toBe('');
    const p2 = await get(kalshi.url, `/markets/trades?ticker=KX-A&min_ts=${T + 1}&limit=3&cursor=${p1.body.cursor}`);
    expect(p2.body).toEqual({ trades: [expect.objectContaining({ count_fp: '11.00', yes_price_dollars: '0.4000' })], cursor: '' });
  });
});

describe('adapters', () => {
  it('fetchMarketTrades pages by offset back to `sinceSec` and skips malformed rows', async () => {
    const C3 = `0x${'3'.padStart(64, '0')}`;
    for (let i = 0; i < 250; i++) data.marketTrades.trades.push(tradeRow({ conditionId: C3, size: 4000, price: 0.5, timestamp: T + i }));
    data.marketTrades.trades.push({
      ...tradeRow({ conditionId: C3, size: 4000, price: 0.5, timestamp: T + 500 }),
      proxyWallet: 'not-an-address',
    });
    const before = data.server.requests.length;
    const read = await fetchMarketTrades({ baseUrl: data.url }, [C3], 1000, { sinceSec: T + 120 });
    expect(read).toMatchObject({ skipped: 1, complete: true });
    expect(read.rows).toHaveLength(130); // T+120 … T+249
    const reqs = data.server.requests.slice(before);
    expect(reqs.map((r) => r.query.get('offset'))).toEqual(['0', '100']);
    expect(Object.fromEntries(reqs[0].query)).toMatchObject({
      market: C3,
      filterType: 'CASH',
      filterAmount: '1000',
      takerOnly: 'true',
      limit: '100',
    });
    await expect(fetchMarketTrades({ baseUrl: data.url }, Array(21).fill(C3), 1000, { sinceSec: 0 })).rejects.toThrow(/20/);
  });

  it('fetchKalshiMarketTrades follows the cursor, resends the filters, prices the taker side', async () => {
    for (let i = 0; i < 1500; i++)
      ksTrades.push(
        kalshiTrade({
          ticker: 'KX-B',
          count: 2,
          yesPrice: 0.3,
          takerSide: i % 2 ? 'yes' : 'no',
          at: new Date((T + i) * 1000),
          id: `b-${i}`,
        }),
      );
    ksTrades.push({
      ...kalshiTrade({ ticker: 'KX-B', count: 1, yesPrice: 0.3, takerSide: 'yes', at: new Date(T * 1000), id: 'bad' }),
      count_fp: '',
    });
    const before = kalshi.requests.length;
    const read = await fetchKalshiMarketTrades({ baseUrl: kalshi.url }, 'KX-B', T);
    expect(read).toMatchObject({ skipped: 1, complete: true });
    expect(read.trades).toHaveLength(1500);
    const reqs = kalshi.requests.slice(before);
    expect(reqs).toHaveLength(2);
    for (const r of reqs) expect(Object.fromEntries(r.query)).toMatchObject({ ticker: 'KX-B', min_ts: String(T), limit: '1000' });
    const no = read.trades.find((t) => t.takerSide === 'no')!;
    expect(no.price).toBeCloseTo(0.7, 9);
    expect(no.usd).toBeCloseTo(1.4, 9);
  });
});
