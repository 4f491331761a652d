import { startFakeServer, type FakeServer } from './server.js';

/**
 * A fake Telegram Bot API on loopback speaking the real wire format
 * (reference/auth-messaging.md §5): POST /bot<token>/sendMessage with JSON
 * { chat_id, text }, answered { ok: true, result: Message } or
 * { ok: false, error_code, description, parameters? }.
 */
export interface SentMessage {
  chat_id: number | string;
  text: string;
}

export interface FakeTelegram {
  url: string;
  token: string;
  server: FakeServer;
  /** Successful sendMessage calls, in order. */
  sent: SentMessage[];
  /** Every sendMessage call, including refused ones. */
  attempts: SentMessage[];
  /** Chats whose user blocked the bot: 403 Forbidden. */
  block(chatId: number): void;
  /** The next n sendMessage calls get flood control (429, retry_after 1). */
  floodNext(n: number): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startFakeTelegram(token = '123456789:AAtest-token_for-the-fake'): Promise<FakeTelegram> {
  const server = await startFakeServer();
  const sent: SentMessage[] = [];
  const attempts: SentMessage[] = [];
  const blocked = new Set<string>();
  let flood = 0;
  let nextId = 1;

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
    attempts.push(msg);
    if (body.text.length > 4096) {
      return { status: 400, body: { ok: false, error_code: 400, description: 'Bad Request: message is too long' } };
    }
    if (flood > 0) {
      flood--;
      return {
        status: 429,
        body: { ok: false, error_code: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } },
      };
    }
    if (blocked.has(String(body.chat_id))) {
      return { status: 403, body: { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' } };
    }
    sent.push(msg);
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

  return {
    url: server.url,
    token,
    server,
    sent,
    attempts,
    block: (chatId) => blocked.add(String(chatId)),
    floodNext: (n) => {
      flood = n;
    },
    reset() {
      sent.length = 0;
      attempts.length = 0;
      blocked.clear();
      flood = 0;
      server.reset();
    },
    close: () => server.close(),
  };
}
