import { bigint, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users } from './users.js';

/** docs/api-contract.md §2 MessengerBinding: a Telegram user linked to one account. */
export const messengerBindings = pgTable('messenger_bindings', {
  messengerId: bigint('messenger_id', { mode: 'bigint' }).primaryKey(),
  userId: uuid('user_id')
    .notNull()
    .unique()
    .references(() => users.id, { onDelete: 'cascade' }),
  chatId: bigint('chat_id', { mode: 'bigint' }).notNull(),
  walletType: text('wallet_type').notNull().default('connected'), // 'connected' | 'created_via_bot'
  connectedAt: timestamp('connected_at', { withTimezone: true }),
  lastCommandAt: timestamp('last_command_at', { withTimezone: true }),
});

/** One-time link codes (hash only), 10 minutes. */
export const messengerLinkCodes = pgTable(
  'messenger_link_codes',
  {
    codeHash: text('code_hash').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('messenger_link_codes_user_idx').on(t.userId)],
);

/** update_ids already processed, so a retried or doubly delivered update runs once. */
export const messengerUpdates = pgTable(
  'messenger_updates',
  {
    updateId: bigint('update_id', { mode: 'bigint' }).primaryKey(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('messenger_updates_received_idx').on(t.receivedAt)],
);
