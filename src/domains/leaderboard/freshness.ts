import { sql } from 'drizzle-orm';
import type { DbHandle } from '../../db/index.js';

/** A board older than this is stale (docs/decisions.md §11.4). */
export const BOARD_STALE_AFTER_MS = 30 * 60_000;
/** A ranked trader's figures are stale after 90 minutes, an on-demand profile after 24 hours (docs/decisions.md §11.4). */
export const RANKED_PROFILE_STALE_MS = 90 * 60_000;
export const ON_DEMAND_PROFILE_STALE_MS = 24 * 3_600_000;

export interface Freshness {
  /** The board's last successful sync; null before the first one. */
  syncedAt: Date | null;
  stale: boolean;
}

/**
 * How fresh one leaderboard board is (docs/decisions.md §11.4): its last
 * successful sync is when its current snapshot was switched in (the sync's
 * clock time); it is stale when that is older than 30 minutes, when the
 * latest sync failed (some board kept an old snapshot; the sync records it in
 * leaderboard_sync_state), or before the first successful sync. One statement, so every
 * leaderboard response that reports freshness can share it.
 */
export async function boardFreshness(dbh: DbHandle, category: string, period: string, now: Date): Promise<Freshness> {
  const [row] = await dbh.rows<{ synced_at: Date | string | null; failed: boolean | null }>(sql`
    select
      (select switched_at from leaderboard_current where category = ${category} and period = ${period}) as synced_at,
      (select failed from leaderboard_sync_state where id = 1) as failed`);
  const syncedAt = row?.synced_at ? new Date(row.synced_at) : null;
  const stale = !syncedAt || now.getTime() - syncedAt.getTime() > BOARD_STALE_AFTER_MS || row?.failed === true;
  return { syncedAt, stale };
}
