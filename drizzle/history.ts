import { date, doublePrecision, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Trader history (docs/decisions.md §14.1): what every leaderboard sync saw of
 * each trader on each board, downsampled as it ages so storage grows with
 * (tracked traders × days), not with syncs.
 *
 * A sync upserts one row per (board, trader) into the current clock hour of
 * trader_history_hourly: the last sync of the hour wins. After each sync,
 * hours that ended more than 7 days ago are rolled into trader_history_daily
 * (the UTC day's last point wins) and deleted; daily rows older than 400 days
 * are dropped.
 */
const pointColumns = () => ({
  category: text('category').notNull(), // OVERALL | POLITICS | SPORTS | CRYPTO
  period: text('period').notNull(), // 1D | 7D | 30D | ALL
  walletAddress: text('wallet_address').notNull(), // lower-case 0x…
  /** When the sync that wrote this point ran. */
  at: timestamp('at', { withTimezone: true }).notNull(),
  /** Venue rank on the PnL ordering; null for a trader only on the volume ordering. */
  rank: integer('rank'),
  pnl: doublePrecision('pnl').notNull(),
  volume: doublePrecision('volume').notNull(),
});

export const traderHistoryHourly = pgTable(
  'trader_history_hourly',
  {
    ...pointColumns(),
    /** The UTC clock hour of `at` (its start). */
    hour: timestamp('hour', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.category, t.period, t.walletAddress, t.hour] }),
    // Compaction takes the oldest hours of every board in one range.
    index('trader_history_hourly_hour_idx').on(t.hour),
  ],
);

export const traderHistoryDaily = pgTable(
  'trader_history_daily',
  {
    ...pointColumns(),
    /** The UTC day of `at`. */
    day: date('day', { mode: 'string' }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.category, t.period, t.walletAddress, t.day] }),
    // Retention drops the oldest days of every board in one range.
    index('trader_history_daily_day_idx').on(t.day),
  ],
);
