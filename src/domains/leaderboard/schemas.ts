import { z } from 'zod';
import { LEADERBOARD_CATEGORIES, PERIODS } from '../../venues/polymarket/data-map.js';
import { SORT_COLUMN } from './queries.js';

export const PeriodSchema = z.enum(PERIODS);
export const CategorySchema = z.enum(LEADERBOARD_CATEGORIES);
export const SortSchema = z.enum(Object.keys(SORT_COLUMN) as [keyof typeof SORT_COLUMN, ...(keyof typeof SORT_COLUMN)[]]);

export const LeaderboardQuerySchema = z
  .object({
    tab: z.enum(['global', 'kol']).default('global'),
    sort: SortSchema.default('pnl'),
    sortDirection: z.enum(['asc', 'desc']).default('desc'),
    period: PeriodSchema.default('7D'),
    category: CategorySchema.default('OVERALL'),
    search: z.string().trim().min(1).max(100).optional(),
    cursor: z.string().min(1).max(2048).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
  })
  .strict();
export type LeaderboardQuery = z.infer<typeof LeaderboardQuerySchema>;

export const LeaderboardEntrySchema = z
  .object({
    rank: z.number().int().min(1),
    walletAddress: z.string(),
    displayName: z.string(),
    avatarUrl: z.string(),
    isKol: z.boolean(),
    pnl: z.number(),
    roi: z.number(),
    winRate: z.number(),
    volume: z.number(),
    tradeCount: z.number().int(),
    wins: z.number().int(),
    losses: z.number().int(),
    bestTrade: z.number(),
    sharpeRatio: z.number(),
    avgEntry: z.number(),
    avgTrade: z.number(),
    sparkline: z.array(z.number()),
    rankChange: z
      .number()
      .int()
      .nullable()
      .describe(
        "`changes['1d'].rank` of the trader's history on this (category, period): venue PnL rank a day before the board's last sync minus rank now, positive when the trader moved up; null without a point a day old or without a PnL rank on either side. The same whatever `sort` or `tab`.",
      ),
  })
  .meta({ id: 'LeaderboardEntry' });
export type LeaderboardEntry = z.infer<typeof LeaderboardEntrySchema>;

export const LeaderboardPageSchema = z.object({
  traders: z.array(LeaderboardEntrySchema),
  nextCursor: z.string().nullable(),
  syncedAt: z
    .string()
    .nullable()
    .describe("The board's last successful sync (ISO 8601; also sent as `Last-Modified`); null before the first"),
  stale: z
    .boolean()
    .describe('True when `syncedAt` is older than 30 minutes, the latest leaderboard-sync failed, or there was no sync yet'),
});
export type LeaderboardPage = z.infer<typeof LeaderboardPageSchema>;

export const BiggestWinsQuerySchema = z
  .object({
    period: PeriodSchema.default('1D'),
    limit: z.coerce.number().int().min(1).max(50).default(10),
  })
  .strict();

export const BiggestWinSchema = z
  .object({
    walletAddress: z.string(),
    displayName: z.string(),
    marketTitle: z.string(),
    pnl: z.number(),
    side: z.string(),
    entryPrice: z.number(),
    exitPrice: z.number(),
    resolvedAt: z.string(),
  })
  .meta({ id: 'BiggestWin' });
export type BiggestWin = z.infer<typeof BiggestWinSchema>;

export const AddressParamsSchema = z.object({
  address: z
    .string()
    .max(42)
    .regex(/^0x[a-fA-F0-9]{40}$/, 'must be an EVM address: 0x followed by 40 hex digits'),
});

export const ProfileQuerySchema = z.object({ period: PeriodSchema.default('30D') }).strict();

export const TopPositionSchema = z.object({
  marketId: z.string(),
  marketTitle: z.string(),
  outcome: z.string(),
  size: z.number(),
  avgPrice: z.number(),
  currentPrice: z.number(),
  value: z.number(),
  pnl: z.number(),
});
export const RecentTradeSchema = z.object({
  marketId: z.string(),
  marketTitle: z.string(),
  side: z.string(),
  outcome: z.string(),
  price: z.number(),
  size: z.number(),
  timestamp: z.string(),
});

export const TraderProfileSchema = z
  .object({
    walletAddress: z.string(),
    displayName: z.string(),
    totalPnl: z.number(),
    roi: z.number(),
    winRate: z.number(),
    totalTrades: z.number().int(),
    topPositions: z.array(TopPositionSchema),
    recentTrades: z.array(RecentTradeSchema),
    syncedAt: z
      .string()
      .nullable()
      .describe(
        'When these figures were last computed from the venue (ISO 8601; also sent as `Last-Modified`); null before the first time',
      ),
    stale: z
      .boolean()
      .describe(
        'True when `syncedAt` is older than 90 minutes (a ranked trader) or 24 hours (an on-demand profile), or when the venue could not be read and the last good copy is served',
      ),
  })
  .meta({ id: 'TraderProfile' });
export type TraderProfile = z.infer<typeof TraderProfileSchema>;

export const HistoryQuerySchema = z
  .object({
    category: CategorySchema.default('OVERALL'),
    period: PeriodSchema.default('ALL'),
    days: z.coerce.number().int().min(1).max(365).default(90),
  })
  .strict();

export const TraderHistoryPointSchema = z.object({
  at: z.string().describe('When the sync that took this point ran (ISO 8601)'),
  rank: z.number().int().nullable().describe('Venue rank on the PnL ordering; null for a trader only on the volume ordering'),
  pnl: z.number(),
  volume: z.number(),
});
export type TraderHistoryPoint = z.infer<typeof TraderHistoryPointSchema>;

const ChangeSchema = z
  .object({
    rank: z.number().int().nullable().describe('rank then − rank now (positive: moved up); null when either rank is null'),
    pnl: z.number().describe('pnl now − pnl then'),
  })
  .nullable();

export const TraderHistorySchema = z
  .object({
    walletAddress: z.string(),
    points: z.array(TraderHistoryPointSchema),
    changes: z.object({ '1d': ChangeSchema, '7d': ChangeSchema, '30d': ChangeSchema }),
    syncedAt: z.string().nullable().describe("The board's last successful sync (ISO 8601); null before the first"),
    stale: z.boolean(),
  })
  .meta({ id: 'TraderHistory' });
export type TraderHistory = z.infer<typeof TraderHistorySchema>;
