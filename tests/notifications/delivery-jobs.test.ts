import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { jobRuns, notificationDeliveries, pushDevices, pushTickets } from '../../drizzle/index.js';
import { notify, type NotifyDeps } from '../../src/domains/notifications/service.js';
import { DELIVERY_PRUNE_MS, drainDeliveries, SETTLED_RETENTION_MS } from '../../src/domains/notifications/delivery.js';
import { jobDefinitions } from '../../src/jobs/registry.js';
import { deliverySweepJob } from '../../src/jobs/delivery-sweep.js';
import { pushReceiptsJob } from '../../src/jobs/push-receipts.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeExpo, type FakeExpo } from '../fakes/expo.js';
import { createUser } from '../support/users.js';

// docs/decisions.md §9: the delivery workers are rows of the jobs table, run
// by the jobs plugin (advisory lock, job_runs, run-now) and off with JOBS=off.
const INTERNAL = 'internal-token-delivery-jobs-0123';
const auth = { authorization: `Bearer ${INTERNAL}` };
let t: TestApp;
let expo: FakeExpo;
let deps: NotifyDeps;
/** The app's clock runs this far ahead of the wall clock: retries and receipts come due without waiting. */
let ahead = 0;

beforeAll(async () => {
  expo = await startFakeExpo();
  t = await buildTestApp({ INTERNAL_API_TOKEN: INTERNAL, PUSH_API_URL: expo.url }, { clock: () => new Date(Date.now() + ahead) });
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: t.app.clock, publish: t.app.publish, delivery: t.app.delivery };
});
afterAll(async () => {
  await t?.close();
  await expo?.close();
});
beforeEach(() => {
  expo.reset();
  ahead = 0;
});

const runNow = async (name: string) => {
  const res = await t.app.inject({ method: 'POST', url: `/api/v1/internal/jobs/${name}`, headers: auth });
  expect(res.statusCode).toBe(200);
  return res.json<{ name: string; ok: boolean; items: number; error?: string }>();
};
const pushRowOf = async (notificationId: string) => {
  const [r] = await t.app.db
    .select()
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.notificationId, notificationId), eq(notificationDeliveries.channel, 'push')));
  return r;
};

describe('the jobs table', () => {
  it('lists delivery-sweep every 15 s and push-receipts every 5 min', () => {
    const byName = new Map(jobDefinitions.map((d) => [d.name, d.schedule]));
    expect(byName.get('delivery-sweep')).toBe('*/15 * * * * *');
    expect(byName.get('push-receipts')).toBe('*/5 * * * *');
    expect(t.app.jobs.names()).toEqual(expect.arrayContaining(['delivery-sweep', 'push-receipts']));
  });
});

describe('delivery-sweep', () => {
  it('with JOBS=off the first attempt is still made at once; the retry waits for a run of the job', async () => {
    const u = await createUser(t.app);
    await t.app.db.insert(pushDevices).values({ token: 'ExponentPushToken[sweep-retry]', userId: u.id, platform: 'ios' });
    expo.server.down(true);
    const n = await notify(deps, { userId: u.id, type: 'order_filled', title: 'Filled', message: 'M' });
    await drainDeliveries(t.app.delivery);
    expect(await pushRowOf(n.id)).toMatchObject({ status: 'pending', attempts: 1 });

    expo.server.down(false);
    ahead = 60 * 60_000; // past the backoff
    const outcome = await runNow('delivery-sweep');
    expect(outcome).toMatchObject({ name: 'delivery-sweep', ok: true });
    expect(outcome.items).toBeGreaterThanOrEqual(1);
    expect(await pushRowOf(n.id)).toMatchObject({ status: 'sent', attempts: 2 });
    expect(expo.messages.map((m) => m.to)).toEqual(['ExponentPushToken[sweep-retry]']);
    const runs = await t.app.db.select().from(jobRuns).where(eq(jobRuns.name, 'delivery-sweep'));
    expect(runs.length).toBeGreaterThanOrEqual(1);
  });

  it('prunes settled rows on an instance at most once per DELIVERY_PRUNE_MS', async () => {
    const u = await createUser(t.app);
    const n = await notify(deps, { userId: u.id, type: 'mission_completed', title: 'Old', message: 'Old' });
    await drainDeliveries(t.app.delivery);
    const plantOld = () =>
      t.app.db.insert(notificationDeliveries).values({
        notificationId: n.id,
        channel: 'push',
        status: 'sent',
        lastError: 'planted',
        updatedAt: new Date(Date.now() + ahead - SETTLED_RETENTION_MS - 60_000),
      });
    const planted = async () =>
      (
        await t.app.db
          .select()
          .from(notificationDeliveries)
          .where(and(eq(notificationDeliveries.notificationId, n.id), eq(notificationDeliveries.lastError, 'planted')))
      ).length;

    // Whether this app pruned already (an earlier test's run) or not, an hour on it prunes.
    ahead = 3 * DELIVERY_PRUNE_MS;
    await plantOld();
    await runNow('delivery-sweep');
    expect(await planted()).toBe(0);

    // Within the hour: the sweep delivers but leaves pruning alone.
    ahead += DELIVERY_PRUNE_MS / 2;
    await plantOld();
    await runNow('delivery-sweep');
    expect(await planted()).toBe(1);

    // An hour after the last prune: pruned again.
    ahead += DELIVERY_PRUNE_MS / 2;
    const outcome = await runNow('delivery-sweep');
    expect(outcome.items).toBeGreaterThanOrEqual(1);
    expect(await planted()).toBe(0);
  });
});

describe('push-receipts', () => {
  it('asks Expo about tickets 15 minutes old and removes devices reported DeviceNotRegistered', async () => {
    const u = await createUser(t.app);
    await t.app.db.insert(pushDevices).values([
      { token: 'ExponentPushToken[rcpt-gone]', userId: u.id, platform: 'ios' },
      { token: 'ExponentPushToken[rcpt-ok]', userId: u.id, platform: 'android' },
    ]);
    expo.failOnReceipt.add('ExponentPushToken[rcpt-gone]');
    await notify(deps, { userId: u.id, type: 'order_filled', title: 'Filled', message: 'M' });
    await drainDeliveries(t.app.delivery);
    const ids = [...expo.tickets.keys()];
    expect(ids).toHaveLength(2);

    // Too young: nothing asked.
    expect(await runNow('push-receipts')).toMatchObject({ ok: true, items: 0 });
    expect(expo.server.requests.filter((r) => r.path === '/--/api/v2/push/getReceipts')).toHaveLength(0);

    ahead = 16 * 60_000;
    const outcome = await runNow('push-receipts');
    expect(outcome.ok).toBe(true);
    expect(outcome.items).toBeGreaterThanOrEqual(2);
    const devices = await t.app.db.select().from(pushDevices).where(eq(pushDevices.userId, u.id));
    expect(devices.map((d) => d.token)).toEqual(['ExponentPushToken[rcpt-ok]']);
    for (const id of ids) expect(await t.app.db.select().from(pushTickets).where(eq(pushTickets.id, id))).toEqual([]);
  });
});

describe('schedule', () => {
  it('JOBS=on runs both once at start, under the jobs plugin (recorded in job_runs)', async () => {
    const d = await buildTestApp({ JOBS: 'on', PUSH_API_URL: expo.url }, { db: t.db, jobs: [deliverySweepJob, pushReceiptsJob] });
    const recorded = async () => {
      const rows = await t.app.db.select().from(jobRuns);
      return new Set(rows.filter((r) => r.instanceId === d.app.instanceId && r.ok).map((r) => r.name));
    };
    for (let i = 0; i < 100 && (await recorded()).size < 2; i++) await new Promise((r) => setTimeout(r, 50));
    await d.close();
    expect([...(await recorded())].sort()).toEqual(['delivery-sweep', 'push-receipts']);
  });
});
