import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { notifications, priceAlerts } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { checkPriceAlerts } from '../../src/domains/alerts/trigger.js';
import type { PriceChange } from '../../src/domains/events/changes.js';
import { onPostgres } from '../helpers/env.js';
import { createMarket, recordPublishes } from '../notifications/fixtures.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, auth: Record<string, string>, payload?: unknown) =>
  t.app.inject({ method, url: `/api/v1/alerts${url}`, headers: auth, ...(payload === undefined ? {} : { payload: payload as object }) });
const change = (marketId: string, yesPrice: number): PriceChange => ({ marketId, yesPrice, volume: 1000, timestamp: new Date() });
/** What the price-sync job does with a cycle's changes. */
const runCheck = async (app: TestApp['app'], changes: PriceChange[]) => {
  await checkPriceAlerts(app.jobs.deps(), changes);
};
const alertNotifications = (userId: string) =>
  t.app.db
    .select()
    .from(notifications)
    .where(and(eq(notifications.userId, userId), eq(notifications.type, 'price_alert_triggered')));

describe('alert CRUD', () => {
  it("POST → 201 PriceAlert with marketTitle and active; GET lists only the caller's", async () => {
    const u = await createUser(t.app);
    const other = await createUser(t.app);
    const m = await createMarket(t.app.db, { title: 'Will it rain?' });
    const res = await api('POST', '', u.auth, { marketId: m.id, targetPrice: 0.65, condition: 'above', side: 'yes' });
    expect(res.statusCode).toBe(201);
    const a = res.json();
    expect(a).toEqual({
      id: expect.any(String),
      marketId: m.id,
      marketTitle: 'Will it rain?',
      targetPrice: 0.65,
      condition: 'above',
      side: 'yes',
      change: null,
      windowMinutes: null,
      minUsd: null,
      repeat: false,
      cooldownMinutes: 60,
      triggerCount: 0,
      active: true,
      triggeredAt: null,
      triggeredPrice: null,
      createdAt: expect.any(String),
    });
    await api('POST', '', other.auth, { marketId: m.id, targetPrice: 0.2, condition: 'below', side: 'no' });
    const list = await api('GET', '', u.auth);
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({ alerts: [a] });
  });

  it('validation errors → 400 VALIDATION_ERROR; unknown market → 404', async () => {
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db);
    const good = { marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' };
    for (const bad of [
      { ...good, targetPrice: 0 },
      { ...good, targetPrice: 1 },
      { ...good, targetPrice: -0.1 },
      { ...good, targetPrice: 1.5 },
      { ...good, targetPrice: '0.5' },
      { ...good, condition: 'sideways' },
      { ...good, side: 'maybe' },
      { ...good, marketId: '' },
      { ...good, marketId: undefined },
      { ...good, condition: undefined },
      { ...good, extra: true },
    ]) {
      expectProblem(await api('POST', '', u.auth, bad), 400, 'VALIDATION_ERROR');
    }
    expectProblem(await api('POST', '', u.auth, { ...good, marketId: 'pm-does-not-exist' }), 404, 'NOT_FOUND');
    expectProblem(await api('POST', '', {}, good), 401, 'UNAUTHORIZED');
    expect((await api('GET', '', u.auth)).json().alerts).toEqual([]);
  });

  it('PUT partial update → 200; empty or invalid body → 400', async () => {
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db);
    const a = (await api('POST', '', u.auth, { marketId: m.id, targetPrice: 0.4, condition: 'below', side: 'yes' })).json();
    const res = await api('PUT', `/${a.id}`, u.auth, { targetPrice: 0.3 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ...a, targetPrice: 0.3 });
    const res2 = await api('PUT', `/${a.id}`, u.auth, { condition: 'above', side: 'no', active: false });
    expect(res2.json()).toEqual({ ...a, targetPrice: 0.3, condition: 'above', side: 'no', active: false });
    for (const bad of [
      {},
      { targetPrice: 1 },
      { targetPrice: 0 },
      { condition: 'x' },
      { side: 'x' },
      { active: 'yes' },
      { marketId: m.id },
    ]) {
      expectProblem(await api('PUT', `/${a.id}`, u.auth, bad), 400, 'VALIDATION_ERROR');
    }
  });

  it("another user's alert, an unknown or malformed id → 404 for PUT and DELETE; DELETE → 204", async () => {
    const owner = await createUser(t.app);
    const other = await createUser(t.app);
    const m = await createMarket(t.app.db);
    const a = (await api('POST', '', owner.auth, { marketId: m.id, targetPrice: 0.4, condition: 'below', side: 'yes' })).json();
    for (const id of [a.id, '6a1e3b7c-0000-4000-8000-000000000001', 'nope']) {
      expectProblem(await api('PUT', `/${id}`, other.auth, { targetPrice: 0.1 }), 404, 'NOT_FOUND');
      expectProblem(await api('DELETE', `/${id}`, other.auth), 404, 'NOT_FOUND');
    }
    expect((await api('GET', '', owner.auth)).json().alerts).toEqual([a]);
    const del = await api('DELETE', `/${a.id}`, owner.auth);
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    expectProblem(await api('DELETE', `/${a.id}`, owner.auth), 404, 'NOT_FOUND');
    expect((await api('GET', '', owner.auth)).json().alerts).toEqual([]);
  });
});

describe('100 active alerts per user', () => {
  it('the 101st is 409 ALERT_LIMIT; deactivated ones do not count; reactivating does', async () => {
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db);
    await t.app.db
      .insert(priceAlerts)
      .values(Array.from({ length: 99 }, () => ({ userId: u.id, marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' })));
    const hundredth = await api('POST', '', u.auth, { marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' });
    expect(hundredth.statusCode).toBe(201);
    expectProblem(await api('POST', '', u.auth, { marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' }), 409, 'ALERT_LIMIT');

    expect((await api('PUT', `/${hundredth.json().id}`, u.auth, { active: false })).statusCode).toBe(200);
    const replacement = await api('POST', '', u.auth, { marketId: m.id, targetPrice: 0.6, condition: 'above', side: 'yes' });
    expect(replacement.statusCode).toBe(201);
    // Back at 100 active: reactivating the inactive one would make 101.
    expectProblem(await api('PUT', `/${hundredth.json().id}`, u.auth, { active: true }), 409, 'ALERT_LIMIT');
    // Editing an active alert at the limit is fine.
    expect((await api('PUT', `/${replacement.json().id}`, u.auth, { targetPrice: 0.7, active: true })).statusCode).toBe(200);
    const other = await createUser(t.app);
    expect((await api('POST', '', other.auth, { marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' })).statusCode).toBe(201);
  });

  it('holds under concurrent creates', async () => {
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db);
    await t.app.db
      .insert(priceAlerts)
      .values(Array.from({ length: 95 }, () => ({ userId: u.id, marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' })));
    const results = await Promise.all(
      Array.from({ length: 12 }, () => api('POST', '', u.auth, { marketId: m.id, targetPrice: 0.5, condition: 'below', side: 'no' })),
    );
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(5);
    expect(results.filter((r) => r.statusCode === 409)).toHaveLength(7);
    const [{ n }] = await t.app.db
      .select({ n: sql<number>`count(*)::int` })
      .from(priceAlerts)
      .where(and(eq(priceAlerts.userId, u.id), eq(priceAlerts.active, true)));
    expect(Number(n)).toBe(100);
  });
});

describe('the price-alert trigger', () => {
  it("above/below × yes/no fire when the side's price crosses (inclusive) and not otherwise", async () => {
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db, { title: 'Fed cuts in March?' });
    const mk = async (targetPrice: number, condition: string, side: string) =>
      (await api('POST', '', u.auth, { marketId: m.id, targetPrice, condition, side })).json().id as string;
    const ids = {
      yesAboveHit: await mk(0.6, 'above', 'yes'), // yes 0.6 ≥ 0.6
      yesAboveMiss: await mk(0.61, 'above', 'yes'),
      yesBelowHit: await mk(0.7, 'below', 'yes'), // 0.6 ≤ 0.7
      yesBelowMiss: await mk(0.59, 'below', 'yes'),
      noAboveHit: await mk(0.35, 'above', 'no'), // no = 0.4 ≥ 0.35
      noAboveMiss: await mk(0.45, 'above', 'no'),
      noBelowHit: await mk(0.5, 'below', 'no'), // 0.4 ≤ 0.5
      noBelowMiss: await mk(0.3, 'below', 'no'),
    };
    const rec = recordPublishes(t.app);
    await runCheck(t.app, [change(m.id, 0.6)]);
    rec.stop();
    const alerts = new Map<string, any>((await api('GET', '', u.auth)).json().alerts.map((a: any) => [a.id, a]));
    for (const [name, id] of Object.entries(ids)) {
      const a = alerts.get(id);
      if (name.endsWith('Hit')) {
        expect(a.active, name).toBe(false);
        expect(a.triggeredAt, name).not.toBeNull();
        expect(a.triggeredPrice, name).toBeCloseTo(name.startsWith('yes') ? 0.6 : 0.4, 10);
      } else {
        expect(a, name).toMatchObject({ active: true, triggeredAt: null, triggeredPrice: null });
      }
    }
    const notes = await alertNotifications(u.id);
    const hitIds = [ids.yesAboveHit, ids.yesBelowHit, ids.noAboveHit, ids.noBelowHit];
    expect(notes.map((n) => n.data.alertId).sort()).toEqual([...hitIds].sort());
    for (const n of notes) {
      expect(n.data).toEqual({ marketId: m.id, alertId: expect.any(String), triggerCount: 1 });
      expect(n.title).toContain('Fed cuts in March?');
      expect(n.read).toBe(false);
    }
    const published = rec.events.filter((e) => e.channel === `user:${u.id}:notifications` && e.event === 'notification');
    expect(published.map((e) => e.payload.data.alertId).sort()).toEqual([...hitIds].sort());
    expect(published[0].payload.type).toBe('price_alert_triggered');
  });

  it('fires exactly once across repeated cycles; markets that did not move are not touched', async () => {
    const u = await createUser(t.app);
    const moved = await createMarket(t.app.db);
    const still = await createMarket(t.app.db);
    const a = (await api('POST', '', u.auth, { marketId: moved.id, targetPrice: 0.8, condition: 'above', side: 'yes' })).json();
    const b = (await api('POST', '', u.auth, { marketId: still.id, targetPrice: 0.1, condition: 'above', side: 'yes' })).json();
    await runCheck(t.app, [change(moved.id, 0.79)]);
    expect(await alertNotifications(u.id)).toHaveLength(0);
    for (let i = 0; i < 3; i++) await runCheck(t.app, [change(moved.id, 0.85 + i * 0.01)]);
    expect(await checkPriceAlerts(t.app.jobs.deps(), [change(moved.id, 0.9)])).toBe(0);
    const notes = await alertNotifications(u.id);
    expect(notes.map((n) => n.data.alertId)).toEqual([a.id]);
    expect((await api('GET', '', u.auth)).json().alerts.find((x: any) => x.id === b.id).active).toBe(true);

    // Reactivated, it can fire again (once).
    const re = await api('PUT', `/${a.id}`, u.auth, { active: true });
    expect(re.json()).toMatchObject({ active: true, triggeredAt: null, triggeredPrice: null });
    await runCheck(t.app, [change(moved.id, 0.95)]);
    await runCheck(t.app, [change(moved.id, 0.96)]);
    expect(await alertNotifications(u.id)).toHaveLength(2);
  });

  it('ignores unknown markets, prices outside [0, 1] and empty change lists', async () => {
    const u = await createUser(t.app);
    const m = await createMarket(t.app.db);
    await api('POST', '', u.auth, { marketId: m.id, targetPrice: 0.5, condition: 'above', side: 'yes' });
    expect(await checkPriceAlerts(t.app.jobs.deps(), [])).toBe(0);
    expect(await checkPriceAlerts(t.app.jobs.deps(), [change('pm-unknown', 0.9), change(m.id, 1.5), change(m.id, Number.NaN)])).toBe(0);
    expect((await api('GET', '', u.auth)).json().alerts[0].active).toBe(true);
  });

  it('two app instances on one database, running concurrently and repeatedly, notify exactly once per alert', async () => {
    const users = await Promise.all(Array.from({ length: 5 }, () => createUser(t.app)));
    const ms = await Promise.all(Array.from({ length: 4 }, () => createMarket(t.app.db)));
    const expected: string[] = [];
    for (const u of users) {
      for (const m of ms) {
        for (let k = 1; k <= 4; k++) {
          const [row] = await t.app.db
            .insert(priceAlerts)
            .values({ userId: u.id, marketId: m.id, targetPrice: k / 10, condition: 'above', side: 'yes' })
            .returning({ id: priceAlerts.id });
          expected.push(row.id);
        }
      }
    }
    // A second instance with its own connection pool on PostgreSQL (PGlite is one in-process database).
    let db2: DbHandle | undefined;
    if (onPostgres) db2 = await createDb((t.db as DbHandle & { url: string }).url, { max: 10 });
    const second = await buildTestApp({}, { db: db2 ?? t.db });
    try {
      const changes = ms.map((m) => change(m.id, 0.9));
      await Promise.all([
        ...Array.from({ length: 4 }, () => runCheck(t.app, changes)),
        ...Array.from({ length: 4 }, () => runCheck(second.app, changes)),
      ]);
    } finally {
      await second.close();
      await db2?.close();
    }
    const rows = await t.app.db
      .select({ alertId: sql<string>`${notifications.data}->>'alertId'` })
      .from(notifications)
      .where(
        sql`${notifications.type} = 'price_alert_triggered' and ${notifications.data}->>'alertId' in (${sql.join(
          expected.map((id) => sql`${id}`),
          sql`, `,
        )})`,
      );
    expect(rows).toHaveLength(expected.length);
    expect(new Set(rows.map((r) => r.alertId)).size).toBe(expected.length);
  });
});
