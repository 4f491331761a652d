import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { messengerBindings } from '../../drizzle/messenger.js';
import { createUser } from '../support/users.js';
import { eventually } from '../support/eventually.js';

const INTERNAL = 'internal-token-internal-token';
let t: TestApp;
let tg: FakeTelegram;

beforeAll(async () => {
  tg = await startFakeTelegram();
  t = await buildTestApp({ MESSENGER_API_URL: tg.url, MESSENGER_BOT_TOKEN: tg.token, INTERNAL_API_TOKEN: INTERNAL });
});
afterAll(async () => {
  await t?.close();
  await tg?.close();
});

describe('notify → messenger', () => {
  it('a notification raised by another service reaches the bound chat through the outbox', async () => {
    const user = await createUser(t.app);
    const chatId = 6_000_000_123;
    await t.app.db
      .insert(messengerBindings)
      .values({ messengerId: BigInt(chatId), userId: user.id, chatId: BigInt(chatId), walletType: 'connected', connectedAt: new Date() });
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/notifications',
      headers: { authorization: `Bearer ${INTERNAL}` },
      payload: { userId: user.id, type: 'position_resolved', title: 'Resolved', message: 'Your position on X resolved YES' },
    });
    expect(res.statusCode).toBe(201);
    let sent = tg.sent.filter((m) => String(m.chat_id) === String(chatId));
    for (let i = 0; i < 100 && sent.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      sent = tg.sent.filter((m) => String(m.chat_id) === String(chatId));
    }
    expect(sent).toHaveLength(1);
    expect(sent[0].text).toContain('Resolved');
    expect(sent[0].text).toContain('Your position on X resolved YES');
  });

  it('two notifications to one chat within a second both arrive within 3 s with JOBS=off (decisions §13.3)', async () => {
    const user = await createUser(t.app);
    const chatId = 6_000_000_456;
    await t.app.db
      .insert(messengerBindings)
      .values({ messengerId: BigInt(chatId), userId: user.id, chatId: BigInt(chatId), walletType: 'connected', connectedAt: new Date() });
    const started = Date.now();
    for (const title of ['First', 'Second']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/internal/notifications',
        headers: { authorization: `Bearer ${INTERNAL}` },
        payload: { userId: user.id, type: 'position_resolved', title, message: 'Paced by the chat limit' },
      });
      expect(res.statusCode).toBe(201);
    }
    const ofChat = () => tg.sent.filter((m) => String(m.chat_id) === String(chatId));
    await eventually(() => ofChat().length >= 2, { timeoutMs: 3_000 - (Date.now() - started), intervalMs: 50, what: 'both messages sent' });
    // Both within 3 s, one a slot after the other; which one the chat's first slot goes to is
    // whichever delivery claims it first (each notify kicks its own delivery in the background).
    expect(
      ofChat()
        .map((m) => m.text.split('\n')[0])
        .sort(),
    ).toEqual(['First', 'Second']);
  });
});
