import { startFakeServer, type FakeServer } from './server.js';

/**
 * A fake Telegram Bot API on loopback speaking the real wire format
 * (reference/auth-messaging.md §5): POST /bot<token>/sendMessage with JSON
 * { chat_id, text }, answered { ok: true, result: Message } or
 * { ok: false, error_code, description, parameters? }.
 *
 * Faults (docs/decisions.md §13.3): flood control (429 with
 * `parameters.retry_after`, scripted or at a rate), 5xx at a rate, blocked
 * chats (403), migrated chats (400 with `parameters.migrate_to_chat_id`),
 * other 400s. It also checks Telegram's limits on every sendMessage it
 * receives: more than one message to a chat within a second, or more than
 * `botLimit` messages within any second, is recorded in `violations`.
 */
export interface SentMessage {
  chat_id: number | string;
  text: string;
}

export interface TelegramViolation {
  kind: 'chat' | 'bot';
  chatId: string;
  /** Milliseconds since the previous message to the chat, or the count within the second. */
  value: number;
}

export interface FakeTelegram {
  url: string;
  token: string;
  server: FakeServer;
  /** Successful sendMessage calls, in order. */
  sent: SentMessage[];
  /** Successful calls with their time (Date.now()). */
  sentAt: Array<SentMessage & { at: number }>;
  /** Every sendMessage call, including refused ones. */
  attempts: SentMessage[];
  violations: TelegramViolation[];
  /** Messages per second per bot before a violation is recorded (Telegram: 25 for bulk messages). */
  botLimit: number;
  /** Share (0–1) of calls answered 429 with `retryAfter` seconds, and of calls answered 502. */
  faults: { floodRate?: number; retryAfter?: number; serverErrorRate?: number };
  /** Chats whose user blocked the bot: 403 Forbidden. */
  block(chatId: number): void;
  /** The chat became a supergroup: 400 with migrate_to_chat_id. */
  migrate(chatId: number, to: number): void;
  /** The chat answers 400 with this description. */
  reject(chatId: number, description: string): void;
  /** The next n sendMessage calls get flood control (429, retry_after seconds). */
  floodNext(n: number, retryAfter?: number): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startFakeTelegram(token = '123456789:AAtest-token_for-the-fake'): Promise<FakeTelegram> {
  const server = await startFakeServer();
  const sent: SentMessage[] = [];
  const sentAt: Array<SentMessage & { at: number }> = [];
  const attempts: SentMessage[] = [];
  const violations: TelegramViolation[] = [];
  const blocked = new Set<string>();
  const migrated = new Map<string, number>();
  const rejected = new Map<string, string>();
  const lastAt = new Map<string, number>();
  const window: number[] = [];
  const faults: FakeTelegram['faults'] = {};
  let flood = 0;
  let floodAfter = 1;
  let nextId = 1;
  const fake = { botLimit: 25 };

  const tooMany = (after: number) => ({
    status: 429,
    body: { ok: false, error_code: 429, description: `Too Many Requests: retry after ${after}`, parameters: { retry_after: after } },
  });

  // Registered first: later routes take precedence. Any other path (wrong token, unknown method) answers like Telegram does.
  server.on('POST', '/:bot/:method', () => ({ status: 404, body: { ok: false, error_code: 404, description: 'Not Found' } }));
  server.on('POST', `/bot${token}/sendMessage`, (req) => {
    const body = req.body as Partial<SentMessage> | undefined;
    if (
      !body ||
      (typeof body.chat_id !== 'number' && typeof body.chat_id !== 'string') ||
      typeof body.text !== 'string' ||
      body.text.length === 0
    ) {
      return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: message text is empty' } };
    }
    const msg = { chat_id: body.chat_id, text: body.text };
    const chat = String(body.chat_id);
    attempts.push(msg);
    // Telegram's limits, checked on arrival (req.at is performance.now()).
    const prev = lastAt.get(chat);
    if (prev !== undefined && req.at - prev < 1000) violations.push({ kind: 'chat', chatId: chat, value: Math.round(req.at - prev) });
    lastAt.set(chat, req.at);
    while (window.length > 0 && window[0] <= req.at - 1000) window.shift();
    window.push(req.at);
    if (window.length > fake.botLimit) violations.push({ kind: 'bot', chatId: chat, value: window.length });

    if (body.text.length > 4096) {
      return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: message is too long' } };
    }
    if (flood > 0) {
      flood--;
      return tooMany(floodAfter);
    }
    const roll = Math.random();
    if (faults.floodRate && roll < faults.floodRate) return tooMany(faults.retryAfter ?? 1);
    if (faults.serverErrorRate && roll < (faults.floodRate ?? 0) + faults.serverErrorRate) {
      return { status: 502, body: { ok: false, error_code: 502, description: 'Bad Gateway' } };
    }
    if (blocked.has(chat)) {
      return { status: 403, body: { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' } };
    }
    const to = migrated.get(chat);
    if (to !== undefined) {
      return {
        status: 400,
        body: {
          ok: false,
          error_code: 400,
          description: 'Bad Request: group chat was upgraded to a supergroup chat',
          parameters: { migrate_to_chat_id: to },
        },
      };
    }
    const reason = rejected.get(chat);
    if (reason) return { status: 400, body: { ok: false, error_code: 400, description: `Bad Request: ${reason}` } };
    sent.push(msg);
    sentAt.push({ ...msg, at: Date.now() });
    return {
      body: {
        ok: true,
        result: {
          message_id: nextId++,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(body.chat_id), type: 'private' },
          text: body.text,
        },
      },
    };
  });

  return Object.assign(fake, {
    url: server.url,
    token,
    server,
    sent,
    sentAt,
    attempts,
    violations,
    faults,
    block: (chatId: number) => void blocked.add(String(chatId)),
    migrate: (chatId: number, to: number) => void migrated.set(String(chatId), to),
    reject: (chatId: number, description: string) => void rejected.set(String(chatId), description),
    floodNext: (n: number, retryAfter = 1) => {
      flood = n;
      floodAfter = retryAfter;
    },
    reset() {
      sent.length = 0;
      sentAt.length = 0;
      attempts.length = 0;
      violations.length = 0;
      blocked.clear();
      migrated.clear();
      rejected.clear();
      lastAt.clear();
      window.length = 0;
      for (const k of Object.keys(faults)) delete faults[k as keyof typeof faults];
      fake.botLimit = 25;
      flood = 0;
      server.reset();
    },
    close: () => server.close(),
  });
}
