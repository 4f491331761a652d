import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ack, closeAll, connect, listen, next, record, type Client } from '../realtime/helpers.js';
import { eventually } from '../support/eventually.js';
import { startFakeMarketWs, type FakeMarketWs } from '../fakes/venues/market-ws.js';
import { createPolymarketMarket, FAKE_PING_DEADLINE_MS, FAST, WITHIN, storedMarket } from './hot-markets-helpers.js';
import type { MarketUpdate } from '../../src/domains/realtime/schemas.js';

/**
 * docs/decisions.md §11.2, one instance: Polymarket markets with a live
 * `market:<id>` subscriber follow the venue's market WebSocket (the loopback
 * fake), venue changes are stored and published as `market:update` within
 * 2 s, dropped and frozen connections are resubscribed, and a market is let
 * go after its last subscriber leaves. Runs with or without Redis (in-process
 * registry and lease when alone).
 */
let fake: FakeMarketWs;
let t: TestApp;
let url: string;

beforeAll(async () => {
  fake = await startFakeMarketWs({ pingDeadlineMs: FAKE_PING_DEADLINE_MS });
  t = await buildTestApp({ POLYMARKET_MARKET_WS_URL: fake.url }, { hotMarkets: FAST });
  url = await listen(t.app);
});
afterEach(() => closeAll());
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function subscribe(marketId: string): Promise<Client> {
  const s = await connect(url);
  expect(await ack(s, 'subscribe', { channel: `market:${marketId}` })).toEqual({ ok: true });
  return s;
}

describe('hot markets on one instance', () => {
  it('subscribes the YES token at the venue when a market gets its first subscriber', async () => {
    const m = await createPolymarketMarket(t.db);
    expect(fake.subscribed().has(m.token)).toBe(false);
    await subscribe(m.id);
    expect(await t.app.hotMarkets.subscribedMarketIds()).toContain(m.id);
    await eventually(() => fake.subscribed().has(m.token), 10_000);
    expect(t.app.hotMarkets.isHolder()).toBe(true);
    expect(fake.violations).toEqual([]);
  });

  it('stores a venue change and publishes market:update within 2 s', async () => {
    const m = await createPolymarketMarket(t.db, { yesPrice: 0.5 });
    const s = await subscribe(m.id);
    await eventually(() => fake.subscribed().has(m.token), 10_000);
    const update = next<MarketUpdate>(s, 'market:update', WITHIN);
    fake.priceChange(m.token, { bid: 0.6, ask: 0.62 });
    expect(await update).toMatchObject({ marketId: m.id, yesPrice: 0.61, volume: 1234 });
    // Published first, stored right after (the same flush).
    await eventually(async () => (await storedMarket(t.db, m.id)).yes_price === 0.61);
    const row = await storedMarket(t.db, m.id);
    expect(row.price_updated_at).not.toBeNull();
    expect(row.points).toBe(1);
    // A wide spread shows the last trade (the REST path's rule).
    const second = next<MarketUpdate>(s, 'market:update', WITHIN);
    fake.bestBidAsk(m.token, { bid: 0.2, ask: 0.8 });
    fake.lastTrade(m.token, 0.37);
    expect((await second).yesPrice).toBe(0.37);
  });

  it('publishes nothing when the displayed price does not change', async () => {
    const m = await createPolymarketMarket(t.db, { yesPrice: 0.5 });
    const s = await subscribe(m.id);
    await eventually(() => fake.subscribed().has(m.token), 10_000);
    const seen = record(s, 'market:update');
    fake.priceChange(m.token, { bid: 0.49, ask: 0.51 }); // midpoint 0.5: what is stored
    const marker = await createPolymarketMarket(t.db);
    const ms = await subscribe(marker.id);
    await eventually(() => fake.subscribed().has(marker.token), 10_000);
    const markerUpdate = next(ms, 'market:update', WITHIN);
    fake.priceChange(marker.token, { bid: 0.7, ask: 0.72 });
    await markerUpdate;
    expect(seen).toEqual([]);
  });

  it('resubscribes after a dropped and after a frozen connection, and keeps publishing', async () => {
    const m = await createPolymarketMarket(t.db, { yesPrice: 0.5 });
    const s = await subscribe(m.id);
    await eventually(() => fake.subscribed().has(m.token), 10_000);
    const before = fake.accepted();
    fake.drop();
    await eventually(() => fake.accepted() > before && fake.subscribed().has(m.token), 30_000);
    const afterDrop = fake.accepted();
    fake.freeze();
    expect(fake.subscribed().has(m.token)).toBe(false);
    await eventually(() => fake.accepted() > afterDrop && fake.subscribed().has(m.token), 30_000);
    const update = next<MarketUpdate>(s, 'market:update', WITHIN);
    fake.priceChange(m.token, { bid: 0.3, ask: 0.32 });
    expect((await update).yesPrice).toBe(0.31);
    expect(fake.violations).toEqual([]);
  });

  it('lets the token go after the last subscriber leaves', async () => {
    const m = await createPolymarketMarket(t.db);
    const a = await subscribe(m.id);
    const b = await subscribe(m.id);
    await eventually(() => fake.subscribed().has(m.token), 10_000);
    expect(await ack(a, 'unsubscribe', { channel: `market:${m.id}` })).toEqual({ ok: true });
    expect(await t.app.hotMarkets.subscribedMarketIds()).toContain(m.id);
    b.close();
    await eventually(async () => !(await t.app.hotMarkets.subscribedMarketIds()).includes(m.id));
    await eventually(() => !fake.subscribed().has(m.token), 90_000);
  });

  it('follows only open Polymarket markets with a YES token', async () => {
    const kalshi = await createPolymarketMarket(t.db, { venue: 'kalshi' });
    const closed = await createPolymarketMarket(t.db, { status: 'closed' });
    const open = await createPolymarketMarket(t.db);
    await subscribe(kalshi.id);
    await subscribe(closed.id);
    await subscribe('pm-not-a-market');
    await subscribe(open.id);
    await eventually(() => fake.subscribed().has(open.token), 10_000);
    expect(fake.subscribed().has(closed.token)).toBe(false);
    expect(await t.app.hotMarkets.subscribedMarketIds()).toEqual(expect.arrayContaining([kalshi.id, closed.id, open.id]));
  });
});

describe('with POLYMARKET_MARKET_WS_URL empty', () => {
  it('still knows the subscribed markets (the price refresh tracks them) and opens no venue socket', async () => {
    const off = await buildTestApp({ POLYMARKET_MARKET_WS_URL: '' }, { db: t.db, hotMarkets: FAST });
    try {
      const offUrl = await listen(off.app);
      const m = await createPolymarketMarket(t.db);
      const s = await connect(offUrl);
      expect(await ack(s, 'subscribe', { channel: `market:${m.id}` })).toEqual({ ok: true });
      expect(await off.app.hotMarkets.subscribedMarketIds()).toContain(m.id);
      expect(off.app.hotMarkets.stats()).toEqual({ markets: 0, tokens: 0, connections: 0, open: 0 });
      expect(off.app.hotMarkets.isHolder()).toBe(false);
      expect(fake.connections().some((c) => c.tokens.includes(m.token))).toBe(false);
    } finally {
      closeAll();
      await off.close();
    }
  });
});
