import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { messengerLinkCodes, messengerUpdates } from '../../drizzle/messenger.js';
import { hashLinkCode } from '../../src/domains/messenger/service.js';
import {
  BOT_USERNAME,
  WEBHOOK,
  WEBHOOK_SECRET,
  bindingOf,
  bindingOfMessenger,
  countRows,
  newUpdateId,
  postUpdate,
  textUpdate,
} from './helpers.js';
import { createUser, type TestUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

let t: TestApp;
let tg: FakeTelegram;
let clockOffsetMs = 0;
let nextTelegramUser = 500_000_000;
const telegramUser = () => ++nextTelegramUser;

beforeAll(async () => {
  tg = await startFakeTelegram();
  t = await buildTestApp(
    {
      MESSENGER_API_URL: tg.url,
      MESSENGER_BOT_TOKEN: tg.token,
      MESSENGER_WEBHOOK_SECRET: WEBHOOK_SECRET,
      MESSENGER_BOT_USERNAME: BOT_USERNAME,
    },
    // Commands here come faster than Telegram's 1 per second per chat; flood control has its own tests (channel.test.ts).
    { clock: () => new Date(Date.now() + clockOffsetMs), messengerChatGapMs: 0 },
  );
});
afterAll(async () => {
  await t?.close();
  await tg?.close();
});
beforeEach(() => {
  tg.reset();
  clockOffsetMs = 0;
});

async function issueCode(user: TestUser) {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/messenger-bot/link', headers: { authorization: `Bearer ${user.token}` } });
  expect(res.statusCode).toBe(201);
  return res.json<{ code: string; deepLink: string; expiresAt: string }>();
}

/** Links a fresh user to a fresh Telegram id through the real flow. */
async function linkedPair() {
  const user = await createUser(t.app);
  const tgId = telegramUser();
  const { code } = await issueCode(user);
  const res = await postUpdate(t.app, textUpdate(tgId, `/start ${code}`));
  expect(res.statusCode).toBe(200);
  expect(await bindingOf(t.app, user.id)).toMatchObject({ messengerId: BigInt(tgId) });
  tg.reset();
  return { user, tgId };
}

const repliesTo = (chatId: number) => tg.sent.filter((m) => Number(m.chat_id) === chatId).map((m) => m.text);

describe('webhook secret (docs/decisions.md §7)', () => {
  it('wrong or missing secret → 401 INVALID_WEBHOOK_SECRET and nothing stored', async () => {
    const user = await createUser(t.app);
    const { code } = await issueCode(user);
    const before = await countRows(t.app, 'messenger_updates');
    const tgId = telegramUser();
    for (const secret of ['wrong-secret', WEBHOOK_SECRET + 'x', WEBHOOK_SECRET.slice(0, -1), WEBHOOK_SECRET.toUpperCase(), '', null]) {
      const res = await postUpdate(t.app, textUpdate(tgId, `/start ${code}`), secret);
      expectProblem(res, 401, 'INVALID_WEBHOOK_SECRET');
    }
    expect(await countRows(t.app, 'messenger_updates')).toBe(before);
    expect(await bindingOfMessenger(t.app, tgId)).toBeUndefined();
    expect(tg.attempts).toHaveLength(0);
    // The code was not consumed: the real delivery still links.
    const ok = await postUpdate(t.app, textUpdate(tgId, `/start ${code}`));
    expect(ok.statusCode).toBe(200);
    expect(await bindingOf(t.app, user.id)).toMatchObject({ messengerId: BigInt(tgId) });
  });

  it('secret unset → 503 UNAVAILABLE; bot username unset → POST /link 503', async () => {
    const other = await buildTestApp({ MESSENGER_API_URL: tg.url, MESSENGER_BOT_TOKEN: tg.token }, { db: t.db });
    try {
      const before = await countRows(other.app, 'messenger_updates');
      const res = await postUpdate(other.app, textUpdate(telegramUser(), '/status'), WEBHOOK_SECRET);
      expectProblem(res, 503, 'UNAVAILABLE');
      expect(res.headers['retry-after']).toBeDefined();
      expectProblem(await postUpdate(other.app, textUpdate(telegramUser(), '/status'), null), 503, 'UNAVAILABLE');
      expect(await countRows(other.app, 'messenger_updates')).toBe(before);

      const user = await createUser(other.app);
      const link = await other.app.inject({
        method: 'POST',
        url: '/api/v1/messenger-bot/link',
        headers: { authorization: `Bearer ${user.token}` },
      });
      expectProblem(link, 503, 'UNAVAILABLE');
    } finally {
      await other.close();
    }
  });
});

describe('linking (POST /link + /start <code>)', () => {
  it('issues a one-time code and deep link, stores only its hash; /start binds and replies', async () => {
    const user = await createUser(t.app);
    const issuedAt = Date.now();
    const link = await issueCode(user);
    expect(link.code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(link.deepLink).toBe(`https://t.me/${BOT_USERNAME}?start=${link.code}`);
    const ttl = Date.parse(link.expiresAt) - issuedAt;
    expect(ttl).toBeGreaterThan(9.9 * 60_000);
    expect(ttl).toBeLessThanOrEqual(10 * 60_000 + 5_000);
    const stored = await t.app.db.select().from(messengerLinkCodes).where(eq(messengerLinkCodes.userId, user.id));
    expect(stored).toHaveLength(1);
    expect(stored[0].codeHash).toBe(hashLinkCode(link.code));
    expect(stored[0].codeHash).not.toContain(link.code);

    const tgId = telegramUser();
    const res = await postUpdate(t.app, textUpdate(tgId, `/start ${link.code}`));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true });
    const binding = await bindingOf(t.app, user.id);
    expect(binding).toMatchObject({ messengerId: BigInt(tgId), chatId: BigInt(tgId), walletType: 'connected' });
    expect(binding.connectedAt).toBeInstanceOf(Date);
    expect(binding.lastCommandAt).toBeInstanceOf(Date);
    const replies = repliesTo(tgId);
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatch(/^Linked/);
    expect(replies[0]).toContain(user.walletAddress);

    const status = await t.app.inject({
      method: 'GET',
      url: '/api/v1/messenger-bot/link',
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(status.statusCode).toBe(200);
    expect(status.json()).toMatchObject({ linked: true, walletType: 'connected' });
    expect(typeof status.json().connectedAt).toBe('string');
  });

  it('POST /link is limited to 10 a minute per user', async () => {
    const user = await createUser(t.app);
    const other = await createUser(t.app);
    const post = (u: TestUser) =>
      t.app.inject({ method: 'POST', url: '/api/v1/messenger-bot/link', headers: { authorization: `Bearer ${u.token}` } });
    for (let i = 0; i < 10; i++) expect((await post(user)).statusCode).toBe(201);
    const limited = await post(user);
    expectProblem(limited, 429, 'RATE_LIMITED');
    expect(limited.headers['retry-after']).toBeDefined();
    expect((await post(other)).statusCode).toBe(201);
  });

  it('is described in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    const webhook = doc.paths['/api/v1/messenger-bot/webhook'].post;
    expect(webhook.operationId).toBe('messengerWebhook');
    expect(webhook.description).toMatch(/X-Telegram-Bot-Api-Secret-Token/);
    expect(Object.keys(webhook.responses)).toEqual(expect.arrayContaining(['200', '401', '413', '503']));
    expect(doc.paths['/api/v1/messenger-bot/link'].post.responses['201']).toBeDefined();
    expect(doc.paths['/api/v1/messenger-bot/link'].delete.responses['204']).toBeDefined();
  });

  it('link routes need a bearer token', async () => {
    for (const method of ['POST', 'GET', 'DELETE'] as const) {
      expectProblem(await t.app.inject({ method, url: '/api/v1/messenger-bot/link' }), 401, 'UNAUTHORIZED');
    }
  });

  it('a code cannot be reused, also not by another Telegram user', async () => {
    const user = await createUser(t.app);
    const { code } = await issueCode(user);
    const first = telegramUser();
    const second = telegramUser();
    expect((await postUpdate(t.app, textUpdate(first, `/start ${code}`))).statusCode).toBe(200);
    const res = await postUpdate(t.app, textUpdate(second, `/start ${code}`));
    expect(res.statusCode).toBe(200);
    expect(await bindingOf(t.app, user.id)).toMatchObject({ messengerId: BigInt(first) });
    expect(await bindingOfMessenger(t.app, second)).toBeUndefined();
    expect(repliesTo(second)).toHaveLength(1);
    expect(repliesTo(second)[0]).toMatch(/unknown, already used or expired/);
    expect(repliesTo(second)[0]).toMatch(/Link Telegram/);
  });

  it('an expired code binds nothing and replies how to link', async () => {
    const user = await createUser(t.app);
    const { code } = await issueCode(user);
    clockOffsetMs = 10 * 60_000 + 1_000;
    const tgId = telegramUser();
    expect((await postUpdate(t.app, textUpdate(tgId, `/start ${code}`))).statusCode).toBe(200);
    expect(await bindingOf(t.app, user.id)).toBeUndefined();
    expect(repliesTo(tgId)[0]).toMatch(/unknown, already used or expired/);
  });

  it('unknown or malformed codes bind nothing; /start alone explains how to link', async () => {
    const tgId = telegramUser();
    for (const text of ['/start doesnotexist', `/start ${'x'.repeat(80)}`, '/start bad*code']) {
      expect((await postUpdate(t.app, textUpdate(tgId, text))).statusCode).toBe(200);
    }
    expect(await bindingOfMessenger(t.app, tgId)).toBeUndefined();
    expect(repliesTo(tgId)).toHaveLength(3);
    for (const r of repliesTo(tgId)) expect(r).toMatch(/unknown, already used or expired/);
    tg.reset();
    await postUpdate(t.app, textUpdate(tgId, '/start'));
    expect(repliesTo(tgId)[0]).toMatch(/^Welcome\. To link this chat/);
  });

  it('a new code retires the earlier one', async () => {
    const user = await createUser(t.app);
    const old = await issueCode(user);
    const fresh = await issueCode(user);
    const tgId = telegramUser();
    await postUpdate(t.app, textUpdate(tgId, `/start ${old.code}`));
    expect(await bindingOf(t.app, user.id)).toBeUndefined();
    await postUpdate(t.app, textUpdate(tgId, `/start ${fresh.code}`));
    expect(await bindingOf(t.app, user.id)).toMatchObject({ messengerId: BigInt(tgId) });
  });

  it('linking replaces earlier bindings of either side', async () => {
    const { user: a, tgId: t1 } = await linkedPair();
    // The same account from another Telegram user: the first binding goes.
    const t2 = telegramUser();
    await postUpdate(t.app, textUpdate(t2, `/start ${(await issueCode(a)).code}`));
    expect(await bindingOf(t.app, a.id)).toMatchObject({ messengerId: BigInt(t2) });
    expect(await bindingOfMessenger(t.app, t1)).toBeUndefined();
    // That Telegram user links another account: account a is left unlinked.
    const b = await createUser(t.app);
    await postUpdate(t.app, textUpdate(t2, `/start ${(await issueCode(b)).code}`));
    expect(await bindingOf(t.app, b.id)).toMatchObject({ messengerId: BigInt(t2) });
    expect(await bindingOf(t.app, a.id)).toBeUndefined();
  });

  it('/start in a group chat is ignored and does not consume the code', async () => {
    const user = await createUser(t.app);
    const { code } = await issueCode(user);
    const tgId = telegramUser();
    expect((await postUpdate(t.app, textUpdate(tgId, `/start@${BOT_USERNAME} ${code}`, { chatType: 'group' }))).statusCode).toBe(200);
    expect(await bindingOf(t.app, user.id)).toBeUndefined();
    expect(tg.attempts).toHaveLength(0);
    // Addressed to the bot by name in the private chat, it works.
    await postUpdate(t.app, textUpdate(tgId, `/start@${BOT_USERNAME} ${code}`));
    expect(await bindingOf(t.app, user.id)).toMatchObject({ messengerId: BigInt(tgId) });
  });
});

describe('idempotency per update_id', () => {
  it('a retried update is processed once', async () => {
    const { tgId } = await linkedPair();
    const update = textUpdate(tgId, '/status');
    for (let i = 0; i < 3; i++) expect((await postUpdate(t.app, update)).statusCode).toBe(200);
    expect(repliesTo(tgId)).toHaveLength(1);
    const rows = await t.app.db
      .select()
      .from(messengerUpdates)
      .where(eq(messengerUpdates.updateId, BigInt(update.update_id)));
    expect(rows).toHaveLength(1);
  });

  it('two concurrent deliveries of one /start update: one binding, one reply', async () => {
    const user = await createUser(t.app);
    const { code } = await issueCode(user);
    const tgId = telegramUser();
    const update = textUpdate(tgId, `/start ${code}`);
    const results = await Promise.all([postUpdate(t.app, update), postUpdate(t.app, update), postUpdate(t.app, update)]);
    for (const r of results) expect(r.statusCode).toBe(200);
    expect(await bindingOf(t.app, user.id)).toMatchObject({ messengerId: BigInt(tgId) });
    expect(repliesTo(tgId)).toHaveLength(1);
    expect(repliesTo(tgId)[0]).toMatch(/^Linked/);
  });
});

describe('commands', () => {
  it('/status shows the linked wallet and moves lastCommandAt; unlinked chats are told how to link', async () => {
    const { user, tgId } = await linkedPair();
    const before = (await bindingOf(t.app, user.id)).lastCommandAt!;
    clockOffsetMs = 60_000;
    await postUpdate(t.app, textUpdate(tgId, '/status'));
    expect(repliesTo(tgId)[0]).toContain(user.walletAddress);
    const after = (await bindingOf(t.app, user.id)).lastCommandAt!;
    expect(after.getTime()).toBeGreaterThan(before.getTime() + 30_000);

    const stranger = telegramUser();
    await postUpdate(t.app, textUpdate(stranger, '/status'));
    expect(repliesTo(stranger)[0]).toMatch(/not linked/);
    expect(await bindingOfMessenger(t.app, stranger)).toBeUndefined();
  });

  it('/help and /start on a linked chat move lastCommandAt too', async () => {
    const { user, tgId } = await linkedPair();
    clockOffsetMs = 120_000;
    await postUpdate(t.app, textUpdate(tgId, '/help'));
    const afterHelp = (await bindingOf(t.app, user.id)).lastCommandAt!;
    expect(afterHelp.getTime()).toBeGreaterThan(Date.now() + 60_000);
    clockOffsetMs = 240_000;
    await postUpdate(t.app, textUpdate(tgId, '/start'));
    expect((await bindingOf(t.app, user.id)).lastCommandAt!.getTime()).toBeGreaterThan(afterHelp.getTime());
    expect(repliesTo(tgId)[1]).toContain(user.walletAddress);
  });

  it('/unlink in the chat removes the binding and replies', async () => {
    const { user, tgId } = await linkedPair();
    await postUpdate(t.app, textUpdate(tgId, '/unlink'));
    expect(await bindingOf(t.app, user.id)).toBeUndefined();
    expect(repliesTo(tgId)[0]).toMatch(/^Unlinked/);
    await postUpdate(t.app, textUpdate(tgId, '/unlink'));
    expect(repliesTo(tgId)[1]).toMatch(/not linked/);
  });

  it('DELETE /link removes the binding from the app side; 204 also when none exists', async () => {
    const { user, tgId } = await linkedPair();
    const auth = { authorization: `Bearer ${user.token}` };
    const res = await t.app.inject({ method: 'DELETE', url: '/api/v1/messenger-bot/link', headers: auth });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await bindingOf(t.app, user.id)).toBeUndefined();
    expect(await bindingOfMessenger(t.app, tgId)).toBeUndefined();
    expect((await t.app.inject({ method: 'DELETE', url: '/api/v1/messenger-bot/link', headers: auth })).statusCode).toBe(204);
    const status = await t.app.inject({ method: 'GET', url: '/api/v1/messenger-bot/link', headers: auth });
    expect(status.json()).toEqual({ linked: false, walletType: null, connectedAt: null, lastCommandAt: null });
  });

  it('a Telegram failure while replying still answers 200 and keeps the change', async () => {
    const user = await createUser(t.app);
    const { code } = await issueCode(user);
    const tgId = telegramUser();
    tg.server.down(true, 502);
    try {
      expect((await postUpdate(t.app, textUpdate(tgId, `/start ${code}`))).statusCode).toBe(200);
    } finally {
      tg.server.down(false);
    }
    expect(await bindingOf(t.app, user.id)).toMatchObject({ messengerId: BigInt(tgId) });
    expect(tg.sent).toHaveLength(0);
  });
});

describe('malformed updates → 200, nothing stored beyond the update id', () => {
  it('bodies that are not updates store nothing at all', async () => {
    const before = await countRows(t.app, 'messenger_updates');
    for (const body of [
      '{}',
      '[]',
      '"hello"',
      'null',
      '42',
      '{"update_id":"1"}',
      '{"update_id":-5}',
      '{"update_id":1.5}',
      '{"message":{"text":"/status"}}',
    ]) {
      const res = await postUpdate(t.app, body);
      expect(res.statusCode, body).toBe(200);
      expect(res.json()).toEqual({ ok: true });
    }
    expect(await countRows(t.app, 'messenger_updates')).toBe(before);
    expect(tg.attempts).toHaveLength(0);
  });

  it('updates without a usable message keep only the dedupe row', async () => {
    const { user, tgId } = await linkedPair();
    const lastCommandAt = (await bindingOf(t.app, user.id)).lastCommandAt!;
    const bindings = await countRows(t.app, 'messenger_bindings');
    const codes = await countRows(t.app, 'messenger_link_codes');
    const before = await countRows(t.app, 'messenger_updates');
    clockOffsetMs = 300_000;
    const sticker = textUpdate(tgId, 'x');
    delete (sticker.message as { text?: string }).text;
    const bodies: unknown[] = [
      { update_id: newUpdateId() },
      { update_id: newUpdateId(), edited_message: textUpdate(tgId, '/unlink').message },
      { update_id: newUpdateId(), message: 'not an object' },
      { update_id: newUpdateId(), message: { message_id: 1, chat: { id: tgId, type: 'private' }, text: '/unlink' } },
      { ...sticker, update_id: newUpdateId() },
      {
        ...textUpdate(tgId, '/unlink'),
        update_id: newUpdateId(),
        message: { ...textUpdate(tgId, '/unlink').message, from: { id: tgId, is_bot: true } },
      },
      textUpdate(tgId, '/unlink', { chatType: 'supergroup' }),
      textUpdate(tgId, `/unlink@SomeOtherBot`),
      textUpdate(tgId, '/frobnicate'),
    ];
    for (const b of bodies) {
      const res = await postUpdate(t.app, b);
      expect(res.statusCode, JSON.stringify(b)).toBe(200);
    }
    expect(await countRows(t.app, 'messenger_updates')).toBe(before + bodies.length);
    expect(await countRows(t.app, 'messenger_bindings')).toBe(bindings);
    expect(await countRows(t.app, 'messenger_link_codes')).toBe(codes);
    // Still linked, and no command ran.
    expect((await bindingOf(t.app, user.id)).lastCommandAt!.getTime()).toBe(lastCommandAt.getTime());
    // Only the unknown command got a (help) reply.
    expect(tg.sent).toHaveLength(1);
    expect(tg.sent[0].text).toMatch(/^Commands:/);
  });

  it('a JSON body that does not parse is 400; plain text is 200 and ignored; other types 415', async () => {
    const before = await countRows(t.app, 'messenger_updates');
    const res = await postUpdate(t.app, '{"update_id": 1,');
    expectProblem(res, 400, 'VALIDATION_ERROR');
    const post = (type: string, payload: string) =>
      t.app.inject({
        method: 'POST',
        url: WEBHOOK,
        headers: { 'content-type': type, 'x-telegram-bot-api-secret-token': WEBHOOK_SECRET },
        payload,
      });
    expect((await post('text/plain', '{"update_id": 99}')).statusCode).toBe(200);
    expectProblem(await post('application/x-www-form-urlencoded', 'update_id=99'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(await countRows(t.app, 'messenger_updates')).toBe(before);
  });
});

describe('body limit: 1 MiB on the webhook', () => {
  it('2 MiB → 413 PAYLOAD_TOO_LARGE; a 100 KiB update (over the global 64 KiB) → 200 and processed', async () => {
    const huge = JSON.stringify({ update_id: newUpdateId(), padding: 'x'.repeat(2 * 1024 * 1024) });
    expectProblem(await postUpdate(t.app, huge), 413, 'PAYLOAD_TOO_LARGE');

    const tgId = telegramUser();
    const big = { ...textUpdate(tgId, '/status'), padding: 'y'.repeat(100 * 1024) };
    const res = await postUpdate(t.app, big);
    expect(res.statusCode).toBe(200);
    expect(repliesTo(tgId)).toHaveLength(1);
  });

  it('other routes keep the 64 KiB limit', async () => {
    const user = await createUser(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/messenger-bot/link',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ padding: 'z'.repeat(100 * 1024) }),
    });
    expectProblem(res, 413, 'PAYLOAD_TOO_LARGE');
  });
});

describe('pruning', () => {
  it('every 256th update id deletes dedupe rows older than 48 h and dead link codes', async () => {
    const old = new Date(Date.now() - 3 * 24 * 3600_000);
    await t.app.db.insert(messengerUpdates).values({ updateId: 7n, receivedAt: old });
    const user = await createUser(t.app);
    await t.app.db.insert(messengerLinkCodes).values({ codeHash: 'dead-code-hash', userId: user.id, expiresAt: old, createdAt: old });
    await postUpdate(t.app, textUpdate(telegramUser(), '/status', { updateId: 256 * 1_000 + 256 }));
    const rows = await t.app.db.select().from(messengerUpdates).where(eq(messengerUpdates.updateId, 7n));
    expect(rows).toHaveLength(0);
    expect(await t.app.db.select().from(messengerLinkCodes).where(eq(messengerLinkCodes.codeHash, 'dead-code-hash'))).toHaveLength(0);
    const recent = await t.app.dbh.rows<{ n: number }>(
      sql`select count(*)::int as n from messenger_updates where received_at > now() - interval '1 hour'`,
    );
    expect(Number(recent[0].n)).toBeGreaterThan(0);
  });
});
