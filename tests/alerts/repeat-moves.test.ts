import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, asc, eq, sql } from 'drizzle-orm';
import { notifications, priceAlerts } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { checkPriceAlerts } from '../../src/domains/alerts/trigger.js';
import { applyReadings, writeTx } from '../../src/domains/events/store.js';
import { onPostgres } from '../helpers/env.js';
import { createMarket } from '../notifications/fixtures.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

/**
 * docs/decisions.md §14.2 (repeating alerts) and §14.3 (move alerts). Time is
 * the apps' injected clock; a "reading" is what one price-sync cycle does:
 * applyReadings (the market's price and its price_history point) and then the
 * alert check with the changes, here on two app instances at once.
 */
const MINUTE = 60_000;
const T0 = Math.ceil(Date.now() / MINUTE) * MINUTE;
let now = new Date(T0);
const clock = () => now;
const at = (ms: number) => {
  now = new Date(T0 + ms);
};

let t: TestApp;
let second: TestApp;
let db2: DbHandle | undefined;
beforeAll(async () => {
  t = await buildTestApp({}, { clock });
  // A second instance on the same database; on PostgreSQL with its own connection pool.
  if (onPostgres) db2 = await createDb((t.db as DbHandle & { url: string }).url, { max: 10 });
  second = await buildTestApp({}, { db: db2 ?? t.db, clock });
});
afterAll(async () => {
  await second?.close();
  await db2?.close();
  await t?.close();
});

const api = (method: 'GET' | 'POST' | 'PUT', url: string, auth: Record<string, string>, payload?: unknown) =>
  t.app.inject({ method, url: `/api/v1/alerts${url}`, headers: auth, ...(payload === undefined ? {} : { payload: payload as object }) });

/** One price-sync cycle's readings, then the check on both instances, three times each, concurrently. Returns how many fired. */
async function reading(prices: Record<string, number>): Promise<number> {
  const deps = t.app.jobs.deps();
  const changes = await writeTx(deps, (tx) =>
    applyReadings(
      deps,
      tx,
      Object.entries(prices).map(([id, p]) => ({ id, p, v: 1 })),
    ),
  );
  // Overlapping cycles too: several checks per instance at once.
  const fired = await Promise.all([t, second, t, second, t, second].map((i) => checkPriceAlerts(i.app.jobs.deps(), changes)));
  return fired.reduce((a, b) => a + b, 0);
}

const firings = (alertId: string) =>
  t.app.db
    .select({ createdAt: notifications.createdAt, data: notifications.data, message: notifications.message })
    .from(notifications)
    .where(and(eq(notifications.type, 'price_alert_triggered'), sql`${notifications.data}->>'alertId' = ${alertId}`))
    .orderBy(asc(notifications.createdAt));

const alertRow = async (id: string) => (await t.app.db.select().from(priceAlerts).where(eq(priceAlerts.id, id)))[0];

async function create(auth: Record<string, string>, body: Record<string, unknown>) {
  const res = await api('POST', '', auth, body);
  if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`);
  return res.json<{ id: string } & Record<string, unknown>>();
}

describe('validation (§14.2, §14.3)', () => {
  it('defaults, accepted shapes and 400s on POST', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db);
    const crossing = { marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' };
    const moves = { marketId: m.id, condition: 'moves', side: 'no', change: 0.05, windowMinutes: 60 };

    expect(await create(u.auth, crossing)).toMatchObject({
      repeat: false,
      cooldownMinutes: 60,
      triggerCount: 0,
      change: null,
      windowMinutes: null,
    });
    expect(await create(u.auth, { ...moves, repeat: true, cooldownMinutes: 10_080 })).toMatchObject({
      condition: 'moves',
      targetPrice: null,
      change: 0.05,
      windowMinutes: 60,
      repeat: true,
      cooldownMinutes: 10_080,
      triggerCount: 0,
    });
    expect(await create(u.auth, { ...moves, targetPrice: null, change: 0.01, windowMinutes: 5 })).toMatchObject({ targetPrice: null });
    expect(await create(u.auth, { ...moves, change: 0.5, windowMinutes: 1440 })).toMatchObject({ change: 0.5 });
    expect(await create(u.auth, { ...crossing, change: null, windowMinutes: null, cooldownMinutes: 1 })).toMatchObject({
      cooldownMinutes: 1,
    });

    for (const bad of [
      { ...moves, change: undefined },
      { ...moves, windowMinutes: undefined },
      { ...moves, targetPrice: 0.5 },
      { ...moves, change: 0.009 },
      { ...moves, change: 0.51 },
      { ...moves, windowMinutes: 4 },
      { ...moves, windowMinutes: 1441 },
      { ...moves, windowMinutes: 30.5 },
      { ...moves, change: '0.05' },
      { ...crossing, change: 0.05 },
      { ...crossing, windowMinutes: 60 },
      { ...crossing, targetPrice: undefined },
      { ...crossing, targetPrice: null },
      { ...crossing, cooldownMinutes: 0 },
      { ...crossing, cooldownMinutes: 10_081 },
      { ...crossing, cooldownMinutes: 1.5 },
      { ...crossing, repeat: 'yes' },
      { ...crossing, triggerCount: 3 },
    ]) {
      const body = expectProblem(await api('POST', '', u.auth, bad), 400, 'VALIDATION_ERROR');
      expect(body.errors?.length, JSON.stringify(bad)).toBeGreaterThan(0);
    }
  });

  it('PUT changes condition, change, windowMinutes, repeat and cooldownMinutes; an invalid result is 400', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db);
    const a = await create(u.auth, { marketId: m.id, targetPrice: 0.4, condition: 'below', side: 'yes' });
    const put = (body: unknown) => api('PUT', `/${a.id}`, u.auth, body);

    for (const bad of [
      { change: 0.05 }, // on a `below` alert
      { windowMinutes: 30 },
      { condition: 'moves' }, // no change/windowMinutes yet
      { condition: 'moves', change: 0.05 },
      { condition: 'moves', change: 0.05, windowMinutes: 30, targetPrice: 0.4 },
      { targetPrice: null },
      { cooldownMinutes: 0 },
      { cooldownMinutes: 10_081 },
      { repeat: 1 },
    ]) {
      expectProblem(await put(bad), 400, 'VALIDATION_ERROR');
    }
    expect((await put({ repeat: true, cooldownMinutes: 5 })).json()).toMatchObject({ repeat: true, cooldownMinutes: 5, targetPrice: 0.4 });

    const toMoves = await put({ condition: 'moves', change: 0.1, windowMinutes: 30 });
    expect(toMoves.statusCode).toBe(200);
    expect(toMoves.json()).toMatchObject({ condition: 'moves', targetPrice: null, change: 0.1, windowMinutes: 30, repeat: true });
    expect((await put({ windowMinutes: 45 })).json()).toMatchObject({ change: 0.1, windowMinutes: 45 });
    expectProblem(await put({ targetPrice: 0.5 }), 400, 'VALIDATION_ERROR');
    expectProblem(await put({ condition: 'above' }), 400, 'VALIDATION_ERROR'); // no targetPrice to keep
    expectProblem(await put({ change: null }), 400, 'VALIDATION_ERROR');

    const back = await put({ condition: 'above', targetPrice: 0.7 });
    expect(back.json()).toMatchObject({ condition: 'above', targetPrice: 0.7, change: null, windowMinutes: null, cooldownMinutes: 5 });
    expect((await api('GET', '', u.auth)).json().alerts).toEqual([back.json()]);
  });
});

describe('repeating crossing alerts (§14.2)', () => {
  it('a price oscillating 100 times around the target in an hour fires at most once per cooldown, on two instances', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.5 });
    const cooldownMinutes = 15;
    const above = await create(u.auth, {
      marketId: m.id,
      targetPrice: 0.6,
      condition: 'above',
      side: 'yes',
      repeat: true,
      cooldownMinutes,
    });
    // The `no` side of the same market: no = 1 − yes oscillates around 0.4 too.
    const noBelow = await create(u.auth, {
      marketId: m.id,
      targetPrice: 0.4,
      condition: 'below',
      side: 'no',
      repeat: true,
      cooldownMinutes,
    });
    const once = await create(u.auth, { marketId: m.id, targetPrice: 0.6, condition: 'above', side: 'yes' });

    for (let k = 0; k < 100; k++) {
      at(k * 36_000 + 1_000); // 100 readings in an hour
      await reading({ [m.id]: k % 2 === 0 ? 0.65 : 0.55 });
    }

    // Fires at 0 s, then on the first reading at or after each cooldown that follows a re-arm: 936 s, 1872 s, 2808 s.
    const expectedAt = [0, 936, 1872, 2808].map((s) => new Date(T0 + 1_000 + s * 1000).toISOString());
    for (const a of [above, noBelow]) {
      const fired = await firings(a.id);
      expect(fired.map((f) => f.createdAt.toISOString())).toEqual(expectedAt);
      expect(fired.map((f) => f.data.triggerCount)).toEqual([1, 2, 3, 4]);
      for (let i = 1; i < fired.length; i++)
        expect(fired[i].createdAt.getTime() - fired[i - 1].createdAt.getTime()).toBeGreaterThanOrEqual(cooldownMinutes * MINUTE);
      const row = await alertRow(a.id);
      expect(row).toMatchObject({ active: true, triggerCount: 4, triggeredPrice: expect.closeTo(a.id === above.id ? 0.65 : 0.35, 10) });
    }
    expect((await firings(noBelow.id))[0].message).toBe('NO is 35¢, below your 40¢ target');
    // Without repeat: once, then inactive.
    expect(await firings(once.id)).toHaveLength(1);
    expect(await alertRow(once.id)).toMatchObject({ active: false, triggerCount: 1 });
  });

  it('is re-armed only by a reading at least 0.02 back across the target', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.5 });
    const a = await create(u.auth, { marketId: m.id, targetPrice: 0.6, condition: 'above', side: 'yes', repeat: true, cooldownMinutes: 1 });
    const b = await create(u.auth, { marketId: m.id, targetPrice: 0.3, condition: 'below', side: 'yes', repeat: true, cooldownMinutes: 1 });
    const step = async (minute: number, price: number) => {
      at(minute * MINUTE);
      return reading({ [m.id]: price });
    };
    expect(await step(1, 0.61)).toBe(1); // a fires
    expect(await step(5, 0.59)).toBe(0); // 0.01 back: not re-armed
    expect(await step(6, 0.62)).toBe(0);
    expect(await step(7, 0.58)).toBe(0); // 0.02 back: re-armed
    expect(await step(8, 0.6)).toBe(1); // a fires again (≥ target, cooldown over)
    expect(await step(9, 0.3)).toBe(1); // b fires
    expect(await step(20, 0.31)).toBe(0); // 0.01 back
    expect(await step(21, 0.29)).toBe(0);
    expect(await step(22, 0.32)).toBe(0); // re-armed
    expect(await step(23, 0.3)).toBe(1); // b again
    expect((await firings(a.id)).map((f) => f.data.triggerCount)).toEqual([1, 2]);
    expect((await firings(b.id)).map((f) => f.data)).toEqual([
      { marketId: m.id, alertId: b.id, triggerCount: 1 },
      { marketId: m.id, alertId: b.id, triggerCount: 2 },
    ]);
  });

  it('re-armed during the cooldown and past the target again, it fires when the cooldown ends even if the price has not changed', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.5 });
    const a = await create(u.auth, {
      marketId: m.id,
      targetPrice: 0.6,
      condition: 'above',
      side: 'yes',
      repeat: true,
      cooldownMinutes: 60,
    });
    at(MINUTE);
    expect(await reading({ [m.id]: 0.65 })).toBe(1);
    at(2 * MINUTE);
    await reading({ [m.id]: 0.55 }); // re-armed
    at(3 * MINUTE);
    expect(await reading({ [m.id]: 0.66 })).toBe(0); // cooling down
    at(30 * MINUTE);
    expect(await reading({})).toBe(0); // a cycle without changes, still cooling down
    at(61 * MINUTE + 5_000);
    expect(await reading({ [m.id]: 0.66 })).toBe(1); // the unchanged reading after the cooldown
    expect(await alertRow(a.id)).toMatchObject({ triggerCount: 2, triggeredPrice: 0.66, armed: false });
    at(200 * MINUTE);
    expect(await reading({ [m.id]: 0.66 })).toBe(0); // not re-armed since
  });

  it('PUT: a new target re-arms; deactivating stops it; reactivating keeps triggerCount', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.5 });
    const a = await create(u.auth, {
      marketId: m.id,
      targetPrice: 0.6,
      condition: 'above',
      side: 'yes',
      repeat: true,
      cooldownMinutes: 10,
    });
    at(MINUTE);
    expect(await reading({ [m.id]: 0.62 })).toBe(1);
    at(20 * MINUTE);
    expect(await reading({ [m.id]: 0.63 })).toBe(0); // not re-armed
    expect((await api('PUT', `/${a.id}`, u.auth, { targetPrice: 0.64 })).statusCode).toBe(200);
    at(21 * MINUTE);
    expect(await reading({ [m.id]: 0.64 })).toBe(1);
    expect((await api('PUT', `/${a.id}`, u.auth, { active: false })).json()).toMatchObject({ active: false, triggerCount: 2 });
    at(40 * MINUTE);
    await reading({ [m.id]: 0.5 });
    expect(await reading({ [m.id]: 0.7 })).toBe(0);
    const re = await api('PUT', `/${a.id}`, u.auth, { active: true, repeat: false });
    expect(re.json()).toMatchObject({ active: true, repeat: false, triggerCount: 2, triggeredAt: null });
    at(41 * MINUTE);
    expect(await reading({ [m.id]: 0.71 })).toBe(1);
    expect((await api('GET', '', u.auth)).json().alerts[0]).toMatchObject({ active: false, triggerCount: 3, triggeredPrice: 0.71 });
  });
});

describe('move alerts (§14.3)', () => {
  it('fires when the current reading differs by `change` from a reading of the window since creation; triggeredPrice is the current reading', async () => {
    at(-10 * MINUTE);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.5 });
    await reading({ [m.id]: 0.4 }); // before the alert exists: does not count
    at(0);
    const up = await create(u.auth, { marketId: m.id, condition: 'moves', side: 'yes', change: 0.05, windowMinutes: 5 });
    const down = await create(u.auth, { marketId: m.id, condition: 'moves', side: 'no', change: 0.2, windowMinutes: 60 });
    const step = async (minute: number, price: number) => {
      at(minute * MINUTE);
      return reading({ [m.id]: price });
    };
    expect(await step(1, 0.44)).toBe(0); // 0.04 from 0.40, a reading from before the alert existed anyway
    expect(await step(2, 0.47)).toBe(0); // 0.03 from 0.44
    expect(await step(8, 0.5)).toBe(0); // 0.06 from 0.44, but that reading left the 5-minute window
    expect(await step(9, 0.56)).toBe(1); // 0.06 from 0.50: `up` fires
    const fired = await firings(up.id);
    expect(fired).toHaveLength(1);
    expect(fired[0].message).toBe('YES moved from 50¢ to 56¢ within 5 min');
    expect(await alertRow(up.id)).toMatchObject({ active: false, triggerCount: 1, triggeredPrice: 0.56 });

    // `down` (no side, 0.2 in an hour): yes 0.56 → 0.34 is no 0.44 → 0.66.
    expect(await step(10, 0.34)).toBe(1);
    expect(await alertRow(down.id)).toMatchObject({ active: false, triggeredPrice: expect.closeTo(0.66, 10) });
    const [d] = await firings(down.id);
    expect(d.data).toEqual({ marketId: m.id, alertId: down.id, triggerCount: 1 });
    expect(d.message).toBe('NO moved from 44¢ to 66¢ within 60 min');
  });

  it('a repeating move alert on a steady trend fires once per window (cooldown = window), on two instances', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.1 });
    const a = await create(u.auth, {
      marketId: m.id,
      condition: 'moves',
      side: 'yes',
      change: 0.05,
      windowMinutes: 30,
      repeat: true,
      cooldownMinutes: 30,
    });
    for (let k = 1; k <= 120; k++) {
      at(k * MINUTE);
      await reading({ [m.id]: Math.round((0.2 + 0.005 * k) * 1000) / 1000 });
    }
    const fired = await firings(a.id);
    // First at minute 11 (0.255 vs 0.205 at minute 1); then the first reading after each cooldown.
    expect(fired.map((f) => (f.createdAt.getTime() - T0) / MINUTE)).toEqual([11, 41, 71, 101]);
    expect(fired.map((f) => f.data.triggerCount)).toEqual([1, 2, 3, 4]);
    expect(await alertRow(a.id)).toMatchObject({ active: true, triggerCount: 4 });
  });

  it('after firing, a new move is measured from readings after the firing, also when the price then stays flat', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.45 });
    const a = await create(u.auth, {
      marketId: m.id,
      condition: 'moves',
      side: 'yes',
      change: 0.05,
      windowMinutes: 60,
      repeat: true,
      cooldownMinutes: 5,
    });
    at(MINUTE);
    await reading({ [m.id]: 0.5 });
    at(2 * MINUTE);
    expect(await reading({ [m.id]: 0.6 })).toBe(1);
    at(3 * MINUTE);
    expect(await reading({ [m.id]: 0.58 })).toBe(0); // 0.02 from 0.60, which was the firing reading: not counted
    for (let k = 4; k <= 30; k++) {
      at(k * MINUTE);
      expect(await reading({})).toBe(0); // flat: no change, and the cooldown end finds no move
    }
    at(31 * MINUTE);
    expect(await reading({ [m.id]: 0.62 })).toBe(0); // 0.04 from 0.58
    at(32 * MINUTE);
    expect(await reading({ [m.id]: 0.53 })).toBe(1); // 0.09 from 0.62 (and 0.05 from 0.58)
    expect((await firings(a.id)).map((f) => f.message)).toEqual([
      'YES moved from 50¢ to 60¢ within 60 min',
      'YES moved from 62¢ to 53¢ within 60 min',
    ]);
  });

  it('in cooldown when the move happens, it fires at the cooldown end on the unchanged price', async () => {
    at(0);
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { yesPrice: 0.45 });
    const a = await create(u.auth, {
      marketId: m.id,
      condition: 'moves',
      side: 'no',
      change: 0.05,
      windowMinutes: 120,
      repeat: true,
      cooldownMinutes: 30,
    });
    at(MINUTE);
    await reading({ [m.id]: 0.5 });
    at(2 * MINUTE);
    expect(await reading({ [m.id]: 0.4 })).toBe(1);
    at(3 * MINUTE);
    await reading({ [m.id]: 0.41 });
    at(4 * MINUTE);
    expect(await reading({ [m.id]: 0.3 })).toBe(0); // a move, but cooling down
    at(31 * MINUTE);
    expect(await reading({})).toBe(0);
    at(32 * MINUTE);
    expect(await reading({})).toBe(1); // cooldown over: no 0.70 vs 0.59
    expect(await alertRow(a.id)).toMatchObject({ triggerCount: 2, triggeredPrice: expect.closeTo(0.7, 10) });
    at(70 * MINUTE);
    expect(await reading({})).toBe(0);
  });
});
