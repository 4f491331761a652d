import { sql } from 'drizzle-orm';
import { rows, type DbOrTx } from '../../db/index.js';
import { SUMMARY_COLUMNS, type GroupRow } from '../events/queries.js';

/** Read and write queries of the watchlist (docs/decisions.md §17.1). */

export interface WatchedGroupRow extends GroupRow {
  watched_at: Date | string;
}

export async function selectGroupIdBySlug(db: DbOrTx, slug: string): Promise<{ id: string; slug: string } | undefined> {
  const [g] = await rows<{ id: string; slug: string }>(db, sql`select id, slug from event_groups where slug = ${slug}`);
  return g;
}

/**
 * Serialises one user's watchlist writes on their users row, so the cap holds
 * under concurrent requests (docs/decisions.md §17.1). False when the user no longer exists.
 */
export async function lockUser(tx: DbOrTx, userId: string): Promise<boolean> {
  const r = await rows(tx, sql`select 1 from users where id = ${userId}::uuid for update`);
  return r.length > 0;
}

export async function selectWatch(tx: DbOrTx, userId: string, groupId: string): Promise<Date | undefined> {
  const [r] = await rows<{ watched_at: Date | string }>(
    tx,
    sql`select watched_at from watchlist where user_id = ${userId}::uuid and event_group_id = ${groupId}`,
  );
  return r ? new Date(r.watched_at) : undefined;
}

export async function countWatches(tx: DbOrTx, userId: string): Promise<number> {
  const [r] = await rows<{ n: number }>(tx, sql`select count(*)::int as n from watchlist where user_id = ${userId}::uuid`);
  return Number(r?.n ?? 0);
}

export async function insertWatch(tx: DbOrTx, userId: string, groupId: string, now: Date): Promise<void> {
  await rows(
    tx,
    sql`insert into watchlist (user_id, event_group_id, watched_at) values (${userId}::uuid, ${groupId}, ${now.toISOString()}::timestamptz)
        on conflict do nothing`,
  );
}

export async function deleteWatchBySlug(db: DbOrTx, userId: string, slug: string): Promise<void> {
  await rows(
    db,
    sql`delete from watchlist w using event_groups g
        where w.user_id = ${userId}::uuid and w.event_group_id = g.id and g.slug = ${slug}`,
  );
}

/** The user's watched groups, most recently watched first (at most 500: no paging). */
export async function selectWatchedGroups(db: DbOrTx, userId: string): Promise<WatchedGroupRow[]> {
  return rows<WatchedGroupRow>(
    db,
    sql`select ${SUMMARY_COLUMNS}, w.watched_at
        from watchlist w join event_groups g on g.id = w.event_group_id
        where w.user_id = ${userId}::uuid
        order by w.watched_at desc, g.id`,
  );
}
