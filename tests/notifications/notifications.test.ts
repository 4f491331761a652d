import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq, sql } from 'drizzle-orm';
import { notificationDeliveries, notifications, pushDevices } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeExpo, type FakeExpo } from '../fakes/expo.js';
import { notify, type NotifyDeps } from '../../src/domains/notifications/service.js';
import { userNotificationsChannel } from '../../src/domains/realtime/channels.js';
import { readStreamEvents } from '../../src/domains/notifications/stream.js';
import {
  createDeliveryState,
  drainDeliveries,
  FAILED_RETENTION_MS,
  pruneSettledDeliveries,
  SETTLED_RETENTION_MS,
} from '../../src/domains/notifications/delivery.js';
import {
  NOTIFICATION_TYPES,
  NotificationSchema,
  type NotificationChannel,
  type ClaimedDelivery,
} from '../../src/domains/notifications/types.js';
import { recordPublishes } from './fixtures.js';
import { createUser } from '../support/users.js';
import { eventually } from '../support/eventually.js';
import { expectProblem } from '../support/problem.js';

const INTERNAL = 'internal-token-0123456789abcdef';
let t: TestApp;
let expo: FakeExpo;
let deps: NotifyDeps;

beforeAll(async () => {
  expo = await startFakeExpo();
  t = await buildTestApp({ INTERNAL_API_TOKEN: INTERNAL, PUSH_API_URL: expo.url });
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: t.app.clock, publish: t.app.publish, delivery: t.app.delivery };
});
afterAll(async () => {
  await t?.close();
  await expo?.close();
});
beforeEach(() => expo.reset());

const list = (auth: Record<string, string>, query = '') =>
  t.app.inject({ method: 'GET', url: `/api/v1/notifications${query}`, headers: auth });

describe('notify()', () => {
  it('stores the notification, returns it, and publishes it on the user channel', async () => {
    const u = await createUser(t.app);
    const rec = recordPublishes(t.app);
    const n = await notify(deps, {
      userId: u.id,
      type: 'order_filled',
      title: 'Order filled',
      message: 'Your order filled',
      data: { orderId: 'o1', marketId: 'm1' },
    });
    rec.stop();
    expect(n).toMatchObject({ userId: u.id, type: 'order_filled', read: false, data: { orderId: 'o1', marketId: 'm1' } });
    expect(userNotificationsChannel(u.id)).toBe(`user:${u.id}:notifications`);
    const mine = rec.events.filter((e) => e.channel === `user:${u.id}:notifications`);
    expect(mine).toHaveLength(1);
    expect(mine[0].event).toBe('notification');
    expect(mine[0].payload).toEqual({
      id: n.id,
      type: 'order_filled',
      title: 'Order filled',
      message: 'Your order filled',
      read: false,
      data: { orderId: 'o1', marketId: 'm1' },
      createdAt: n.createdAt.toISOString(),
      seq: 1, // docs/decisions.md §12: the user's first stream event
      unreadCount: 1,
    });
    const res = await list(u.auth);
    expect(res.json().notifications.map((x: any) => x.id)).toEqual([n.id]);
  });

  it('lists exactly what was stored: quotes, control characters, non-ASCII text and nested data survive the list', async () => {
    const u = await createUser(t.app);
    const title = 'He said "sell" \\ then\nleft\t— 🚀 ünïcødé';
    const data = { marketId: 'm"1', nested: { list: [1, 2.5, null, true, 'x'], empty: {} }, big: 12345678901234 };
    const n = await notify(deps, { userId: u.id, type: 'position_resolved', title, message: '<b>&amp;</b>', data });
    const res = await list(u.auth, '?limit=1');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({
      notifications: [
        { id: n.id, type: 'position_resolved', title, message: '<b>&amp;</b>', read: false, data, createdAt: n.createdAt.toISOString() },
      ],
      unreadCount: 1,
      seq: 1,
      nextCursor: null,
    });
  });

  it('writes one ledger row per device and chat, settled without the caller waiting', async () => {
    const u = await createUser(t.app);
    await t.app.db.insert(pushDevices).values([
      { token: `ExponentPushToken[ledger-a-${u.id}]`, userId: u.id, platform: 'ios' },
      { token: `ExponentPushToken[ledger-b-${u.id}]`, userId: u.id, platform: 'android' },
    ]);
    const n = await notify(deps, { userId: u.id, type: 'mission_completed', title: 'Mission', message: 'Done' });
    const rows = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    // Two devices, no chat bound: two push rows, no messenger row.
    expect(rows.map((r) => [r.channel, r.targetKind, r.target, r.userId]).sort()).toEqual([
      ['push', 'device', `ExponentPushToken[ledger-a-${u.id}]`, u.id],
      ['push', 'device', `ExponentPushToken[ledger-b-${u.id}]`, u.id],
    ]);
    await drainDeliveries(t.app.delivery);
    const after = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    expect(after.map((r) => r.status)).toEqual(['sent', 'sent']);
    const none = await notify(deps, { userId: (await createUser(t.app)).id, type: 'mission_completed', title: 'M', message: 'D' });
    expect(await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, none.id))).toEqual([]);
  });
});

describe('delivery channels are injected', () => {
  it('the app gets push and messenger from the composition root, in that order', () => {
    expect(t.app.delivery.channels.map((c) => c.name)).toEqual(['push', 'messenger']);
  });

  it('notify writes ledger rows for, and delivers through, exactly the channels it is given', async () => {
    const u = await createUser(t.app);
    const seen: Array<[string, ClaimedDelivery['notification']]> = [];
    // Every user has one target on each fake channel: the user id itself.
    const fake = (name: string, outcome: 'sent' | 'skipped'): NotificationChannel => ({
      name,
      targetKind: 'device',
      targets: sql`select id as user_id, id::text as target from users`,
      deliver: async (ctx, rows) => {
        for (const r of rows) seen.push([name, r.notification]);
        await ctx.settle(rows.map((r) => [r, outcome === 'sent' ? { status: 'sent' } : { status: 'skipped', reason: 'fake' }]));
      },
    });
    const delivery = createDeliveryState([fake('carrier-pigeon', 'sent'), fake('smoke-signal', 'skipped')]);
    const n = await notify({ ...deps, delivery }, { userId: u.id, type: 'order_filled', title: 'Injected', message: 'm' });
    await drainDeliveries(delivery);
    const rows = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    expect(rows.map((r) => [r.channel, r.status, r.target]).sort()).toEqual([
      ['carrier-pigeon', 'sent', u.id],
      ['smoke-signal', 'skipped', u.id],
    ]);
    expect(seen.map(([name, x]) => [name, x.id, x.title]).sort()).toEqual([
      ['carrier-pigeon', n.id, 'Injected'],
      ['smoke-signal', n.id, 'Injected'],
    ]);
    expect(() => createDeliveryState([fake('twice', 'sent'), fake('twice', 'sent')])).toThrow(/unique/);
  });
});

describe('one Notification shape', () => {
  it('the list, the socket event, PATCH and the internal route send the fields of NotificationSchema, in its order', async () => {
    const u = await createUser(t.app);
    const rec = recordPublishes(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/notifications',
      headers: { authorization: `Bearer ${INTERNAL}` },
      // Keys out of jsonb's order (shortest first, then bytewise), nested too.
      payload: {
        userId: u.id,
        type: 'order_filled',
        title: 'Shape',
        message: 'm',
        data: { orderId: 'o-9', a: 1, nested: { zz: true, b: [1, { yy: 1, x: 2 }] } },
      },
    });
    rec.stop();
    const created = res.json();
    const [listed] = (await list(u.auth)).json().notifications;
    const published = rec.events.find((e) => e.channel === userNotificationsChannel(u.id))?.payload;
    const patched = (await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${created.id}`, headers: u.auth })).json();
    const fields = Object.keys(NotificationSchema.shape);
    for (const shown of [created, listed, patched]) {
      expect(Object.keys(shown)).toEqual(fields);
      expect(NotificationSchema.strict().parse(shown)).toEqual(shown);
    }
    // The stream event is the Notification plus the stream's seq and unread count (docs/decisions.md §12.2).
    expect(Object.keys(published)).toEqual([...fields, 'seq', 'unreadCount']);
    expect(listed).toEqual(created);
    expect(published).toEqual({ ...created, seq: 1, unreadCount: 1 });
    expect(patched).toEqual({ ...created, read: true });
    // The same JSON text everywhere, key order included: the live event, the event stored for
    // resume (docs/decisions.md §12.3: as first emitted), the list and the internal route's answer.
    const [stored] = await readStreamEvents(t.app.db, u.id, 0, 1, 10);
    expect(JSON.stringify(stored.payload)).toBe(JSON.stringify(published));
    expect(JSON.stringify(published)).toBe(JSON.stringify({ ...listed, seq: 1, unreadCount: 1 }));
    expect(JSON.stringify(created)).toBe(JSON.stringify(listed));
  });
});

describe('outbox pruning', () => {
  it('deletes settled rows past their retention (failed ones later), never pending rows or the notification', async () => {
    const u = await createUser(t.app);
    const n = await notify(deps, { userId: u.id, type: 'mission_completed', title: 'Old', message: 'Old' });
    await drainDeliveries(t.app.delivery);
    await t.app.db.delete(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    const now = new Date();
    const ago = (ms: number) => new Date(now.getTime() - ms);
    const rows = [
      { tag: 'sent-old', status: 'sent', updatedAt: ago(SETTLED_RETENTION_MS + 60_000), kept: false },
      { tag: 'skipped-old', status: 'skipped', updatedAt: ago(SETTLED_RETENTION_MS + 60_000), kept: false },
      { tag: 'sent-recent', status: 'sent', updatedAt: ago(SETTLED_RETENTION_MS - 60_000), kept: true },
      { tag: 'failed-past-settled', status: 'failed', updatedAt: ago(SETTLED_RETENTION_MS + 60_000), kept: true },
      { tag: 'failed-old', status: 'failed', updatedAt: ago(FAILED_RETENTION_MS + 60_000), kept: false },
      { tag: 'pending-ancient', status: 'pending', updatedAt: ago(FAILED_RETENTION_MS * 10), kept: true },
    ];
    await t.app.db
      .insert(notificationDeliveries)
      .values(rows.map((r) => ({ notificationId: n.id, channel: 'push', status: r.status, lastError: r.tag, updatedAt: r.updatedAt })));
    expect(await pruneSettledDeliveries(t.app.db, now)).toBeGreaterThanOrEqual(3);
    const left = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    expect(left.map((r) => r.lastError).sort()).toEqual(
      rows
        .filter((r) => r.kept)
        .map((r) => r.tag)
        .sort(),
    );
    const [stored] = await t.app.db.select().from(notifications).where(eq(notifications.id, n.id));
    expect(stored?.title).toBe('Old');
    // Nothing more to prune: idempotent.
    await pruneSettledDeliveries(t.app.db, now);
    const again = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    expect(again).toHaveLength(left.length);
  });
});

describe('GET /api/v1/notifications', () => {
  it('requires a bearer token', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: '/api/v1/notifications' }), 401, 'UNAUTHORIZED');
  });

  it('pages newest first to the end with a cursor, ties broken by id, microsecond timestamps exact', async () => {
    const u = await createUser(t.app);
    // 25 rows: groups sharing one timestamp, and timestamps one microsecond apart (finer than a JS Date).
    await t.app.db.execute(sql`
      insert into notifications (user_id, type, title, message, created_at)
      select ${u.id}::uuid, 'order_filled', 'n' || g, 'm' || g,
             timestamptz '2026-01-01 00:00:00.000000+00' + make_interval(secs => (g / 3) * 0.000001)
      from generate_series(1, 25) g`);
    const all = await t.app.db
      .select({ id: notifications.id })
      .from(notifications)
      .where(eq(notifications.userId, u.id))
      .orderBy(sql`created_at desc, id desc`);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list(u.auth, `?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.unreadCount).toBe(25);
      seen.push(...body.notifications.map((n: any) => n.id));
      cursor = body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(4);
    expect(seen).toEqual(all.map((r) => r.id));
  });

  it('an exact multiple of the page size ends with nextCursor null', async () => {
    const u = await createUser(t.app);
    for (let i = 0; i < 4; i++) await notify(deps, { userId: u.id, type: 'order_filled', title: `t${i}`, message: 'm' });
    const p1 = (await list(u.auth, '?limit=2')).json();
    expect(p1.notifications).toHaveLength(2);
    expect(p1.notifications[0].title).toBe('t3');
    const p2 = (await list(u.auth, `?limit=2&cursor=${encodeURIComponent(p1.nextCursor)}`)).json();
    expect(p2.notifications.map((n: any) => n.title)).toEqual(['t1', 't0']);
    expect(p2.nextCursor).toBeNull();
    const whole = (await list(u.auth)).json();
    expect(whole.notifications).toHaveLength(4);
    expect(whole.nextCursor).toBeNull();
  });

  it('filters by read and type; unreadCount counts all unread whatever the filters', async () => {
    const u = await createUser(t.app);
    const made = [];
    for (const type of ['order_filled', 'order_filled', 'price_alert_triggered', 'mission_completed'] as const) {
      made.push(await notify(deps, { userId: u.id, type, title: type, message: 'x' }));
    }
    await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${made[0].id}`, headers: u.auth });

    const unread = (await list(u.auth, '?read=false')).json();
    expect(unread.notifications.map((n: any) => n.id).sort()).toEqual([made[1].id, made[2].id, made[3].id].sort());
    expect(unread.unreadCount).toBe(3);
    const read = (await list(u.auth, '?read=true')).json();
    expect(read.notifications.map((n: any) => n.id)).toEqual([made[0].id]);
    expect(read.unreadCount).toBe(3);
    const byType = (await list(u.auth, '?type=order_filled')).json();
    expect(byType.notifications.map((n: any) => n.id).sort()).toEqual([made[0].id, made[1].id].sort());
    expect(byType.unreadCount).toBe(3);
    const both = (await list(u.auth, '?type=order_filled&read=false')).json();
    expect(both.notifications.map((n: any) => n.id)).toEqual([made[1].id]);
    expect(both.unreadCount).toBe(3);
    const none = (await list(u.auth, '?type=position_resolved')).json();
    expect(none).toEqual({ notifications: [], unreadCount: 3, seq: 5, nextCursor: null });
  });

  it('rejects invalid query values with 400 VALIDATION_ERROR', async () => {
    const u = await createUser(t.app);
    for (const q of [
      '?limit=0',
      '?limit=101',
      '?limit=abc',
      '?limit=1.5',
      '?read=yes',
      '?read=1',
      '?read=TRUE',
      '?type=unknown_type',
      '?type=',
    ]) {
      const body = expectProblem(await list(u.auth, q), 400, 'VALIDATION_ERROR');
      expect(body.errors.length).toBeGreaterThan(0);
    }
    expect((await list(u.auth, '?limit=100')).statusCode).toBe(200);
    expect((await list(u.auth, '?limit=1')).statusCode).toBe(200);
    for (const type of NOTIFICATION_TYPES) expect((await list(u.auth, `?type=${type}`)).statusCode).toBe(200);
  });

  it('rejects a forged or altered cursor with 400 INVALID_CURSOR', async () => {
    const u = await createUser(t.app);
    for (let i = 0; i < 3; i++) await notify(deps, { userId: u.id, type: 'order_filled', title: `t${i}`, message: 'm' });
    const { nextCursor } = (await list(u.auth, '?limit=1')).json();
    const [payload, mac] = nextCursor.split('.');
    const forged = Buffer.from(JSON.stringify({ t: '2099-01-01T00:00:00.000000Z', i: '00000000-0000-0000-0000-000000000000' })).toString(
      'base64url',
    );
    for (const c of [`${forged}.${mac}`, `${payload}.${mac.slice(0, -2)}xx`, 'garbage', `${payload}`]) {
      expectProblem(await list(u.auth, `?cursor=${encodeURIComponent(c)}`), 400, 'INVALID_CURSOR');
    }
  });

  it("never shows another user's notifications", async () => {
    const a = await createUser(t.app);
    const b = await createUser(t.app);
    await notify(deps, { userId: a.id, type: 'order_filled', title: 'a', message: 'a' });
    const res = (await list(b.auth)).json();
    expect(res).toEqual({ notifications: [], unreadCount: 0, seq: 0, nextCursor: null });
  });
});

describe('unreadCount (kept by triggers in notification_counters)', () => {
  const actual = async (userId: string) =>
    Number(
      (
        await t.app.dbh.rows<{ n: number }>(sql`select count(*)::int as n from notifications where user_id = ${userId}::uuid and not read`)
      )[0].n,
    );
  const shown = async (u: { auth: Record<string, string> }) => (await list(u.auth, '?limit=1')).json().unreadCount as number;
  const expectConsistent = async (...users: Array<{ id: string; auth: Record<string, string> }>) => {
    for (const u of users) expect(await shown(u)).toBe(await actual(u.id));
  };

  it('follows multi-user inserts, PATCH, mark-all-read, DELETE and concurrent writers', async () => {
    const a = await createUser(t.app);
    const b = await createUser(t.app);
    // One statement for two users, some rows already read.
    await t.app.dbh.rows(sql`
      insert into notifications (user_id, type, title, message, read)
      select u, 'order_filled', 't' || g, 'm', g % 4 = 0
      from unnest(array[${a.id}::uuid, ${b.id}::uuid]) u, generate_series(1, 12) g`);
    expect(await actual(a.id)).toBe(9);
    await expectConsistent(a, b);

    const [first] = await t.app.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.userId, a.id), eq(notifications.read, false)))
      .limit(1);
    await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${first.id}`, headers: a.auth });
    await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${first.id}`, headers: a.auth }); // already read: no change
    await expectConsistent(a, b);
    expect(await shown(a)).toBe(8);

    const [unread] = await t.app.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.userId, b.id), eq(notifications.read, false)))
      .limit(1);
    const [read] = await t.app.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.userId, b.id), eq(notifications.read, true)))
      .limit(1);
    await t.app.inject({ method: 'DELETE', url: `/api/v1/notifications/${unread.id}`, headers: b.auth });
    await t.app.inject({ method: 'DELETE', url: `/api/v1/notifications/${read.id}`, headers: b.auth });
    await expectConsistent(a, b);
    expect(await shown(b)).toBe(8);

    // Writers racing mark-all-read: whatever interleaving, the count matches the rows.
    await Promise.all([
      ...Array.from({ length: 10 }, (_, k) => notify(deps, { userId: a.id, type: 'mission_completed', title: `race ${k}`, message: 'm' })),
      t.app.inject({ method: 'PATCH', url: '/api/v1/notifications/mark-all-read', headers: a.auth }),
      t.app.inject({ method: 'PATCH', url: '/api/v1/notifications/mark-all-read', headers: a.auth }),
    ]);
    await expectConsistent(a, b);

    const all = await t.app.inject({ method: 'PATCH', url: '/api/v1/notifications/mark-all-read', headers: b.auth });
    expect(all.statusCode).toBe(200);
    expect(await shown(b)).toBe(0);
    await expectConsistent(a, b);
  });
});

describe('PATCH and DELETE', () => {
  it('PATCH /:id marks one read and returns it; it stays in the list', async () => {
    const u = await createUser(t.app);
    const n = await notify(deps, { userId: u.id, type: 'order_filled', title: 'a', message: 'a', data: { orderId: 'o' } });
    const res = await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${n.id}`, headers: u.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      id: n.id,
      type: 'order_filled',
      title: 'a',
      message: 'a',
      read: true,
      data: { orderId: 'o' },
      createdAt: n.createdAt.toISOString(),
    });
    const again = await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${n.id}`, headers: u.auth });
    expect(again.statusCode).toBe(200);
    const l = (await list(u.auth)).json();
    expect(l.notifications).toHaveLength(1);
    expect(l.unreadCount).toBe(0);
  });

  it("another user's, unknown or malformed id → 404 NOT_FOUND, and nothing changes", async () => {
    const owner = await createUser(t.app);
    const other = await createUser(t.app);
    const n = await notify(deps, { userId: owner.id, type: 'order_filled', title: 'a', message: 'a' });
    for (const id of [n.id, '3f1c2a4e-0000-4000-8000-000000000000', 'not-a-uuid', '1']) {
      expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${id}`, headers: other.auth }), 404, 'NOT_FOUND');
      expectProblem(await t.app.inject({ method: 'DELETE', url: `/api/v1/notifications/${id}`, headers: other.auth }), 404, 'NOT_FOUND');
    }
    const l = (await list(owner.auth)).json();
    expect(l.notifications.map((x: any) => [x.id, x.read])).toEqual([[n.id, false]]);
  });

  it("mark-all-read → { updated } counts only notifications that changed, only the caller's", async () => {
    const u = await createUser(t.app);
    const other = await createUser(t.app);
    const ns = [];
    for (let i = 0; i < 3; i++) ns.push(await notify(deps, { userId: u.id, type: 'order_filled', title: `${i}`, message: 'm' }));
    await notify(deps, { userId: other.id, type: 'order_filled', title: 'o', message: 'm' });
    await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${ns[0].id}`, headers: u.auth });
    const res = await t.app.inject({ method: 'PATCH', url: '/api/v1/notifications/mark-all-read', headers: u.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ updated: 2 });
    const again = await t.app.inject({ method: 'PATCH', url: '/api/v1/notifications/mark-all-read', headers: u.auth });
    expect(again.json()).toEqual({ updated: 0 });
    expect((await list(u.auth)).json().unreadCount).toBe(0);
    expect((await list(other.auth)).json().unreadCount).toBe(1);
  });

  it('DELETE /:id → 204 and removal is permanent', async () => {
    const u = await createUser(t.app);
    const n = await notify(deps, { userId: u.id, type: 'order_filled', title: 'a', message: 'a' });
    const res = await t.app.inject({ method: 'DELETE', url: `/api/v1/notifications/${n.id}`, headers: u.auth });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expectProblem(await t.app.inject({ method: 'DELETE', url: `/api/v1/notifications/${n.id}`, headers: u.auth }), 404, 'NOT_FOUND');
    expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${n.id}`, headers: u.auth }), 404, 'NOT_FOUND');
    expect((await list(u.auth)).json().notifications).toEqual([]);
    const outbox = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, n.id));
    expect(outbox).toEqual([]);
  });
});

describe('POST /api/v1/internal/notifications', () => {
  const post = (body: unknown, token: string | null = INTERNAL) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/notifications',
      headers: token ? { authorization: `Bearer ${token}` } : {},
      payload: body as object,
    });

  it('stores through notify: 201 with the Notification, published, listed', async () => {
    const u = await createUser(t.app);
    const rec = recordPublishes(t.app);
    const res = await post({
      userId: u.id,
      type: 'copy_trade_executed',
      title: 'Copied',
      message: 'A trade was copied',
      data: { marketId: 'pm-1' },
    });
    rec.stop();
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      type: 'copy_trade_executed',
      title: 'Copied',
      message: 'A trade was copied',
      read: false,
      data: { marketId: 'pm-1' },
    });
    expect(Object.keys(body).sort()).toEqual(['createdAt', 'data', 'id', 'message', 'read', 'title', 'type']);
    expect(new Date(body.createdAt).toISOString()).toBe(body.createdAt);
    expect(rec.events.filter((e) => e.channel === `user:${u.id}:notifications`).map((e) => e.payload.id)).toEqual([body.id]);
    expect((await list(u.auth)).json().notifications[0].id).toBe(body.id);
    const noData = await post({ userId: u.id, type: 'order_filled', title: 't', message: 'm' });
    expect(noData.json().data).toEqual({});
  });

  it('wrong or missing token → 401; a user token is not an internal token', async () => {
    const u = await createUser(t.app);
    const body = { userId: u.id, type: 'order_filled', title: 't', message: 'm' };
    expectProblem(await post(body, null), 401, 'UNAUTHORIZED');
    expectProblem(await post(body, 'wrong-token-wrong-token'), 401, 'UNAUTHORIZED');
    expectProblem(await post(body, u.token), 401, 'UNAUTHORIZED');
  });

  it('unknown user → 404; invalid bodies → 400', async () => {
    const u = await createUser(t.app);
    expectProblem(
      await post({ userId: '7d3c1f4e-1111-4222-8333-444455556666', type: 'order_filled', title: 't', message: 'm' }),
      404,
      'NOT_FOUND',
    );
    const good = { userId: u.id, type: 'order_filled', title: 't', message: 'm' };
    for (const bad of [
      { ...good, userId: 'nope' },
      { ...good, type: 'something_else' },
      { ...good, title: '' },
      { ...good, title: 'x'.repeat(201) },
      { ...good, message: undefined },
      { ...good, data: 'str' },
      { ...good, extra: 1 },
    ]) {
      expectProblem(await post(bad), 400, 'VALIDATION_ERROR');
    }
  });

  it('the whole internal tree is 404 while INTERNAL_API_TOKEN is unset', async () => {
    const other = await buildTestApp({}, { db: t.db });
    try {
      const u = await createUser(other.app);
      const res = await other.app.inject({
        method: 'POST',
        url: '/api/v1/internal/notifications',
        headers: { authorization: `Bearer ${INTERNAL}` },
        payload: { userId: u.id, type: 'order_filled', title: 't', message: 'm' },
      });
      expectProblem(res, 404, 'NOT_FOUND');
    } finally {
      await other.close();
    }
  });
});

describe('push delivery from notify', () => {
  it('a registered device gets the message through the fake Expo API; the outbox row is sent', async () => {
    const u = await createUser(t.app);
    const token = 'ExponentPushToken[notify-test-1]';
    expect(
      (await t.app.inject({ method: 'POST', url: '/api/v1/push/register', headers: u.auth, payload: { token, platform: 'ios' } }))
        .statusCode,
    ).toBe(201);
    const n = await notify(deps, {
      userId: u.id,
      type: 'order_filled',
      title: 'Filled',
      message: 'Your order filled',
      data: { orderId: 'o9' },
    });
    const row = await eventually(async () => {
      const [r] = await t.app.db
        .select()
        .from(notificationDeliveries)
        .where(and(eq(notificationDeliveries.notificationId, n.id), eq(notificationDeliveries.channel, 'push')));
      return r?.status === 'sent' ? r : undefined;
    });
    expect(row.attempts).toBe(1);
    expect(expo.messages).toEqual([
      expect.objectContaining({
        to: token,
        title: 'Filled',
        body: 'Your order filled',
        data: expect.objectContaining({ orderId: 'o9', notificationId: n.id, type: 'order_filled' }),
      }),
    ]);
  });
});
