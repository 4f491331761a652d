import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { DbHandle } from '../../db/index.js';
import { monitorChannel, type PublishFn } from '../realtime/channels.js';
import { fetchLeaderboard, type DataApi } from '../../venues/polymarket/data-api.js';
import {
  LEADERBOARD_CATEGORIES,
  mergeOrderings,
  PERIODS,
  toVenuePeriod,
  type LeaderboardCategory,
  type Period,
  type SnapshotRow,
} from '../../venues/polymarket/data-map.js';
import { mapLimit } from '../../lib/map-limit.js';
import { compactTraderHistory, rankChangeSql, recordTraderHistory } from './history.js';

/** What the venue-facing leaderboard functions (sync, enrichment) need. */
export interface LeaderboardDeps {
  dbh: DbHandle;
  log: FastifyBaseLogger;
  publish: PublishFn;
  clock: () => Date;
  api: DataApi;
  /** A job's abort signal (docs/decisions.md §9): long loops stop between batches. */
  signal?: AbortSignal;
}

/** How long a replaced snapshot is kept so cursors issued on it can finish their walk. */
export const SNAPSHOT_RETENTION_MINUTES = 30;
const INSERT_CHUNK = 5_000;

export interface BoardOutcome {
  category: LeaderboardCategory;
  period: Period;
  snapshotId?: number;
  rows: number;
  skipped: number;
  error?: string;
}

/**
 * Writes one board as a new snapshot and switches `leaderboard_current` to it.
 * Rows are inserted while the snapshot is 'building' (invisible to readers);
 * the status flip and the pointer switch happen in one statement. The
 * enrichment figures already known for each wallet and this period are copied in, so every
 * sort key is ready the moment the board is visible, and so is `rank_change`
 * (from the trader history, docs/decisions.md §14.1). `at` is the sync's
 * time: the board's `switched_at`, its last successful sync.
 */
export async function writeSnapshot(
  dbh: DbHandle,
  category: string,
  period: string,
  rows: SnapshotRow[],
  skipped: number,
  at: Date,
): Promise<number> {
  const [snap] = await dbh.rows<{ id: number | string }>(sql`
    insert into leaderboard_snapshots (category, period, status, skipped_rows)
    values (${category}, ${period}, 'building', ${skipped}) returning id`);
  const id = Number(snap.id);
  try {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK).map((r) => ({
        w: r.walletAddress,
        n: r.displayName,
        a: r.avatarUrl,
        k: r.isKol,
        p: r.pnl,
        v: r.volume,
        r: r.venueRank,
      }));
      await dbh.rows(sql`
        insert into leaderboard_entries (snapshot_id, wallet_address, display_name, avatar_url, is_kol, pnl, volume, venue_rank,
          roi, win_rate, wins, losses, best_trade, sharpe_ratio, trade_count, avg_entry, avg_trade, sparkline, rank_change)
        select ${id}, v.w, v.n, v.a, v.k, v.p, v.v, v.r,
          coalesce(s.roi, 0), coalesce(s.win_rate, 0), coalesce(s.wins, 0), coalesce(s.losses, 0), coalesce(s.best_trade, 0),
          coalesce(s.sharpe_ratio, 0), coalesce(s.trade_count, 0), coalesce(s.avg_entry, 0), coalesce(s.avg_trade, 0),
          coalesce(s.sparkline, '[]'::jsonb),
          ${rankChangeSql({ category, period, at, wallet: sql`v.w`, rank: sql`v.r` })}
        from jsonb_to_recordset(${JSON.stringify(chunk)}::jsonb) as v(w text, n text, a text, k boolean, p float8, v float8, r int)
        left join trader_period_stats s on s.wallet_address = v.w and s.period = ${period}
        on conflict do nothing`);
    }
    // One statement flips the snapshot to ready and switches the pointer: atomic without a transaction round trip.
    await dbh.rows(sql`
      with ready as (
        update leaderboard_snapshots set status = 'ready', completed_at = now(), row_count = ${rows.length}
        where id = ${id} returning id, category, period
      )
      insert into leaderboard_current (category, period, snapshot_id, version, switched_at)
      select category, period, id, 0, ${at.toISOString()}::timestamptz from ready
      on conflict (category, period) do update set snapshot_id = excluded.snapshot_id, version = 0, switched_at = excluded.switched_at`);
  } catch (err) {
    await dbh.rows(sql`update leaderboard_snapshots set status = 'failed', completed_at = now() where id = ${id}`).catch(() => {});
    throw err;
  }
  return id;
}

/** Drops replaced snapshots past the retention (their entries cascade). Current snapshots are never touched. */
export async function pruneSnapshots(dbh: DbHandle): Promise<void> {
  await dbh.rows(sql`
    delete from leaderboard_snapshots s
    where s.created_at < now() - make_interval(mins => ${SNAPSHOT_RETENTION_MINUTES})
      and not exists (select 1 from leaderboard_current c where c.snapshot_id = s.id)`);
}

/** docs/decisions.md §11.7: cached on-demand profiles older than this are deleted. */
export const PROFILE_RETENTION_HOURS = 24;

/** Drops cached on-demand profiles past the retention (run with every leaderboard-sync). */
export async function pruneCachedProfiles(dbh: DbHandle): Promise<void> {
  await dbh.rows(sql`delete from trader_profiles where fetched_at < now() - make_interval(hours => ${PROFILE_RETENTION_HOURS})`);
}

/** Fetches both orderings of one board from the venue and writes it; any failed page fails the board. */
export async function syncBoard(
  deps: LeaderboardDeps,
  category: LeaderboardCategory,
  period: Period,
  at = deps.clock(),
): Promise<BoardOutcome> {
  try {
    const timePeriod = toVenuePeriod(period);
    // One ordering after the other: the Data API limiter is the process's, shared with enrichment and profiles.
    const byPnl = await fetchLeaderboard(deps.api, { category, timePeriod, orderBy: 'PNL' });
    const byVol = await fetchLeaderboard(deps.api, { category, timePeriod, orderBy: 'VOL' });
    const rows = mergeOrderings(byPnl.rows, byVol.rows);
    const skipped = byPnl.skipped + byVol.skipped;
    // An empty answer is far more likely a venue hiccup than an empty board: keep the last good one.
    if (rows.length === 0) return { category, period, rows: 0, skipped, error: 'the venue returned no rows' };
    const snapshotId = await writeSnapshot(deps.dbh, category, period, rows, skipped, at);
    await recordTraderHistory(deps.dbh, { category, period, snapshotId, at });
    if (skipped > 0) deps.log.warn({ category, period, skipped }, 'leaderboard rows skipped: malformed');
    return { category, period, snapshotId, rows: rows.length, skipped };
  } catch (err) {
    return { category, period, rows: 0, skipped: 0, error: err instanceof Error ? err.message : String(err) };
  }
}

/** Records how the latest run ended in leaderboard_sync_state (the leaderboard's freshness reads it). */
export async function recordSyncOutcome(dbh: DbHandle, failed: boolean, at: Date): Promise<void> {
  await dbh.rows(sql`
    insert into leaderboard_sync_state (id, finished_at, failed) values (1, ${at.toISOString()}::timestamptz, ${failed})
    on conflict (id) do update set finished_at = excluded.finished_at, failed = excluded.failed`);
}

/**
 * leaderboard-sync: every (category, period) board, a few at a time toward
 * the venue. Boards that fail keep their last good snapshot; the run records
 * its outcome (leaderboard_sync_state, read by board freshness) and reports
 * failure (after switching the boards that succeeded) so job_runs shows it.
 */
export async function syncLeaderboards(
  deps: LeaderboardDeps,
  opts: { concurrency?: number } = {},
): Promise<{ items: number; boards: BoardOutcome[]; skipped: number }> {
  const pairs = LEADERBOARD_CATEGORIES.flatMap((category) => PERIODS.map((period) => ({ category, period })));
  const at = deps.clock(); // one instant per sync: every board's points and switch time
  const boards = await mapLimit(pairs, opts.concurrency ?? 2, ({ category, period }) => syncBoard(deps, category, period, at));
  await pruneSnapshots(deps.dbh).catch((err) => deps.log.warn({ err }, 'leaderboard snapshot pruning failed'));
  await pruneCachedProfiles(deps.dbh).catch((err) => deps.log.warn({ err }, 'cached profile pruning failed'));
  await compactTraderHistory(deps, at).catch((err) => deps.log.warn({ err }, 'trader history compaction failed'));
  const items = boards.reduce((n, b) => n + b.rows, 0);
  const failed = boards.filter((b) => b.error);
  // Board freshness reads this (docs/decisions.md §11.4: stale while the latest sync failed).
  await recordSyncOutcome(deps.dbh, failed.length > 0, deps.clock());
  deps.publish(monitorChannel('leaderboard'), 'monitor:update', {
    name: 'leaderboard',
    kind: 'sync',
    syncedAt: deps.clock().toISOString(),
  });
  if (failed.length > 0) {
    for (const f of failed)
      deps.log.warn({ category: f.category, period: f.period, error: f.error }, 'leaderboard board kept its last snapshot');
    throw new Error(
      `${failed.length} of ${boards.length} boards kept their last snapshot: ${failed.map((f) => `${f.category}/${f.period} (${f.error})`).join('; ')}`.slice(
        0,
        480,
      ),
    );
  }
  // Board rows the venue sent that failed parsing (docs/venues.md "What we call"): the run's `skipped`.
  return { items, boards, skipped: boards.reduce((n, b) => n + b.skipped, 0) };
}
