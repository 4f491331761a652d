import type { ServiceDeps } from '../../lib/deps.js';
import type { DeliveryOutcome, NotificationChannel, StoredNotification } from '../notifications/types.js';
import { deleteBindingIfChat, findDeliveryTarget } from './queries.js';
import { sendMessage, TelegramApiError } from './telegram.js';

/**
 * The messenger leg of the notify path: title and message as plain text to
 * the user's bound chat.
 * - no binding, or the user turned this type off (push_preferences.types) → 'skipped';
 * - Telegram 403 (bot blocked, user deactivated) or 400 "chat not found" → the
 *   binding is removed and the outcome is 'skipped' (retrying never helps);
 * - other 400s (a message Telegram will never accept) → 'skipped', logged;
 * - 429, 5xx, network errors, and 401/404 (bad bot token) → thrown, so the
 *   outbox retries later.
 * `push_preferences.enabled` governs mobile push only: linking the bot is the
 * opt-in for chat delivery and /unlink the opt-out.
 */
export const messengerChannel: NotificationChannel = {
  name: 'messenger',
  async deliver(deps: ServiceDeps, n: StoredNotification): Promise<DeliveryOutcome> {
    const target = await findDeliveryTarget(deps.db, n.userId);
    if (!target) return 'skipped';
    if (target.types[n.type] === false) return 'skipped';
    if (!deps.config.MESSENGER_BOT_TOKEN) {
      deps.log.warn('messenger: MESSENGER_BOT_TOKEN is unset, chat delivery skipped');
      return 'skipped';
    }
    try {
      // One attempt: the outbox owns retries and their backoff.
      await sendMessage(deps.config, target.chatId, `${n.title}\n${n.message}`, { attempts: 1 });
      return 'sent';
    } catch (err) {
      if (!(err instanceof TelegramApiError)) throw err;
      if (err.chatGone) {
        await deleteBindingIfChat(deps.db, n.userId, target.chatId);
        deps.log.info({ userId: n.userId, code: err.errorCode }, 'messenger: chat unreachable, binding removed');
        return 'skipped';
      }
      if ((err.errorCode ?? err.status) === 400) {
        deps.log.warn({ userId: n.userId, notificationId: n.id, description: err.description }, 'messenger: Telegram rejected the message');
        return 'skipped';
      }
      throw err;
    }
  },
};
