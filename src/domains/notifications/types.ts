import { z } from 'zod';
import type { ServiceDeps } from '../../lib/deps.js';

/** docs/decisions.md §6: the notification types. */
export const NOTIFICATION_TYPES = [
  'order_filled',
  'position_resolved',
  'copy_trade_executed',
  'price_alert_triggered',
  'mission_completed',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export const NotificationTypeSchema = z.enum(NOTIFICATION_TYPES);

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

/**
 * 'sent' or 'skipped' (nothing to deliver to, or the user's preferences say
 * no) are final; throwing means "try again later" and the outbox retries with
 * backoff a bounded number of times. The stored notification is never touched.
 */
export type DeliveryOutcome = 'sent' | 'skipped';

/**
 * One out-of-app delivery channel of the notify path. The notifications
 * domain knows none by name: the composition root (src/app.ts) hands the list
 * to the notifications plugin, notify() writes one outbox row per channel and
 * the delivery worker finds a row's channel by `name`.
 */
export interface NotificationChannel {
  /** Stored in notification_deliveries.channel: keep it stable. */
  name: string;
  deliver(deps: ServiceDeps, notification: StoredNotification): Promise<DeliveryOutcome>;
}
