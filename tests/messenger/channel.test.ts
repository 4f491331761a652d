import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeServer } from '../fakes/server.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { messengerBindings } from '../../drizzle/messenger.js';
import { pushPreferences } from '../../drizzle/push.js';
import { messengerChannel } from '../../src/domains/messenger/channel.js';
import { testConfig } from '../../src/config.js';
import type { ServiceDeps } from '../../src/lib/deps.js';
import type { NotificationType, StoredNotification } from '../../src/domains/notifications/types.js';
import { bindingOf, createUser } from './helpers.js';

let t: TestApp;
let tg: FakeTelegram;
let deps: ServiceDeps;
let nextChat = 700_000_000;

beforeAll(async () => {
  tg = await startFakeTelegram();
  t = await buildTestApp({ MESSENGER_API_URL: tg.url, MESSENGER_BOT_TOKEN: tg.token });
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: () => new Date() };
});
afterAll(async () => {
  await t?.close();
  await tg?.close();
});
beforeEach(() => tg.reset());

function notification(userId: string, type: NotificationType = 'order_filled'): StoredNotification {
  return {
    id: randomUUID(),
    userId,
    type,
    title: 'Order filled',
    message: 'Your order for 10 YES at 0.42 was filled.',
    read: false,
    data: { orderId: 'o-1', marketId: 'm-1' },
    createdAt: new Date(),
  };
}

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

describe('messengerChannel.deliver', () => {
  it('sends title and message to the bound chat', async () => {
    const { user, chatId } = await boundUser();
    const n = notification(user.id);
    expect(messengerChannel.name).toBe('messenger');
    expect(await messengerChannel.deliver(deps, n)).toBe('sent');
    expect(tg.sent).toEqual([{ chat_id: chatId, text: `${n.title}\n${n.message}` }]);
  });

  it('no binding → skipped, nothing sent', async () => {
    const user = await createUser(t.app);
    expect(await messengerChannel.deliver(deps, notification(user.id))).toBe('skipped');
    expect(tg.attempts).toHaveLength(0);
  });

  it('a type the user turned off → skipped; other types still go', async () => {
    const { user } = await boundUser();
    await t.app.db
      .insert(pushPreferences)
      .values({ userId: user.id, enabled: false, types: { order_filled: false, mission_completed: true } });
    expect(await messengerChannel.deliver(deps, notification(user.id, 'order_filled'))).toBe('skipped');
    expect(tg.attempts).toHaveLength(0);
    expect(await messengerChannel.deliver(deps, notification(user.id, 'mission_completed'))).toBe('sent');
    // Types not named default to allowed; `enabled` governs mobile push only.
    expect(await messengerChannel.deliver(deps, notification(user.id, 'price_alert_triggered'))).toBe('sent');
    expect(tg.sent).toHaveLength(2);
  });

  it('Telegram 403 (bot blocked) → the binding is removed and the outcome is skipped', async () => {
    const { user, chatId } = await boundUser();
    const other = await boundUser();
    tg.block(chatId);
    expect(await messengerChannel.deliver(deps, notification(user.id))).toBe('skipped');
    expect(tg.attempts).toHaveLength(1);
    expect(await bindingOf(t.app, user.id)).toBeUndefined();
    expect(await bindingOf(t.app, other.user.id)).toBeDefined();
    // Nothing left to deliver to afterwards.
    expect(await messengerChannel.deliver(deps, notification(user.id))).toBe('skipped');
    expect(tg.attempts).toHaveLength(1);
  });

  it('429 and 5xx throw (the outbox retries) and keep the binding', async () => {
    const { user } = await boundUser();
    tg.floodNext(1);
    await expect(messengerChannel.deliver(deps, notification(user.id))).rejects.toMatchObject({
      name: 'TelegramApiError',
      errorCode: 429,
      retryAfter: 1,
    });
    tg.server.failNext(1, 502, { ok: false, error_code: 502, description: 'Bad Gateway' });
    await expect(messengerChannel.deliver(deps, notification(user.id))).rejects.toMatchObject({ errorCode: 502 });
    expect(await bindingOf(t.app, user.id)).toBeDefined();
    // One attempt per delivery: the outbox owns the backoff.
    expect(tg.server.requests).toHaveLength(2);
    expect(await messengerChannel.deliver(deps, notification(user.id))).toBe('sent');
  });

  it('an unreachable Telegram throws; the error never carries the bot token', async () => {
    const { user } = await boundUser();
    const dead = await startFakeServer();
    const url = dead.url;
    await dead.close();
    const offline: ServiceDeps = { ...deps, config: testConfig({ MESSENGER_API_URL: url, MESSENGER_BOT_TOKEN: tg.token }) };
    const err = await messengerChannel.deliver(offline, notification(user.id)).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).not.toContain(tg.token);
    expect(await bindingOf(t.app, user.id)).toBeDefined();
  });

  it('long messages are cut to Telegram’s 4096 characters', async () => {
    const { user } = await boundUser();
    const n = { ...notification(user.id), message: 'm'.repeat(5000) };
    expect(await messengerChannel.deliver(deps, n)).toBe('sent');
    expect(tg.sent[0].text.length).toBe(4096);
  });

  it('no bot token configured → skipped without a call', async () => {
    const { user } = await boundUser();
    const noBot: ServiceDeps = { ...deps, config: testConfig({ MESSENGER_API_URL: tg.url }) };
    expect(await messengerChannel.deliver(noBot, notification(user.id))).toBe('skipped');
    expect(tg.attempts).toHaveLength(0);
  });
});
