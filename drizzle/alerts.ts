import { sql } from 'drizzle-orm';
import { boolean, doublePrecision, index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { markets } from './events.js';
import { users } from './users.js';

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
    targetPrice: doublePrecision('target_price').notNull(),
    condition: text('condition').notNull(), // 'above' | 'below'
    side: text('side').notNull(), // 'yes' | 'no'
    active: boolean('active').notNull().default(true),
    triggeredAt: timestamp('triggered_at', { withTimezone: true }),
    triggeredPrice: doublePrecision('triggered_price'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('price_alerts_user_idx').on(t.userId, t.createdAt),
    // The trigger scans only active alerts of the markets that moved, by threshold.
    index('price_alerts_active_market_idx')
      .on(t.marketId, t.side, t.condition, t.targetPrice)
      .where(sql`${t.active}`),
  ],
);
