import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { users } from './users.js';

/**
 * Sessions (docs/decisions.md §10.5): one row per refresh family, `id` = the
 * family and the `sid` of its access tokens. Revocation is a property of the
 * row (`revoked_at`), and every rotation locks the row and checks it in the same
 * statement, so a revocation and a racing rotation are serialised (§10.2).
 */
export const authSessions = pgTable(
  'sessions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }).notNull().defaultNow(),
    /** Sliding: last use + 90 days. */
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    /** As seen at the last sign-in or refresh; null when unknown. */
    userAgent: text('user_agent'),
    ip: text('ip'),
  },
  (t) => [
    index('sessions_user_live_idx')
      .on(t.userId, t.lastUsedAt)
      .where(sql`${t.revokedAt} is null`),
    index('sessions_expires_idx').on(t.expiresAt),
  ],
);

/**
 * Refresh tokens: only the SHA-256 of the opaque token is stored. A family is
 * one sign-in; rotation marks a token used and issues its successor in the
 * same family; reuse of a used token revokes the whole family.
 */
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull().unique(),
    family: uuid('family').notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /**
     * docs/decisions.md §10.3: while REFRESH_REUSE_GRACE_SECONDS > 0, the successor this
     * token was rotated into, encrypted with a key derived from JWT_SECRET; cleared
     * once the window has passed (at rest otherwise only hashes are stored).
     */
    successorSealed: text('successor_sealed'),
  },
  (t) => [
    index('refresh_tokens_family_idx').on(t.family),
    index('refresh_tokens_sealed_idx')
      .on(t.usedAt)
      .where(sql`${t.successorSealed} is not null`),
    index('refresh_tokens_user_active_idx')
      .on(t.userId)
      .where(sql`${t.revokedAt} is null`),
    index('refresh_tokens_expires_idx').on(t.expiresAt),
  ],
);

/** Beta access keys, minted by `npm run beta-keys -- create`; only the hash is stored. */
export const betaKeys = pgTable('beta_keys', {
  id: uuid('id').primaryKey().defaultRandom(),
  keyHash: text('key_hash').notNull().unique(),
  maxUses: integer('max_uses').notNull().default(1),
  uses: integer('uses').notNull().default(0),
  revokedAt: timestamp('revoked_at', { withTimezone: true }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

export const betaKeyRedemptions = pgTable(
  'beta_key_redemptions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    keyId: uuid('key_id')
      .notNull()
      .references(() => betaKeys.id, { onDelete: 'cascade' }),
    userId: uuid('user_id').references(() => users.id, { onDelete: 'set null' }),
    redeemedAt: timestamp('redeemed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('beta_key_redemptions_key_idx').on(t.keyId)],
);
