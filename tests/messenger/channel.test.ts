import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { and, eq } from 'drizzle-orm';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeServer } from '../fakes/server.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { messengerBindings } from '../../drizzle/messenger.js';
import { notificationDeliveries, pushPreferences } from '../../drizzle/index.js';
import { testConfig } from '../../src/config.js';
import { drainDeliveries, processDueDeliveries } from '../../src/domains/notifications/delivery.js';
import { notify, type NotifyDeps } from '../../src/domains/notifications/service.js';
import type { NotificationType } from '../../src/domains/notifications/types.js';
import { CHAT_GAP_MS } from '../../src/domains/messenger/flood.js';
import { BOT_USERNAME, bindingOf, postUpdate, textUpdate, WEBHOOK_SECRET } from './helpers.js';
import { createUser } from '../support/users.js';
import { eventually } from '../support/eventually.js';

// docs/decisions.md §13.3: the messenger leg of the delivery ledger, against the fake Bot API.
let t: TestApp;
let tg: FakeTelegram;
let deps: NotifyDeps;
let nextChat = 700_000_000 + Math.floor(Math.random() * 1_000_000) * 100;

beforeAll(async () => {
  tg = await startFakeTelegram();
  t = await buildTestApp({
    MESSENGER_API_URL: tg.url,
    MESSENGER_BOT_TOKEN: tg.token,
    MESSENGER_WEBHOOK_SECRET: WEBHOOK_SECRET,
    MESSENGER_BOT_USERNAME: BOT_USERNAME,
  });
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: t.app.clock, publish: t.app.publish, delivery: t.app.delivery };
});
afterAll(async () => {
  await t?.close();
  await tg?.close();
});
beforeEach(() => tg.reset());

/** A user bound to a chat (ids above 2^32, as Telegram's can be). */
async function boundUser() {
  const user = await createUser(t.app);
  const chatId = 5_000_000_000 + ++nextChat;
  await t.app.db.insert(messengerBindings).values({
    messengerId: BigInt(chatId),
    userId: user.id,
    chatId: BigInt(chatId),
    walletType: 'connected',
    connectedAt: new Date(),
  });
  return { user, chatId };
}

const send = async (userId: string, type: NotificationType = 'order_filled', d: NotifyDeps = deps) => {
  const n = await notify(d, { userId, type, title: 'Order filled', message: `Your order ${Math.random()} was filled.` });
  await drainDeliveries(d.delivery);
  return n;
};
const rowOf = async (notificationId: string) => {
  const [r] = await t.app.db
    .select()
    .from(notificationDeliveries)
    .where(and(eq(notificationDeliveries.notificationId, notificationId), eq(notificationDeliveries.channel, 'messenger')));
  return r;
};
/** Flood control runs on the real clock (Telegram's): a resend to the same chat waits out its second. */
const chatQuiet = () => new Promise((r) => setTimeout(r, CHAT_GAP_MS));
const at = (ms: number): NotifyDeps => ({ ...deps, clock: () => new Date(Date.now() + ms) });

describe('the messenger ledger rows', () => {
  it('one row per notification for the bound chat; sent with title and message', async () => {
    const { user, chatId } = await boundUser();
    const n = await send(user.id);
    expect(await rowOf(n.id)).toMatchObject({ status: 'sent', attempts: 1, targetKind: 'chat', target: String(chatId) });
    expect(tg.sent).toEqual([{ chat_id: chatId, text: `${n.title}\n${n.message}` }]);
  });

  it('no binding → no row, nothing sent', async () => {
    const user = await createUser(t.app);
    const n = await send(user.id);
    expect(await rowOf(n.id)).toBeUndefined();
    expect(tg.attempts).toHaveLength(0);
  });

  it('a type the user turned off → skipped; other types still go', async () => {
    const { user } = await boundUser();
    await t.app.db
      .insert(pushPreferences)
      .values({ userId: user.id, enabled: false, types: { order_filled: false, mission_completed: true } });
    const off = await send(user.id, 'order_filled');
    expect(await rowOf(off.id)).toMatchObject({ status: 'skipped', lastError: 'preferences' });
    expect(tg.attempts).toHaveLength(0);
    // Types not named default to allowed; `enabled` governs mobile push only.
    expect(await rowOf((await send(user.id, 'mission_completed', at(2_000))).id)).toMatchObject({ status: 'sent' });
  });

  it('403 (bot blocked) → the binding is removed and the row is skipped', async () => {
    const { user, chatId } = await boundUser();
    const other = await boundUser();
    tg.block(chatId);
    const n = await send(user.id);
    expect(await rowOf(n.id)).toMatchObject({ status: 'skipped' });
    expect((await rowOf(n.id)).lastError).toMatch(/chat unbound.*403/);
    expect(tg.attempts).toHaveLength(1);
    expect(await bindingOf(t.app, user.id)).toBeUndefined();
    expect(await bindingOf(t.app, other.user.id)).toBeDefined();
  });

  it('429 holds the chat for retry_after in the ledger (every pending row of it), then delivers', async () => {
    const { user, chatId } = await boundUser();
    tg.floodNext(1, 30);
    const n = await send(user.id);
    const row = await rowOf(n.id);
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });
    expect(row.lastError).toMatch(/429/);
    expect(row.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(Date.now() + 29_000);
    // A second notification to the same chat waits for the hold too (it is not due before it).
    const second = await notify(deps, { userId: user.id, type: 'order_filled', title: 'Second', message: 'm' });
    await drainDeliveries(t.app.delivery);
    const held = await rowOf(second.id);
    expect(held).toMatchObject({ status: 'pending', attempts: 0 });
    expect(held.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(Date.now() + 29_000);
    expect(tg.sent).toHaveLength(0);
    // Not due 10 s later; due after the hold.
    expect((await processDueDeliveries(at(10_000), { notificationIds: [n.id] })).claimed).toBe(0);
    await chatQuiet();
    expect(await processDueDeliveries(at(31_000), { notificationIds: [n.id] })).toMatchObject({ claimed: 1, sent: 1 });
    expect(tg.sent.map((m) => m.chat_id)).toEqual([chatId]);
    expect(tg.violations).toEqual([]);
    expect(await bindingOf(t.app, user.id)).toBeDefined();
  });

  it('5xx and an unreachable Telegram are retried with backoff; errors never carry the bot token', async () => {
    const { user } = await boundUser();
    tg.server.failNext(1, 502, { ok: false, error_code: 502, description: 'Bad Gateway' });
    const n = await send(user.id);
    expect(await rowOf(n.id)).toMatchObject({ status: 'pending', attempts: 1 });
    await chatQuiet();
    expect(await processDueDeliveries(at(30 * 60_000), { notificationIds: [n.id] })).toMatchObject({ sent: 1 });

    const other = await boundUser();
    const dead = await startFakeServer();
    await dead.close();
    const offline: NotifyDeps = { ...deps, config: testConfig({ MESSENGER_API_URL: dead.url, MESSENGER_BOT_TOKEN: tg.token }) };
    const m = await send(other.user.id, 'order_filled', offline);
    const row = await rowOf(m.id);
    expect(row).toMatchObject({ status: 'pending', attempts: 1 });
    expect(row.lastError).not.toContain(tg.token);
    expect(row.lastError).toMatch(/unreachable/);
  });

  it('400 with migrate_to_chat_id moves the binding and resends once at once; a second migration fails the row', async () => {
    const { user, chatId } = await boundUser();
    const to = -(1_000_000_000_000 + ++nextChat);
    tg.migrate(chatId, to);
    const n = await send(user.id);
    const row = await rowOf(n.id);
    expect(row).toMatchObject({ status: 'pending', target: String(to) });
    expect(row.nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now() + 60_000);
    expect((await bindingOf(t.app, user.id))?.chatId).toBe(BigInt(to));
    expect(await processDueDeliveries(at(1_500), { notificationIds: [n.id] })).toMatchObject({ sent: 1 });
    expect(tg.sent.map((m) => m.chat_id)).toEqual([to]);

    // The new chat migrates again: resent once only, then a dead letter.
    const again = await boundUser();
    const first = -(1_000_000_000_000 + ++nextChat);
    const second = -(1_000_000_000_000 + ++nextChat);
    tg.migrate(again.chatId, first);
    tg.migrate(first, second);
    const m = await send(again.user.id);
    await processDueDeliveries(at(1_500), { notificationIds: [m.id] });
    expect(await rowOf(m.id)).toMatchObject({ status: 'failed', target: String(first) });
  });

  it('any other 400 is failed at once', async () => {
    const { user, chatId } = await boundUser();
    tg.reject(chatId, 'message text is malformed');
    const n = await send(user.id);
    expect(await rowOf(n.id)).toMatchObject({ status: 'failed', attempts: 1 });
    expect(tg.attempts).toHaveLength(1);
  });

  it('long messages are cut to Telegram’s 4096 characters', async () => {
    const { user } = await boundUser();
    await notify(deps, { userId: user.id, type: 'order_filled', title: 'Long', message: 'm'.repeat(5000) });
    await drainDeliveries(t.app.delivery);
    expect(tg.sent[0].text.length).toBe(4096);
  });

  it('no bot token configured → skipped without a call', async () => {
    const { user } = await boundUser();
    const noBot: NotifyDeps = { ...deps, config: testConfig({ MESSENGER_API_URL: tg.url }) };
    const n = await send(user.id, 'order_filled', noBot);
    expect(await rowOf(n.id)).toMatchObject({ status: 'skipped', lastError: 'MESSENGER_BOT_TOKEN is unset' });
    expect(tg.attempts).toHaveLength(0);
  });
});

describe('flood control', () => {
  it('one message per second per chat: the rest wait in the ledger (not attempted), and all arrive', async () => {
    const { user, chatId } = await boundUser();
    const ns = [];
    for (let i = 0; i < 3; i++) ns.push(await notify(deps, { userId: user.id, type: 'order_filled', title: `F${i}`, message: 'm' }));
    await drainDeliveries(t.app.delivery);
    const rows = await Promise.all(ns.map((n) => rowOf(n.id)));
    expect(rows.filter((r) => r.status === 'sent')).toHaveLength(1);
    // Deferred rows were not attempted.
    expect(rows.filter((r) => r.status === 'pending').map((r) => r.attempts)).toEqual([0, 0]);
    const notificationIds = ns.map((n) => n.id);
    await eventually(
      async () => {
        await processDueDeliveries(deps, { notificationIds });
        return tg.sent.length >= 3;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: 'three messages sent' },
    );
    expect(tg.sent.map((m) => m.chat_id)).toEqual([chatId, chatId, chatId]);
    expect(tg.violations).toEqual([]);
  });

  it('the bot never sends more than its per-second budget', async () => {
    const users = await Promise.all(Array.from({ length: 40 }, () => boundUser()));
    tg.botLimit = 25;
    for (const { user } of users) await notify(deps, { userId: user.id, type: 'order_filled', title: 'Bulk', message: 'm' });
    await drainDeliveries(t.app.delivery);
    await eventually(
      async () => {
        await processDueDeliveries(deps);
        return tg.sent.length >= 40;
      },
      { timeoutMs: 15_000, intervalMs: 100, what: '40 messages sent' },
    );
    expect(tg.sent).toHaveLength(40);
    expect(tg.violations).toEqual([]);
  });

  it('command replies share the chat’s budget with notifications', async () => {
    const { user, chatId } = await boundUser();
    await notify(deps, { userId: user.id, type: 'order_filled', title: 'Before the command', message: 'm' });
    await drainDeliveries(t.app.delivery);
    // Two commands right after a notification: each reply waits for the chat's next second.
    for (const cmd of ['/status', '/help']) expect((await postUpdate(t.app, textUpdate(chatId, cmd))).statusCode).toBe(200);
    await eventually(() => tg.sent.length >= 3, { timeoutMs: 10_000, intervalMs: 100, what: 'three messages sent' });
    expect(tg.sent.map((m) => m.chat_id)).toEqual([chatId, chatId, chatId]);
    expect(tg.violations).toEqual([]);
  });
});
