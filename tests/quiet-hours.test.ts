import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { messengerBindings, notificationDeliveries, pushDevices } from '../drizzle/index.js';
import { buildTestApp, type TestApp } from './helpers/app.js';
import { startFakeExpo, type FakeExpo } from './fakes/expo.js';
import { startFakeTelegram, type FakeTelegram } from './fakes/telegram.js';
import { recordPublishes } from './notifications/fixtures.js';
import { createUser } from './support/users.js';
import { expectProblem } from './support/problem.js';
import { notify, type NotifyDeps } from '../src/domains/notifications/service.js';
import { drainDeliveries } from '../src/domains/notifications/delivery.js';
import { insideQuietHours, isTimeZone, localMinutes, releaseHeldDeliveries } from '../src/domains/notifications/quiet-hours.js';
import type { NotificationType } from '../src/domains/notifications/types.js';

// docs/decisions.md §14.4: quiet hours hold push and Telegram deliveries and release them as one digest per channel.
const INTERNAL = 'internal-token-quiet-hours-0123';
const internal = { authorization: `Bearer ${INTERNAL}` };
let t: TestApp;
let expo: FakeExpo;
let tg: FakeTelegram;
let deps: NotifyDeps;
/** The app's clock: every test sets it; nothing here sleeps for time to pass. */
let now = new Date('2026-01-16T04:30:00Z');

beforeAll(async () => {
  expo = await startFakeExpo();
  tg = await startFakeTelegram();
  t = await buildTestApp(
    { PUSH_API_URL: expo.url, MESSENGER_API_URL: tg.url, MESSENGER_BOT_TOKEN: tg.token, INTERNAL_API_TOKEN: INTERNAL },
    { clock: () => now, messengerChatGapMs: 0 },
  );
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: t.app.clock, publish: t.app.publish, delivery: t.app.delivery };
});
afterAll(async () => {
  await t?.close();
  await expo?.close();
  await tg?.close();
});
beforeEach(() => {
  expo.reset();
  tg.reset();
});

let seq = 0;
async function quietUser(prefs?: Record<string, unknown>) {
  const u = await createUser(t.app);
  const token = `ExponentPushToken[quiet-${++seq}-${u.id.slice(0, 8)}]`;
  const chatId = 7_000_000_000 + seq;
  await t.app.db.insert(pushDevices).values({ token, userId: u.id, platform: 'ios' });
  await t.app.db
    .insert(messengerBindings)
    .values({ messengerId: BigInt(chatId), userId: u.id, chatId: BigInt(chatId), walletType: 'connected', connectedAt: new Date() });
  if (prefs) expect((await putPrefs(u.auth, prefs)).statusCode).toBe(200);
  return { ...u, token, chatId };
}
const putPrefs = async (auth: Record<string, string>, payload: unknown) => {
  const res = await t.app.inject({ method: 'PUT', url: '/api/v1/push/preferences', headers: auth, payload: payload as object });
  await drainDeliveries(t.app.delivery); // the PUT's release kick
  return res;
};
const getPrefs = (auth: Record<string, string>) => t.app.inject({ method: 'GET', url: '/api/v1/push/preferences', headers: auth });
const send = async (userId: string, title: string, type: NotificationType = 'position_resolved') => {
  const n = await notify(deps, { userId, type, title, message: `${title} message` });
  await drainDeliveries(t.app.delivery);
  return n;
};
const sweep = async () => {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/delivery-sweep', headers: internal });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({ ok: true });
};
const pushTo = (token: string) => expo.messages.filter((m) => m.to === token);
const chatTo = (chatId: number) => tg.sent.filter((m) => String(m.chat_id) === String(chatId));
const rowsOf = (userId: string) => t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.userId, userId));
const NIGHT = { quietHours: { start: '22:00', end: '07:00', timezone: 'America/New_York' } };
const digestTitle = (n: number) => `${n} notifications while quiet hours were on`;

describe('the window on the local wall clock', () => {
  it('start inclusive, end exclusive; a window may cross midnight', () => {
    const day = { start: '09:00', end: '17:00', timezone: 'UTC' };
    expect(insideQuietHours(day, new Date('2026-05-01T08:59:00Z'))).toBe(false);
    expect(insideQuietHours(day, new Date('2026-05-01T09:00:00Z'))).toBe(true);
    expect(insideQuietHours(day, new Date('2026-05-01T16:59:59Z'))).toBe(true);
    expect(insideQuietHours(day, new Date('2026-05-01T17:00:00Z'))).toBe(false);
    const night = NIGHT.quietHours; // New York, EST (UTC−5) in January
    expect(insideQuietHours(night, new Date('2026-01-16T02:59:00Z'))).toBe(false); // 21:59
    expect(insideQuietHours(night, new Date('2026-01-16T03:00:00Z'))).toBe(true); // 22:00
    expect(insideQuietHours(night, new Date('2026-01-16T04:30:00Z'))).toBe(true); // 23:30
    expect(insideQuietHours(night, new Date('2026-01-16T08:00:00Z'))).toBe(true); // 03:00
    expect(insideQuietHours(night, new Date('2026-01-16T11:59:00Z'))).toBe(true); // 06:59
    expect(insideQuietHours(night, new Date('2026-01-16T12:00:00Z'))).toBe(false); // 07:00
    expect(insideQuietHours(null, new Date())).toBe(false);
  });

  it('follows DST: New York springs forward on 2026-03-08, Berlin falls back on 2026-10-25', () => {
    const ny = NIGHT.quietHours;
    // 10:30Z is 06:30 EDT (inside); 11:30Z is 07:30 EDT: over, though a fixed EST offset would say 06:30.
    expect(localMinutes(new Date('2026-03-08T11:30:00Z'), 'America/New_York')).toBe(7 * 60 + 30);
    expect(insideQuietHours(ny, new Date('2026-03-08T10:30:00Z'))).toBe(true);
    expect(insideQuietHours(ny, new Date('2026-03-08T11:30:00Z'))).toBe(false);
    // Before the change: 06:30Z is 01:30 EST, inside.
    expect(insideQuietHours(ny, new Date('2026-03-08T06:30:00Z'))).toBe(true);
    const berlin = { start: '22:00', end: '07:00', timezone: 'Europe/Berlin' };
    // 05:30Z on 2026-10-25 is 06:30 CET (inside); a fixed CEST offset would say 07:30 (outside).
    expect(localMinutes(new Date('2026-10-25T05:30:00Z'), 'Europe/Berlin')).toBe(6 * 60 + 30);
    expect(insideQuietHours(berlin, new Date('2026-10-25T05:30:00Z'))).toBe(true);
    expect(insideQuietHours(berlin, new Date('2026-10-25T06:00:00Z'))).toBe(false); // 07:00 CET
    // The day before (CEST): 05:30Z is 07:30, outside.
    expect(insideQuietHours(berlin, new Date('2026-10-24T05:30:00Z'))).toBe(false);
  });

  it('IANA zones only', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Mars/Olympus_Mons')).toBe(false);
    expect(isTimeZone('+01:00')).toBe(false);
    expect(isTimeZone('')).toBe(false);
  });
});

describe('preferences', () => {
  it('GET shows quietHours null and urgentTypes [] by default; PUT sets, merges and clears them', async () => {
    const u = await createUser(t.app);
    expect((await getPrefs(u.auth)).json()).toMatchObject({ enabled: true, quietHours: null, urgentTypes: [] });
    let res = await putPrefs(u.auth, { ...NIGHT, urgentTypes: ['order_filled', 'price_alert_triggered', 'order_filled'] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ ...NIGHT, urgentTypes: ['order_filled', 'price_alert_triggered'] });
    // Other fields leave them alone.
    res = await putPrefs(u.auth, { types: { mission_completed: false } });
    expect(res.json()).toMatchObject({ ...NIGHT, urgentTypes: ['order_filled', 'price_alert_triggered'] });
    expect(res.json().types.mission_completed).toBe(false);
    // The zone is stored as given.
    res = await putPrefs(u.auth, { quietHours: { start: '23:15', end: '06:45', timezone: 'asia/tokyo' } });
    expect(res.json().quietHours).toEqual({ start: '23:15', end: '06:45', timezone: 'asia/tokyo' });
    res = await putPrefs(u.auth, { quietHours: null, urgentTypes: [] });
    expect(res.json()).toMatchObject({ quietHours: null, urgentTypes: [] });
    expect((await getPrefs(u.auth)).json()).toMatchObject({ quietHours: null, urgentTypes: [], types: { mission_completed: false } });
  });

  it('bad times, start = end, unknown zones and unknown types → 400 problem+json, nothing stored', async () => {
    const u = await createUser(t.app);
    const ok = { start: '22:00', end: '07:00', timezone: 'Europe/Berlin' };
    for (const bad of [
      { quietHours: { ...ok, start: '24:00' } },
      { quietHours: { ...ok, start: '7:00' } },
      { quietHours: { ...ok, end: '12:60' } },
      { quietHours: { ...ok, end: '12:00:00' } },
      { quietHours: { ...ok, end: '22:00' } },
      { quietHours: { ...ok, timezone: 'Mars/Olympus_Mons' } },
      { quietHours: { ...ok, timezone: '+01:00' } },
      { quietHours: { ...ok, timezone: '' } },
      { quietHours: { start: '22:00', end: '07:00' } },
      { quietHours: { ...ok, extra: 1 } },
      { quietHours: '22:00-07:00' },
      { urgentTypes: ['order_filled', 'not_a_type'] },
      { urgentTypes: 'order_filled' },
    ]) {
      const body = expectProblem(await putPrefs(u.auth, bad), 400, 'VALIDATION_ERROR');
      expect(body.errors?.length).toBeGreaterThan(0);
    }
    expect((await getPrefs(u.auth)).json()).toMatchObject({ quietHours: null, urgentTypes: [] });
  });
});

describe('holding and releasing', () => {
  it('inside the window push and Telegram are held while in-app and the stream are not; after 07:00 one digest per channel', async () => {
    now = new Date('2026-01-16T04:30:00Z'); // 23:30 in New York
    const u = await quietUser(NIGHT);
    const published = recordPublishes(t.app);
    const a = await send(u.id, 'Alpha');
    now = new Date('2026-01-16T04:31:00Z');
    await send(u.id, 'Bravo', 'order_filled');
    now = new Date('2026-01-16T08:00:00Z'); // 03:00
    await send(u.id, 'Charlie');
    now = new Date('2026-01-16T08:05:00Z');
    await send(u.id, 'Delta', 'mission_completed');
    published.stop();

    expect(pushTo(u.token)).toHaveLength(0);
    expect(chatTo(u.chatId)).toHaveLength(0);
    // In-app and the live stream are unaffected.
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: u.auth });
    expect(list.json().notifications.map((n: { title: string }) => n.title)).toEqual(['Delta', 'Charlie', 'Bravo', 'Alpha']);
    expect(published.events.filter((e) => e.event === 'notification' && e.payload.title)).toHaveLength(4);
    // Held in the ledger: pending with heldAt, one row per channel target.
    const held = await rowsOf(u.id);
    expect(held).toHaveLength(8);
    for (const r of held) expect(r).toMatchObject({ status: 'pending', attempts: 0 });
    for (const r of held) expect(r.heldAt).not.toBeNull();
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/internal/deliveries?status=pending&limit=100', headers: internal });
    const mine = listed.json().deliveries.filter((d: { userId: string }) => d.userId === u.id);
    expect(mine).toHaveLength(8);
    expect(mine.every((d: { heldAt: string | null }) => typeof d.heldAt === 'string')).toBe(true);
    const summary = (await t.app.inject({ method: 'GET', url: '/api/v1/internal/deliveries/summary', headers: internal })).json();
    for (const c of summary.channels) expect(c.held).toBeGreaterThanOrEqual(4);

    // Still inside: the sweep releases nothing and does not even claim the held rows again.
    now = new Date('2026-01-16T11:59:30Z'); // 06:59:30
    await sweep();
    expect(pushTo(u.token)).toHaveLength(0);
    expect(chatTo(u.chatId)).toHaveLength(0);
    const stillHeld = await rowsOf(u.id);
    expect(stillHeld.map((r) => [r.id, r.status, r.heldAt?.toISOString(), r.updatedAt.toISOString()]).sort()).toEqual(
      held.map((r) => [r.id, r.status, r.heldAt?.toISOString(), r.updatedAt.toISOString()]).sort(),
    );

    now = new Date('2026-01-16T12:00:10Z'); // 07:00:10: the window is over
    await sweep();
    const push = pushTo(u.token);
    expect(push).toHaveLength(1);
    expect(push[0]).toMatchObject({ title: digestTitle(4), body: 'Alpha\nBravo\nCharlie' });
    expect(push[0].data).toMatchObject({ type: 'quiet_hours_digest', count: 4 });
    const chat = chatTo(u.chatId);
    expect(chat).toHaveLength(1);
    expect(chat[0].text).toBe(`${digestTitle(4)}\nAlpha\nBravo\nCharlie`);

    // The held rows are settled as sent in the digest; the digest rows are sent; nothing is stored in-app.
    const after = await rowsOf(u.id);
    const settled = after.filter((r) => r.notificationId !== null);
    expect(settled.map((r) => [r.status, r.lastError])).toEqual(Array(8).fill(['skipped', 'quiet hours: sent in a digest']));
    const digests = after.filter((r) => r.notificationId === null);
    expect(digests.map((r) => r.channel).sort()).toEqual(['messenger', 'push']);
    for (const d of digests) expect(d).toMatchObject({ status: 'sent', digest: { count: 4 } });
    const sentDigests = await t.app.inject({ method: 'GET', url: '/api/v1/internal/deliveries?status=sent&limit=100', headers: internal });
    expect(
      sentDigests
        .json()
        .deliveries.filter((d: { userId: string; notificationId: string | null }) => d.userId === u.id && d.notificationId === null),
    ).toEqual(expect.arrayContaining([expect.objectContaining({ digest: { count: 4 }, heldAt: null })]));
    const again = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: u.auth });
    expect(again.json().notifications).toHaveLength(4);
    expect(a.id).toBe(again.json().notifications[3].id);

    // Exactly once: a later sweep sends nothing more, and a new notification goes out at once.
    await sweep();
    await send(u.id, 'Echo');
    expect(pushTo(u.token).map((m) => m.title)).toEqual([digestTitle(4), 'Echo']);
    expect(chatTo(u.chatId)).toHaveLength(2);
  });

  it('urgent types are sent at once inside the window and are not counted in the digest', async () => {
    now = new Date('2026-01-16T05:00:00Z'); // 00:00 in New York
    const u = await quietUser({ ...NIGHT, urgentTypes: ['order_filled'] });
    await send(u.id, 'Urgent fill', 'order_filled');
    expect(pushTo(u.token).map((m) => m.title)).toEqual(['Urgent fill']);
    expect(chatTo(u.chatId).map((m) => m.text)).toEqual(['Urgent fill\nUrgent fill message']);
    await send(u.id, 'Quiet one');
    expect(pushTo(u.token)).toHaveLength(1);
    now = new Date('2026-01-16T12:01:00Z');
    await sweep();
    expect(pushTo(u.token).map((m) => [m.title, m.body])).toEqual([
      ['Urgent fill', 'Urgent fill message'],
      [digestTitle(1), 'Quiet one'],
    ]);
    expect(chatTo(u.chatId).map((m) => m.text)).toEqual(['Urgent fill\nUrgent fill message', `${digestTitle(1)}\nQuiet one`]);
  });

  it('DST: on 2026-03-08 New York leaves its 22:00–07:00 window at 11:00Z, an hour before a fixed EST offset would', async () => {
    now = new Date('2026-03-08T10:30:00Z'); // 06:30 EDT
    const u = await quietUser(NIGHT);
    await send(u.id, 'Before seven');
    expect(pushTo(u.token)).toHaveLength(0);
    now = new Date('2026-03-08T11:30:00Z'); // 07:30 EDT (06:30 on a fixed EST clock)
    await send(u.id, 'After seven');
    expect(pushTo(u.token).map((m) => m.title)).toEqual(['After seven']);
    await sweep();
    expect(pushTo(u.token).map((m) => m.title)).toEqual(['After seven', digestTitle(1)]);
    expect(chatTo(u.chatId).map((m) => m.text)).toEqual(['After seven\nAfter seven message', `${digestTitle(1)}\nBefore seven`]);
  });

  it('DST: on 2026-10-25 Berlin is still inside its window at 05:30Z (06:30 CET, 07:30 on a fixed CEST clock)', async () => {
    now = new Date('2026-10-25T05:30:00Z');
    const u = await quietUser({ quietHours: { start: '22:00', end: '07:00', timezone: 'Europe/Berlin' } });
    await send(u.id, 'Early');
    expect(pushTo(u.token)).toHaveLength(0);
    await sweep();
    expect(pushTo(u.token)).toHaveLength(0);
    now = new Date('2026-10-25T06:00:30Z'); // 07:00 CET
    await sweep();
    expect(pushTo(u.token).map((m) => m.title)).toEqual([digestTitle(1)]);
  });

  it('setting quietHours to null releases at once (the PUT kicks the release); so does moving the window away from now', async () => {
    now = new Date('2026-01-16T04:30:00Z');
    const u = await quietUser(NIGHT);
    await send(u.id, 'One');
    now = new Date('2026-01-16T04:30:01Z');
    await send(u.id, 'Two');
    expect(pushTo(u.token)).toHaveLength(0);
    expect((await putPrefs(u.auth, { quietHours: null })).json().quietHours).toBeNull();
    expect(pushTo(u.token).map((m) => [m.title, m.body])).toEqual([[digestTitle(2), 'One\nTwo']]);
    expect(chatTo(u.chatId).map((m) => m.text)).toEqual([`${digestTitle(2)}\nOne\nTwo`]);

    const v = await quietUser(NIGHT);
    await send(v.id, 'Three');
    // Still inside after the change: nothing released.
    await putPrefs(v.auth, { quietHours: { start: '23:00', end: '06:00', timezone: 'America/New_York' } });
    expect(pushTo(v.token)).toHaveLength(0);
    // Now outside (23:30 is not in 01:00–02:00).
    await putPrefs(v.auth, { quietHours: { start: '01:00', end: '02:00', timezone: 'America/New_York' } });
    expect(pushTo(v.token).map((m) => m.title)).toEqual([digestTitle(1)]);
  });

  it('with push disabled the held push rows are dropped (preferences) and no push digest goes out; Telegram still gets one', async () => {
    now = new Date('2026-01-16T04:30:00Z');
    const u = await quietUser(NIGHT);
    await send(u.id, 'Held');
    await putPrefs(u.auth, { enabled: false });
    now = new Date('2026-01-16T12:30:00Z');
    await sweep();
    expect(pushTo(u.token)).toHaveLength(0);
    expect(chatTo(u.chatId).map((m) => m.text)).toEqual([`${digestTitle(1)}\nHeld`]);
    const rows = await rowsOf(u.id);
    expect(rows.find((r) => r.channel === 'push' && r.notificationId !== null)).toMatchObject({
      status: 'skipped',
      lastError: 'preferences',
    });
    expect(rows.filter((r) => r.channel === 'push' && r.notificationId === null)).toHaveLength(0);
  });

  it('two releases at once write one digest per target', async () => {
    now = new Date('2026-01-16T04:30:00Z');
    const u = await quietUser(NIGHT);
    await send(u.id, 'Once');
    now = new Date('2026-01-16T12:30:00Z');
    const runs = await Promise.all([releaseHeldDeliveries(deps), releaseHeldDeliveries(deps), releaseHeldDeliveries(deps)]);
    const mine = (await rowsOf(u.id)).filter((r) => r.notificationId === null);
    expect(mine).toHaveLength(2);
    expect(runs.reduce((n, r) => n + r.released, 0)).toBeGreaterThanOrEqual(2);
    const digestRows = await t.app.db
      .select()
      .from(notificationDeliveries)
      .where(and(eq(notificationDeliveries.userId, u.id), eq(notificationDeliveries.status, 'pending')));
    expect(digestRows).toHaveLength(2);
    await sweep();
    expect(pushTo(u.token).map((m) => m.title)).toEqual([digestTitle(1)]);
    expect(chatTo(u.chatId)).toHaveLength(1);
  });
});
