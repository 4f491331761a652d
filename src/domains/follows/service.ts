import { sql } from 'drizzle-orm';
import { rows, type Db, type DbOrTx } from '../../db/index.js';
import { AppError } from '../../errors.js';
import type { Clock } from '../../lib/deps.js';
import type { Follow, FollowList } from './schemas.js';

/** docs/decisions.md §18.2: at most this many followed traders per user. */
export const FOLLOW_LIMIT = 100;

export interface FollowDeps {
  db: Db;
  clock: Clock;
}

const iso = (v: Date | string) => new Date(v).toISOString();

/**
 * PUT /follows/:address. The user's row is locked first, so concurrent
 * follows of one user are counted one after the other and the limit holds;
 * the trader's follower count (the poller's order) moves in the same
 * transaction. `created` is false when the trader was already followed
 * (its stored `followedAt` is answered).
 */
export async function followTrader(deps: FollowDeps, userId: string, address: string): Promise<{ follow: Follow; created: boolean }> {
  const wallet = address.toLowerCase();
  const now = deps.clock();
  return deps.db.transaction(async (tx) => {
    await rows(tx, sql`select 1 from users where id = ${userId}::uuid for update`);
    const [existing] = await rows<{ followed_at: Date | string }>(
      tx,
      sql`select followed_at from follows where user_id = ${userId}::uuid and wallet_address = ${wallet}`,
    );
    if (existing) return { follow: { walletAddress: wallet, followedAt: iso(existing.followed_at) }, created: false };
    const [{ n }] = await rows<{ n: number | string }>(tx, sql`select count(*) as n from follows where user_id = ${userId}::uuid`);
    if (Number(n) >= FOLLOW_LIMIT) {
      throw new AppError(409, 'FOLLOW_LIMIT', `At most ${FOLLOW_LIMIT} followed traders per user; unfollow one first`);
    }
    await rows(
      tx,
      sql`insert into follows (user_id, wallet_address, followed_at) values (${userId}::uuid, ${wallet}, ${now.toISOString()}::timestamptz)`,
    );
    await rows(
      tx,
      sql`insert into followed_traders (wallet_address, follower_count) values (${wallet}, 1)
          on conflict (wallet_address) do update set follower_count = followed_traders.follower_count + 1`,
    );
    return { follow: { walletAddress: wallet, followedAt: now.toISOString() }, created: true };
  });
}

/** DELETE /follows/:address: 204 whether or not it was followed. */
export async function unfollowTrader(deps: FollowDeps, userId: string, address: string): Promise<void> {
  const wallet = address.toLowerCase();
  await deps.db.transaction(async (tx) => {
    const gone = await rows(tx, sql`delete from follows where user_id = ${userId}::uuid and wallet_address = ${wallet} returning 1`);
    if (gone.length === 0) return;
    await rows(tx, sql`update followed_traders set follower_count = greatest(0, follower_count - 1) where wallet_address = ${wallet}`);
  });
}

/**
 * GET /follows, most recently followed first. The name and avatar are the
 * trader's on the current boards (the OVERALL / ALL board's first), else what
 * the venue's fills named, else the address and null.
 */
export async function listFollows(deps: { db: DbOrTx }, userId: string): Promise<FollowList> {
  const found = await rows<{
    wallet_address: string;
    followed_at: Date | string;
    last_trade_at: Date | string | null;
    display_name: string | null;
    avatar_url: string | null;
  }>(
    deps.db,
    sql`
    select f.wallet_address, f.followed_at, t.last_trade_at,
           coalesce(e.display_name, t.display_name) as display_name,
           coalesce(e.avatar_url, t.avatar_url) as avatar_url
    from follows f
    left join followed_traders t on t.wallet_address = f.wallet_address
    left join lateral (
      select le.display_name, le.avatar_url
      from leaderboard_current c join leaderboard_entries le on le.snapshot_id = c.snapshot_id and le.wallet_address = f.wallet_address
      order by (c.category = 'OVERALL' and c.period = 'ALL') desc, c.category, c.period
      limit 1
    ) e on true
    where f.user_id = ${userId}::uuid
    order by f.followed_at desc, f.wallet_address`,
  );
  return {
    traders: found.map((r) => ({
      walletAddress: r.wallet_address,
      displayName: r.display_name?.trim() || r.wallet_address,
      avatarUrl: r.avatar_url || null,
      followedAt: iso(r.followed_at),
      lastTradeAt: r.last_trade_at === null ? null : iso(r.last_trade_at),
    })),
  };
}
