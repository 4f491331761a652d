import { sql } from 'drizzle-orm';
import type { DbHandle } from '../../db/index.js';

/**
 * Honest freshness (docs/decisions.md §11.4): `syncedAt` and `stale` of the
 * event responses, from venue_sync_state and the markets' `price_updated_at`.
 */
export interface MarketDataFreshness {
  syncedAt: string | null;
  stale: boolean;
}

const MIN = 60_000;
/** GET /events: stale past 15 minutes. */
export const LIST_STALE_MS = 15 * MIN;
/** A group's detail and chart: 3 minutes when tracked, 90 otherwise. */
export const TRACKED_STALE_MS = 3 * MIN;
export const UNTRACKED_STALE_MS = 90 * MIN;
/** A market refreshed by the price cycle this recently counts as tracked. */
export const TRACKED_WITHIN_MS = 5 * MIN;

const iso = (v: string | Date | null | undefined) => (v == null ? null : new Date(v).toISOString());

/** GET /events: the older of the two venues' last successful catalogue refresh; stale past 15 min or after a failed run. */
export async function listFreshness(dbh: DbHandle, now: Date): Promise<MarketDataFreshness> {
  const rows = await dbh.rows<{ venue: string; ok_at: string | Date | null; failed: boolean }>(
    sql`select venue, catalogue_ok_at as ok_at, catalogue_failed as failed from venue_sync_state`,
  );
  const byVenue = new Map(rows.map((r) => [r.venue, r]));
  const states = ['polymarket', 'kalshi'].map((v) => byVenue.get(v));
  if (states.some((s) => !s?.ok_at)) return { syncedAt: null, stale: true };
  const oldest = Math.min(...states.map((s) => new Date(s!.ok_at!).getTime()));
  return {
    syncedAt: new Date(oldest).toISOString(),
    stale: now.getTime() - oldest > LIST_STALE_MS || states.some((s) => s!.failed),
  };
}

/**
 * A group's detail and chart: the oldest `priceUpdatedAt` of its markets
 * (else its venue's catalogue refresh); stale past 3 minutes for a tracked
 * group, 90 otherwise, or when its venue's latest run failed.
 */
export async function groupFreshness(dbh: DbHandle, groupId: string, venue: string, now: Date): Promise<MarketDataFreshness> {
  const trackedSince = new Date(now.getTime() - TRACKED_WITHIN_MS).toISOString();
  const [r] = await dbh.rows<{
    oldest: string | Date | null;
    tracked: boolean | null;
    ok_at: string | Date | null;
    failed: boolean | null;
  }>(
    sql`select (select min(price_updated_at) from markets where event_group_id = ${groupId}) as oldest,
               (select bool_or(tracked_at >= ${trackedSince}::timestamptz) from markets where event_group_id = ${groupId}) as tracked,
               s.catalogue_ok_at as ok_at, (s.catalogue_failed or s.prices_failed) as failed
        from (select 1) one left join venue_sync_state s on s.venue = ${venue}`,
  );
  const syncedAt = iso(r?.oldest) ?? iso(r?.ok_at);
  if (syncedAt === null) return { syncedAt: null, stale: true };
  const bound = r?.tracked ? TRACKED_STALE_MS : UNTRACKED_STALE_MS;
  return { syncedAt, stale: now.getTime() - Date.parse(syncedAt) > bound || r?.failed === true };
}

/**
 * One market (GET /markets/:id), as a group's detail (docs/decisions.md §16.3,
 * §11.4): its `priceUpdatedAt` (else its venue's catalogue refresh); stale
 * past 3 minutes when tracked, 90 otherwise, or when its venue's latest run failed.
 */
export async function marketFreshness(dbh: DbHandle, marketId: string, venue: string, now: Date): Promise<MarketDataFreshness> {
  const trackedSince = new Date(now.getTime() - TRACKED_WITHIN_MS).toISOString();
  const [r] = await dbh.rows<{ at: string | Date | null; tracked: boolean | null; ok_at: string | Date | null; failed: boolean | null }>(
    sql`select m.price_updated_at as at, (m.tracked_at >= ${trackedSince}::timestamptz) as tracked,
               s.catalogue_ok_at as ok_at, (s.catalogue_failed or s.prices_failed) as failed
        from markets m left join venue_sync_state s on s.venue = ${venue}
        where m.id = ${marketId}`,
  );
  const syncedAt = iso(r?.at) ?? iso(r?.ok_at);
  if (syncedAt === null) return { syncedAt: null, stale: true };
  const bound = r?.tracked ? TRACKED_STALE_MS : UNTRACKED_STALE_MS;
  return { syncedAt, stale: now.getTime() - Date.parse(syncedAt) > bound || r?.failed === true };
}
