import { index, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { eventGroups } from './events.js';
import { users } from './users.js';

/**
 * Watched event groups (docs/decisions.md §17.1): one row per (user, group),
 * at most 500 per user. A watched group's markets are tracked (§11.2) while
 * anyone watches it.
 */
export const watchlist = pgTable(
  'watchlist',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    eventGroupId: text('event_group_id')
      .notNull()
      .references(() => eventGroups.id, { onDelete: 'cascade' }),
    watchedAt: timestamp('watched_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.eventGroupId] }),
    // The detectors join changed markets' groups to their watchers (§17.3: cost grows with what changed).
    index('watchlist_group_idx').on(t.eventGroupId, t.watchedAt),
    // GET /watchlist: most recently watched first.
    index('watchlist_user_watched_idx').on(t.userId, t.watchedAt.desc()),
  ],
);

/**
 * The lifecycle notifications already sent (docs/decisions.md §17.2), the
 * unique key that makes each exactly once across instances by construction:
 * (user, type, market) for `market_resolved`, `market_closing_soon` and
 * `new_market`; (user, type, group) for `market_moved`, whose `at` is the
 * last one sent (the next waits 6 hours). A detector inserts here and stores
 * the notification in the same transaction, so a row exists exactly when its
 * notification does. Kept after unwatching, so a re-watch never repeats one.
 */
export const watchNotices = pgTable(
  'watch_notices',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    /** A market id, or a group id for `market_moved`. */
    subject: text('subject').notNull(),
    at: timestamp('at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.type, t.subject] })],
);
