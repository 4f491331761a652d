import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';

/** `id collate "C"`: byte order, the tie-break of every list ordering (docs/decisions.md §16.5). */
export const byteId = (id: AnyPgColumn) => sql`${id} collate "C"`;

/** A PostgreSQL tsvector, written and matched in SQL only (src/domains/events/search-text.ts). */
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

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
    /** USD over the last 24 h, the sum of its markets' (ranks groups for PRICE_TRACK_TOP, docs/decisions.md §11.2). */
    volume24h: doublePrecision('volume_24h').notNull().default(0),
    /** docs/decisions.md §16.2: the earliest scheduled close still in the future among its active markets (re-derived as time passes). */
    endDate: timestamp('end_date', { withTimezone: true }),
    /** When the venue created the group: Gamma event `createdAt`; Kalshi the earliest `open_time` of its markets (§16.5). */
    venueCreatedAt: timestamp('venue_created_at', { withTimezone: true }),
    /** Signed 24 h change of the active market that moved most (§16.2), null when none has one. */
    change24h: doublePrecision('change_24h'),
    /**
     * Search (docs/decisions.md §16.1): the words of its title, and of its title, its markets' titles and
     * outcome labels, as 'simple' tsvectors without positions; kept by the catalogue write.
     */
    searchTitle: tsvector('search_title'),
    searchAll: tsvector('search_all'),
    /** Last read of the group's detail or chart: its markets are tracked for 24 h after (docs/venues.md "Tracked markets"). */
    readAt: timestamp('read_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
  },
  // The list's orderings (docs/decisions.md §16.1) break ties by id compared byte by byte, whatever the
  // database's collation: each sort has an index ending in `id collate "C"`, so a page is an index range.
  (t) => [
    index('event_groups_list_idx').on(t.totalVolume.desc(), byteId(t.id)),
    index('event_groups_status_cat_idx').on(t.status, t.category, t.totalVolume.desc(), byteId(t.id)),
    index('event_groups_category_idx').on(t.category, t.totalVolume.desc(), byteId(t.id)),
    index('event_groups_sort_volume_24h_idx').on(t.volume24h.desc(), byteId(t.id)),
    index('event_groups_sort_newest_idx').on(t.venueCreatedAt.desc().nullsLast(), byteId(t.id)),
    index('event_groups_sort_closing_idx').on(t.endDate.asc().nullsLast(), byteId(t.id)),
    index('event_groups_search_idx').using('gin', t.searchAll),
    // Relevance's first tier (groups whose own title matches) of a search too large to sort whole (queries.ts searchGroups).
    index('event_groups_search_title_idx').using('gin', t.searchTitle),
    index('event_groups_sort_movers_idx').on(sql`abs(${t.change24h}) desc nulls last`, byteId(t.id)),
    index('event_groups_volume_24h_idx')
      .on(t.volume24h.desc())
      .where(sql`${t.status} = 'active'`),
    index('event_groups_read_idx')
      .on(t.readAt)
      .where(sql`${t.readAt} is not null`),
    index('event_groups_venue_seen_idx')
      .on(t.venue, t.lastSeenAt)
      .where(sql`${t.status} = 'active'`),
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
    /** The label of the side `yes_price` prices (docs/venues.md "Titles and outcome labels"). */
    outcome: text('outcome').notNull().default('Yes'),
    yesPrice: doublePrecision('yes_price'),
    volume: doublePrecision('volume').notNull().default(0),
    volume24h: doublePrecision('volume_24h').notNull().default(0),
    status: text('status').notNull().default('active'),
    /** Its title and every outcome label (both sides), as search words (src/domains/events/search-text.ts). */
    searchText: text('search_text').notNull().default(''),
    /** Last read through `GET /markets/:id`: tracked for 24 h after (docs/decisions.md §16.3, docs/venues.md "Tracked markets"). */
    readAt: timestamp('read_at', { withTimezone: true }),
    /** The venue's scheduled close (Gamma market `endDate`, Kalshi `close_time`), past or future (docs/decisions.md §16.5). */
    endDate: timestamp('end_date', { withTimezone: true }),
    /** The venue's own 24 h change of `yes_price`: Gamma `oneDayPriceChange`, Kalshi last − previous price (§16.2). */
    venueChange24h: doublePrecision('venue_change_24h'),
    yesTokenId: text('yes_token_id'),
    /** Polymarket: the market's condition id, lower-case (Data API trades name markets by it); null on Kalshi. */
    conditionId: text('condition_id'),
    priceUpdatedAt: timestamp('price_updated_at', { withTimezone: true }),
    /** Last price cycle that refreshed it as a tracked market (docs/decisions.md §11.2, §11.4). */
    trackedAt: timestamp('tracked_at', { withTimezone: true }),
    historyBackfilledAt: timestamp('history_backfilled_at', { withTimezone: true }),
    /** When a write first saw it resolved (docs/decisions.md §17.2 `market_resolved`: the detector reads what resolved since its last run). */
    resolvedAt: timestamp('resolved_at', { withTimezone: true }),
    /** A resolved market's result for the side `yes_price` prices: 'yes' | 'no' (Kalshi `result`, Gamma `outcomePrices`). */
    result: text('result'),
    /** The label of the winning outcome (Gamma `outcomes`; "Yes"/"No" on Kalshi). */
    resolvedOutcome: text('resolved_outcome'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('markets_group_volume_idx').on(t.eventGroupId, t.volume.desc()),
    index('markets_active_idx')
      .on(t.venue)
      .where(sql`${t.status} = 'active'`),
    // docs/decisions.md §17.2: what resolved, and what appeared, since a detector's last run.
    index('markets_resolved_at_idx')
      .on(t.resolvedAt)
      .where(sql`${t.resolvedAt} is not null`),
    index('markets_created_idx').on(t.createdAt),
    index('markets_condition_idx')
      .on(t.conditionId)
      .where(sql`${t.conditionId} is not null`),
    index('markets_read_idx')
      .on(t.readAt)
      .where(sql`${t.readAt} is not null`),
  ],
);

/** Price history, downsampled by the price-sync job (docs/decisions.md §11.5: minute points 48 h, hourly after). */
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

/**
 * Every reading counts (docs/decisions.md §14.2, §14.3, §17.2): move alerts
 * and `market_moved` measure against every price reading of their window,
 * not the minute points of price_history (two readings in one minute
 * collapse there). A run of equal readings is one row: when a reading
 * changes a market's price, the price it held is stored with `at`, the time
 * of its last reading (markets.price_updated_at then); the current run is
 * the market row itself (yes_price, price_updated_at). A run counts for a
 * window when `at` falls in it, since equal readings give the same move.
 * So rows grow with price changes, not readings, and live 24 hours (the
 * longest move window), pruned by price-sync.
 */
export const priceReadings = pgTable(
  'price_readings',
  {
    marketId: text('market_id')
      .notNull()
      .references(() => markets.id, { onDelete: 'cascade' }),
    at: timestamp('at', { withTimezone: true }).notNull(),
    price: doublePrecision('price').notNull(),
  },
  (t) => [index('price_readings_market_at_idx').on(t.marketId, t.at, t.price), index('price_readings_at_idx').on(t.at)],
);

/**
 * Per-venue state of the catalogue sync (docs/decisions.md §11.1, §11.4): the
 * Kalshi `min_updated_ts` watermark, when the last complete listing started
 * (groups not seen since then left the listing), and the last outcome of the
 * catalogue and price runs (freshness).
 */
export const venueSyncState = pgTable('venue_sync_state', {
  venue: text('venue').primaryKey(), // 'polymarket' | 'kalshi'
  /** Kalshi: events updated after this are read by the next incremental pass. */
  watermark: timestamp('watermark', { withTimezone: true }),
  /** Start of the last full listing that reached its final page. */
  fullListedAt: timestamp('full_listed_at', { withTimezone: true }),
  /** Last catalogue run of this venue that succeeded. */
  catalogueOkAt: timestamp('catalogue_ok_at', { withTimezone: true }),
  catalogueFailed: boolean('catalogue_failed').notNull().default(false),
  pricesFailed: boolean('prices_failed').notNull().default(false),
  /** Kalshi: when `GET /series` was last stored. */
  seriesAt: timestamp('series_at', { withTimezone: true }),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/** Kalshi series → our category (docs/venues.md "Categories", §5d), refreshed at most daily. */
export const kalshiSeries = pgTable('kalshi_series', {
  ticker: text('ticker').primaryKey(),
  category: text('category').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});
