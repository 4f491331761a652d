import { eq, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { messengerBindings } from '../../drizzle/messenger.js';

export const WEBHOOK_SECRET = 'webhook-secret_0123456789-abcdef';
export const BOT_USERNAME = 'PredictTestBot';
export const WEBHOOK = '/api/v1/messenger-bot/webhook';

let nextUpdateId = 10_000;
export const newUpdateId = () => ++nextUpdateId;

/** A Telegram Update carrying a private-chat text message (reference/auth-messaging.md §5). */
export function textUpdate(fromId: number, text: string, opts: { updateId?: number; chatType?: string; chatId?: number } = {}) {
  const command = /^\/\S+/.exec(text);
  return {
    update_id: opts.updateId ?? newUpdateId(),
    message: {
      message_id: 42,
      date: 1767225600,
      from: { id: fromId, is_bot: false, first_name: 'Ann', username: 'ann', language_code: 'en' },
      chat:
        opts.chatType && opts.chatType !== 'private'
          ? { id: opts.chatId ?? -100123, type: opts.chatType, title: 'A group' }
          : { id: opts.chatId ?? fromId, type: 'private', first_name: 'Ann', username: 'ann' },
      text,
      ...(command ? { entities: [{ offset: 0, length: command[0].length, type: 'bot_command' }] } : {}),
    },
  };
}

/** `secret: null` sends no secret header at all. */
export function postUpdate(app: FastifyInstance, body: unknown, secret: string | null = WEBHOOK_SECRET) {
  return app.inject({
    method: 'POST',
    url: WEBHOOK,
    headers: { 'content-type': 'application/json', ...(secret !== null ? { 'x-telegram-bot-api-secret-token': secret } : {}) },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export async function bindingOf(app: FastifyInstance, userId: string) {
  const rows = await app.db.select().from(messengerBindings).where(eq(messengerBindings.userId, userId));
  return rows[0];
}

export async function bindingOfMessenger(app: FastifyInstance, messengerId: number) {
  const rows = await app.db
    .select()
    .from(messengerBindings)
    .where(eq(messengerBindings.messengerId, BigInt(messengerId)));
  return rows[0];
}

export async function countRows(
  app: FastifyInstance,
  table: 'messenger_updates' | 'messenger_bindings' | 'messenger_link_codes',
): Promise<number> {
  const rows = await app.dbh.rows<{ n: number | string }>(sql.raw(`select count(*)::int as n from ${table}`));
  return Number(rows[0].n);
}
