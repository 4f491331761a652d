import { requestJson, UpstreamError } from '../../lib/http.js';

/**
 * Our own small adapter over the Telegram Bot API (grammY is not installed;
 * we need one method and our webhook route stays ours anyway). Calls go to
 * `<MESSENGER_API_URL>/bot<MESSENGER_BOT_TOKEN>/<method>`
 * (reference/auth-messaging.md §5), so tests point it at a loopback fake.
 */
export interface TelegramConfig {
  MESSENGER_API_URL: string;
  MESSENGER_BOT_TOKEN?: string;
}

/** Telegram's text limit for sendMessage. */
export const MAX_MESSAGE_LENGTH = 4096;

/**
 * A failed Bot API call. `errorCode` and `description` come from Telegram's
 * `{ ok: false, error_code, description, parameters }` body when it sent one;
 * `status` is undefined for network errors and timeouts.
 */
export class TelegramApiError extends Error {
  constructor(
    message: string,
    public readonly status: number | undefined,
    public readonly errorCode: number | undefined,
    public readonly description: string | undefined,
    public readonly retryAfter: number | undefined,
    /** docs/decisions.md §13.3: the group became a supergroup with this id. */
    public readonly migrateToChatId?: number,
  ) {
    super(message);
    this.name = 'TelegramApiError';
  }

  /** The user blocked the bot, deleted the account or the chat is gone: retrying never helps. */
  get chatGone(): boolean {
    const code = this.errorCode ?? this.status;
    if (code === 403) return true;
    return code === 400 && /chat not found|user not found/i.test(this.description ?? '');
  }
}

interface BotApiResponse<T> {
  ok: boolean;
  result?: T;
  error_code?: number;
  description?: string;
  parameters?: { retry_after?: number; migrate_to_chat_id?: number };
}

export interface SendOptions {
  /** Attempts in all; the notify outbox does its own retries, so delivery uses 1. */
  attempts?: number;
  timeoutMs?: number;
}

/** Chat ids fit in 52 bits (Bot API docs), so a JSON number is exact; a string is the fallback. */
function chatIdJson(chatId: bigint): number | string {
  const n = Number(chatId);
  return Number.isSafeInteger(n) ? n : chatId.toString();
}

export async function callBotApi<T>(config: TelegramConfig, method: string, params: unknown, opts: SendOptions = {}): Promise<T> {
  if (!config.MESSENGER_BOT_TOKEN) {
    throw new TelegramApiError('MESSENGER_BOT_TOKEN is not set', undefined, undefined, undefined, undefined);
  }
  const url = `${config.MESSENGER_API_URL}/bot${config.MESSENGER_BOT_TOKEN}/${method}`;
  let res: BotApiResponse<T>;
  try {
    res = await requestJson<BotApiResponse<T>>(url, {
      method: 'POST',
      json: params,
      attempts: opts.attempts ?? 1,
      timeoutMs: opts.timeoutMs ?? 10_000,
    });
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    const body = (err.body ?? {}) as BotApiResponse<T>;
    // The URL holds the bot token: never let it reach a message or a log.
    throw new TelegramApiError(
      `Telegram ${method} failed${err.status ? ` with ${err.status}` : ' (unreachable)'}${body.description ? `: ${body.description}` : ''}`,
      err.status,
      typeof body.error_code === 'number' ? body.error_code : err.status,
      typeof body.description === 'string' ? body.description : undefined,
      typeof body.parameters?.retry_after === 'number' ? body.parameters.retry_after : undefined,
      typeof body.parameters?.migrate_to_chat_id === 'number' ? body.parameters.migrate_to_chat_id : undefined,
    );
  }
  if (!res || res.ok !== true) {
    throw new TelegramApiError(
      `Telegram ${method} answered ok: false`,
      200,
      res?.error_code,
      res?.description,
      res?.parameters?.retry_after,
      res?.parameters?.migrate_to_chat_id,
    );
  }
  return res.result as T;
}

/** sendMessage with plain text (no parse_mode, so user-supplied titles cannot inject markup). */
export async function sendMessage(
  config: TelegramConfig,
  chatId: bigint,
  text: string,
  opts: SendOptions = {},
): Promise<{ message_id: number }> {
  const body = text.length > MAX_MESSAGE_LENGTH ? text.slice(0, MAX_MESSAGE_LENGTH - 1) + '…' : text;
  return callBotApi(config, 'sendMessage', { chat_id: chatIdJson(chatId), text: body, link_preview_options: { is_disabled: true } }, opts);
}
