import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq, inArray } from 'drizzle-orm';
import { notificationDeliveries, notifications, pushDevices, pushTickets } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeExpo, type FakeExpo } from '../fakes/expo.js';
import { notify, type NotifyDeps } from '../../src/domains/notifications/service.js';
import { drainDeliveries, processDueDeliveries } from '../../src/domains/notifications/delivery.js';
import { checkPushReceipts } from '../../src/domains/push/service.js';
import { NOTIFICATION_TYPES } from '../../src/domains/notifications/types.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

let t: TestApp;
let expo: FakeExpo;
let deps: NotifyDeps;

beforeAll(async () => {
  expo = await startFakeExpo();
  t = await buildTestApp({ PUSH_API_URL: expo.url, PUSH_ACCESS_TOKEN: 'expo-access-token-123' });
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: t.app.clock, publish: t.app.publish, delivery: t.app.delivery };
});
afterAll(async () => {
  await t?.close();
  await expo?.close();
});
beforeEach(() => expo.reset());

const register = (auth: Record<string, string>, payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/api/v1/push/register', headers: auth, payload: payload as object });
const unregister = (auth: Record<string, string>, payload: unknown) =>
  t.app.inject({ method: 'DELETE', url: '/api/v1/push/unregister', headers: auth, payload: payload as object });
const devicesOf = (userId: string) => t.app.db.select().from(pushDevices).where(eq(pushDevices.userId, userId));
const deliveryOf = async (notificationId: string) => {
  const [r] = await t.app.db
    .select()
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.notificationId, notificationId), eq(notificationDeliveries.channel, 'push')));
  return r;
};
/** notify, then wait for its in-process delivery kick. */
const notifyAndSettle = async (userId: string, type: (typeof NOTIFICATION_TYPES)[number] = 'order_filled') => {
  const n = await notify(deps, { userId, type, title: `T ${type}`, message: 'M' });
  await drainDeliveries(t.app.delivery);
  return n;
};
const later = (ms: number): NotifyDeps => ({ ...deps, clock: () => new Date(Date.now() + ms) });

describe('POST /api/v1/push/register', () => {
  it('201 { message }, idempotent upsert by token', async () => {
    const u = await createUser(t.app);
    for (let i = 0; i < 2; i++) {
      const res = await register(u.auth, { token: 'ExponentPushToken[reg-1]', platform: 'ios' });
      expect(res.statusCode).toBe(201);
      expect(typeof res.json().message).toBe('string');
    }
    await register(u.auth, { token: 'ExponentPushToken[reg-1]', platform: 'android' });
    const rows = await devicesOf(u.id);
    expect(rows.map((r) => [r.token, r.platform])).toEqual([['ExponentPushToken[reg-1]', 'android']]);
  });

  it('a token registered to another user moves to the caller; the previous owner unregistering later leaves it (decisions §6)', async () => {
    const a = await createUser(t.app);
    const b = await createUser(t.app);
    await register(a.auth, { token: 'ExponentPushToken[moving]', platform: 'ios' });
    // One phone, another account, no clean sign-out on the first: the token is the caller's now.
    expect((await register(b.auth, { token: 'ExponentPushToken[moving]', platform: 'web' })).statusCode).toBe(201);
    expect(await devicesOf(a.id)).toEqual([]);
    expect((await devicesOf(b.id)).map((r) => [r.token, r.platform])).toEqual([['ExponentPushToken[moving]', 'web']]);
    // The first account's app unregisters late: only its own registration could go, so b keeps it.
    expect((await unregister(a.auth, { token: 'ExponentPushToken[moving]' })).statusCode).toBe(200);
    expect((await devicesOf(b.id)).map((r) => r.token)).toEqual(['ExponentPushToken[moving]']);
  });

  it('validation errors → 400; no token → 401', async () => {
    const u = await createUser(t.app);
    for (const bad of [
      {},
      { token: 'ExponentPushToken[x]' },
      { platform: 'ios' },
      { token: 'ExponentPushToken[x]', platform: 'windows' },
      { token: '', platform: 'ios' },
      { token: 'has space', platform: 'ios' },
      { token: 'x'.repeat(513), platform: 'ios' },
      { token: 42, platform: 'ios' },
      { token: 'ExponentPushToken[x]', platform: 'ios', userId: 'someone' },
    ]) {
      expectProblem(await register(u.auth, bad), 400, 'VALIDATION_ERROR');
    }
    expectProblem(await register({}, { token: 'ExponentPushToken[x]', platform: 'ios' }), 401, 'UNAUTHORIZED');
  });
});

describe('DELETE /api/v1/push/unregister', () => {
  it("removes the caller's own device; another user's token or an unknown one is 200 and untouched", async () => {
    const a = await createUser(t.app);
    const b = await createUser(t.app);
    await register(a.auth, { token: 'ExponentPushToken[un-a]', platform: 'ios' });
    const other = await unregister(b.auth, { token: 'ExponentPushToken[un-a]' });
    expect(other.statusCode).toBe(200);
    expect((await devicesOf(a.id)).length).toBe(1);
    const own = await unregister(a.auth, { token: 'ExponentPushToken[un-a]' });
    expect(own.statusCode).toBe(200);
    expect(typeof own.json().message).toBe('string');
    expect(await devicesOf(a.id)).toEqual([]);
    expect((await unregister(a.auth, { token: 'ExponentPushToken[un-a]' })).statusCode).toBe(200);
    expectProblem(await unregister(a.auth, {}), 400, 'VALIDATION_ERROR');
    expectProblem(await unregister(a.auth, { token: '' }), 400, 'VALIDATION_ERROR');
  });
});

describe('push preferences', () => {
  const get = (auth: Record<string, string>) => t.app.inject({ method: 'GET', url: '/api/v1/push/preferences', headers: auth });
  const put = (auth: Record<string, string>, payload: unknown) =>
    t.app.inject({ method: 'PUT', url: '/api/v1/push/preferences', headers: auth, payload: payload as object });
  const allTrue = Object.fromEntries(NOTIFICATION_TYPES.map((k) => [k, true]));
  // docs/decisions.md §14.4: no quiet hours and no urgent types until set.
  const quiet = { quietHours: null, urgentTypes: [] };

  it('default: enabled and all five types true', async () => {
    const u = await createUser(t.app);
    const res = await get(u.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ enabled: true, types: allTrue, ...quiet });
  });

  it('PUT merges: types not named keep their value; answers the full preferences', async () => {
    const u = await createUser(t.app);
    let res = await put(u.auth, { types: { order_filled: false } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ enabled: true, types: { ...allTrue, order_filled: false }, ...quiet });
    res = await put(u.auth, { types: { mission_completed: false } });
    expect(res.json()).toEqual({ enabled: true, types: { ...allTrue, order_filled: false, mission_completed: false }, ...quiet });
    res = await put(u.auth, { enabled: false });
    expect(res.json()).toEqual({ enabled: false, types: { ...allTrue, order_filled: false, mission_completed: false }, ...quiet });
    res = await put(u.auth, { enabled: true, types: { order_filled: true } });
    expect(res.json()).toEqual({ enabled: true, types: { ...allTrue, mission_completed: false }, ...quiet });
    expect((await get(u.auth)).json()).toEqual({ enabled: true, types: { ...allTrue, mission_completed: false }, ...quiet });
  });

  it('unknown type keys and wrong value types → 400, nothing stored', async () => {
    const u = await createUser(t.app);
    for (const bad of [
      { types: { unknown_type: false } },
      { types: { order_filled: 'no' } },
      { enabled: 'yes' },
      { types: [] },
      { other: true },
    ]) {
      expectProblem(await put(u.auth, bad), 400, 'VALIDATION_ERROR');
    }
    expect((await get(u.auth)).json()).toEqual({ enabled: true, types: allTrue, ...quiet });
  });

  it('are honoured per type and globally by push delivery', async () => {
    const u = await createUser(t.app);
    const token = 'ExponentPushToken[prefs]';
    await register(u.auth, { token, platform: 'ios' });
    await put(u.auth, { types: { price_alert_triggered: false } });

    const muted = await notifyAndSettle(u.id, 'price_alert_triggered');
    expect((await deliveryOf(muted.id)).status).toBe('skipped');
    expect(expo.messages).toEqual([]);

    const allowed = await notifyAndSettle(u.id, 'order_filled');
    expect((await deliveryOf(allowed.id)).status).toBe('sent');
    expect(expo.messages.map((m) => [m.to, m.title])).toEqual([[token, 'T order_filled']]);

    await put(u.auth, { enabled: false });
    const off = await notifyAndSettle(u.id, 'order_filled');
    expect((await deliveryOf(off.id)).status).toBe('skipped');
    expect(expo.messages).toHaveLength(1);
    // Muting push never hides the in-app notification.
    const stored = await t.app.db
      .select()
      .from(notifications)
      .where(inArray(notifications.id, [muted.id, off.id]));
    expect(stored).toHaveLength(2);
  });
});

describe('Expo delivery', () => {
  it('sends the access token, batches of ≤ 100, stores one ticket per accepted message', async () => {
    const u = await createUser(t.app);
    await t.app.db
      .insert(pushDevices)
      .values(Array.from({ length: 150 }, (_, i) => ({ token: `ExponentPushToken[many-${i}]`, userId: u.id, platform: 'android' })));
    const n = await notifyAndSettle(u.id);
    expect((await deliveryOf(n.id)).status).toBe('sent');
    expect(expo.batches).toEqual([100, 50]);
    expect(new Set(expo.messages.map((m) => m.to)).size).toBe(150);
    const sends = expo.server.requests.filter((r) => r.path === '/--/api/v2/push/send');
    for (const r of sends) {
      expect(r.headers.authorization).toBe('Bearer expo-access-token-123');
      expect(r.headers['content-type']).toMatch(/application\/json/);
    }
    const tickets = await t.app.db
      .select()
      .from(pushTickets)
      .where(inArray(pushTickets.id, [...expo.tickets.keys()]));
    expect(tickets).toHaveLength(150);
  });

  it('DeviceNotRegistered in a ticket removes that device only', async () => {
    const u = await createUser(t.app);
    await register(u.auth, { token: 'ExponentPushToken[gone-ticket]', platform: 'ios' });
    await register(u.auth, { token: 'ExponentPushToken[alive]', platform: 'ios' });
    expo.unregistered.add('ExponentPushToken[gone-ticket]');
    const n = await notifyAndSettle(u.id);
    const rows = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    expect(rows.map((r) => [r.target, r.status]).sort()).toEqual([
      ['ExponentPushToken[alive]', 'sent'],
      ['ExponentPushToken[gone-ticket]', 'skipped'],
    ]);
    expect((await devicesOf(u.id)).map((d) => d.token)).toEqual(['ExponentPushToken[alive]']);
  });

  it('DeviceNotRegistered in a receipt removes the device; checked tickets are forgotten, pending ones kept', async () => {
    const u = await createUser(t.app);
    await register(u.auth, { token: 'ExponentPushToken[gone-receipt]', platform: 'ios' });
    await register(u.auth, { token: 'ExponentPushToken[ok-receipt]', platform: 'android' });
    await register(u.auth, { token: 'ExponentPushToken[slow-receipt]', platform: 'android' });
    expo.failOnReceipt.add('ExponentPushToken[gone-receipt]');
    await notifyAndSettle(u.id);
    expect(expo.tickets.size).toBe(3);
    const slowId = [...expo.tickets].find(([, tok]) => tok === 'ExponentPushToken[slow-receipt]')![0];
    expo.pending.add(slowId);

    // Too young for the default 15-minute delay: nothing asked.
    expect((await checkPushReceipts(deps)).checked).toBe(0);
    const res = await checkPushReceipts(later(16 * 60_000));
    expect(res.removedDevices).toBe(1);
    const receiptCalls = expo.server.requests.filter((r) => r.path === '/--/api/v2/push/getReceipts');
    expect(receiptCalls.length).toBeGreaterThan(0);
    expect(receiptCalls[0].headers.authorization).toBe('Bearer expo-access-token-123');
    expect((await devicesOf(u.id)).map((d) => d.token).sort()).toEqual([
      'ExponentPushToken[ok-receipt]',
      'ExponentPushToken[slow-receipt]',
    ]);
    const left = await t.app.db
      .select()
      .from(pushTickets)
      .where(inArray(pushTickets.id, [...expo.tickets.keys()]));
    expect(left.map((x) => x.id)).toEqual([slowId]);
    // A ticket that never gets a receipt is dropped after a day.
    await checkPushReceipts(later(25 * 60 * 60_000));
    expect(await t.app.db.select().from(pushTickets).where(eq(pushTickets.id, slowId))).toEqual([]);
  });

  it('an Expo outage keeps the notification, retries with backoff, and delivers once it is back', async () => {
    const u = await createUser(t.app);
    await register(u.auth, { token: 'ExponentPushToken[outage]', platform: 'ios' });
    expo.server.down(true);
    const n = await notifyAndSettle(u.id);
    const failed = await deliveryOf(n.id);
    expect(failed).toMatchObject({ status: 'pending', attempts: 1 });
    expect(failed.lastError).toMatch(/503/);
    expect(failed.nextAttemptAt.getTime()).toBeGreaterThan(Date.now() + 10_000);
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: u.auth });
    expect(list.json().notifications.map((x: any) => x.id)).toEqual([n.id]);

    // Not due yet: a sweep now does nothing.
    expect((await processDueDeliveries(deps, { notificationIds: [n.id] })).claimed).toBe(0);

    expo.server.down(false);
    const r = await processDueDeliveries(later(60 * 60_000), { notificationIds: [n.id] });
    expect(r).toMatchObject({ claimed: 1, sent: 1 });
    expect(await deliveryOf(n.id)).toMatchObject({ status: 'sent', attempts: 2 });
    expect(expo.messages.map((m) => m.to)).toEqual(['ExponentPushToken[outage]']);
    // Delivered once: later sweeps find nothing.
    expect((await processDueDeliveries(later(2 * 60 * 60_000), { notificationIds: [n.id] })).claimed).toBe(0);
  });

  it('retries end 1 h after the notification (docs/decisions.md §13.2): then failed, the notification kept', async () => {
    const u = await createUser(t.app);
    await register(u.auth, { token: 'ExponentPushToken[never]', platform: 'ios' });
    expo.server.down(true, 500);
    const n = await notifyAndSettle(u.id);
    for (let minutes = 10; minutes <= 70; minutes += 10) {
      await processDueDeliveries(later(minutes * 60_000), { notificationIds: [n.id] });
    }
    const row = await deliveryOf(n.id);
    expect(row).toMatchObject({ status: 'failed' });
    expect(row.attempts).toBeGreaterThan(2);
    expect(row.lastError).toMatch(/500.*retries ended 1 h after the notification/);
    const [stored] = await t.app.db.select().from(notifications).where(eq(notifications.id, n.id));
    expect(stored.id).toBe(n.id);
    expo.server.down(false);
  });
});
