import { describe, expect, it } from 'vitest';
import { computeFigures, selectBiggestWins, winningPositions } from '../../src/domains/leaderboard/figures.js';
import {
  ClosedPositionRowSchema,
  LeaderboardRowSchema,
  mapIdentity,
  mergeOrderings,
  parseRows,
  PositionRowSchema,
  toVenuePeriod,
  TradeRowSchema,
} from '../../src/venues/polymarket/data-map.js';

const W = '0x56687bf447db6ffa42ffe2204a05edaa20f55839';
const closed = (asset: string, avgPrice: number, totalBought: number, realizedPnl: number, timestamp: number, outcome = 'Yes') => ({
  proxyWallet: W,
  asset,
  conditionId: `0x${'c'.repeat(64)}`,
  avgPrice,
  totalBought,
  realizedPnl,
  curPrice: realizedPnl > 0 ? 1 : 0,
  timestamp,
  title: `Market ${asset}`,
  slug: 's',
  icon: '',
  eventSlug: 's',
  outcome,
  outcomeIndex: 0,
  oppositeOutcome: 'No',
  oppositeAsset: '9',
  endDate: '2026-01-01',
});
const trade = (side: 'BUY' | 'SELL', size: number, price: number, timestamp: number) => ({
  proxyWallet: W,
  side,
  asset: '1',
  conditionId: `0x${'d'.repeat(64)}`,
  size,
  price,
  timestamp,
  title: 'T',
  slug: 's',
  icon: '',
  eventSlug: 's',
  outcome: 'Yes',
  outcomeIndex: 0,
  name: '',
  pseudonym: 'P',
  bio: '',
  profileImage: '',
  profileImageOptimized: '',
  transactionHash: '0x1',
});
const position = {
  proxyWallet: W,
  asset: '77',
  conditionId: `0x${'e'.repeat(64)}`,
  size: 100,
  avgPrice: 0.55,
  initialValue: 55,
  currentValue: 75,
  cashPnl: 20,
  percentPnl: 36.36,
  totalBought: 100,
  realizedPnl: 0,
  percentRealizedPnl: 0,
  curPrice: 0.75,
  redeemable: false,
  mergeable: false,
  title: 'Open market',
  slug: 'o',
  icon: '',
  eventId: '1',
  eventSlug: 'o',
  outcome: 'Yes',
  outcomeIndex: 0,
  oppositeOutcome: 'No',
  oppositeAsset: '78',
  endDate: '2026-12-31',
  negativeRisk: false,
};

// Hand-checked: returns per closed position = realizedPnl / (avgPrice × totalBought)
//   A 60/40 = 1.5 · B -100/100 = -1 · C 300/100 = 3 · D 0/5 = 0
//   mean 0.875, sample variance (0.390625 + 3.515625 + 4.515625 + 0.765625) / 3 = 3.0625, sd 1.75 → Sharpe 0.5
const fixture = {
  closed: parseRows(ClosedPositionRowSchema, [
    closed('A', 0.4, 100, 60, 1000),
    closed('B', 0.5, 200, -100, 2000, 'No'),
    closed('C', 0.25, 400, 300, 3000),
    closed('D', 0.5, 10, 0, 4000),
  ]).rows,
  positions: parseRows(PositionRowSchema, [position]).rows,
  trades: parseRows(TradeRowSchema, [trade('BUY', 100, 0.4, 1500), trade('BUY', 300, 0.6, 2600), trade('SELL', 50, 0.9, 3500)]).rows,
};

describe('enrichment figures (hand-checked fixture)', () => {
  it('computes win rate, Sharpe, best trade, roi, averages and the sparkline', () => {
    const f = computeFigures(fixture);
    expect(f.wins).toBe(2);
    expect(f.losses).toBe(1); // break-even D is neither
    expect(f.winRate).toBeCloseTo(2 / 3, 6);
    expect(f.bestTrade).toBe(300);
    expect(f.sharpeRatio).toBeCloseTo(0.5, 9);
    // PnL 60 - 100 + 300 + 0 realized + 20 open = 280; cost 40 + 100 + 100 + 5 + 55 = 300
    expect(f.totalPnl).toBe(280);
    expect(f.roi).toBeCloseTo(280 / 300, 6);
    expect(f.tradeCount).toBe(3);
    expect(f.avgTrade).toBeCloseTo((40 + 180 + 45) / 3, 6);
    expect(f.avgEntry).toBeCloseTo(220 / 400, 6);
    expect(f.sparkline).toEqual([60, -40, 260, 260]);
    expect(f.topPositions).toEqual([
      {
        marketId: `0x${'e'.repeat(64)}`,
        marketTitle: 'Open market',
        outcome: 'Yes',
        size: 100,
        avgPrice: 0.55,
        currentPrice: 0.75,
        value: 75,
        pnl: 20,
      },
    ]);
    expect(f.recentTrades.map((t) => t.timestamp)).toEqual([3500, 2600, 1500].map((s) => new Date(s * 1000).toISOString()));
    expect(f.recentTrades[0]).toMatchObject({ side: 'sell', price: 0.9, size: 50, marketTitle: 'T', outcome: 'Yes' });
  });

  it('restricts closed positions and trades to a period', () => {
    const f = computeFigures(fixture, 2500 * 1000);
    expect([f.wins, f.losses, f.winRate, f.bestTrade, f.tradeCount]).toEqual([1, 0, 1, 300, 2]);
    // returns [3, 0]: mean 1.5, sd √4.5
    expect(f.sharpeRatio).toBeCloseTo(1.5 / Math.sqrt(4.5), 6);
  });

  it('no activity → zeros and empty arrays', () => {
    const f = computeFigures({ closed: [], positions: [], trades: [] });
    expect(f).toEqual({
      totalPnl: 0,
      roi: 0,
      winRate: 0,
      wins: 0,
      losses: 0,
      bestTrade: 0,
      sharpeRatio: 0,
      tradeCount: 0,
      avgEntry: 0,
      avgTrade: 0,
      sparkline: [],
      topPositions: [],
      recentTrades: [],
    });
  });

  it('sparkline keeps the last 30 cumulative points', () => {
    const many = parseRows(
      ClosedPositionRowSchema,
      Array.from({ length: 45 }, (_, i) => closed(`a${i}`, 0.5, 2, 1, 1000 + i)),
    ).rows;
    const f = computeFigures({ closed: many, positions: [], trades: [] });
    expect(f.sparkline).toHaveLength(30);
    expect(f.sparkline[0]).toBe(16);
    expect(f.sparkline[29]).toBe(45);
  });

  it('biggest wins keep the top wins of every period window', () => {
    const now = new Date(10_000 * 86_400_000);
    const nowSec = now.getTime() / 1000;
    const rows = parseRows(ClosedPositionRowSchema, [
      ...Array.from({ length: 12 }, (_, i) => closed(`old${i}`, 0.1, 1000, 900 + i, nowSec - 100 * 86_400)),
      closed('recent', 0.5, 10, 5, nowSec - 3600),
      closed('loss', 0.5, 10, -5, nowSec - 3600),
    ]).rows;
    const kept = selectBiggestWins(winningPositions(rows), now);
    expect(kept.map((w) => w.asset)).toContain('recent'); // small, but the only win of the last day
    expect(kept.map((w) => w.asset)).not.toContain('loss');
    expect(kept.filter((w) => w.asset.startsWith('old'))).toHaveLength(10);
    expect(kept.find((w) => w.asset === 'recent')).toMatchObject({ side: 'yes', entryPrice: 0.5, exitPrice: 1, pnl: 5 });
  });
});

describe('Data API mapping', () => {
  it('maps periods to the venue', () => {
    expect(['1D', '7D', '30D', 'ALL'].map((p) => toVenuePeriod(p as never))).toEqual(['DAY', 'WEEK', 'MONTH', 'ALL']);
  });

  it('skips and counts malformed rows', () => {
    const parsed = parseRows(LeaderboardRowSchema, [
      { rank: '1', proxyWallet: W, userName: 'a', vol: 1, pnl: 2, profileImage: '', xUsername: '', verifiedBadge: true },
      { rank: 2, proxyWallet: W, vol: 1, pnl: 2 }, // rank must be a string
      { rank: '3', proxyWallet: '0xnothex', vol: 1, pnl: 2 },
      { rank: '4', proxyWallet: W, vol: 'lots', pnl: 2 },
      null,
    ]);
    expect(parsed.rows).toHaveLength(1);
    expect(parsed.skipped).toBe(4);
    expect(() => parseRows(LeaderboardRowSchema, { error: 'x' })).toThrow();
  });

  it('falls back for display name and avatar; isKol from verifiedBadge', () => {
    const base = { rank: '1', proxyWallet: W.toUpperCase().replace('0X', '0x'), vol: 1, pnl: 1, verifiedBadge: false };
    const a = mapIdentity(LeaderboardRowSchema.parse({ ...base, userName: '', xUsername: 'x_handle', profileImage: '' }));
    expect(a.displayName).toBe('@x_handle');
    expect(a.walletAddress).toBe(W);
    expect(a.avatarUrl).toMatch(/^https:\/\/.+0x56687bf447db6ffa42ffe2204a05edaa20f55839/);
    const b = mapIdentity(LeaderboardRowSchema.parse({ ...base, verifiedBadge: true, profileImage: 'https://img/x.png' }));
    expect(b.displayName).toBe('0x5668…5839');
    expect(b.avatarUrl).toBe('https://img/x.png');
    expect(b.isKol).toBe(true);
  });

  it('merges the PNL and VOL orderings, one row per wallet', () => {
    const row = (w: string, rank: string, pnl: number, vol: number) => LeaderboardRowSchema.parse({ rank, proxyWallet: w, vol, pnl });
    const a = `0x${'a'.repeat(40)}`;
    const b = `0x${'b'.repeat(40)}`;
    const merged = mergeOrderings([row(a, '1', 10, 5)], [row(b, '1', 1, 50), row(a, '2', 10, 5)]);
    expect(merged.map((m) => [m.walletAddress, m.venueRank, m.pnl, m.volume])).toEqual([
      [a, 1, 10, 5],
      [b, null, 1, 50],
    ]);
  });
});
