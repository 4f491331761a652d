import { sql } from 'drizzle-orm';
import { boolean, doublePrecision, index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { markets } from './events.js';
import { users } from './users.js';

/**
 * Price alerts (docs/decisions.md §6, §14.2, §14.3). Crossing alerts (`above`/`below`) have a
 * `target_price`; move alerts (`moves`) have `change` and `window_minutes` instead. The columns
 * after `trigger_count` are the check's own state, not part of the API.
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
    condition: text('condition').notNull(), // 'above' | 'below' | 'moves'
    side: text('side').notNull(), // 'yes' | 'no'
    change: doublePrecision('change'), // 'moves' only: probability points
    windowMinutes: integer('window_minutes'), // 'moves' only
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
    index('price_alerts_due_idx')
      .on(t.dueAt)
      .where(sql`${t.dueAt} is not null`),
  ],
);
