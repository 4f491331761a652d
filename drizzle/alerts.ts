import { sql } from 'drizzle-orm';
import { boolean, doublePrecision, index, integer, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { markets } from './events.js';
import { users } from './users.js';

/**
 * The trade a big-trade alert names (docs/decisions.md §18.4), kept while a repeating alert cools
 * down: the largest qualifying trade since its last firing.
 */
export interface BigTradeJson {
  usd: number;
  side: 'buy' | 'sell';
  outcome: string;
  price: number;
  size: number;
  walletAddress: string | null;
  /** ISO 8601. */
  at: string;
}

/**
 * Price alerts (docs/decisions.md §6, §14.2, §14.3, §18.4). Crossing alerts (`above`/`below`) have a
 * `target_price`; move alerts (`moves`) have `change` and `window_minutes` instead; big-trade alerts
 * (`big_trade`) have `min_usd` and no side. The columns after `trigger_count` are the check's own
 * state, not part of the API.
 */
export const priceAlerts = pgTable(
  'price_alerts',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    marketId: text('market_id')
      .notNull()
      .references(() => markets.id, { onDelete: 'cascade' }),
    targetPrice: doublePrecision('target_price'), // null on 'moves'
    condition: text('condition').notNull(), // 'above' | 'below' | 'moves' | 'big_trade'
    side: text('side'), // 'yes' | 'no'; null on 'big_trade'
    change: doublePrecision('change'), // 'moves' only: probability points
    windowMinutes: integer('window_minutes'), // 'moves' only
    minUsd: doublePrecision('min_usd'), // 'big_trade' only: USD, price × size
    repeat: boolean('repeat').notNull().default(false),
    cooldownMinutes: integer('cooldown_minutes').notNull().default(60),
    triggerCount: integer('trigger_count').notNull().default(0),
    active: boolean('active').notNull().default(true),
    triggeredAt: timestamp('triggered_at', { withTimezone: true }),
    triggeredPrice: doublePrecision('triggered_price'),
    /** A crossing alert may fire; false after a repeating alert fired, until a reading re-arms it (0.02 back across). */
    armed: boolean('armed').notNull().default(true),
    /** A move alert measures from readings after this: creation, the last firing, or a redefinition. */
    readingsFrom: timestamp('readings_from', { withTimezone: true }).notNull().defaultNow(),
    /** The end of a repeating alert's cooldown, until the check has looked at it once then (the market may not move again). */
    dueAt: timestamp('due_at', { withTimezone: true }),
    /** 'big_trade': the largest qualifying trade seen since the last firing, while a repeating alert cools down. */
    pendingTrade: jsonb('pending_trade').$type<BigTradeJson>(),
    /** 'big_trade': the newest trade time the venue's feed showed for the market (the next read starts a little before it). */
    tradesSeenUntil: timestamp('trades_seen_until', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('price_alerts_user_idx').on(t.userId, t.createdAt),
    // The check range-scans, per moved market and (armed, side, condition), the crossing alerts a
    // price fires (armed) or re-arms (not armed), by threshold.
    index('price_alerts_check_idx')
      .on(t.marketId, t.armed, t.side, t.condition, t.targetPrice)
      .where(sql`${t.active}`),
    // Move alerts of a moved market whose `change` is within the market's largest recent move.
    index('price_alerts_moves_idx')
      .on(t.marketId, t.change)
      .where(sql`${t.active} and ${t.condition} = 'moves'`),
    // Markets with active big-trade alerts, and their lowest threshold (read on every price-sync).
    index('price_alerts_big_trade_idx')
      .on(t.marketId, t.minUsd)
      .where(sql`${t.active} and ${t.condition} = 'big_trade'`),
    index('price_alerts_due_idx')
      .on(t.dueAt)
      .where(sql`${t.dueAt} is not null`),
  ],
);
