import { sql } from 'drizzle-orm';
import type { DbHandle } from '../../db/index.js';
import { betaKeys } from '../../../drizzle/auth.js';
import type { Chain, SessionUser } from './schemas.js';

/**
 * Raw SQL on the hot paths: each sign-in and each refresh is ONE statement
 * (one round trip, atomic), written with data-modifying CTEs that behave the
 * same on PostgreSQL and PGlite.
 *
 * Sessions (docs/decisions.md §10.2): a session row is the anchor of its
 * refresh family. Everything that ends a session (reuse, logout, ending it
 * by id) sets `sessions.revoked_at` with an UPDATE, which takes the row's
 * lock; every rotation first locks the same row FOR UPDATE and re-checks
 * `revoked_at is null` on its newest version before it claims the presented
 * token. So a revocation and a rotation of one family are serialised: a
 * rotation that commits first minted a successor into a family that is then
 * revoked (and the family, not the token, is what is checked), and a rotation
 * that waits behind a revocation finds the family revoked and claims nothing.
 */

interface UserRow {
  id: string;
  wallet_address: string;
  chain: Chain;
  username: string | null;
  avatar_url: string | null;
  sid: string;
}

const toUser = (r: UserRow): SessionUser => ({
  id: r.id,
  walletAddress: r.wallet_address,
  chain: r.chain,
  username: r.username,
  avatarUrl: r.avatar_url,
});

/** Where the request came from, recorded on the session at sign-in and each refresh. */
export interface SeenFrom {
  userAgent: string | null;
  ip: string | null;
}

const SESSION_DAYS = 90;

/**
 * The tail of a sign-in statement whose CTE `u` yields the signed-in user:
 * opens a session and its first refresh token (one family per session) and
 * selects the user with the new session id.
 */
function newSessionFromU(input: { refreshTokenHash: string; seen: SeenFrom }) {
  return sql`s as (
      insert into sessions (user_id, expires_at, user_agent, ip)
      select id, now() + make_interval(days => ${SESSION_DAYS}), ${input.seen.userAgent}, ${input.seen.ip} from u
      returning id, user_id
    ), t as (
      insert into refresh_tokens (user_id, token_hash, family, expires_at)
      select user_id, ${input.refreshTokenHash}, id, now() + make_interval(days => ${SESSION_DAYS}) from s
    )
    select u.id, u.wallet_address, u.chain, u.username, u.avatar_url, s.id as sid from u join s on s.user_id = u.id`;
}

/**
 * Finds or creates the wallet account and starts a new session for it.
 * ON CONFLICT makes concurrent first sign-ins of one address converge on one
 * user; `referral_code` is only written by the INSERT branch (first sign-up).
 * The DO UPDATE only applies to an account of the same auth method, so a
 * wallet and an identity-provider account are never merged: undefined then.
 */
export async function upsertWalletUserWithSession(
  dbh: DbHandle,
  input: { chain: Chain; walletAddress: string; referralCode?: string | null; refreshTokenHash: string; seen: SeenFrom },
): Promise<(SessionUser & { sid: string }) | undefined> {
  const rows = await dbh.rows<UserRow>(sql`
    with u as (
      insert into users (chain, wallet_address, auth_method, referral_code, last_login_at)
      values (${input.chain}, ${input.walletAddress}, 'wallet', ${input.referralCode ?? null}, now())
      on conflict (chain, wallet_address) do update
        set last_login_at = now(), updated_at = now()
        where users.auth_method = 'wallet'
      returning id, wallet_address, chain, username, avatar_url
    ), ${newSessionFromU(input)}`);
  return rows[0] ? { ...toUser(rows[0]), sid: rows[0].sid } : undefined;
}

/**
 * docs/decisions.md §10.8: an identity-provider account is found by (issuer,
 * subject) exactly, or created at its synthetic address. Nothing is inserted
 * when that address is taken (by another identity whose `idp:<iss>:<sub>`
 * string collides, or by a wallet): undefined, and nothing is merged.
 */
export async function upsertIdpUserWithSession(
  dbh: DbHandle,
  input: { walletAddress: string; issuer: string; subject: string; refreshTokenHash: string; seen: SeenFrom },
): Promise<(SessionUser & { sid: string }) | undefined> {
  const rows = await dbh.rows<UserRow>(sql`
    with found as (
      update users set last_login_at = now(), updated_at = now()
      where auth_method = 'idp' and idp_issuer = ${input.issuer} and idp_subject = ${input.subject}
      returning id, wallet_address, chain, username, avatar_url
    ), created as (
      insert into users (chain, wallet_address, auth_method, idp_issuer, idp_subject, last_login_at)
      select 'evm', ${input.walletAddress}, 'idp', ${input.issuer}, ${input.subject}, now()
      where not exists (select 1 from found)
      on conflict do nothing
      returning id, wallet_address, chain, username, avatar_url
    ), u as (
      select * from found union all select * from created
    ), ${newSessionFromU(input)}`);
  return rows[0] ? { ...toUser(rows[0]), sid: rows[0].sid } : undefined;
}

export interface RotatedUser {
  id: string;
  walletAddress: string;
  chain: Chain;
  sid: string;
}

const toRotated = (r: UserRow): RotatedUser => ({ id: r.id, walletAddress: r.wallet_address, chain: r.chain, sid: r.sid });

/**
 * The rotation, one statement: locks the presented token's session row (only
 * if the session is not revoked, re-checked after any wait for the lock),
 * claims the token (used_at set) only if it is unused, unrevoked and
 * unexpired, inserts its successor in the same family with a fresh 90-day
 * expiry, and records the use on the session. Two concurrent claims of one
 * token serialise on the locks: the second re-checks `used_at is null`,
 * finds it false, and gets no row.
 *
 * `sealedSuccessor` (the grace window, §10.3) is kept on the claimed row;
 * sealed successors older than the window are cleared here too (a few per
 * rotation, rows locked by others skipped), so they live the window only.
 */
export async function rotateRefreshToken(
  dbh: DbHandle,
  input: { presentedHash: string; successorHash: string; sealedSuccessor: string | null; graceSeconds: number; seen: SeenFrom },
): Promise<RotatedUser | undefined> {
  const rows = await dbh.rows<UserRow>(sql`
    with fam as (
      select id from sessions
      where id = (select family from refresh_tokens where token_hash = ${input.presentedHash}) and revoked_at is null
      for update
    ), claimed as (
      update refresh_tokens set used_at = now(), successor_sealed = ${input.sealedSuccessor}
      where token_hash = ${input.presentedHash} and used_at is null and revoked_at is null and expires_at > now()
        and family in (select id from fam)
      returning user_id, family
    ), successor as (
      insert into refresh_tokens (user_id, token_hash, family, expires_at)
      select user_id, ${input.successorHash}, family, now() + make_interval(days => ${SESSION_DAYS}) from claimed
      returning user_id, family
    ), touched as (
      update sessions set last_used_at = now(), expires_at = now() + make_interval(days => ${SESSION_DAYS}),
        user_agent = ${input.seen.userAgent}, ip = ${input.seen.ip}
      where id in (select family from claimed)
    ), unsealed as (
      update refresh_tokens set successor_sealed = null
      where id in (
        select id from refresh_tokens
        where successor_sealed is not null and used_at < now() - make_interval(secs => ${input.graceSeconds})
        order by used_at limit 20
        for update skip locked
      )
    )
    select u.id, u.wallet_address, u.chain, u.username, u.avatar_url, s.family as sid
    from users u join successor s on s.user_id = u.id`);
  return rows[0] ? toRotated(rows[0]) : undefined;
}

export interface PresentedToken {
  family: string;
  used: boolean;
  /** The sealed successor, while the grace window may still apply. */
  sealedSuccessor: string | null;
  /** Seconds since the token was rotated (null when unused). */
  usedSecondsAgo: number | null;
}

/** After a failed claim: what the presented token is, if anything. */
export async function findPresentedToken(dbh: DbHandle, presentedHash: string): Promise<PresentedToken | undefined> {
  const rows = await dbh.rows<{ family: string; used: boolean; successor_sealed: string | null; ago: number | string | null }>(sql`
    select family, used_at is not null as used, successor_sealed,
           extract(epoch from (now() - used_at)) as ago
    from refresh_tokens where token_hash = ${presentedHash}`);
  const r = rows[0];
  if (!r) return undefined;
  return { family: r.family, used: r.used, sealedSuccessor: r.successor_sealed, usedSecondsAgo: r.ago === null ? null : Number(r.ago) };
}

/**
 * The grace answer (§10.3), one statement: the presented token was rotated
 * within the window, its successor is still unused, and the session is not
 * revoked (locked as in a rotation, so it serialises with the successor's own
 * rotation and with revocations). Counts as a use of the session.
 */
export async function reuseWithinGrace(
  dbh: DbHandle,
  input: { family: string; presentedHash: string; successorHash: string; graceSeconds: number; seen: SeenFrom },
): Promise<RotatedUser | undefined> {
  const rows = await dbh.rows<UserRow>(sql`
    with fam as (
      select id from sessions where id = ${input.family}::uuid and revoked_at is null for update
    ), successor as (
      select s.user_id, s.family from refresh_tokens s
      where s.token_hash = ${input.successorHash} and s.family in (select id from fam)
        and s.used_at is null and s.revoked_at is null and s.expires_at > now()
        and exists (
          select 1 from refresh_tokens p
          where p.token_hash = ${input.presentedHash} and p.family = s.family
            and p.used_at >= now() - make_interval(secs => ${input.graceSeconds})
        )
    ), touched as (
      update sessions set last_used_at = now(), expires_at = now() + make_interval(days => ${SESSION_DAYS}),
        user_agent = ${input.seen.userAgent}, ip = ${input.seen.ip}
      where id in (select family from successor)
    )
    select u.id, u.wallet_address, u.chain, u.username, u.avatar_url, s.family as sid
    from users u join successor s on s.user_id = u.id`);
  return rows[0] ? toRotated(rows[0]) : undefined;
}

/**
 * Ends sessions: `revoked_at` on each session row (the lock a rotation of the
 * family waits for) and on its tokens, sessions locked in id order so two
 * revocations of overlapping sets cannot deadlock. Returns the ids that were
 * live until now.
 */
async function revokeSessionsWhere(dbh: DbHandle, where: ReturnType<typeof sql>): Promise<string[]> {
  const rows = await dbh.rows<{ id: string }>(sql`
    with f as (
      update sessions set revoked_at = now()
      where id in (select id from sessions where ${where} and revoked_at is null order by id for update)
      returning id
    ), t as (
      update refresh_tokens set revoked_at = now() where family in (select id from f) and revoked_at is null
    )
    select id from f`);
  return rows.map((r) => r.id);
}

/** Reuse: the whole family, even when it was already revoked (nothing then changes). */
export function revokeFamily(dbh: DbHandle, family: string): Promise<string[]> {
  return revokeSessionsWhere(dbh, sql`id = ${family}::uuid`);
}

/** Logout: every session of the user. */
export function revokeUserSessions(dbh: DbHandle, userId: string): Promise<string[]> {
  return revokeSessionsWhere(dbh, sql`user_id = ${userId}::uuid`);
}

/** One live session of the user; [] when it is not theirs, unknown, expired or already ended. */
export function revokeUserSession(dbh: DbHandle, userId: string, sessionId: string): Promise<string[]> {
  return revokeSessionsWhere(dbh, sql`id = ${sessionId}::uuid and user_id = ${userId}::uuid and expires_at > now()`);
}

/** Every live session of the user but `keep` (the caller's own, when known). */
export function revokeOtherSessions(dbh: DbHandle, userId: string, keep: string | undefined): Promise<string[]> {
  return keep === undefined
    ? revokeSessionsWhere(dbh, sql`user_id = ${userId}::uuid`)
    : revokeSessionsWhere(dbh, sql`user_id = ${userId}::uuid and id <> ${keep}::uuid`);
}

export interface SessionRow {
  id: string;
  createdAt: Date;
  lastUsedAt: Date;
  expiresAt: Date;
  userAgent: string | null;
  ip: string | null;
}

/** The user's live sessions, most recently used first. */
export async function listUserSessions(dbh: DbHandle, userId: string): Promise<SessionRow[]> {
  const rows = await dbh.rows<{
    id: string;
    created_at: string | Date;
    last_used_at: string | Date;
    expires_at: string | Date;
    user_agent: string | null;
    ip: string | null;
  }>(sql`
    select id, created_at, last_used_at, expires_at, user_agent, ip from sessions
    where user_id = ${userId}::uuid and revoked_at is null and expires_at > now()
    order by last_used_at desc, id
    limit 1000`);
  return rows.map((r) => ({
    id: r.id,
    createdAt: new Date(r.created_at),
    lastUsedAt: new Date(r.last_used_at),
    expiresAt: new Date(r.expires_at),
    userAgent: r.user_agent,
    ip: r.ip,
  }));
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
