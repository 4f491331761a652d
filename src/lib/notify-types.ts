import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../db/index.js';

/** docs/decisions.md §6: the notification types. */
export const NOTIFICATION_TYPES = [
  'order_filled',
  'position_resolved',
  'copy_trade_executed',
  'price_alert_triggered',
  'mission_completed',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export interface StoredNotification {
  id: string;
  userId: string;
  type: NotificationType;
  title: string;
  message: string;
  read: boolean;
  data: Record<string, unknown>;
  createdAt: Date;
}

export interface DeliveryDeps {
  db: Db;
  config: Config;
  log: FastifyBaseLogger;
  clock: () => Date;
}

/**
 * 'sent' or 'skipped' (nothing to deliver to, or the user's preferences say
 * no) are final; throwing means "try again later" and the outbox retries with
 * backoff a bounded number of times. The stored notification is never touched.
 */
export type DeliveryOutcome = 'sent' | 'skipped';

/** One out-of-app delivery channel of the notify path (push, messenger). */
export interface NotificationChannel {
  name: 'push' | 'messenger';
  deliver(deps: DeliveryDeps, notification: StoredNotification): Promise<DeliveryOutcome>;
}
