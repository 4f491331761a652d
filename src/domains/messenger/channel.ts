import { eq, inArray, sql } from 'drizzle-orm';
import { messengerBindings, pushPreferences } from '../../../drizzle/index.js';
import { rows } from '../../db/index.js';
import type { ClaimedDelivery, DeliveryContext, DeliveryResult, NotificationChannel } from '../notifications/types.js';
import type { FloodControl } from './flood.js';
import { heldByQuietHours } from '../notifications/quiet-hours.js';
import { deleteBindingIfChat, moveBindingChat } from './queries.js';
import { sendMessage, TelegramApiError } from './telegram.js';

/** How long one delivery run keeps sending before it hands the rest back (well inside the ledger's lease). */
const RUN_BUDGET_MS = 60_000;
const SENDS_IN_FLIGHT = 8;

/** Chats of these rows that another pending row holds after a 429 (its retry_after is in next_attempt_at). */
async function heldChats(ctx: DeliveryContext, items: ClaimedDelivery[]): Promise<Map<string, Date>> {
  const found = await rows<{ target: string; until: string | Date }>(
    ctx.db,
    sql`
    select target, max(next_attempt_at) as until from notification_deliveries
    where status = 'pending' and channel = 'messenger'
      and target in (select jsonb_array_elements_text(${JSON.stringify([...new Set(items.map((r) => r.target))])}::jsonb))
      and id not in (select (jsonb_array_elements_text(${JSON.stringify(items.map((r) => r.id))}::jsonb))::uuid)
      and next_attempt_at > ${ctx.clock().toISOString()}::timestamptz
      and last_error like ${`%${RETRY_AFTER_MARK}%`}
    group by target`,
  );
  return new Map(found.map((r) => [r.target, new Date(r.until)]));
}

/** Marks a row's error as a flood-control hold (the ledger's lastError). */
const RETRY_AFTER_MARK = 'retry_after';

/** What Telegram's answer means for the row (docs/decisions.md §13.3). */
async function outcomeOf(ctx: DeliveryContext, row: ClaimedDelivery, err: unknown): Promise<DeliveryResult> {
  const message = (err instanceof Error ? err.message : String(err)).slice(0, 300);
  if (!(err instanceof TelegramApiError)) return { status: 'retry', error: message };
  const code = err.errorCode ?? err.status;
  const chatId = BigInt(row.target);
  if (code === 429) {
    // The wait lives in the ledger: this row and every pending row of the chat.
    const wait = Math.max(1, err.retryAfter ?? 1);
    const notBefore = new Date(ctx.clock().getTime() + wait * 1000);
    return { status: 'retry', error: `${message} (${RETRY_AFTER_MARK} ${wait} s)`, notBefore, holdTarget: true };
  }
  if (code === 400 && err.migrateToChatId !== undefined) {
    if (row.lastError?.startsWith('migrated')) return { status: 'failed', error: `${message} (after one resend to the migrated chat)` };
    const to = BigInt(err.migrateToChatId);
    await moveBindingChat(ctx.db, row.userId, chatId, to);
    ctx.log.info({ userId: row.userId }, 'messenger: chat migrated to a supergroup, binding follows it');
    return { status: 'retarget', target: to.toString(), error: `migrated from chat ${row.target}` };
  }
  if (err.chatGone) {
    await deleteBindingIfChat(ctx.db, row.userId, chatId);
    ctx.log.info({ userId: row.userId, code }, 'messenger: chat unreachable, binding removed');
    return { status: 'skipped', reason: `chat unbound (${message})` };
  }
  if (code === 400) return { status: 'failed', error: message };
  // 5xx, network errors, timeouts, and 401/404 (a bad bot token the operator can fix): back off and try again.
  return { status: 'retry', error: message };
}

/**
 * The messenger leg of the ledger: title and message as plain text to the
 * row's chat, paced by flood control (docs/decisions.md §13.3).
 * - no binding, or one to another chat → 'skipped' (chat unbound);
 * - the user turned this type off (push_preferences.types) → 'skipped';
 * - a busy chat → deferred, not attempted; a busy bot → waits a moment;
 * - 429 → retried after `retry_after` (held in the ledger for the whole chat);
 * - 403, or 400 "chat not found" → unbound and 'skipped';
 * - 400 with `migrate_to_chat_id` → binding moved, resent once at once;
 * - any other 400 → 'failed'; 5xx, network errors, 401/404 → retried.
 * - inside the user's quiet hours (push_preferences.quiet_hours, the same
 *   window as push, docs/decisions.md §14.4), a type not in `urgentTypes` →
 *   held; a digest row goes out as its title and body.
 * `push_preferences.enabled` governs mobile push only: linking the bot is the
 * opt-in for chat delivery and /unlink the opt-out.
 */
export function createMessengerChannel(flood: FloodControl): NotificationChannel {
  return {
    name: 'messenger',
    targetKind: 'chat',
    targets: sql`select user_id, chat_id::text as target from messenger_bindings`,
    async deliver(ctx, items) {
      if (items.length === 0) return;
      const userIds = [...new Set(items.map((r) => r.userId))];
      const found = await ctx.db
        .select({
          userId: messengerBindings.userId,
          chatId: messengerBindings.chatId,
          types: pushPreferences.types,
          quietHours: pushPreferences.quietHours,
          urgentTypes: pushPreferences.urgentTypes,
        })
        .from(messengerBindings)
        .leftJoin(pushPreferences, eq(pushPreferences.userId, messengerBindings.userId))
        .where(inArray(messengerBindings.userId, userIds));
      const byUser = new Map(found.map((b) => [b.userId, b]));
      const early: Array<[ClaimedDelivery, DeliveryResult]> = [];
      const sendable: ClaimedDelivery[] = [];
      const now = ctx.clock();
      for (const r of items) {
        const b = byUser.get(r.userId);
        if (!b || b.chatId.toString() !== r.target) early.push([r, { status: 'skipped', reason: 'chat unbound' }]);
        else if (!r.digest && b.types?.[r.notification.type] === false) early.push([r, { status: 'skipped', reason: 'preferences' }]);
        else if (!r.digest && heldByQuietHours(b, r.notification.type, now)) early.push([r, { status: 'held' }]);
        else if (!ctx.config.MESSENGER_BOT_TOKEN) early.push([r, { status: 'skipped', reason: 'MESSENGER_BOT_TOKEN is unset' }]);
        else sendable.push(r);
      }
      await ctx.settle(early);
      // docs/decisions.md §13.3: a chat held by a 429 stays held for rows that came after it.
      const holds = await heldChats(ctx, items);
      const held: Array<[ClaimedDelivery, DeliveryResult]> = [];
      for (let i = sendable.length - 1; i >= 0; i--) {
        const until = holds.get(sendable[i].target);
        if (until) held.push([sendable.splice(i, 1)[0], { status: 'defer', until }]);
      }
      await ctx.settle(held);

      const started = Date.now();
      let next = 0;
      const worker = async () => {
        while (next < sendable.length) {
          const row = sendable[next++];
          const left = RUN_BUDGET_MS - (Date.now() - started);
          const slot = left > 0 ? await flood.acquire(row.target, { maxWaitMs: left, chatWait: false }) : undefined;
          if (!slot?.ok) {
            const waitMs = slot && !slot.ok ? slot.waitMs : 0;
            await ctx.settle([[row, { status: 'defer', until: new Date(ctx.clock().getTime() + waitMs) }]]);
            continue;
          }
          let result: DeliveryResult;
          try {
            const n = row.notification;
            await sendMessage(ctx.config, BigInt(row.target), `${n.title}\n${n.message}`, { attempts: 1 });
            result = { status: 'sent' };
          } catch (err) {
            result = await outcomeOf(ctx, row, err);
          } finally {
            await slot.done().catch((err) => ctx.log.warn({ err }, 'messenger: flood-control bookkeeping failed'));
          }
          await ctx.settle([[row, result]]);
        }
      };
      await Promise.all(Array.from({ length: Math.min(SENDS_IN_FLIGHT, sendable.length) }, worker));
    },
  };
}
