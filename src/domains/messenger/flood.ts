import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';

/**
 * Telegram flood control (docs/decisions.md §13.3): at most `perSecond`
 * messages in any second per bot and one per second per chat, notifications
 * and command replies alike. With Redis the budget is shared by every
 * instance (one Lua script reserves the slot atomically against Redis's
 * clock); without it, it is this process's. A slot is held from its
 * reservation until the request is answered (`done()`), and the chat's and
 * the bot's second are counted from that answer: Telegram saw the message
 * somewhere in between, so however late a busy process sends it, two
 * arrivals are never closer than Telegram allows.
 */
export const CHAT_GAP_MS = 1_100;
const BOT_WINDOW_MS = 1_100;

export type FloodAnswer =
  /** Call done() once the request is answered (or failed). */
  { ok: true; done(): Promise<void> } | { ok: false; scope: 'chat' | 'bot'; waitMs: number };

export interface FloodControl {
  /** Reserves a message to `chatId` now, or says how long to wait (nothing reserved). */
  tryAcquire(chatId: string): Promise<FloodAnswer>;
  /**
   * Waits for a slot up to `maxWaitMs`; false when none came in time. With
   * `chatWait: false` a busy chat answers false at once (the ledger defers the row instead).
   */
  acquire(chatId: string, opts: { maxWaitMs: number; chatWait?: boolean }): Promise<FloodAnswer>;
}

// KEYS[1] the bot's window (sorted set of reservation times), KEYS[2] the chat's next free time.
// ARGV: per-second limit, window ms, chat gap ms, a unique member, the hold until answered (ms).
// A held slot is stamped in the future (now + hold) until done() re-stamps it with the answer's time.
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local chatNext = tonumber(redis.call('GET', KEYS[2]) or '0')
if chatNext > now then return {0, math.min(chatNext - now, tonumber(ARGV[3]))} end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {1, math.max(1, math.min(250, tonumber(oldest[2]) + tonumber(ARGV[2]) - now))}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[5]), ARGV[4])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]) * 2)
redis.call('SET', KEYS[2], now + tonumber(ARGV[5]), 'PX', tonumber(ARGV[5]))
return {2, 0}
`;

// Re-stamps a reservation with the time its request was answered. KEYS as above; ARGV: window ms, chat gap ms, member.
const DONE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2)
redis.call('SET', KEYS[2], now + tonumber(ARGV[2]), 'PX', math.max(1, tonumber(ARGV[2])))
return 1
`;

/**
 * How long a slot counts as taken while its request is unanswered (a crashed
 * request's slot frees itself after this). Waits are re-polled: a busy chat
 * answers at most CHAT_GAP_MS, a busy bot at most 250 ms.
 */
const HOLD_MAX_MS = 60_000;

export interface FloodOptions {
  redis?: Redis;
  keyPrefix: string;
  /** The bot's budget is per bot: its numeric id (the part of the token before ':'; not secret). */
  botId: string;
  perSecond: number;
  /** Milliseconds between two messages to one chat; CHAT_GAP_MS unless a test shrinks it. */
  chatGapMs?: number;
}

export function createFloodControl(opts: FloodOptions): FloodControl {
  const chatGap = opts.chatGapMs ?? CHAT_GAP_MS;
  const chatNext = new Map<string, number>();
  // Each slot's time: its reservation, and once answered the answer's time.
  const window: Array<{ at: number }> = [];
  const local = (chatId: string): FloodAnswer => {
    const now = Date.now();
    const next = chatNext.get(chatId) ?? 0;
    if (next > now) return { ok: false, scope: 'chat', waitMs: Math.min(next - now, chatGap) };
    for (let i = window.length - 1; i >= 0; i--) if (window[i].at <= now - BOT_WINDOW_MS) window.splice(i, 1);
    if (window.length >= opts.perSecond) {
      const oldest = Math.min(...window.map((w) => w.at));
      return { ok: false, scope: 'bot', waitMs: Math.max(1, Math.min(250, oldest + BOT_WINDOW_MS - now)) };
    }
    // Until answered, the slot counts as taken now and the chat as busy.
    const slot = { at: now + HOLD_MAX_MS };
    window.push(slot);
    chatNext.set(chatId, now + HOLD_MAX_MS);
    if (chatNext.size > 10_000) for (const [k, v] of chatNext) if (v <= now) chatNext.delete(k);
    return {
      ok: true,
      done: async () => {
        const end = Date.now();
        slot.at = end;
        chatNext.set(chatId, end + chatGap);
      },
    };
  };
  const shared = async (redis: Redis, chatId: string): Promise<FloodAnswer> => {
    const base = `${opts.keyPrefix}tg:${opts.botId}`;
    const keys = [`${base}:bot`, `${base}:chat:${chatId}`];
    const member = randomUUID();
    const [code, wait] = (await redis.eval(SCRIPT, 2, ...keys, opts.perSecond, BOT_WINDOW_MS, chatGap, member, HOLD_MAX_MS)) as [
      number,
      number,
    ];
    if (code === 2) {
      return {
        ok: true,
        done: async () => {
          await redis.eval(DONE, 2, ...keys, BOT_WINDOW_MS, chatGap, member);
        },
      };
    }
    return { ok: false, scope: code === 0 ? 'chat' : 'bot', waitMs: Number(wait) };
  };
  const tryAcquire = (chatId: string) => (opts.redis ? shared(opts.redis, chatId) : Promise.resolve(local(chatId)));
  return {
    tryAcquire,
    async acquire(chatId, { maxWaitMs, chatWait = true }) {
      const deadline = Date.now() + maxWaitMs;
      for (;;) {
        const a = await tryAcquire(chatId);
        if (a.ok || (a.scope === 'chat' && !chatWait) || Date.now() + a.waitMs > deadline) return a;
        await sleep(a.waitMs);
      }
    },
  };
}
