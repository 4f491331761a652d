import { sql } from 'drizzle-orm';
import { traderPeriodStats, traderStats } from '../../../drizzle/index.js';
import type { DbHandle } from '../../db/index.js';
import { monitorChannel } from '../realtime/channels.js';
import { fetchTraderActivitySince } from '../../venues/polymarket/data-api.js';
import { PERIODS, periodMs, type Period } from '../../venues/polymarket/data-map.js';
import { computeFigures, selectBiggestWins, winningPositions, type TraderFigures, type WinRow } from './figures.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { LeaderboardDeps } from './sync.js';

export interface EnrichOptions {
  /** Traders fetched at once (each is 3+ calls, one at a time, through the shared Data API limiter). */
  concurrency?: number;
  /** Traders written per set-based batch; also the unit of resumption. */
  batchSize?: number;
  /** Upper bound of traders per run; the best ranked go first, the rest wait for the next run. */
  maxTraders?: number;
  /** A trader whose figures are all newer than this is skipped (a re-run resumes where a killed one stopped). */
  freshForMs?: number;
  /** Closed-position pages per trader (50 rows each; docs/venues.md: ≤ 20). */
  maxClosedPages?: number;
  /**
   * No trader is started after this many milliseconds of the run: the Data API
   * budget does not cover every ranked trader every 30 minutes (docs/venues.md
   * "What we call"), so a run goes as far as it gets and the next run carries on.
   */
  maxRunMs?: number;
}

interface Candidate {
  wallet: string;
  displayName: string;
  /** The periods of the boards the trader is on. */
  periods: Period[];
}

/**
 * Traders on any current board whose figures for one of their boards' periods
 * are missing or older than `freshBefore`, best venue rank on any board first
 * (so the top 100 of every board come first, docs/venues.md "What we call").
 */
async function selectCandidates(dbh: DbHandle, limit: number, freshBefore: Date): Promise<Candidate[]> {
  const rows = await dbh.rows<{ wallet: string; display_name: string; periods: string }>(sql`
    select e.wallet_address as wallet, min(e.display_name) as display_name, string_agg(distinct c.period, ',') as periods
    from leaderboard_entries e
    join leaderboard_current c on c.snapshot_id = e.snapshot_id
    left join trader_period_stats s on s.wallet_address = e.wallet_address and s.period = c.period
    group by e.wallet_address
    having bool_or(s.wallet_address is null or s.enriched_at < ${freshBefore.toISOString()}::timestamptz)
    order by min(coalesce(e.venue_rank, 2147483647)) asc, min(s.enriched_at) asc nulls first, e.wallet_address
    limit ${limit}`);
  return rows.map((r) => ({
    wallet: r.wallet,
    displayName: r.display_name,
    periods: r.periods.split(',').filter((p): p is Period => (PERIODS as readonly string[]).includes(p)),
  }));
}

/**
 * The start of the longest period a trader's figures are needed for
 * (undefined: all time), and every period that start covers.
 */
export function readWindow(periods: readonly Period[], now: Date): { since: Date | undefined; periods: Period[] } {
  const lengths = periods.map(periodMs);
  if (lengths.some((ms) => ms === undefined)) return { since: undefined, periods: [...PERIODS] };
  const longest = Math.max(0, ...(lengths as number[]));
  return { since: new Date(now.getTime() - longest), periods: PERIODS.filter((p) => (periodMs(p) ?? Infinity) <= longest) };
}

interface Enriched {
  candidate: Candidate;
  /** Open positions and the latest trades, whatever the period. */
  latest: Pick<TraderFigures, 'topPositions' | 'recentTrades'>;
  /** The figures of every period the read covered. */
  figures: Array<{ period: Period; f: TraderFigures }>;
  wins: WinRow[];
  /** Biggest wins at or after this instant were re-read (undefined: all of them). */
  winsSince: Date | undefined;
}

const FIGURE_COLUMNS = [
  ['totalPnl', 'total_pnl'],
  ['roi', 'roi'],
  ['winRate', 'win_rate'],
  ['wins', 'wins'],
  ['losses', 'losses'],
  ['bestTrade', 'best_trade'],
  ['sharpeRatio', 'sharpe_ratio'],
  ['tradeCount', 'trade_count'],
  ['avgEntry', 'avg_entry'],
  ['avgTrade', 'avg_trade'],
  ['sparkline', 'sparkline'],
  ['enrichedAt', 'enriched_at'],
] as const;

/**
 * One set-based write per batch: per-trader and per-period stats upserted,
 * the biggest wins of the window read replaced, the current boards' entries
 * given the figures of their own period.
 */
async function writeBatch(dbh: DbHandle, batch: Enriched[], now: Date): Promise<void> {
  if (batch.length === 0) return;
  const wallets = batch.map((b) => b.candidate.wallet);
  await dbh.db.transaction(async (tx) => {
    await tx
      .insert(traderStats)
      .values(
        batch.map(({ candidate, latest }) => ({
          walletAddress: candidate.wallet,
          topPositions: latest.topPositions,
          recentTrades: latest.recentTrades,
          enrichedAt: now,
        })),
      )
      .onConflictDoUpdate({
        target: traderStats.walletAddress,
        set: {
          topPositions: sql.raw('excluded.top_positions'),
          recentTrades: sql.raw('excluded.recent_trades'),
          enrichedAt: sql.raw('excluded.enriched_at'),
        },
      });
    await tx
      .insert(traderPeriodStats)
      .values(
        batch.flatMap(({ candidate, figures }) =>
          figures.map(({ period, f }) => ({
            walletAddress: candidate.wallet,
            period,
            totalPnl: f.totalPnl,
            roi: f.roi,
            winRate: f.winRate,
            wins: f.wins,
            losses: f.losses,
            bestTrade: f.bestTrade,
            sharpeRatio: f.sharpeRatio,
            tradeCount: f.tradeCount,
            avgEntry: f.avgEntry,
            avgTrade: f.avgTrade,
            sparkline: f.sparkline,
            enrichedAt: now,
          })),
        ),
      )
      .onConflictDoUpdate({
        target: [traderPeriodStats.walletAddress, traderPeriodStats.period],
        set: Object.fromEntries(FIGURE_COLUMNS.map(([k, c]) => [k, sql.raw(`excluded.${c}`)])),
      });
    // Only the wins of the window that was read are replaced: older ones stay.
    const windows = batch.map((b) => ({ w: b.candidate.wallet, s: b.winsSince?.toISOString() ?? null }));
    await dbh.rows(
      sql`delete from biggest_wins b
          using jsonb_to_recordset(${JSON.stringify(windows)}::jsonb) as v(w text, s timestamptz)
          where b.wallet_address = v.w and (v.s is null or b.resolved_at >= v.s)`,
      tx,
    );
    const winRows = batch.flatMap(({ candidate, wins }) =>
      wins.map((w) => ({
        w: candidate.wallet,
        n: candidate.displayName,
        a: w.asset,
        t: w.marketTitle,
        p: w.pnl,
        sd: w.side,
        en: w.entryPrice,
        ex: w.exitPrice,
        r: w.resolvedAt.toISOString(),
      })),
    );
    for (let i = 0; i < winRows.length; i += 1_000) {
      await dbh.rows(
        sql`insert into biggest_wins (wallet_address, display_name, asset, market_title, pnl, side, entry_price, exit_price, resolved_at)
            select v.w, v.n, v.a, v.t, v.p, v.sd, v.en, v.ex, v.r
            from jsonb_to_recordset(${JSON.stringify(winRows.slice(i, i + 1_000))}::jsonb)
              as v(w text, n text, a text, t text, p float8, sd text, en float8, ex float8, r timestamptz)
            on conflict (wallet_address, asset) do update set
              display_name = excluded.display_name, market_title = excluded.market_title, pnl = excluded.pnl, side = excluded.side,
              entry_price = excluded.entry_price, exit_price = excluded.exit_price, resolved_at = excluded.resolved_at`,
        tx,
      );
    }
    await dbh.rows(
      sql`update leaderboard_entries e set
            roi = s.roi, win_rate = s.win_rate, wins = s.wins, losses = s.losses, best_trade = s.best_trade,
            sharpe_ratio = s.sharpe_ratio, trade_count = s.trade_count, avg_entry = s.avg_entry, avg_trade = s.avg_trade,
            sparkline = s.sparkline
          from trader_period_stats s, leaderboard_current c
          where e.snapshot_id = c.snapshot_id and s.period = c.period and e.wallet_address = s.wallet_address
            and s.wallet_address in (select jsonb_array_elements_text(${JSON.stringify(wallets)}::jsonb))`,
      tx,
    );
    await dbh.rows(sql`update leaderboard_current set version = version + 1`, tx);
  });
}

/**
 * leaderboard-enrich (docs/decisions.md §11.6): for each ranked trader, open
 * positions, closed positions newest first back to the start of the longest
 * period of the trader's boards, and trades → the figures of each period,
 * losses included, and the biggest wins. A trader whose venue rows were all
 * malformed is left as it was (never zeros). Written per batch, so a run that
 * dies part-way keeps what it did and the next run carries on.
 */
export async function enrichLeaderboard(
  deps: LeaderboardDeps,
  opts: EnrichOptions = {},
): Promise<{ items: number; failed: number; malformed: number; deferred: number; skipped: number }> {
  const concurrency = opts.concurrency ?? 2;
  const batchSize = opts.batchSize ?? 50;
  const now = deps.clock();
  const deadline = Date.now() + (opts.maxRunMs ?? 25 * 60_000);
  const candidates = await selectCandidates(deps.dbh, opts.maxTraders ?? 1_500, new Date(now.getTime() - (opts.freshForMs ?? 20 * 60_000)));
  let items = 0;
  let failed = 0;
  let malformed = 0;
  let deferred = 0;
  let skipped = 0;
  let lastError: string | undefined;
  for (let i = 0; i < candidates.length; i += batchSize) {
    // Shutdown: stop between batches; every batch written so far stays, the next run carries on.
    deps.signal?.throwIfAborted();
    const slice = candidates.slice(i, i + batchSize);
    const results = await mapLimit(slice, concurrency, async (candidate): Promise<Enriched | undefined> => {
      if (Date.now() > deadline) {
        deferred++;
        return undefined;
      }
      try {
        const window = readWindow(candidate.periods, now);
        const activity = await fetchTraderActivitySince(deps.api, candidate.wallet, {
          since: window.since,
          maxClosedPages: opts.maxClosedPages,
        });
        skipped += activity.skipped;
        if (activity.allMalformed) {
          // Rows came, none parsed: keep the figures we have rather than compute zeros.
          malformed++;
          return undefined;
        }
        const { topPositions, recentTrades } = computeFigures(activity, undefined, now.getTime());
        return {
          candidate,
          latest: { topPositions, recentTrades },
          figures: window.periods.map((period) => {
            const ms = periodMs(period);
            return { period, f: computeFigures(activity, ms === undefined ? undefined : now.getTime() - ms, now.getTime()) };
          }),
          wins: selectBiggestWins(winningPositions(activity.closed), now),
          winsSince: window.since,
        };
      } catch (err) {
        failed++;
        lastError = err instanceof Error ? err.message : String(err);
        return undefined;
      }
    });
    const done = results.filter((r): r is Enriched => r !== undefined);
    await writeBatch(deps.dbh, done, deps.clock());
    items += done.length;
  }
  if (items > 0 || candidates.length > 0) {
    deps.publish(monitorChannel('leaderboard'), 'monitor:update', {
      name: 'leaderboard',
      kind: 'enrich',
      syncedAt: deps.clock().toISOString(),
    });
  }
  if (malformed > 0) deps.log.warn({ malformed }, 'leaderboard enrichment: traders whose venue rows were all malformed kept their figures');
  if (failed > 0) deps.log.warn({ failed, lastError }, 'leaderboard enrichment: some traders could not be fetched');
  if (deferred > 0) deps.log.info({ deferred }, 'leaderboard enrichment: run time used up, the rest wait for the next run');
  if (candidates.length > 0 && items === 0 && failed > 0) throw new Error(`no trader could be enriched: ${lastError ?? 'unknown error'}`);
  return { items, failed, malformed, deferred, skipped };
}
