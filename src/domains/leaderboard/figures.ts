import type { StoredPosition, StoredTrade } from '../../../drizzle/leaderboard.js';
import { isUnredeemedLoss, type ClosedPositionRow, type PositionRow, type TradeRow } from '../../venues/polymarket/data-map.js';

/**
 * The trader figures, computed from the Data API rows of one trader (pure,
 * hand-checkable; docs/market-data.md "Leaderboard" documents each definition):
 * - wins / losses: closed positions with realized PnL > 0 / < 0 (break-even counts as neither);
 *   winRate = wins / (wins + losses), a fraction in [0, 1]. A resolved loser never redeemed
 *   (`redeemable: true`, `curPrice` 0, still in `/positions`) is a closed position lost at its
 *   cash PnL, dated by its `endDate`, exactly once: not when `/closed-positions` also holds its
 *   `asset` (docs/venues.md "What we call", unredeemed losses).
 * - bestTrade: the largest realized PnL of one closed position (USDC).
 * - sharpeRatio: mean / sample standard deviation of per-position returns
 *   (realizedPnl / cost, cost = avgPrice × totalBought), not annualised; 0 with < 2 positions or no spread.
 * - totalPnl: realized PnL of closed positions + cash PnL of open ones; roi = totalPnl / cost of both (fraction).
 * - tradeCount: fills; avgTrade: mean notional (price × size) per fill; avgEntry: size-weighted mean BUY price.
 * - sparkline: cumulative realized PnL after each closed position, oldest first, the last ≤ 30 points.
 * `sinceMs` restricts closed positions and trades to a period (profiles); open positions always count.
 */
export interface TraderFigures {
  totalPnl: number;
  roi: number;
  winRate: number;
  wins: number;
  losses: number;
  bestTrade: number;
  sharpeRatio: number;
  tradeCount: number;
  avgEntry: number;
  avgTrade: number;
  sparkline: number[];
  topPositions: StoredPosition[];
  recentTrades: StoredTrade[];
}

export interface WinRow {
  asset: string;
  marketTitle: string;
  pnl: number;
  side: string;
  entryPrice: number;
  exitPrice: number;
  resolvedAt: Date;
}

export const SPARKLINE_POINTS = 30;
export const TOP_POSITIONS = 10;
export const RECENT_TRADES = 20;

const round = (v: number, digits = 6) => {
  const f = 10 ** digits;
  const r = Math.round(v * f) / f;
  return Number.isFinite(r) ? r : 0;
};

/**
 * Splits open positions into those still open and the resolved losers never
 * redeemed, the latter as closed positions lost at their cash PnL (dated by
 * `endDate`, else `nowMs`). A loser whose `asset` is also among `closed` is
 * dropped: the closed row already counts it.
 */
export function unredeemedLosses(
  positions: readonly PositionRow[],
  closed: readonly ClosedPositionRow[],
  nowMs: number,
): { open: PositionRow[]; losses: ClosedPositionRow[] } {
  const closedAssets = new Set(closed.map((c) => c.asset));
  const open: PositionRow[] = [];
  const losses: ClosedPositionRow[] = [];
  const nowSec = Math.floor(nowMs / 1000);
  for (const p of positions) {
    if (!isUnredeemedLoss(p)) open.push(p);
    else if (!closedAssets.has(p.asset))
      losses.push({
        proxyWallet: p.proxyWallet,
        asset: p.asset,
        conditionId: p.conditionId,
        avgPrice: p.avgPrice,
        curPrice: p.curPrice,
        title: p.title,
        slug: p.slug,
        outcome: p.outcome,
        outcomeIndex: p.outcomeIndex,
        totalBought: p.size,
        realizedPnl: p.cashPnl,
        timestamp: Math.min(p.endDate ?? nowSec, nowSec),
      });
  }
  return { open, losses };
}

export function computeFigures(
  input: { positions: PositionRow[]; closed: ClosedPositionRow[]; trades: TradeRow[] },
  sinceMs?: number,
  nowMs = Date.now(),
): TraderFigures {
  const { open, losses: unredeemed } = unredeemedLosses(input.positions, input.closed, nowMs);
  const allClosed = [...input.closed, ...unredeemed];
  const closed = sinceMs === undefined ? allClosed : allClosed.filter((c) => c.timestamp * 1000 >= sinceMs);
  const trades = sinceMs === undefined ? input.trades : input.trades.filter((t) => t.timestamp * 1000 >= sinceMs);
  const positions = open;

  let wins = 0;
  let losses = 0;
  let bestTrade: number | undefined;
  let realized = 0;
  let cost = 0;
  const returns: number[] = [];
  for (const c of closed) {
    if (c.realizedPnl > 0) wins++;
    else if (c.realizedPnl < 0) losses++;
    bestTrade = bestTrade === undefined ? c.realizedPnl : Math.max(bestTrade, c.realizedPnl);
    realized += c.realizedPnl;
    const basis = c.avgPrice * c.totalBought;
    cost += basis;
    if (basis > 0) returns.push(c.realizedPnl / basis);
  }
  let unrealized = 0;
  for (const p of positions) {
    unrealized += p.cashPnl;
    cost += p.initialValue;
  }
  const totalPnl = realized + unrealized;

  let sharpe = 0;
  if (returns.length >= 2) {
    const mean = returns.reduce((a, b) => a + b, 0) / returns.length;
    const variance = returns.reduce((a, r) => a + (r - mean) ** 2, 0) / (returns.length - 1);
    const sd = Math.sqrt(variance);
    sharpe = sd > 1e-12 ? mean / sd : 0;
  }

  let notional = 0;
  let buyNotional = 0;
  let buySize = 0;
  for (const t of trades) {
    notional += t.price * t.size;
    if (t.side === 'BUY') {
      buyNotional += t.price * t.size;
      buySize += t.size;
    }
  }

  const ordered = [...closed].sort((a, b) => a.timestamp - b.timestamp || (a.asset < b.asset ? -1 : a.asset > b.asset ? 1 : 0));
  const cumulative: number[] = [];
  let running = 0;
  for (const c of ordered) {
    running += c.realizedPnl;
    cumulative.push(round(running, 2));
  }

  const topPositions: StoredPosition[] = [...input.positions]
    .sort((a, b) => b.currentValue - a.currentValue || (a.asset < b.asset ? -1 : 1))
    .slice(0, TOP_POSITIONS)
    .map((p) => ({
      marketId: p.conditionId,
      marketTitle: p.title,
      outcome: p.outcome,
      size: p.size,
      avgPrice: p.avgPrice,
      currentPrice: p.curPrice,
      value: p.currentValue,
      pnl: p.cashPnl,
    }));
  const recentTrades: StoredTrade[] = [...trades]
    .sort((a, b) => b.timestamp - a.timestamp)
    .slice(0, RECENT_TRADES)
    .map((t) => ({
      marketId: t.conditionId,
      marketTitle: t.title,
      side: t.side.toLowerCase(),
      outcome: t.outcome,
      price: t.price,
      size: t.size,
      timestamp: new Date(t.timestamp * 1000).toISOString(),
    }));

  return {
    totalPnl: round(totalPnl),
    roi: cost > 0 ? round(totalPnl / cost) : 0,
    winRate: wins + losses > 0 ? round(wins / (wins + losses)) : 0,
    wins,
    losses,
    bestTrade: round(bestTrade ?? 0),
    sharpeRatio: round(sharpe),
    tradeCount: trades.length,
    avgEntry: buySize > 0 ? round(buyNotional / buySize) : 0,
    avgTrade: trades.length > 0 ? round(notional / trades.length) : 0,
    sparkline: cumulative.slice(-SPARKLINE_POINTS),
    topPositions,
    recentTrades,
  };
}

/** Winning closed positions, the candidates for biggest wins. */
export function winningPositions(closed: ClosedPositionRow[]): WinRow[] {
  return closed
    .filter((c) => c.realizedPnl > 0)
    .map((c) => ({
      asset: c.asset,
      marketTitle: c.title,
      pnl: c.realizedPnl,
      side: (c.outcome || 'yes').toLowerCase(),
      entryPrice: c.avgPrice,
      exitPrice: c.curPrice,
      resolvedAt: new Date(c.timestamp * 1000),
    }));
}

/**
 * Keeps, per trader, the largest wins of each period window (1D, 7D, 30D, ALL)
 * relative to `now`, so a per-period query never misses a recent smaller win.
 */
export function selectBiggestWins(wins: WinRow[], now: Date, perWindow = 10): WinRow[] {
  const keep = new Map<string, WinRow>();
  const byPnl = [...wins].sort((a, b) => b.pnl - a.pnl);
  for (const ms of [86_400_000, 7 * 86_400_000, 30 * 86_400_000, Infinity]) {
    let n = 0;
    for (const w of byPnl) {
      if (now.getTime() - w.resolvedAt.getTime() > ms) continue;
      keep.set(w.asset, w);
      if (++n >= perWindow) break;
    }
  }
  return [...keep.values()];
}
