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
 * Outbox of deliveries (push, messenger) for stored notifications: storing a
 * notification never waits on delivery, and a failed delivery is retried with
 * backoff a bounded number of times without touching the notification.
 */
export const notificationDeliveries = pgTable(
  'notification_deliveries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    notificationId: uuid('notification_id')
      .notNull()
      .references(() => notifications.id, { onDelete: 'cascade' }),
    channel: text('channel').notNull(), // 'push' | 'messenger'
    status: text('status').notNull().default('pending'), // 'pending' | 'sent' | 'failed' | 'skipped'
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('notification_deliveries_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'pending'`),
    // The in-process kick claims by notification id, and deleting a notification cascades here.
    index('notification_deliveries_notification_idx').on(t.notificationId),
    // The prune of settled rows walks this (delivery.ts pruneSettledDeliveries).
    index('notification_deliveries_settled_idx')
      .on(t.updatedAt)
      .where(sql`${t.status} <> 'pending'`),
  ],
);
