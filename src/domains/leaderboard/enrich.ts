import { inArray, sql } from 'drizzle-orm';
import { biggestWins, traderStats } from '../../../drizzle/index.js';
import type { DbHandle } from '../../db/index.js';
import { monitorChannel } from '../realtime/channels.js';
import { fetchTraderActivitySince } from '../../venues/polymarket/data-api.js';
import { computeFigures, selectBiggestWins, winningPositions, type TraderFigures, type WinRow } from './figures.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { LeaderboardDeps } from './sync.js';

export interface EnrichOptions {
  /** Traders fetched at once (each is 3+ calls): the bound toward the venue. */
  concurrency?: number;
  /** Traders written per set-based batch; also the unit of resumption. */
  batchSize?: number;
  /** Upper bound of traders per run; the stalest go first, the rest wait for the next run. */
  maxTraders?: number;
  /** A trader enriched more recently than this is skipped (a re-run resumes where a killed one stopped). */
  freshForMs?: number;
  /** Closed-position pages per trader (50 rows each). */
  maxClosedPages?: number;
}

interface Candidate {
  wallet: string;
  displayName: string;
}

/**
 * Traders on any current board, never-enriched first, then the stalest, then
 * the best venue rank; those refreshed within `freshForMs` are left out.
 */
async function selectCandidates(dbh: DbHandle, limit: number, freshBefore: Date): Promise<Candidate[]> {
  const rows = await dbh.rows<{ wallet: string; display_name: string }>(sql`
    select e.wallet_address as wallet, min(e.display_name) as display_name
    from leaderboard_entries e
    join leaderboard_current c on c.snapshot_id = e.snapshot_id
    left join trader_stats s on s.wallet_address = e.wallet_address
    where s.wallet_address is null or s.enriched_at < ${freshBefore.toISOString()}::timestamptz
    group by e.wallet_address, s.enriched_at
    order by s.enriched_at asc nulls first, min(coalesce(e.venue_rank, 2147483647)) asc, e.wallet_address
    limit ${limit}`);
  return rows.map((r) => ({ wallet: r.wallet, displayName: r.display_name }));
}

interface Enriched {
  candidate: Candidate;
  figures: TraderFigures;
  wins: WinRow[];
}

/** One set-based write per batch: stats upsert, biggest wins replaced, current boards' figures updated. */
async function writeBatch(dbh: DbHandle, batch: Enriched[], now: Date): Promise<void> {
  if (batch.length === 0) return;
  const wallets = batch.map((b) => b.candidate.wallet);
  await dbh.db.transaction(async (tx) => {
    await tx
      .insert(traderStats)
      .values(
        batch.map(({ candidate, figures: f }) => ({
          walletAddress: candidate.wallet,
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
          topPositions: f.topPositions,
          recentTrades: f.recentTrades,
          enrichedAt: now,
        })),
      )
      .onConflictDoUpdate({
        target: traderStats.walletAddress,
        set: Object.fromEntries(
          [
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
            ['topPositions', 'top_positions'],
            ['recentTrades', 'recent_trades'],
            ['enrichedAt', 'enriched_at'],
          ].map(([k, c]) => [k, sql.raw(`excluded.${c}`)]),
        ),
      });
    await tx.delete(biggestWins).where(inArray(biggestWins.walletAddress, wallets));
    const winRows = batch.flatMap(({ candidate, wins }) =>
      wins.map((w) => ({ walletAddress: candidate.wallet, displayName: candidate.displayName, ...w })),
    );
    for (let i = 0; i < winRows.length; i += 1_000) {
      await tx
        .insert(biggestWins)
        .values(winRows.slice(i, i + 1_000))
        .onConflictDoNothing();
    }
    await dbh.rows(
      sql`update leaderboard_entries e set
            roi = s.roi, win_rate = s.win_rate, wins = s.wins, losses = s.losses, best_trade = s.best_trade,
            sharpe_ratio = s.sharpe_ratio, trade_count = s.trade_count, avg_entry = s.avg_entry, avg_trade = s.avg_trade,
            sparkline = s.sparkline
          from trader_stats s, leaderboard_current c
          where e.snapshot_id = c.snapshot_id and e.wallet_address = s.wallet_address
            and s.wallet_address in (select jsonb_array_elements_text(${JSON.stringify(wallets)}::jsonb))`,
      tx,
    );
    await dbh.rows(sql`update leaderboard_current set version = version + 1`, tx);
  });
}

/**
 * leaderboard-enrich: positions, closed positions and trades of ranked
 * traders → figures, biggest wins. Bounded concurrency toward the venue;
 * written per batch, so a run that dies part-way keeps what it did and the
 * next run starts with the traders it did not reach.
 */
export async function enrichLeaderboard(deps: LeaderboardDeps, opts: EnrichOptions = {}): Promise<{ items: number; failed: number }> {
  const concurrency = opts.concurrency ?? 2;
  const batchSize = opts.batchSize ?? 50;
  const now = deps.clock();
  const candidates = await selectCandidates(deps.dbh, opts.maxTraders ?? 1_500, new Date(now.getTime() - (opts.freshForMs ?? 20 * 60_000)));
  let items = 0;
  let failed = 0;
  let lastError: string | undefined;
  for (let i = 0; i < candidates.length; i += batchSize) {
    const slice = candidates.slice(i, i + batchSize);
    const results = await mapLimit(slice, concurrency, async (candidate): Promise<Enriched | undefined> => {
      try {
        const activity = await fetchTraderActivitySince(deps.api, candidate.wallet, { maxClosedPages: opts.maxClosedPages });
        return {
          candidate,
          figures: computeFigures(activity),
          wins: selectBiggestWins(winningPositions(activity.closed), now),
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
  if (failed > 0) deps.log.warn({ failed, lastError }, 'leaderboard enrichment: some traders could not be fetched');
  if (candidates.length > 0 && items === 0) throw new Error(`no trader could be enriched: ${lastError ?? 'unknown error'}`);
  return { items, failed };
}
