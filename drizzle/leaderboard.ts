import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core';

/**
 * A leaderboard sync writes a whole new snapshot per (category, period), then
 * switches `leaderboard_current` to it in one statement: readers never see a
 * half-written board, and a failed sync leaves the last good one current.
 * A few previous snapshots are kept for a while so cursors issued on them
 * finish their walk on the board they started on.
 */
/**
 * The enrichment figures: kept per trader in trader_stats and copied into each
 * leaderboard entry so every sort key is an indexed column of the board.
 */
const enrichmentColumns = () => ({
  roi: doublePrecision('roi').notNull().default(0),
  winRate: doublePrecision('win_rate').notNull().default(0),
  wins: integer('wins').notNull().default(0),
  losses: integer('losses').notNull().default(0),
  bestTrade: doublePrecision('best_trade').notNull().default(0),
  sharpeRatio: doublePrecision('sharpe_ratio').notNull().default(0),
  tradeCount: integer('trade_count').notNull().default(0),
  avgEntry: doublePrecision('avg_entry').notNull().default(0),
  avgTrade: doublePrecision('avg_trade').notNull().default(0),
  sparkline: jsonb('sparkline').$type<number[]>().notNull().default([]),
});

export const leaderboardSnapshots = pgTable(
  'leaderboard_snapshots',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    category: text('category').notNull(), // OVERALL | POLITICS | SPORTS | CRYPTO
    period: text('period').notNull(), // 1D | 7D | 30D | ALL
    status: text('status').notNull().default('building'), // building | ready | failed
    rowCount: integer('row_count').notNull().default(0),
    /** Venue rows that failed strict parsing and were left out. */
    skippedRows: integer('skipped_rows').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
  },
  (t) => [index('leaderboard_snapshots_cp_idx').on(t.category, t.period, t.createdAt)],
);

export const leaderboardCurrent = pgTable(
  'leaderboard_current',
  {
    category: text('category').notNull(),
    period: text('period').notNull(),
    snapshotId: bigint('snapshot_id', { mode: 'number' })
      .notNull()
      .references(() => leaderboardSnapshots.id),
    /** Bumped whenever enrichment rewrites the figures of the current snapshot (response caches key on it). */
    version: integer('version').notNull().default(0),
    switchedAt: timestamp('switched_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.category, t.period] })],
);

/**
 * One row per trader and snapshot, with the enrichment figures copied in so
 * every sort key is a column of this table. Each sort key has two keyset
 * indexes: (snapshot, key, wallet) for ascending and (snapshot, -key, wallet)
 * for descending, so both directions (ties by wallet ascending) are a single
 * forward index range whatever the page depth.
 */
const SORT_COLUMNS = ['pnl', 'volume', 'roi', 'win_rate', 'sharpe_ratio', 'trade_count', 'avg_entry', 'avg_trade'] as const;

export const leaderboardEntries = pgTable(
  'leaderboard_entries',
  {
    snapshotId: bigint('snapshot_id', { mode: 'number' })
      .notNull()
      .references(() => leaderboardSnapshots.id, { onDelete: 'cascade' }),
    walletAddress: text('wallet_address').notNull(), // lower-case 0x…
    displayName: text('display_name').notNull(),
    avatarUrl: text('avatar_url'),
    isKol: boolean('is_kol').notNull().default(false),
    pnl: doublePrecision('pnl').notNull().default(0),
    volume: doublePrecision('volume').notNull().default(0),
    venueRank: integer('venue_rank'),
    /**
     * Venue rank a day ago minus venue rank now (positive: moved up), from the
     * trader history when the snapshot is written (docs/decisions.md §14.1);
     * null without a point a day old or without a PnL rank on either side.
     */
    rankChange: integer('rank_change'),
    ...enrichmentColumns(),
  },
  (t) => [
    primaryKey({ columns: [t.snapshotId, t.walletAddress] }),
    ...SORT_COLUMNS.flatMap((c) => [
      index(`leaderboard_entries_${c}_asc_idx`).on(t.snapshotId, sql.raw(`"${c}"`), t.walletAddress),
      index(`leaderboard_entries_${c}_desc_idx`).on(t.snapshotId, sql.raw(`(-"${c}")`), t.walletAddress),
    ]),
  ],
);

export interface StoredPosition {
  marketId: string;
  marketTitle: string;
  outcome: string;
  size: number;
  avgPrice: number;
  currentPrice: number;
  value: number;
  pnl: number;
}

export interface StoredTrade {
  marketId: string;
  marketTitle: string;
  side: string;
  outcome: string;
  price: number;
  size: number;
  timestamp: string;
}

/**
 * Enrichment per trader (leaderboard-enrich): what does not depend on a
 * period (open positions, latest trades) and when the trader was last read
 * from the venue. The figures are per period, in trader_period_stats.
 */
export const traderStats = pgTable(
  'trader_stats',
  {
    walletAddress: text('wallet_address').primaryKey(),
    topPositions: jsonb('top_positions').$type<StoredPosition[]>().notNull().default([]),
    recentTrades: jsonb('recent_trades').$type<StoredTrade[]>().notNull().default([]),
    enrichedAt: timestamp('enriched_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('trader_stats_enriched_idx').on(t.enrichedAt)],
);

/**
 * The figures of one trader over one period (docs/decisions.md §11.6),
 * computed from the closed positions and trades of that period, losses
 * included; copied into the entries of that period's boards. Each row keeps
 * its own refresh time.
 */
export const traderPeriodStats = pgTable(
  'trader_period_stats',
  {
    walletAddress: text('wallet_address').notNull(),
    period: text('period').notNull(), // 1D | 7D | 30D | ALL
    /** Realized PnL of the period's closed positions + cash PnL of open positions. */
    totalPnl: doublePrecision('total_pnl').notNull().default(0),
    ...enrichmentColumns(),
    enrichedAt: timestamp('enriched_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.walletAddress, t.period] })],
);

/** Largest realized wins from closed positions, per trader and position. */
export const biggestWins = pgTable(
  'biggest_wins',
  {
    walletAddress: text('wallet_address').notNull(),
    asset: text('asset').notNull(),
    displayName: text('display_name').notNull(),
    marketTitle: text('market_title').notNull(),
    pnl: doublePrecision('pnl').notNull(),
    side: text('side').notNull(),
    entryPrice: doublePrecision('entry_price').notNull(),
    exitPrice: doublePrecision('exit_price').notNull(),
    resolvedAt: timestamp('resolved_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.walletAddress, t.asset] }),
    index('biggest_wins_resolved_pnl_idx').on(t.resolvedAt, t.pnl.desc()),
    index('biggest_wins_pnl_idx').on(t.pnl.desc()),
  ],
);

/** Profiles of any address, fetched from the venue on demand and cached. */
export const traderProfiles = pgTable(
  'trader_profiles',
  {
    walletAddress: text('wallet_address').notNull(),
    period: text('period').notNull(),
    profile: jsonb('profile').$type<Record<string, unknown>>().notNull(),
    fetchedAt: timestamp('fetched_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.walletAddress, t.period] }), index('trader_profiles_fetched_idx').on(t.fetchedAt)],
);

/**
 * The leaderboard sync's own record of how its latest run ended
 * (docs/decisions.md §11.4), one row written at the end of every run. Board
 * freshness reads this, not `job_runs` (domains never read the jobs' table).
 */
export const leaderboardSyncState = pgTable('leaderboard_sync_state', {
  /** Always 1: one row. */
  id: integer('id').primaryKey().default(1),
  /** When the latest run finished (the sync's clock). */
  finishedAt: timestamp('finished_at', { withTimezone: true }).notNull(),
  /** Whether some board of the latest run kept an older snapshot. */
  failed: boolean('failed').notNull(),
});
