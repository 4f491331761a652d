import { and, desc, eq, gte, sql, type SQL } from 'drizzle-orm';
import {
  biggestWins,
  leaderboardCurrent,
  leaderboardEntries,
  leaderboardSnapshots,
  traderPeriodStats,
  traderProfiles,
  traderStats,
} from '../../../drizzle/index.js';
import type { DbHandle, DbOrTx } from '../../db/index.js';

/** API sort key → column of leaderboard_entries (each has an asc and a desc keyset index). */
export const SORT_COLUMN = {
  pnl: 'pnl',
  roi: 'roi',
  winrate: 'win_rate',
  volume: 'volume',
  avgEntry: 'avg_entry',
  avgTrade: 'avg_trade',
  sharpeRatio: 'sharpe_ratio',
  tradeCount: 'trade_count',
} as const;
export type SortKey = keyof typeof SORT_COLUMN;

export interface EntryRow {
  wallet_address: string;
  display_name: string;
  avatar_url: string | null;
  is_kol: boolean;
  pnl: number;
  volume: number;
  roi: number;
  win_rate: number;
  wins: number;
  losses: number;
  best_trade: number;
  sharpe_ratio: number;
  trade_count: number;
  avg_entry: number;
  avg_trade: number;
  sparkline: number[] | string;
  rank_change: number | null;
  rank?: number | string;
}

const ENTRY_COLUMNS = sql.raw(
  'wallet_address, display_name, avatar_url, is_kol, pnl, volume, roi, win_rate, wins, losses, best_trade, sharpe_ratio, trade_count, avg_entry, avg_trade, sparkline, rank_change',
);

/**
 * The ordering expression: ascending is the column, descending is its
 * negation, so both directions are "(key, wallet) ascending" and match the
 * (snapshot, key, wallet) / (snapshot, -key, wallet) indexes exactly.
 */
export function orderKey(sort: SortKey, direction: 'asc' | 'desc'): SQL {
  const col = SORT_COLUMN[sort];
  return sql.raw(direction === 'asc' ? `"${col}"` : `(-"${col}")`);
}

export interface PageQuery {
  snapshotId: number;
  kolOnly: boolean;
  sort: SortKey;
  direction: 'asc' | 'desc';
  /** The ordering key of the last row of the previous page (already negated for desc) and its wallet. */
  after?: { key: number; wallet: string };
  /** A LIKE pattern with wildcards escaped, already wrapped in %…%. */
  pattern?: string;
  limit: number;
}

/** One page in keyset order; `rank` is set only on the search path (the row's position in the full ordering). */
export async function selectPage(dbh: DbHandle, q: PageQuery): Promise<EntryRow[]> {
  const key = orderKey(q.sort, q.direction);
  const kol = q.kolOnly ? sql`and is_kol` : sql``;
  const after = q.after ? sql`and (${key}, wallet_address) > (${q.after.key}, ${q.after.wallet})` : sql``;
  if (!q.pattern) {
    return dbh.rows<EntryRow>(sql`
      select ${ENTRY_COLUMNS} from leaderboard_entries
      where snapshot_id = ${q.snapshotId} ${kol} ${after}
      order by ${key}, wallet_address
      limit ${q.limit}`);
  }
  // Search keeps each row's rank in the full ordering: number the whole board, then filter.
  return dbh.rows<EntryRow>(sql`
    select * from (
      select ${ENTRY_COLUMNS}, row_number() over (order by ${key}, wallet_address) as rank
      from leaderboard_entries
      where snapshot_id = ${q.snapshotId} ${kol}
    ) ranked
    where (display_name ilike ${q.pattern} escape '\\' or wallet_address like lower(${q.pattern}) escape '\\') ${after}
    order by ${key}, wallet_address
    limit ${q.limit}`);
}

/** Rows strictly before (key, wallet) in the ordering: the rank base when a cursor outlived its snapshot. */
export async function countBefore(
  dbh: DbHandle,
  q: Omit<PageQuery, 'pattern' | 'limit' | 'after'> & { after: { key: number; wallet: string } },
): Promise<number> {
  const key = orderKey(q.sort, q.direction);
  const kol = q.kolOnly ? sql`and is_kol` : sql``;
  const [row] = await dbh.rows<{ n: number | string }>(sql`
    select count(*) as n from leaderboard_entries
    where snapshot_id = ${q.snapshotId} ${kol} and (${key}, wallet_address) <= (${q.after.key}, ${q.after.wallet})`);
  return Number(row?.n ?? 0);
}

export interface Pointer {
  category: string;
  period: string;
  snapshotId: number;
  version: number;
  /** The board's last successful sync (docs/decisions.md §11.4). */
  switchedAt: Date;
}

export async function selectPointers(db: DbOrTx): Promise<Pointer[]> {
  return db
    .select({
      category: leaderboardCurrent.category,
      period: leaderboardCurrent.period,
      snapshotId: leaderboardCurrent.snapshotId,
      version: leaderboardCurrent.version,
      switchedAt: leaderboardCurrent.switchedAt,
    })
    .from(leaderboardCurrent);
}

/** Whether the latest leaderboard sync failed (some board kept an older snapshot), as the sync recorded it. */
export async function latestSyncFailed(dbh: DbHandle): Promise<boolean> {
  const [row] = await dbh.rows<{ failed: boolean }>(sql`select failed from leaderboard_sync_state where id = 1`);
  return row?.failed === true;
}

/** When enrichment last wrote any trader (the biggest wins' freshness); null before the first time. */
export async function latestEnrichment(dbh: DbHandle): Promise<Date | null> {
  const [row] = await dbh.rows<{ at: Date | string | null }>(sql`select max(enriched_at) as at from trader_stats`);
  return row?.at ? new Date(row.at) : null;
}

export async function snapshotIsReady(db: DbOrTx, id: number, category: string, period: string): Promise<boolean> {
  const rows = await db
    .select({ id: leaderboardSnapshots.id })
    .from(leaderboardSnapshots)
    .where(
      and(
        eq(leaderboardSnapshots.id, id),
        eq(leaderboardSnapshots.category, category),
        eq(leaderboardSnapshots.period, period),
        eq(leaderboardSnapshots.status, 'ready'),
      ),
    )
    .limit(1);
  return rows.length > 0;
}

export async function selectStoredBiggestWins(db: DbOrTx, since: Date | undefined, limit: number) {
  return db
    .select()
    .from(biggestWins)
    .where(since ? gte(biggestWins.resolvedAt, since) : undefined)
    .orderBy(desc(biggestWins.pnl), biggestWins.walletAddress, biggestWins.asset)
    .limit(limit);
}

export async function selectEntry(db: DbOrTx, snapshotId: number, wallet: string) {
  const rows = await db
    .select()
    .from(leaderboardEntries)
    .where(and(eq(leaderboardEntries.snapshotId, snapshotId), eq(leaderboardEntries.walletAddress, wallet)))
    .limit(1);
  return rows[0];
}

export async function selectStats(db: DbOrTx, wallet: string) {
  const rows = await db.select().from(traderStats).where(eq(traderStats.walletAddress, wallet)).limit(1);
  return rows[0];
}

/** Whether `wallet` is on any current board (docs/decisions.md §11.7: the per-client limit is for addresses on none). */
export async function isOnAnyBoard(dbh: DbHandle, wallet: string): Promise<boolean> {
  const rows = await dbh.rows(sql`
    select 1 from leaderboard_current c
    where exists (select 1 from leaderboard_entries e where e.snapshot_id = c.snapshot_id and e.wallet_address = ${wallet})
    limit 1`);
  return rows.length > 0;
}

export async function selectPeriodStats(db: DbOrTx, wallet: string, period: string) {
  const rows = await db
    .select()
    .from(traderPeriodStats)
    .where(and(eq(traderPeriodStats.walletAddress, wallet), eq(traderPeriodStats.period, period)))
    .limit(1);
  return rows[0];
}

export async function selectCachedProfile(db: DbOrTx, wallet: string, period: string) {
  const rows = await db
    .select()
    .from(traderProfiles)
    .where(and(eq(traderProfiles.walletAddress, wallet), eq(traderProfiles.period, period)))
    .limit(1);
  return rows[0];
}

export async function upsertCachedProfile(db: DbOrTx, wallet: string, period: string, profile: Record<string, unknown>, at: Date) {
  await db
    .insert(traderProfiles)
    .values({ walletAddress: wallet, period, profile, fetchedAt: at })
    .onConflictDoUpdate({ target: [traderProfiles.walletAddress, traderProfiles.period], set: { profile, fetchedAt: at } });
}
