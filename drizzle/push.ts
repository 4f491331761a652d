import { boolean, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users } from './users.js';

/** A device push token belongs to at most one user; registering it again moves it. */
export const pushDevices = pgTable(
  'push_devices',
  {
    token: text('token').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    platform: text('platform').notNull(), // 'ios' | 'android' | 'web'
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('push_devices_user_idx').on(t.userId)],
);

export const pushPreferences = pgTable('push_preferences', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  enabled: boolean('enabled').notNull().default(true),
  types: jsonb('types').$type<Record<string, boolean>>().notNull().default({}),
  /** docs/decisions.md §14.4: `{ start, end, timezone }` or null (no quiet hours); the zone as the user gave it. */
  quietHours: jsonb('quiet_hours').$type<{ start: string; end: string; timezone: string } | null>(),
  /** Notification types sent at once even inside quiet hours. */
  urgentTypes: jsonb('urgent_types').$type<string[]>().notNull().default([]),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/** Expo push tickets awaiting their receipt check. */
export const pushTickets = pgTable(
  'push_tickets',
  {
    id: text('id').primaryKey(),
    token: text('token').notNull(),
    /** The ledger row the ticket answers (a DeviceNotRegistered receipt marks it skipped). */
    deliveryId: uuid('delivery_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('push_tickets_created_idx').on(t.createdAt)],
);
