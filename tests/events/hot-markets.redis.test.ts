import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import type { DbHandle } from '../../src/db/index.js';
import type { MarketUpdate } from '../../src/domains/realtime/schemas.js';
import { ack, closeAll, connect, listen, next } from '../realtime/helpers.js';
import { eventually } from '../support/eventually.js';
import { startFakeMarketWs, type FakeMarketWs } from '../fakes/venues/market-ws.js';
import { createPolymarketMarket, FAKE_PING_DEADLINE_MS, FAST, WITHIN } from './hot-markets-helpers.js';

/**
 * docs/decisions.md §11.2 across instances sharing Redis: one instance holds
 * the venue sockets (a lease), subscribers on any instance make a market hot,
 * every instance's subscribers get the updates, and the lease fails over when
 * its holder closes.
 */
let db: DbHandle;
let fake: FakeMarketWs;
const apps: TestApp[] = [];

beforeAll(async () => {
  db = await createTestDb();
});
afterEach(async () => {
  closeAll();
  await Promise.all(apps.splice(0).map((t) => t.close()));
  await fake?.close();
});
afterAll(async () => {
  await db?.close();
});

async function instance(keyPrefix: string) {
  const t = await buildTestApp({ POLYMARKET_MARKET_WS_URL: fake.url }, { db, keyPrefix, hotMarkets: FAST });
  apps.push(t);
  return { t, url: await listen(t.app) };
}

async function subscriber(url: string, marketId: string) {
  const s = await connect(url);
  expect(await ack(s, 'subscribe', { channel: `market:${marketId}` })).toEqual({ ok: true });
  return s;
}

describe('hot markets on several instances sharing Redis', () => {
  it('one instance holds the venue sockets and every instance’s subscribers get the updates', async () => {
    fake = await startFakeMarketWs({ pingDeadlineMs: FAKE_PING_DEADLINE_MS });
    const prefix = `pbtest:${randomBytes(5).toString('hex')}:`;
    const a = await instance(prefix);
    const b = await instance(prefix);
    await eventually(() => a.t.app.hotMarkets.isHolder() !== b.t.app.hotMarkets.isHolder(), 5_000);
    const [holder, other] = a.t.app.hotMarkets.isHolder() ? [a, b] : [b, a];

    // A market whose only subscriber is on the instance without the sockets still goes hot.
    const m = await createPolymarketMarket(db, { yesPrice: 0.5 });
    const onOther = await subscriber(other.url, m.id);
    expect(await holder.t.app.hotMarkets.subscribedMarketIds()).toContain(m.id);
    await eventually(() => fake.subscribed().has(m.token), 10_000);
    const onHolder = await subscriber(holder.url, m.id);

    const updates = [next<MarketUpdate>(onOther, 'market:update', WITHIN), next<MarketUpdate>(onHolder, 'market:update', WITHIN)];
    fake.priceChange(m.token, { bid: 0.7, ask: 0.74 });
    for (const u of await Promise.all(updates)) expect(u).toMatchObject({ marketId: m.id, yesPrice: 0.72 });

    // Only the holder ever connected to the venue, and it is still the only holder.
    expect(fake.connections().filter((c) => c.open)).toHaveLength(1);
    expect(other.t.app.hotMarkets.stats().connections).toBe(0);
    expect([a, b].filter((x) => x.t.app.hotMarkets.isHolder())).toHaveLength(1);
    expect(fake.violations).toEqual([]);
  });

  it('fails over when the holder closes: the other instance takes the lease and resubscribes', async () => {
    fake = await startFakeMarketWs({ pingDeadlineMs: FAKE_PING_DEADLINE_MS });
    const prefix = `pbtest:${randomBytes(5).toString('hex')}:`;
    const a = await instance(prefix);
    const b = await instance(prefix);
    await eventually(() => a.t.app.hotMarkets.isHolder() !== b.t.app.hotMarkets.isHolder(), 5_000);
    const [holder, other] = a.t.app.hotMarkets.isHolder() ? [a, b] : [b, a];
    const m = await createPolymarketMarket(db, { yesPrice: 0.5 });
    const s = await subscriber(other.url, m.id);
    await eventually(() => fake.subscribed().has(m.token), 10_000);
    const accepted = fake.accepted();

    await holder.t.close();
    apps.splice(apps.indexOf(holder.t), 1);
    await eventually(() => other.t.app.hotMarkets.isHolder(), 5_000);
    await eventually(() => fake.accepted() > accepted && fake.subscribed().has(m.token), 10_000);
    const update = next<MarketUpdate>(s, 'market:update', WITHIN);
    fake.priceChange(m.token, { bid: 0.2, ask: 0.22 });
    expect((await update).yesPrice).toBe(0.21);
    expect(fake.violations).toEqual([]);
  });

  it('a market leaves the shared registry when its last subscriber on another instance leaves', async () => {
    fake = await startFakeMarketWs({ pingDeadlineMs: FAKE_PING_DEADLINE_MS });
    const prefix = `pbtest:${randomBytes(5).toString('hex')}:`;
    const a = await instance(prefix);
    const b = await instance(prefix);
    const m = await createPolymarketMarket(db);
    await subscriber(b.url, m.id);
    expect(await a.t.app.hotMarkets.subscribedMarketIds()).toContain(m.id);
    closeAll();
    await eventually(async () => !(await a.t.app.hotMarkets.subscribedMarketIds()).includes(m.id), 5_000);
  });
});
