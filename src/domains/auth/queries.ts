import { sql } from 'drizzle-orm';
import type { DbHandle } from '../../db/index.js';
import { betaKeys } from '../../../drizzle/auth.js';
import type { Chain, SessionUser } from './schemas.js';

/**
 * Raw SQL on the hot paths: each sign-in and each refresh is ONE statement
 * (one round trip, atomic), written with data-modifying CTEs that behave the
 * same on PostgreSQL and PGlite.
 */

interface UserRow {
  id: string;
  wallet_address: string;
  chain: Chain;
  username: string | null;
  avatar_url: string | null;
}

const toUser = (r: UserRow): SessionUser => ({
  id: r.id,
  walletAddress: r.wallet_address,
  chain: r.chain,
  username: r.username,
  avatarUrl: r.avatar_url,
});

/**
 * Finds or creates the account and starts a new refresh-token family for it.
 * ON CONFLICT makes concurrent first sign-ins of one address converge on one
 * user; `referral_code` is only written by the INSERT branch (first sign-up).
 * The DO UPDATE only applies to an account of the same auth method, so a
 * wallet and an identity-provider account are never merged: undefined then.
 */
export async function upsertUserWithSession(
  dbh: DbHandle,
  input: {
    chain: Chain;
    walletAddress: string;
    authMethod: 'wallet' | 'idp';
    referralCode?: string | null;
    idpIssuer?: string | null;
    idpSubject?: string | null;
    refreshTokenHash: string;
  },
): Promise<SessionUser | undefined> {
  const rows = await dbh.rows<UserRow>(sql`
    with u as (
      insert into users (chain, wallet_address, auth_method, referral_code, idp_issuer, idp_subject, last_login_at)
      values (${input.chain}, ${input.walletAddress}, ${input.authMethod}, ${input.referralCode ?? null},
              ${input.idpIssuer ?? null}, ${input.idpSubject ?? null}, now())
      on conflict (chain, wallet_address) do update
        set last_login_at = now(), updated_at = now()
        where users.auth_method = excluded.auth_method
      returning id, wallet_address, chain, username, avatar_url
    ), t as (
      insert into refresh_tokens (user_id, token_hash, family, expires_at)
      select id, ${input.refreshTokenHash}, gen_random_uuid(), now() + interval '90 days' from u
    )
    select id, wallet_address, chain, username, avatar_url from u`);
  return rows[0] ? toUser(rows[0]) : undefined;
}

/**
 * The rotation: claims the presented token (used_at set) only if it is
 * unused, unrevoked and unexpired, and inserts its successor in the same
 * family with a fresh 90-day expiry, in one statement. Row locking makes two
 * concurrent claims of one token serialise: the second re-checks
 * `used_at is null`, finds it false, and gets no row.
 */
export async function rotateRefreshToken(
  dbh: DbHandle,
  presentedHash: string,
  successorHash: string,
): Promise<{ id: string; walletAddress: string; chain: Chain } | undefined> {
  const rows = await dbh.rows<UserRow>(sql`
    with claimed as (
      update refresh_tokens set used_at = now()
      where token_hash = ${presentedHash} and used_at is null and revoked_at is null and expires_at > now()
      returning user_id, family
    ), successor as (
      insert into refresh_tokens (user_id, token_hash, family, expires_at)
      select user_id, ${successorHash}, family, now() + interval '90 days' from claimed
      returning user_id
    )
    select u.id, u.wallet_address, u.chain from users u join successor s on s.user_id = u.id`);
  const r = rows[0];
  return r ? { id: r.id, walletAddress: r.wallet_address, chain: r.chain } : undefined;
}

/**
 * After a failed claim: if the token was already used, revoke its whole
 * family (committed on its own, before the error is answered) and say so.
 */
export async function revokeFamilyIfReused(dbh: DbHandle, presentedHash: string): Promise<'reused' | 'invalid'> {
  const rows = await dbh.rows<{ reused: boolean }>(sql`
    with presented as (
      select family from refresh_tokens where token_hash = ${presentedHash} and used_at is not null
    ), revoked as (
      update refresh_tokens set revoked_at = now()
      where family in (select family from presented) and revoked_at is null
    )
    select exists (select 1 from presented) as reused`);
  return rows[0]?.reused ? 'reused' : 'invalid';
}

/** Logout: every family of the user. */
export async function revokeUserTokens(dbh: DbHandle, userId: string): Promise<number> {
  const rows = await dbh.rows<{ n: number | string }>(sql`
    with r as (
      update refresh_tokens set revoked_at = now() where user_id = ${userId} and revoked_at is null returning 1
    ) select count(*)::int as n from r`);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Redeems one use of a beta key atomically (concurrent redemptions of the
 * last use: exactly one wins). With a user, records them and flags the account.
 */
export async function redeemBetaKey(dbh: DbHandle, keyHash: string, userId: string | undefined): Promise<boolean> {
  const uid = userId ?? null;
  const rows = await dbh.rows<{ id: string }>(sql`
    with k as (
      update beta_keys set uses = uses + 1
      where key_hash = ${keyHash} and revoked_at is null and uses < max_uses
      returning id
    ), r as (
      insert into beta_key_redemptions (key_id, user_id)
      select k.id, (select id from users where id = ${uid}::uuid) from k
    ), u as (
      update users set beta_access = true, updated_at = now()
      where id = ${uid}::uuid and exists (select 1 from k)
    )
    select id from k`);
  return rows.length > 0;
}

export async function insertBetaKeys(dbh: DbHandle, keyHashes: string[], maxUses: number): Promise<void> {
  if (keyHashes.length === 0) return;
  await dbh.db.insert(betaKeys).values(keyHashes.map((keyHash) => ({ keyHash, maxUses })));
}
