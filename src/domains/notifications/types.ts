import { z } from 'zod';
import type { SQL } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import type { Config } from '../../config.js';
import type { ServiceDeps } from '../../lib/deps.js';

/** docs/decisions.md §6: the notification types; the last four are the watchlist's lifecycle notifications (§17.2). */
export const NOTIFICATION_TYPES = [
  'order_filled',
  'position_resolved',
  'copy_trade_executed',
  'price_alert_triggered',
  'mission_completed',
  'market_resolved',
  'market_closing_soon',
  'market_moved',
  'new_market',
  // docs/decisions.md §18.3: a followed trader traded.
  'trader_trade',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export const NotificationTypeSchema = z.enum(NOTIFICATION_TYPES).meta({
  description:
    "docs/decisions.md §6 and §17.2. The watchlist's lifecycle types carry `data.eventSlug` and `data.marketId`, and: " +
    '`market_resolved` `data.result` (`yes` | `no`, of the side `yesPrice` prices); `market_closing_soon` `data.endDate` (ISO 8601); ' +
    '`market_moved` `data.from` and `data.to` (readings of `yesPrice`); `new_market` `data.title`.',
});

/**
 * The Notification of docs/api-contract.md §2, defined once: the list and the
 * PATCH answers, the internal route's 201, the `notification` socket event
 * and the client's `components['schemas']['Notification']` all have this
 * shape, and the list query writes exactly these fields (service.ts).
 */
export const NotificationSchema = z
  .object({
    id: z.string(),
    type: NotificationTypeSchema,
    title: z.string(),
    message: z.string(),
    read: z.boolean(),
    data: z.record(z.string(), z.unknown()),
    createdAt: z.string().meta({ description: 'ISO 8601' }),
  })
  .meta({ id: 'Notification' });
export type Notification = z.infer<typeof NotificationSchema>;

const seqField = z.number().int().min(1).meta({
  description: "This user's stream position: one more than the previous event's (docs/decisions.md §12.1); resume with it as `lastSeq`",
});
const unreadCountField = z.number().int().min(0).meta({ description: "The user's unread notifications after the change" });

/**
 * The four events of a user's stream (`user:notifications`, docs/decisions.md
 * §12.2), each with the user's `seq` and `unreadCount` after the change. They
 * are stored as first emitted (user_stream_events) and replayed as stored.
 */
export const NotificationEventSchema = NotificationSchema.extend({ seq: seqField, unreadCount: unreadCountField }).meta({
  id: 'NotificationEvent',
  description: '`notification` on `user:notifications`: a new Notification, with the stream `seq` and the unread count after it',
});
export const NotificationUpdatedEventSchema = z
  .object({ id: z.string(), read: z.boolean(), seq: seqField, unreadCount: unreadCountField })
  .meta({
    id: 'NotificationUpdatedEvent',
    description: '`notification:updated` on `user:notifications`: one notification was marked read',
  });
export const NotificationDeletedEventSchema = z
  .object({ id: z.string(), seq: seqField, unreadCount: unreadCountField })
  .meta({ id: 'NotificationDeletedEvent', description: '`notification:deleted` on `user:notifications`: one notification was removed' });
export const NotificationsReadAllEventSchema = z
  .object({
    updated: z.number().int().min(1).meta({ description: 'How many notifications changed from unread to read' }),
    seq: seqField,
    unreadCount: unreadCountField,
  })
  .meta({
    id: 'NotificationsReadAllEvent',
    description: '`notifications:read-all` on `user:notifications`: mark-all-read changed something',
  });

/** Stream event name → payload schema. */
export const STREAM_EVENTS = {
  notification: NotificationEventSchema,
  'notification:updated': NotificationUpdatedEventSchema,
  'notification:deleted': NotificationDeletedEventSchema,
  'notifications:read-all': NotificationsReadAllEventSchema,
} as const;
export type StreamEventName = keyof typeof STREAM_EVENTS;
export type StreamPayload<E extends StreamEventName = StreamEventName> = z.infer<(typeof STREAM_EVENTS)[E]>;

/** A notification as stored: the wire shape with its owner and a Date. */
export type StoredNotification = Omit<Notification, 'createdAt'> & { userId: string; createdAt: Date };

/** Where a ledger row goes: a device (push token) or a chat (Telegram chat id). */
export type DeliveryTargetKind = 'device' | 'chat';

/** What a quiet-hours digest row sends (docs/decisions.md §14.4): it stands for `count` held notifications. */
export interface QuietDigest {
  title: string;
  body: string;
  count: number;
}

/** What a quiet-hours digest row carries in place of a stored notification: its title and body, under a type of its own. */
export type DigestNotification = Omit<StoredNotification, 'type'> & { type: 'quiet_hours_digest' };

/**
 * A claimed ledger row with its notification (docs/decisions.md §13.1). A
 * quiet-hours digest row has no notification: `digest` is set and
 * `notification` only carries the digest's title and body, so channels check
 * `digest` first (which narrows `notification.type` to a notification type).
 */
export type ClaimedDelivery = {
  id: string;
  userId: string;
  /** The device token or the chat id, as stored. */
  target: string;
  /** Attempts already made (this one not counted). */
  attempts: number;
  lastError: string | null;
} & ({ notification: StoredNotification; digest?: undefined } | { notification: DigestNotification; digest: QuietDigest });

/**
 * What a channel made of one claimed row:
 * - `sent`: the provider accepted it; `skipped`: nothing to deliver (final);
 * - `failed`: a dead letter at once (the provider will never accept it);
 * - `retry`: transient; the ledger backs off (not before `notBefore` when
 *   given), and with `holdTarget` every pending row of that device or chat waits too;
 *   after the row's deadline it is `failed`;
 * - `retarget`: the chat moved (Telegram migration): the row and the chat's
 *   other pending rows now go to `target`, resent at once;
 * - `defer`: not attempted (a rate limit): pending again at `until`, no attempt counted;
 * - `paused`: the channel's credentials were refused: the channel pauses
 *   (stored) and the row waits as `pending`, no attempt counted;
 * - `held`: inside the user's quiet hours (docs/decisions.md §14.4): the row
 *   stays `pending` with `held_at` set, is not claimed again, and is settled
 *   by the release into a digest; no attempt counted.
 */
export type DeliveryResult =
  | { status: 'sent' }
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; error: string }
  | { status: 'retry'; error: string; notBefore?: Date; holdTarget?: boolean }
  | { status: 'retarget'; target: string; error: string }
  | { status: 'defer'; until: Date }
  | { status: 'paused'; reason: string }
  | { status: 'held' };

/** What a channel's deliver() gets besides the usual service deps. */
export interface DeliveryContext extends ServiceDeps {
  /** Shared across instances when set (Telegram flood control). */
  redis: Redis | undefined;
  keyPrefix: string;
  /**
   * Records outcomes in the ledger at once: channels call it as soon as a
   * provider answers, so a kill loses at most the answers of the last moment
   * (docs/decisions.md §13.5).
   */
  settle(results: Array<[ClaimedDelivery, DeliveryResult]>): Promise<void>;
}

/**
 * One out-of-app delivery channel of the notify path. The notifications
 * domain knows none by name: the composition root (src/app.ts) hands the list
 * to the notifications plugin; storing a notification writes one ledger row
 * per target the channel's `targets` query lists for the user, and the
 * delivery worker hands claimed rows to `deliver` in batches.
 */
export interface NotificationChannel {
  /** Stored in notification_deliveries.channel: keep it stable. */
  name: string;
  targetKind: DeliveryTargetKind;
  /** A query of `(user_id uuid, target text)`: every target of every user (joined to the new notifications). */
  targets: SQL;
  /** Delivers the rows; every row must be settled (through ctx.settle) before it resolves. */
  deliver(ctx: DeliveryContext, rows: ClaimedDelivery[]): Promise<void>;
  /**
   * A fingerprint of the credentials in use (never the credentials): a stored
   * pause is lifted when the service starts with a different one.
   */
  credentialHash?(config: Config): string;
}
