import { randomBytes } from 'node:crypto';
import type { DbOrTx } from '../../db/index.js';
import type { ServiceDeps } from '../../lib/deps.js';
import { AppError, unavailable } from '../../errors.js';
import { safeEqual, sha256Hex } from '../../lib/hash.js';
import {
  claimUpdate,
  consumeLinkCode,
  deleteBindingByMessengerId,
  deleteBindingByUser,
  findBindingByUser,
  findWallet,
  isUpdateSeen,
  pruneLinkCodes,
  pruneUpdates,
  replaceBinding,
  replaceLinkCode,
  touchBinding,
  type BindingWithWallet,
} from './queries.js';
import { LINK_CODE_TTL_MS, TelegramUpdateSchema, UpdateIdSchema, type LinkStatus, type TelegramUpdate } from './schemas.js';
import type { FloodControl } from './flood.js';
import { sendMessage } from './telegram.js';

/** A message to send once the update's transaction has committed. */
export interface Reply {
  chatId: bigint;
  text: string;
}

/** Telegram retries undelivered updates for 24 hours; ids older than twice that are never seen again. */
export const UPDATE_RETENTION_MS = 48 * 60 * 60 * 1000;
/** Every PRUNE_EVERY-th update_id (they are sequential) also deletes old dedupe rows and dead codes. */
export const PRUNE_EVERY = 256n;

const CODE_FORMAT = /^[A-Za-z0-9_-]{1,64}$/;

export function hashLinkCode(code: string): string {
  return sha256Hex(code);
}

/** Header check of the webhook, before the body is read (constant time, see safeEqual). */
export function checkWebhookSecret(expected: string | undefined, presented: string | string[] | undefined): void {
  if (!expected) throw unavailable('The messenger webhook is not configured (MESSENGER_WEBHOOK_SECRET is unset)', 60);
  const given = typeof presented === 'string' ? presented : '';
  if (given.length === 0 || !safeEqual(given, expected)) {
    throw new AppError(401, 'INVALID_WEBHOOK_SECRET', 'The X-Telegram-Bot-Api-Secret-Token header is wrong or missing');
  }
}

// ---- Linking from the app (bearer routes) ----

export async function issueLinkCode(deps: ServiceDeps, userId: string): Promise<{ code: string; deepLink: string; expiresAt: string }> {
  const bot = deps.config.MESSENGER_BOT_USERNAME;
  if (!bot) throw unavailable('The messenger bot is not configured (MESSENGER_BOT_USERNAME is unset)', 60);
  // 256 random bits, base64url: 43 characters, inside Telegram's 64-character [A-Za-z0-9_-] start payload rule.
  const code = randomBytes(32).toString('base64url');
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + LINK_CODE_TTL_MS);
  await replaceLinkCode(deps.db, { codeHash: hashLinkCode(code), userId, expiresAt, now });
  return {
    code,
    deepLink: `https://t.me/${encodeURIComponent(bot.replace(/^@/, ''))}?start=${code}`,
    expiresAt: expiresAt.toISOString(),
  };
}

export async function unlinkUser(deps: ServiceDeps, userId: string): Promise<void> {
  const removed = await deleteBindingByUser(deps.db, userId);
  if (removed) deps.log.info({ userId }, 'messenger binding removed from the app');
}

export async function getLinkStatus(deps: ServiceDeps, userId: string): Promise<LinkStatus> {
  const b = await findBindingByUser(deps.db, userId);
  if (!b) return { linked: false, walletType: null, connectedAt: null, lastCommandAt: null };
  return {
    linked: true,
    walletType: b.walletType === 'created_via_bot' ? 'created_via_bot' : 'connected',
    connectedAt: b.connectedAt?.toISOString() ?? null,
    lastCommandAt: b.lastCommandAt?.toISOString() ?? null,
  };
}

// ---- The webhook ----

export type UpdateOutcome = 'ignored' | 'duplicate' | 'processed';

/**
 * Handles one webhook body. Anything that is not an update with an update_id
 * is ignored (nothing stored). Otherwise the dedupe row and every change the
 * update makes commit in ONE transaction: a retry or a second instance finds
 * the row and does nothing, and a failure rolls the row back so Telegram's
 * retry processes the update again. Replies are returned, to be sent after
 * the commit (a Telegram outage never fails the webhook).
 */
export async function handleUpdate(deps: ServiceDeps, body: unknown): Promise<{ outcome: UpdateOutcome; replies: Reply[] }> {
  const id = UpdateIdSchema.safeParse(body);
  if (!id.success) {
    deps.log.debug('messenger webhook: body is not an update, ignored');
    return { outcome: 'ignored', replies: [] };
  }
  const updateId = BigInt(id.data.update_id);
  const parsed = TelegramUpdateSchema.safeParse(body);
  const now = deps.clock();
  // Telegram's retries of an update we already handled skip the transaction.
  if (await isUpdateSeen(deps.db, updateId)) return { outcome: 'duplicate', replies: [] };

  const result = await deps.db.transaction(async (tx) => {
    if (!(await claimUpdate(tx, updateId, now))) return { outcome: 'duplicate' as const, replies: [] };
    const replies = parsed.success ? await runMessage(tx, deps, now, parsed.data.message) : [];
    return { outcome: 'processed' as const, replies };
  });

  if (result.outcome === 'processed' && updateId % PRUNE_EVERY === 0n) {
    try {
      await pruneUpdates(deps.db, new Date(now.getTime() - UPDATE_RETENTION_MS));
      await pruneLinkCodes(deps.db, new Date(now.getTime() - 24 * 60 * 60 * 1000));
    } catch (err) {
      deps.log.warn({ err }, 'messenger: pruning old update ids failed');
    }
  }
  return result;
}

type Message = NonNullable<TelegramUpdate['message']>;

const COMMAND = /^\/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]{1,64}))?(?:\s+([\s\S]*))?$/;

function describeWallet(b: { chain: string; walletAddress: string }): string {
  return `${b.chain === 'solana' ? 'Solana' : 'EVM'} wallet ${b.walletAddress}`;
}

const HOW_TO_LINK =
  'To link this chat to your account, open the app, choose "Link Telegram" in your settings and tap the link it shows (it works once, for 10 minutes).';
const HELP = 'Commands:\n/status: which account this chat is linked to\n/unlink: stop notifications here and unlink\n\n' + HOW_TO_LINK;

/** Acts on a private-chat text message; returns the replies. Group chats, bots and non-text are ignored. */
async function runMessage(tx: DbOrTx, deps: ServiceDeps, now: Date, message: Message | undefined): Promise<Reply[]> {
  if (!message || typeof message.text !== 'string' || !message.from) return [];
  // Linking and /status reveal a wallet address: only in the user's own chat with the bot.
  if (message.chat.type !== 'private' || message.from.is_bot === true) return [];
  const messengerId = BigInt(message.from.id);
  const chatId = BigInt(message.chat.id);
  const reply = (text: string): Reply[] => [{ chatId, text }];

  const m = COMMAND.exec(message.text.trim());
  if (!m) return reply(HELP);
  const [, rawCommand, addressedTo, rawArg] = m;
  const bot = deps.config.MESSENGER_BOT_USERNAME?.replace(/^@/, '');
  if (addressedTo && bot && addressedTo.toLowerCase() !== bot.toLowerCase()) return [];
  const command = rawCommand.toLowerCase();
  const arg = (rawArg ?? '').trim();

  switch (command) {
    case 'start': {
      if (arg && CODE_FORMAT.test(arg)) {
        const userId = await consumeLinkCode(tx, hashLinkCode(arg), now);
        if (userId) {
          await replaceBinding(tx, { messengerId, userId, chatId, now });
          const wallet = await findWallet(tx, userId);
          deps.log.info({ userId }, 'messenger binding created');
          return reply(
            `Linked to your account${wallet ? ` (${describeWallet(wallet)})` : ''}. Your notifications will arrive in this chat.\n/status shows the link, /unlink removes it.`,
          );
        }
      }
      const binding = await touchBinding(tx, messengerId, now);
      if (arg) {
        return reply(
          `That link code is unknown, already used or expired.${binding ? ` This chat stays linked to ${describeWallet(binding)}.` : ''}\n\n${HOW_TO_LINK}`,
        );
      }
      return reply(
        binding ? `Welcome back. This chat is linked to ${describeWallet(binding)}.\n/unlink removes the link.` : `Welcome. ${HOW_TO_LINK}`,
      );
    }
    case 'status': {
      const binding = await touchBinding(tx, messengerId, now);
      return reply(binding ? statusText(binding) : `This chat is not linked to an account. ${HOW_TO_LINK}`);
    }
    case 'unlink': {
      const removed = await deleteBindingByMessengerId(tx, messengerId);
      return reply(removed ? 'Unlinked. You will no longer receive notifications here.' : 'This chat is not linked to an account.');
    }
    case 'help': {
      await touchBinding(tx, messengerId, now);
      return reply(HELP);
    }
    default:
      // Unknown commands change nothing; a short help keeps the user from guessing.
      return reply(HELP);
  }
}

function statusText(b: BindingWithWallet): string {
  const since = b.connectedAt ? ` since ${b.connectedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC` : '';
  return `This chat is linked to ${describeWallet(b)}${since}.`;
}

/** How long a reply may wait for its flood-control slot before it is dropped. */
export const REPLY_MAX_WAIT_MS = 5_000;

/**
 * Sends replies after the commit. Never rejects: a failed reply is logged,
 * the update stays processed (a reply is a courtesy; the state is in the DB).
 */
export async function sendReplies(deps: ServiceDeps & { flood: FloodControl }, replies: Reply[]): Promise<void> {
  if (replies.length === 0) return;
  if (!deps.config.MESSENGER_BOT_TOKEN) {
    deps.log.warn('messenger: MESSENGER_BOT_TOKEN is unset, bot replies are not sent');
    return;
  }
  for (const r of replies) {
    // docs/decisions.md §13.3: replies share the bot's and the chat's budget with notifications.
    const slot = await deps.flood.acquire(r.chatId.toString(), { maxWaitMs: REPLY_MAX_WAIT_MS });
    if (!slot.ok) {
      deps.log.warn('messenger: reply dropped, the chat or the bot is at its Telegram rate limit');
      continue;
    }
    try {
      await sendMessage(deps.config, r.chatId, r.text, { attempts: 1, timeoutMs: 5_000 });
    } catch (err) {
      deps.log.warn({ err: { message: (err as Error).message } }, 'messenger: reply could not be sent');
    } finally {
      await slot.done().catch(() => {});
    }
  }
}
