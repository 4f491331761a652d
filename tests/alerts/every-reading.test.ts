import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { rows } from '../../src/db/index.js';
import { notifications } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { setGammaYes } from '../fakes/venues/prices.js';
import { createUser } from '../support/users.js';

/**
 * docs/decisions.md §14.2–§14.3: every price-sync reading counts for move
 * alerts, as a user meets it: real price-sync runs against the venue fakes,
 * seconds apart, inside one clock minute (where the stored minute points of
 * the chart keep only the last).
 */
const MINUTE = 60_000;
const T0 = Math.ceil(Date.now() / MINUTE) * MINUTE + MINUTE;
let now = new Date(T0);
const at = (ms: number) => (now = new Date(T0 + ms));

let venues: FakeVenues;
let t: TestApp;
const markets = [0, 1, 2].map((i) => gammaMarket(String(880000 + i), `Reading ${i}?`, 0.5, 1000));
beforeAll(async () => {
  venues = await startFakeVenues({ gamma: [gammaEvent('8800', 'every-reading', 'Every reading counts', markets)] });
  t = await buildTestApp({ ...venues.env }, { clock: () => now });
  at(-5 * MINUTE);
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

async function priceSync(ms: number, prices: Record<number, number>) {
  for (const [i, p] of Object.entries(prices)) setGammaYes(markets[Number(i)], p);
  at(ms);
  expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
}

async function moveAlert(auth: Record<string, string>, i: number) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/alerts',
    headers: auth,
    payload: { marketId: `pm-${880000 + i}`, condition: 'moves', side: 'yes', change: 0.05, windowMinutes: 60 },
  });
  expect(res.statusCode).toBe(201);
  return res.json<{ id: string }>();
}

const fired = (userId: string) =>
  t.app.db
    .select({ message: notifications.message })
    .from(notifications)
    .where(and(eq(notifications.userId, userId), eq(notifications.type, 'price_alert_triggered')));

describe('every reading counts for move alerts (§14.2, §14.3)', () => {
  it('0.53 then 0.59 from two price-sync runs seconds apart fires a 0.05 move alert; a reading from before the alert does not count', async () => {
    const u = await createUser(t.app);
    await priceSync(-50_000, { 0: 0.5, 1: 0.5, 2: 0.5 });
    at(0);
    await moveAlert(u.auth, 0); // 0.53 → 0.59 inside one minute
    const v = await createUser(t.app);
    await moveAlert(v.auth, 1); // 0.50 unchanged after creation, then 0.56
    const w = await createUser(t.app);
    await moveAlert(w.auth, 2); // 0.50 read only before creation, then 0.56

    await priceSync(10_000, { 0: 0.53 }); // market 1 and 2 read 0.50 again: a reading after their alerts
    expect(await fired(u.id)).toEqual([]);
    await priceSync(20_000, { 0: 0.59 });
    expect(await fired(u.id)).toEqual([{ message: 'YES moved from 53¢ to 59¢ within 60 min' }]);

    await priceSync(80_000, { 1: 0.56 });
    expect(await fired(v.id)).toEqual([{ message: 'YES moved from 50¢ to 56¢ within 60 min' }]);
  });

  it('a reading taken before the alert existed does not count, even in the same minute', async () => {
    const w = await createUser(t.app);
    await priceSync(2 * MINUTE + 5_000, { 2: 0.4 });
    at(2 * MINUTE + 10_000);
    await moveAlert(w.auth, 2);
    await priceSync(2 * MINUTE + 20_000, { 2: 0.46 });
    expect(await fired(w.id)).toEqual([]);
    await priceSync(2 * MINUTE + 30_000, { 2: 0.52 }); // 0.06 from 0.46, read after the alert
    expect(await fired(w.id)).toEqual([{ message: 'YES moved from 46¢ to 52¢ within 60 min' }]);
  });

  it('keeps the readings a day, not a growing history: price-sync drops older ones', async () => {
    const count = async () =>
      Number(
        (await rows<{ n: number }>(t.app.db, sql`select count(*)::int as n from price_readings where market_id like 'pm-8800%'`))[0].n,
      );
    expect(await count()).toBeGreaterThan(0);
    await priceSync(24 * 60 * MINUTE + 5 * MINUTE, { 0: 0.7 });
    // What 0.70 replaced was last read more than a day ago: written, then pruned with the rest.
    expect(await count()).toBe(0);
    await priceSync(24 * 60 * MINUTE + 6 * MINUTE, { 0: 0.72 });
    expect(await count()).toBe(1); // 0.70, read a minute ago
  });
});
