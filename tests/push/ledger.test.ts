import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq, inArray } from 'drizzle-orm';
import { notificationDeliveries, pushDevices } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeExpo, type FakeExpo } from '../fakes/expo.js';
import { notify, type NotifyDeps } from '../../src/domains/notifications/service.js';
import {
  backoffMs,
  drainDeliveries,
  LEASE_MS,
  processAllDueDeliveries,
  processDueDeliveries,
} from '../../src/domains/notifications/delivery.js';
import { checkPushReceipts } from '../../src/domains/push/service.js';
import { createUser } from '../support/users.js';

// docs/decisions.md §13.1–§13.2: the push leg of the delivery ledger against the fake Expo.
const INTERNAL = 'internal-token-push-ledger-0123';
const auth = { authorization: `Bearer ${INTERNAL}` };
let t: TestApp;
let expo: FakeExpo;
let deps: NotifyDeps;

beforeAll(async () => {
  expo = await startFakeExpo();
  t = await buildTestApp({ PUSH_API_URL: expo.url, PUSH_ACCESS_TOKEN: 'expo-token-one', INTERNAL_API_TOKEN: INTERNAL });
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: t.app.clock, publish: t.app.publish, delivery: t.app.delivery };
});
afterAll(async () => {
  await t?.close();
  await expo?.close();
});
beforeEach(() => expo.reset());

const at = (ms: number, d: NotifyDeps = deps): NotifyDeps => ({ ...d, clock: () => new Date(Date.now() + ms) });
let seq = 0;
async function userWithDevices(n: number) {
  const u = await createUser(t.app);
  const tokens = Array.from({ length: n }, () => `ExponentPushToken[ledger-${++seq}-${u.id.slice(0, 8)}]`);
  await t.app.db.insert(pushDevices).values(tokens.map((token) => ({ token, userId: u.id, platform: 'ios' })));
  return { user: u, tokens };
}
const send = async (userId: string, d: NotifyDeps = deps) => {
  const n = await notify(d, { userId, type: 'order_filled', title: 'Filled', message: 'M' });
  await drainDeliveries(d.delivery);
  return n;
};
const rowsOf = async (notificationId: string) =>
  t.app.db
    .select()
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.notificationId, notificationId), eq(notificationDeliveries.channel, 'push')));
const byToken = async (notificationId: string) => new Map((await rowsOf(notificationId)).map((r) => [r.target!, r]));
const sentTo = (token: string) => expo.accepted.filter((m) => m.to === token).length;

describe('backoff', () => {
  it('jittered: the first retry within 30 s, then doubling, capped at 10 min', () => {
    for (const r of [0, 0.5, 0.999]) {
      expect(backoffMs(1, () => r)).toBeLessThanOrEqual(30_000);
      expect(backoffMs(1, () => r)).toBeGreaterThanOrEqual(15_000);
      expect(backoffMs(20, () => r)).toBeLessThanOrEqual(10 * 60_000);
    }
    expect(backoffMs(3, () => 1)).toBe(120_000);
    expect(new Set([0.1, 0.2, 0.3].map((r) => backoffMs(4, () => r))).size).toBe(3);
  });
});

describe('one row per device', () => {
  it('a retry sends only to the devices that have not accepted the notification', async () => {
    const { user, tokens } = await userWithDevices(3);
    expo.ticketErrors.set(tokens[1], 'MessageRateExceeded');
    const n = await send(user.id);
    let rows = await byToken(n.id);
    expect(rows.get(tokens[0])).toMatchObject({ status: 'sent', attempts: 1 });
    expect(rows.get(tokens[2])).toMatchObject({ status: 'sent', attempts: 1 });
    const waiting = rows.get(tokens[1])!;
    expect(waiting).toMatchObject({ status: 'pending', attempts: 1 });
    expect(waiting.lastError).toMatch(/MessageRateExceeded/);
    expect(waiting.nextAttemptAt.getTime() - Date.now()).toBeLessThanOrEqual(30_000);

    expo.ticketErrors.clear();
    await processDueDeliveries(at(31_000), { notificationIds: [n.id] });
    rows = await byToken(n.id);
    expect([...rows.values()].map((r) => r.status)).toEqual(['sent', 'sent', 'sent']);
    expect(tokens.map(sentTo)).toEqual([1, 1, 1]);
  });

  it('429, 5xx and timeouts are retried; after 1 h the row is failed', async () => {
    const { user, tokens } = await userWithDevices(1);
    expo.server.failNext(1, 429, { errors: [{ code: 'TOO_MANY_REQUESTS', message: 'slow down' }] });
    const n = await send(user.id);
    expect((await rowsOf(n.id))[0]).toMatchObject({ status: 'pending', attempts: 1 });
    expo.server.failNext(1, 503, { errors: [] });
    await processDueDeliveries(at(31_000), { notificationIds: [n.id] });
    expect((await rowsOf(n.id))[0]).toMatchObject({ status: 'pending', attempts: 2 });
    // A request that hangs past the channel's timeout: the fake accepts nothing.
    expo.faults.timeoutRate = 1;
    expo.faults.hangMs = 12_000;
    await processDueDeliveries(at(2 * 60_000), { notificationIds: [n.id] });
    expect((await rowsOf(n.id))[0].lastError).toMatch(/did not answer/);
    expo.faults.timeoutRate = 0;
    expo.server.down(true, 502);
    for (let m = 5; m <= 65; m += 10) await processDueDeliveries(at(m * 60_000), { notificationIds: [n.id] });
    expo.server.down(false);
    const [row] = await rowsOf(n.id);
    expect(row.status).toBe('failed');
    expect(row.lastError).toMatch(/retries ended 1 h after the notification/);
    expect(sentTo(tokens[0])).toBe(0);
  }, 60_000);

  it('HTTP 400 and MessageTooBig, MismatchSenderId, InvalidProviderToken are failed at once', async () => {
    const { user, tokens } = await userWithDevices(4);
    expo.ticketErrors.set(tokens[0], 'MessageTooBig');
    expo.ticketErrors.set(tokens[1], 'MismatchSenderId');
    expo.ticketErrors.set(tokens[2], 'InvalidProviderToken');
    const n = await send(user.id);
    const rows = await byToken(n.id);
    for (const [i, code] of ['MessageTooBig', 'MismatchSenderId', 'InvalidProviderToken'].entries()) {
      expect(rows.get(tokens[i])).toMatchObject({ status: 'failed', attempts: 1 });
      expect(rows.get(tokens[i])!.lastError).toContain(code);
    }
    expect(rows.get(tokens[3])).toMatchObject({ status: 'sent' });

    const other = await userWithDevices(1);
    expo.server.failNext(1, 400, { errors: [{ code: 'VALIDATION_ERROR', message: 'bad' }] });
    const m = await send(other.user.id);
    expect((await rowsOf(m.id))[0]).toMatchObject({ status: 'failed', attempts: 1 });
  });

  it('DeviceNotRegistered in a ticket or a receipt removes the device and the row is skipped', async () => {
    const { user, tokens } = await userWithDevices(3);
    expo.unregistered.add(tokens[0]);
    expo.failOnReceipt.add(tokens[1]);
    const n = await send(user.id);
    let rows = await byToken(n.id);
    expect(rows.get(tokens[0])).toMatchObject({ status: 'skipped' });
    expect(rows.get(tokens[1])).toMatchObject({ status: 'sent' });
    // Receipts are read once tickets are 15 minutes old.
    await checkPushReceipts(at(14 * 60_000));
    expect((await byToken(n.id)).get(tokens[1])).toMatchObject({ status: 'sent' });
    await checkPushReceipts(at(16 * 60_000));
    rows = await byToken(n.id);
    expect(rows.get(tokens[1])).toMatchObject({ status: 'skipped' });
    expect(rows.get(tokens[1])!.lastError).toMatch(/DeviceNotRegistered/);
    expect(rows.get(tokens[2])).toMatchObject({ status: 'sent' });
    const left = await t.app.db.select().from(pushDevices).where(inArray(pushDevices.token, tokens));
    expect(left.map((d) => d.token)).toEqual([tokens[2]]);
  });

  it('at most 6 Expo requests in flight per instance, whichever runs send them', async () => {
    const { user } = await userWithDevices(700);
    // A request an earlier test left hanging at the fake would count here: wait for it to end.
    while (expo.inFlight.now > 0) await new Promise((r) => setTimeout(r, 100));
    expo.inFlight.peak = 0;
    expo.faults.latencyMs = 50;
    const a = await notify(deps, { userId: user.id, type: 'order_filled', title: 'A', message: 'M' });
    const b = await notify(deps, { userId: user.id, type: 'order_filled', title: 'B', message: 'M' });
    await Promise.all([drainDeliveries(t.app.delivery), processDueDeliveries(deps), processDueDeliveries(deps)]);
    // Whatever a slow run left (a retry after a timeout) is due later: drive the clock there.
    for (let m = 1; m <= 5; m++) await processAllDueDeliveries(at(m * 60_000));
    const statuses = [...(await rowsOf(a.id)), ...(await rowsOf(b.id))].map((r) => r.status);
    expect(statuses.filter((s) => s === 'sent')).toHaveLength(1400);
    expect(expo.inFlight.peak).toBeGreaterThan(1);
    expect(expo.inFlight.peak).toBeLessThanOrEqual(6);
  }, 120_000);

  it('rows claimed by an instance that died come back within 5 minutes', async () => {
    const { user, tokens } = await userWithDevices(1);
    expo.server.down(true, 503);
    const n = await notify(deps, { userId: user.id, type: 'order_filled', title: 'Lease', message: 'M' });
    await drainDeliveries(t.app.delivery);
    expo.server.down(false);
    // Another instance claims the row (its lease) and dies before settling it.
    const claimAt = Date.now() + 31_000;
    await t.app.db
      .update(notificationDeliveries)
      .set({ nextAttemptAt: new Date(claimAt + LEASE_MS) })
      .where(eq(notificationDeliveries.notificationId, n.id));
    expect((await processDueDeliveries(at(31_000 + LEASE_MS - 1_000), { notificationIds: [n.id] })).claimed).toBe(0);
    expect(LEASE_MS).toBeLessThanOrEqual(5 * 60_000);
    expect(await processDueDeliveries(at(31_000 + 5 * 60_000), { notificationIds: [n.id] })).toMatchObject({ claimed: 1, sent: 1 });
    expect(sentTo(tokens[0])).toBe(1);
  });
});

describe('InvalidCredentials pauses the push channel', () => {
  it('rows wait; the pause is stored, fails delivery-sweep runs, survives a restart, lifts with another token or on resume', async () => {
    const { user, tokens } = await userWithDevices(2);
    expo.ticketErrors.set(tokens[0], 'InvalidCredentials');
    const n = await send(user.id);
    const rows = await byToken(n.id);
    expect(rows.get(tokens[0])).toMatchObject({ status: 'pending', attempts: 0 });

    const summary = async (app = t.app) =>
      (await app.inject({ method: 'GET', url: '/api/v1/internal/deliveries/summary', headers: auth })).json();
    const push = async (app = t.app) => (await summary(app)).channels.find((c: { channel: string }) => c.channel === 'push');
    expect(await push()).toMatchObject({ paused: true, pausedReason: 'InvalidCredentials' });
    expo.ticketErrors.clear();

    // While paused nothing is sent and the sweep's runs fail, naming the reason.
    const run = await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/delivery-sweep', headers: auth });
    expect(run.json()).toMatchObject({ ok: false });
    expect(run.json().error).toMatch(/InvalidCredentials/);
    const later = await notify(deps, { userId: user.id, type: 'order_filled', title: 'While paused', message: 'M' });
    await drainDeliveries(t.app.delivery);
    expect((await rowsOf(later.id)).map((r) => r.status)).toEqual(['pending', 'pending']);
    expect(sentTo(tokens[0])).toBe(0);

    // A restart with the same token keeps the pause; another token lifts it.
    const same = await buildTestApp(
      { PUSH_API_URL: expo.url, PUSH_ACCESS_TOKEN: 'expo-token-one', INTERNAL_API_TOKEN: INTERNAL },
      { db: t.db },
    );
    try {
      expect(await push(same.app)).toMatchObject({ paused: true });
    } finally {
      await same.close();
    }
    const fixed = await buildTestApp(
      { PUSH_API_URL: expo.url, PUSH_ACCESS_TOKEN: 'expo-token-two', INTERNAL_API_TOKEN: INTERNAL },
      { db: t.db },
    );
    try {
      expect(await push(fixed.app)).toMatchObject({ paused: false, pausedReason: null });
    } finally {
      await fixed.close();
    }

    // Paused again, then lifted by the internal route; the waiting rows go out.
    expo.ticketErrors.set(tokens[0], 'InvalidCredentials');
    await send(user.id);
    expect(await push()).toMatchObject({ paused: true });
    expo.ticketErrors.clear();
    const resumed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/deliveries/resume',
      headers: auth,
      payload: { channel: 'push' },
    });
    expect(resumed.statusCode).toBe(200);
    expect(resumed.json()).toMatchObject({ channel: 'push', paused: false, pausedReason: null });
    const ok = await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/delivery-sweep', headers: auth });
    expect(ok.json()).toMatchObject({ ok: true });
    expect((await rowsOf(later.id)).map((r) => r.status)).toEqual(['sent', 'sent']);
    expect(sentTo(tokens[0])).toBeGreaterThanOrEqual(2);
  });
});
