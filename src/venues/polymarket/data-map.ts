import { z } from 'zod';
import { wireInt, wireNumber } from '../wire.js';
import { httpsUrl } from '../../lib/safe-url.js';

/**
 * Pure mapping from Polymarket Data API wire rows (docs/venues.md §1–2) to our
 * shapes. Every row is parsed strictly on its own: a malformed row is skipped
 * and counted, never fatal to the page it came in.
 */

export const PERIODS = ['1D', '7D', '30D', 'ALL'] as const;
export type Period = (typeof PERIODS)[number];
export const LEADERBOARD_CATEGORIES = ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'] as const;
export type LeaderboardCategory = (typeof LEADERBOARD_CATEGORIES)[number];
export type VenuePeriod = 'DAY' | 'WEEK' | 'MONTH' | 'ALL';

const VENUE_PERIOD: Record<Period, VenuePeriod> = { '1D': 'DAY', '7D': 'WEEK', '30D': 'MONTH', ALL: 'ALL' };
export const toVenuePeriod = (p: Period): VenuePeriod => VENUE_PERIOD[p];

/** Length of a period in milliseconds (ALL = unbounded). */
export function periodMs(p: Period): number | undefined {
  return p === '1D' ? 86_400_000 : p === '7D' ? 7 * 86_400_000 : p === '30D' ? 30 * 86_400_000 : undefined;
}

const address = z.string().regex(/^0x[a-fA-F0-9]{40}$/);
/** Numbers as the SDKs read them: a JSON number or a decimal string (docs/venues.md "What we call"). */
const finite = wireNumber;
/** Unix seconds, as a number or a string of digits. */
const unixSeconds = wireInt.pipe(z.number().nonnegative());
const optText = z
  .string()
  .nullish()
  .transform((v) => v ?? '');

export const LeaderboardRowSchema = z.object({
  rank: z.string().regex(/^\d+$/),
  proxyWallet: address,
  userName: optText,
  vol: finite,
  pnl: finite,
  profileImage: optText,
  xUsername: optText,
  verifiedBadge: z
    .boolean()
    .nullish()
    .transform((v) => v ?? false),
});
export type LeaderboardRow = z.infer<typeof LeaderboardRowSchema>;

/** What every position row (open or closed) names: the wallet, the outcome token and its market. */
const PositionBase = z.object({
  proxyWallet: address,
  asset: z.string().min(1),
  conditionId: z.string().min(1),
  avgPrice: finite,
  curPrice: finite,
  title: optText,
  slug: optText,
  outcome: optText,
  outcomeIndex: wireInt.nullish(),
});

/** `endDate` as the venue writes it (live: `"YYYY-MM-DD"`, docs/venues.md §2a) → unix seconds, or undefined. */
const endDateSeconds = z
  .string()
  .nullish()
  .transform((v) => {
    const ms = v ? Date.parse(v) : NaN;
    return Number.isFinite(ms) ? Math.floor(ms / 1000) : undefined;
  });

export const PositionRowSchema = PositionBase.extend({
  size: finite,
  initialValue: finite,
  currentValue: finite,
  cashPnl: finite,
  totalBought: finite.nullish(),
  realizedPnl: finite.nullish(),
  /** The market resolved and the tokens are still held, losers included ("redeemable ≠ won"). */
  redeemable: z
    .boolean()
    .nullish()
    .transform((v) => v ?? false),
  endDate: endDateSeconds,
});
export type PositionRow = z.infer<typeof PositionRowSchema>;

/**
 * A resolved loss the trader has not redeemed (docs/venues.md "What we call",
 * unredeemed losses): it stays in `/positions` with `redeemable: true` and
 * `curPrice` 0 until redeemed, then moves to `/closed-positions`.
 */
export const isUnredeemedLoss = (p: PositionRow): boolean => p.redeemable && p.curPrice === 0;

export const ClosedPositionRowSchema = PositionBase.extend({
  totalBought: finite,
  realizedPnl: finite,
  timestamp: unixSeconds,
});
export type ClosedPositionRow = z.infer<typeof ClosedPositionRowSchema>;

export const TradeRowSchema = z.object({
  proxyWallet: address,
  side: z.enum(['BUY', 'SELL']),
  asset: z.string().min(1),
  conditionId: z.string().min(1),
  size: finite,
  price: finite,
  timestamp: unixSeconds,
  title: optText,
  slug: optText,
  outcome: optText,
  name: optText,
  pseudonym: optText,
  profileImage: optText,
  transactionHash: optText,
});
export type TradeRow = z.infer<typeof TradeRowSchema>;

export interface Parsed<T> {
  rows: T[];
  skipped: number;
}

/** Parses a bare-array response row by row; a body that is not an array throws (the page failed). */
export function parseRows<T>(schema: z.ZodType<T>, body: unknown): Parsed<T> {
  if (!Array.isArray(body)) throw new Error('expected a JSON array');
  const rows: T[] = [];
  let skipped = 0;
  for (const item of body) {
    const r = schema.safeParse(item);
    if (r.success) rows.push(r.data);
    else skipped++;
  }
  return { rows, skipped };
}

/** "0x5668…5839": the display name of a trader without a username. */
export function shortAddress(addr: string): string {
  const a = addr.toLowerCase();
  return `${a.slice(0, 6)}…${a.slice(-4)}`;
}

/** A deterministic identicon so every trader has an avatar URL (docs/api-contract.md §2: avatarUrl is a URL). */
export function fallbackAvatar(addr: string): string {
  return `https://api.dicebear.com/9.x/identicon/svg?seed=${addr.toLowerCase()}`;
}

export interface TraderIdentity {
  walletAddress: string;
  displayName: string;
  avatarUrl: string;
  isKol: boolean;
}

/** Display name: username, else the X handle, else the short address. Avatar: the venue's, else an identicon. */
export function mapIdentity(row: LeaderboardRow): TraderIdentity {
  const wallet = row.proxyWallet.toLowerCase();
  const name = row.userName.trim() || (row.xUsername.trim() ? `@${row.xUsername.trim().replace(/^@/, '')}` : '') || shortAddress(wallet);
  const avatar = httpsUrl(row.profileImage) ?? fallbackAvatar(wallet);
  return { walletAddress: wallet, displayName: name.slice(0, 200), avatarUrl: avatar, isKol: row.verifiedBadge };
}

export interface SnapshotRow extends TraderIdentity {
  pnl: number;
  volume: number;
  venueRank: number | null;
}

/**
 * Merges the PNL and VOL orderings of one (category, period) into one row per
 * wallet. The venue rank kept is the one of the PNL ordering.
 */
export function mergeOrderings(pnlRows: LeaderboardRow[], volRows: LeaderboardRow[]): SnapshotRow[] {
  const out = new Map<string, SnapshotRow>();
  for (const [rows, byPnl] of [
    [pnlRows, true],
    [volRows, false],
  ] as const) {
    for (const r of rows) {
      const id = mapIdentity(r);
      const prev = out.get(id.walletAddress);
      if (prev) {
        if (byPnl && prev.venueRank === null) prev.venueRank = Number(r.rank);
        continue;
      }
      out.set(id.walletAddress, { ...id, pnl: r.pnl, volume: r.vol, venueRank: byPnl ? Number(r.rank) : null });
    }
  }
  return [...out.values()];
}
