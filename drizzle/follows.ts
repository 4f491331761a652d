import { sql } from 'drizzle-orm';
import { bigint, index, integer, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users } from './users.js';

/**
 * Followed traders (docs/decisions.md §18.2): one row per (user, trader
 * wallet), the wallet lower-case. At most 100 per user, checked under a lock
 * of the user's row so concurrent follows cannot pass it.
 */
export const follows = pgTable(
  'follows',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    walletAddress: text('wallet_address').notNull(),
    followedAt: timestamp('followed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.walletAddress] }),
    index('follows_user_followed_idx').on(t.userId, t.followedAt.desc()),
    // The poller's fan-out joins a trader's new fills to its followers (docs/decisions.md §18.6).
    index('follows_wallet_followed_idx').on(t.walletAddress, t.followedAt),
  ],
);

/**
 * One row per trader anyone follows or followed: how many follow it now (the
 * poller reads the most-followed first), the poll's watermark and what the
 * fills told us (docs/decisions.md §18.3, §18.5).
 */
export const followedTraders = pgTable(
  'followed_traders',
  {
    walletAddress: text('wallet_address').primaryKey(),
    followerCount: integer('follower_count').notNull().default(0),
    /** The trader's name and avatar as the venue's fills give them (null: none seen yet). */
    displayName: text('display_name'),
    avatarUrl: text('avatar_url'),
    /** Unix seconds of the newest fill seen: the next read starts there (`start`). */
    seenUntil: bigint('seen_until', { mode: 'number' }),
    polledAt: timestamp('polled_at', { withTimezone: true }),
    /** The newest fill seen (GET /follows `lastTradeAt`). */
    lastTradeAt: timestamp('last_trade_at', { withTimezone: true }),
  },
  (t) => [
    index('followed_traders_followers_idx')
      .on(t.followerCount.desc(), t.walletAddress)
      .where(sql`${t.followerCount} > 0`),
  ],
);

/**
 * Every fill the poller has handled, keyed as the venue identifies a fill
 * (transaction hash + token id + side, docs/venues.md "What we call"): the
 * insert that claims a fill is what makes its notification happen once,
 * across instances. Rows older than the watermarks are pruned.
 */
export const traderFills = pgTable(
  'trader_fills',
  {
    transactionHash: text('transaction_hash').notNull(),
    tokenId: text('token_id').notNull(),
    side: text('side').notNull(), // 'buy' | 'sell'
    walletAddress: text('wallet_address').notNull(),
    at: timestamp('at', { withTimezone: true }).notNull(),
    seenAt: timestamp('seen_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Per trader: two followed wallets can fill on one side of one token in the same transaction.
    primaryKey({ columns: [t.walletAddress, t.transactionHash, t.tokenId, t.side] }),
    index('trader_fills_seen_idx').on(t.seenAt),
  ],
);
