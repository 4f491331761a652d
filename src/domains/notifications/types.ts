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
