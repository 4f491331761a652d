import { bigint, index, json, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users } from './users.js';

/**
 * The latest `seq` of each user's private stream (`user:notifications`,
 * docs/decisions.md §12.1). A change that emits a stream event bumps it in
 * the transaction that stores the change, so the row lock orders a user's
 * events and a rolled-back change leaves no hole. No row: latest seq 0.
 */
export const userStreamHeads = pgTable('user_stream_heads', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  seq: bigint('seq', { mode: 'number' }).notNull().default(0),
});

/**
 * The stream's events as first emitted (`payload` is the exact JSON sent to
 * sockets), kept for resume (§12.3) for STREAM_KEEP_DAYS or the user's last
 * STREAM_KEEP_EVENTS, whichever keeps more; the stream-prune job deletes the
 * rest, always a prefix of a user's seqs.
 */
export const userStreamEvents = pgTable(
  'user_stream_events',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    event: text('event').notNull(),
    payload: json('payload').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.seq] }), index('user_stream_events_created_idx').on(t.createdAt)],
);
