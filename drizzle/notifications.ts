import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users } from './users.js';

export const notifications = pgTable(
  'notifications',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    title: text('title').notNull(),
    message: text('message').notNull(),
    read: boolean('read').notNull().default(false),
    data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('notifications_user_created_idx').on(t.userId, t.createdAt.desc(), t.id.desc()),
    index('notifications_user_unread_idx')
      .on(t.userId)
      .where(sql`${t.read} = false`),
  ],
);

/**
 * Unread notifications per user, kept by statement-level triggers on
 * `notifications` (migration 0005): insert, update and delete each adjust
 * the counts once per statement from their transition tables, so "mark all
 * read" stays one statement and the list's `unreadCount` is one primary-key
 * read instead of counting up to thousands of index entries per request.
 * A user without a row has no unread notifications.
 */
export const notificationCounters = pgTable('notification_counters', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  unread: integer('unread').notNull().default(0),
});

/**
 * The delivery ledger (docs/decisions.md §13.1): one row per (notification,
 * channel, device or chat), written in the notification's transaction.
 * `status` is 'pending' | 'sent' | 'skipped' | 'failed' (the dead letters);
 * `next_attempt_at` is when a pending row is due, and while an instance works
 * on a row it is that instance's lease (a dead instance's rows come due again
 * when it runs out). `deadline_at` ends the retries of transient failures
 * (created + 1 h, or a manual retry + 1 h). The stored notification itself is
 * never touched by delivery.
 */
export const notificationDeliveries = pgTable(
  'notification_deliveries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    // Null on a quiet-hours digest (docs/decisions.md §14.4): it is not stored as a notification.
    notificationId: uuid('notification_id').references(() => notifications.id, { onDelete: 'cascade' }),
    userId: uuid('user_id'),
    channel: text('channel').notNull(), // 'push' | 'messenger'
    targetKind: text('target_kind'), // 'device' | 'chat'
    target: text('target'), // the Expo push token or the Telegram chat id
    status: text('status').notNull().default('pending'), // 'pending' | 'sent' | 'failed' | 'skipped' (held rows: pending + held_at)
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    deadlineAt: timestamp('deadline_at', { withTimezone: true }),
    lastError: text('last_error'),
    /**
     * docs/decisions.md §14.4: set when the row was held for the user's quiet
     * hours. A held row stays `pending` but is never claimed (the claim skips
     * `held_at is not null`); when the window ends the release settles it as
     * `skipped` (last_error 'quiet hours: sent in a digest', or 'preferences')
     * and keeps held_at as the record that it was held.
     */
    heldAt: timestamp('held_at', { withTimezone: true }),
    /** A quiet-hours digest row: `{ title, body, count }` (docs/decisions.md §14.4); null on a notification's row. */
    digest: jsonb('digest').$type<{ title: string; body: string; count: number }>(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('notification_deliveries_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'pending' and ${t.heldAt} is null`),
    // The quiet-hours release walks the users with held rows (docs/decisions.md §14.4).
    index('notification_deliveries_held_idx')
      .on(t.userId)
      .where(sql`${t.status} = 'pending' and ${t.heldAt} is not null`),
    // The in-process kick claims by notification id, and deleting a notification cascades here.
    index('notification_deliveries_notification_idx').on(t.notificationId),
    // The prune of settled rows walks this (delivery.ts pruneSettledDeliveries).
    index('notification_deliveries_settled_idx')
      .on(t.updatedAt)
      .where(sql`${t.status} <> 'pending'`),
    // The internal listing: one status, newest updatedAt first (docs/decisions.md §13.4).
    index('notification_deliveries_status_updated_idx').on(t.status, t.updatedAt.desc(), t.id.desc()),
    // A Telegram 429 holds, and a chat migration retargets, every pending row of one chat.
    index('notification_deliveries_pending_target_idx')
      .on(t.channel, t.target)
      .where(sql`${t.status} = 'pending'`),
  ],
);

/**
 * A delivery channel's stored pause (docs/decisions.md §13.2): push pauses on
 * Expo's InvalidCredentials; the pause survives restarts and is lifted when
 * the service starts with different credentials (`credential_hash` is a hash
 * of the credentials in use when it paused) or by the internal resume route.
 */
export const deliveryChannels = pgTable('delivery_channels', {
  channel: text('channel').primaryKey(),
  pausedReason: text('paused_reason'),
  pausedAt: timestamp('paused_at', { withTimezone: true }),
  credentialHash: text('credential_hash'),
});
