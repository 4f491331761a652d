import { sql } from 'drizzle-orm';
import { boolean, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

/** Wallet and identity-provider accounts. One user per (chain, walletAddress). */
export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    chain: text('chain').notNull(), // 'solana' | 'evm'
    walletAddress: text('wallet_address').notNull(), // base58 (solana) or EIP-55 (evm)
    authMethod: text('auth_method').notNull(), // 'wallet' | 'idp'
    idpIssuer: text('idp_issuer'),
    idpSubject: text('idp_subject'),
    username: text('username'),
    avatarUrl: text('avatar_url'),
    referralCode: text('referral_code'),
    betaAccess: boolean('beta_access').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    lastLoginAt: timestamp('last_login_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('users_chain_wallet_uq').on(t.chain, t.walletAddress),
    uniqueIndex('users_idp_uq')
      .on(t.idpIssuer, t.idpSubject)
      .where(sql`${t.idpIssuer} is not null`),
    index('users_created_idx').on(t.createdAt),
  ],
);
