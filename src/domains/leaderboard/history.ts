import { sql, type SQL } from 'drizzle-orm';
import type { DbHandle } from '../../db/index.js';
import type { LeaderboardCategory, Period } from '../../venues/polymarket/data-map.js';
import { boardFreshness } from './freshness.js';
import type { TraderHistory, TraderHistoryPoint } from './schemas.js';

/**
 * Trader history (docs/decisions.md §14.1). Each sync upserts what it saw of
 * every trader on a board into that clock hour of trader_history_hourly (the
 * hour's last sync wins); after the run, hours that ended more than 7 days
 * before it are rolled into trader_history_daily (the UTC day's last point
 * wins) and daily rows are kept 400 days. All of it set-based: one statement
 * per board written, one for the roll-up and one for retention.
 */

/** Hourly points are kept this long before the roll-up into days. */
export const HISTORY_HOURLY_DAYS = 7;
/** Daily points are kept at least this long. */
export const HISTORY_RETENTION_DAYS = 400;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The changes reported, and how far back each looks. */
export const CHANGE_WINDOWS = { '1d': 24, '7d': 7 * 24, '30d': 30 * 24 } as const;

function hourStart(at: Date): Date {
  return new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS);
}

/** The UTC calendar day of `at`, as YYYY-MM-DD. */
function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Where hourly points end and daily points begin for a board last synced at `syncedAt`: the start of the hour 7 days before. */
export function hourlyBoundary(syncedAt: Date): Date {
  return hourStart(new Date(syncedAt.getTime() - HISTORY_HOURLY_DAYS * DAY_MS));
}

/**
 * A statement selecting `(at, rank, pnl)` of the newest stored point of one
 * trader on one board taken at or before `cutoff` (no row when there is none).
 * The hourly rows are always newer than the daily ones; each side is one
 * backward step on its primary key.
 */
export function pointAtOrBefore(q: { category: SQL | string; period: SQL | string; wallet: SQL | string; cutoff: SQL }): SQL {
  return sql`
    select p.at, p.rank, p.pnl from (
      (select h.at, h.rank, h.pnl from trader_history_hourly h
        where h.category = ${q.category} and h.period = ${q.period} and h.wallet_address = ${q.wallet}
          and h.hour <= ${q.cutoff} and h.at <= ${q.cutoff}
        order by h.hour desc limit 1)
      union all
      (select d.at, d.rank, d.pnl from trader_history_daily d
        where d.category = ${q.category} and d.period = ${q.period} and d.wallet_address = ${q.wallet}
          and d.day <= (${q.cutoff} at time zone 'UTC')::date and d.at <= ${q.cutoff}
        order by d.day desc limit 1)
    ) p
    order by p.at desc limit 1`;
}

/**
 * The `rank_change` expression of a leaderboard entry being written by a sync
 * at `at`: the venue rank of the trader's newest point at least a day old
 * minus `rank` (null when there is no such point or either rank is null).
 * Computed when the snapshot is written, so the read path stays a plain index
 * range; it equals `changes['1d'].rank` of the history route. Per row it is one
 * backward step on the hourly key, and on the daily key only when the hourly
 * table has nothing that old (hourly rows are always newer than daily ones,
 * and COALESCE evaluates its second argument only when needed); ranks are
 * ≥ 1, so 0 stands for "a point without a rank" inside the expression.
 */
export function rankChangeSql(q: { category: string; period: string; at: Date; wallet: SQL; rank: SQL }): SQL {
  const cutoff = sql`${new Date(q.at.getTime() - CHANGE_WINDOWS['1d'] * HOUR_MS).toISOString()}::timestamptz`;
  return sql`(nullif(coalesce(
      (select coalesce(h.rank, 0) from trader_history_hourly h
        where h.category = ${q.category} and h.period = ${q.period} and h.wallet_address = ${q.wallet}
          and h.hour <= ${cutoff} and h.at <= ${cutoff}
        order by h.hour desc limit 1),
      (select coalesce(d.rank, 0) from trader_history_daily d
        where d.category = ${q.category} and d.period = ${q.period} and d.wallet_address = ${q.wallet}
          and d.day <= (${cutoff} at time zone 'UTC')::date and d.at <= ${cutoff}
        order by d.day desc limit 1)
    ), 0) - ${q.rank})`;
}

/**
 * Records what the sync at `at` saw of every trader of one just-written
 * snapshot: one upsert into the clock hour of `at`, the later sync winning.
 * Traders not on the board leave no point.
 */
export async function recordTraderHistory(
  dbh: DbHandle,
  board: { category: string; period: string; snapshotId: number; at: Date },
): Promise<void> {
  await dbh.rows(sql`
    insert into trader_history_hourly (category, period, wallet_address, hour, at, rank, pnl, volume)
    select ${board.category}, ${board.period}, e.wallet_address, ${hourStart(board.at).toISOString()}::timestamptz,
      ${board.at.toISOString()}::timestamptz, e.venue_rank, e.pnl, e.volume
    from leaderboard_entries e
    where e.snapshot_id = ${board.snapshotId}
    on conflict (category, period, wallet_address, hour) do update
      set at = excluded.at, rank = excluded.rank, pnl = excluded.pnl, volume = excluded.volume
      where trader_history_hourly.at <= excluded.at`);
}

/**
 * Downsamples the history as it ages, as of `now`: hours that ended more than
 * 7 days ago move into their UTC day (the day's last point wins, also against
 * a day already partly rolled up) in one statement; days older than 400 days
 * are deleted in another. Idempotent; run at the end of every leaderboard sync.
 */
export async function compactTraderHistory(deps: { dbh: DbHandle }, now: Date): Promise<{ rolledUp: number; expired: number }> {
  const boundary = hourlyBoundary(now).toISOString();
  const [rolled] = await deps.dbh.rows<{ n: number | string }>(sql`
    with moved as (
      delete from trader_history_hourly where hour < ${boundary}::timestamptz
      returning category, period, wallet_address, at, rank, pnl, volume
    ), last_of_day as (
      select distinct on (category, period, wallet_address, day) category, period, wallet_address, day, at, rank, pnl, volume
      from (select m.*, (m.at at time zone 'UTC')::date as day from moved m) d
      order by category, period, wallet_address, day, at desc
    ), upserted as (
      insert into trader_history_daily (category, period, wallet_address, day, at, rank, pnl, volume)
      select category, period, wallet_address, day, at, rank, pnl, volume from last_of_day
      on conflict (category, period, wallet_address, day) do update
        set at = excluded.at, rank = excluded.rank, pnl = excluded.pnl, volume = excluded.volume
        where trader_history_daily.at <= excluded.at
      returning 1
    )
    select (select count(*) from moved) as n`);
  const oldestDay = utcDay(new Date(now.getTime() - HISTORY_RETENTION_DAYS * DAY_MS));
  const expired = await deps.dbh.rows<{ one: number }>(sql`
    delete from trader_history_daily where day < ${oldestDay}::date returning 1 as one`);
  return { rolledUp: Number(rolled?.n ?? 0), expired: expired.length };
}

interface PointRow {
  /** Null for a daily row. */
  hour: Date | string | null;
  at: Date | string;
  rank: number | null;
  pnl: number | string;
  volume: number | string;
}

interface ChangeRow {
  label: keyof typeof CHANGE_WINDOWS;
  rank_now: number | null;
  pnl_now: number | string;
  rank_then: number | null;
  pnl_then: number | string | null;
  then_at: Date | string | null;
}

export interface HistoryQuery {
  category: LeaderboardCategory;
  period: Period;
  days: number;
}

/**
 * GET /leaderboard/:address/history. Points of the last `days` days,
 * ascending: one per clock hour within 7 days of the board's last sync, one
 * per UTC day (its last point) before that. Changes compare the trader's
 * entry on the current board with their newest point at least 1/7/30 days
 * older than the board's last sync (the instant that entry was taken), so
 * `changes['1d'].rank` is the entry's `rankChange`; a trader not on the
 * current board has no "now" and all changes null.
 */
export async function getTraderHistory(
  deps: { dbh: DbHandle; clock: () => Date },
  address: string,
  q: HistoryQuery,
): Promise<TraderHistory> {
  const wallet = address.toLowerCase();
  const now = deps.clock();
  const since = new Date(now.getTime() - q.days * DAY_MS).toISOString();
  const windows = sql.join(
    Object.entries(CHANGE_WINDOWS).map(([label, hours]) => sql`(${label}, ${hours}::int)`),
    sql`, `,
  );
  // Three independent statements, in parallel (one round trip of latency on PostgreSQL).
  const [freshness, points, changeRows] = await Promise.all([
    boardFreshness(deps.dbh, q.category, q.period, now),
    // Two primary-key ranges; at most ~530 rows for a year.
    deps.dbh.rows<PointRow>(sql`
      select null::timestamptz as hour, d.at, d.rank, d.pnl, d.volume from trader_history_daily d
      where d.category = ${q.category} and d.period = ${q.period} and d.wallet_address = ${wallet}
        and d.day >= (${since}::timestamptz at time zone 'UTC')::date and d.at >= ${since}::timestamptz
      union all
      select h.hour, h.at, h.rank, h.pnl, h.volume from trader_history_hourly h
      where h.category = ${q.category} and h.period = ${q.period} and h.wallet_address = ${wallet}
        and h.hour >= ${hourStart(new Date(since)).toISOString()}::timestamptz and h.at >= ${since}::timestamptz
      order by at`),
    deps.dbh.rows<ChangeRow>(sql`
      select w.label, e.venue_rank as rank_now, e.pnl as pnl_now, prev.rank as rank_then, prev.pnl as pnl_then, prev.at as then_at
      from leaderboard_current c
      join leaderboard_entries e on e.snapshot_id = c.snapshot_id and e.wallet_address = ${wallet}
      cross join (values ${windows}) as w(label, hours)
      left join lateral (${pointAtOrBefore({
        category: sql`c.category`,
        period: sql`c.period`,
        wallet: sql`e.wallet_address`,
        cutoff: sql`(c.switched_at - make_interval(hours => w.hours))`,
      })}) prev on true
      where c.category = ${q.category} and c.period = ${q.period}`),
  ]);

  const changes: TraderHistory['changes'] = { '1d': null, '7d': null, '30d': null };
  const out = (list: TraderHistoryPoint[]): TraderHistory => ({
    walletAddress: wallet,
    points: list,
    changes,
    syncedAt: freshness.syncedAt?.toISOString() ?? null,
    stale: freshness.stale,
  });
  if (!freshness.syncedAt) return out([]);
  const boundary = hourlyBoundary(freshness.syncedAt).getTime();
  for (const r of changeRows) {
    if (r.then_at === null || r.pnl_then === null) continue;
    changes[r.label] = {
      rank: r.rank_then === null || r.rank_now === null ? null : Number(r.rank_then) - Number(r.rank_now),
      pnl: Number(r.pnl_now) - Number(r.pnl_then),
    };
  }
  // One point per bucket, the latest: hours from the boundary on, UTC days before it (hourly rows the
  // roll-up has not reached yet, e.g. while this board's syncs fail, join their day here).
  const buckets = new Map<string, TraderHistoryPoint>();
  for (const p of points) {
    const at = new Date(p.at);
    const hour = p.hour === null ? null : new Date(p.hour).getTime();
    const key = hour !== null && hour >= boundary ? `h${hour}` : `d${utcDay(at)}`;
    buckets.set(key, { at: at.toISOString(), rank: p.rank === null ? null : Number(p.rank), pnl: Number(p.pnl), volume: Number(p.volume) });
  }
  return out([...buckets.values()].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)));
}
