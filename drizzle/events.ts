import { sql } from 'drizzle-orm';
import { doublePrecision, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/** An event group is one venue event: `pm-<gamma event id>` or `ks-<event ticker>`. */
export const eventGroups = pgTable(
  'event_groups',
  {
    id: text('id').primaryKey(),
    venue: text('venue').notNull(), // 'polymarket' | 'kalshi'
    venueEventId: text('venue_event_id').notNull(),
    slug: text('slug').notNull().unique(),
    title: text('title').notNull(),
    description: text('description').notNull().default(''),
    category: text('category').notNull().default('OTHER'),
    status: text('status').notNull().default('active'), // 'active' | 'closed' | 'resolved'
    imageUrl: text('image_url'),
    totalVolume: doublePrecision('total_volume').notNull().default(0),
    marketCount: integer('market_count').notNull().default(0),
    seriesTicker: text('series_ticker'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('event_groups_list_idx').on(t.totalVolume.desc(), t.id),
    index('event_groups_status_cat_idx').on(t.status, t.category, t.totalVolume.desc(), t.id),
    index('event_groups_category_idx').on(t.category, t.totalVolume.desc(), t.id),
  ],
);

/** A market: `pm-<gamma market id>` or `ks-<market ticker>`; prices are probabilities in [0, 1]. */
export const markets = pgTable(
  'markets',
  {
    id: text('id').primaryKey(),
    eventGroupId: text('event_group_id')
      .notNull()
      .references(() => eventGroups.id, { onDelete: 'cascade' }),
    venue: text('venue').notNull(),
    venueMarketId: text('venue_market_id').notNull(),
    title: text('title').notNull(),
    yesPrice: doublePrecision('yes_price'),
    volume: doublePrecision('volume').notNull().default(0),
    status: text('status').notNull().default('active'),
    yesTokenId: text('yes_token_id'),
    priceUpdatedAt: timestamp('price_updated_at', { withTimezone: true }),
    historyBackfilledAt: timestamp('history_backfilled_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('markets_group_volume_idx').on(t.eventGroupId, t.volume.desc()),
    index('markets_active_idx')
      .on(t.venue)
      .where(sql`${t.status} = 'active'`),
  ],
);

/** Price history, downsampled by the price-sync job (minute points for a day, hourly after). */
export const priceHistory = pgTable(
  'price_history',
  {
    marketId: text('market_id')
      .notNull()
      .references(() => markets.id, { onDelete: 'cascade' }),
    ts: timestamp('ts', { withTimezone: true }).notNull(),
    price: doublePrecision('price').notNull(),
  },
  // The ts index serves the time-window compaction in price-sync (ts ranges across all markets).
  // (market_id, ts, price) lets the price-alert check read a moved market's last day of readings
  // (docs/decisions.md §14.3) from a few index pages instead of one heap page per reading.
  (t) => [
    primaryKey({ columns: [t.marketId, t.ts] }),
    index('price_history_ts_idx').on(t.ts),
    index('price_history_market_readings_idx').on(t.marketId, t.ts, t.price),
  ],
);
