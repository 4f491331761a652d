import { z } from 'zod';
import { normalizeCategory, roundPrice, type MarketStatus, type VenueGroup, type VenueMarket } from '../groups.js';
import type { MapResult } from '../polymarket/map.js';

/**
 * Pure mapping of Kalshi Trade API v2 events and candlesticks (docs/venues.md §5,
 * §6) to ours. Since 2026-03-12 prices are `*_dollars` fixed-point strings
 * (already probabilities) and counts `*_fp` strings; the legacy cent fields
 * are gone, so they are not read.
 */

const FIXED = /^-?\d+(\.\d+)?$/;
/** A fixed-point string; `""` (seen on empty books) and null mean "not set". */
const fixedOrEmpty = z.union([z.string().regex(FIXED), z.literal('')]).nullish();

export const KalshiMarketSchema = z.object({
  ticker: z.string().trim().min(1).max(200),
  event_ticker: z.string().min(1),
  title: z.string().nullish(),
  yes_sub_title: z.string().nullish(),
  status: z.string().min(1),
  yes_bid_dollars: fixedOrEmpty,
  yes_ask_dollars: fixedOrEmpty,
  last_price_dollars: fixedOrEmpty,
  volume_fp: fixedOrEmpty,
  notional_value_dollars: fixedOrEmpty,
  result: z.string().nullish(),
});
export type KalshiMarket = z.infer<typeof KalshiMarketSchema>;

export const KalshiEventSchema = z.object({
  event_ticker: z.string().trim().min(1).max(200),
  series_ticker: z.string().trim().min(1).max(200),
  title: z.string().trim().min(1).max(1000),
  sub_title: z.string().nullish(),
  category: z.string().nullish(),
  markets: z.array(z.unknown()).nullish(),
});

export const KalshiEventsPageSchema = z.object({
  events: z.array(z.unknown()),
  cursor: z.string().nullish(),
});

const num = (s: string | null | undefined): number | undefined => (s == null || s === '' ? undefined : Number(s));

/**
 * docs/venues.md "Our ids": midpoint of yes bid and ask when both are set and the
 * spread is below 0.5, else the last trade price.
 */
export function kalshiYesPrice(m: Pick<KalshiMarket, 'yes_bid_dollars' | 'yes_ask_dollars' | 'last_price_dollars'>): number | undefined {
  const bid = num(m.yes_bid_dollars);
  const ask = num(m.yes_ask_dollars);
  let p: number | undefined;
  if (bid !== undefined && ask !== undefined && ask - bid < 0.5) p = (bid + ask) / 2;
  else p = num(m.last_price_dollars);
  return p !== undefined && Number.isFinite(p) && p >= 0 && p <= 1 ? roundPrice(p) : undefined;
}

function marketStatus(s: string): MarketStatus {
  // `status=open` on the listing returns markets whose status is `active`.
  if (s === 'active') return 'active';
  if (s === 'determined' || s === 'finalized' || s === 'amended' || s === 'settled') return 'resolved';
  return 'closed';
}

export function mapKalshiMarket(raw: unknown): VenueMarket | undefined {
  const parsed = KalshiMarketSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const m = parsed.data;
  const title = m.title?.trim() || m.yes_sub_title?.trim();
  const yesPrice = kalshiYesPrice(m);
  if (!title || yesPrice === undefined) return undefined;
  // Volume in USD: contracts × notional value per contract ($1 on binary markets).
  const contracts = num(m.volume_fp) ?? 0;
  const notional = num(m.notional_value_dollars) ?? 1;
  return {
    id: `ks-${m.ticker}`,
    venue: 'kalshi',
    venueMarketId: m.ticker,
    title: title.slice(0, 1000),
    yesPrice,
    volume: Math.max(0, Math.round(contracts * notional * 100) / 100),
    status: marketStatus(m.status),
    yesTokenId: null,
  };
}

/** One Kalshi event from the open listing (with nested markets) → our group. */
export function mapKalshiEvent(raw: unknown): MapResult<VenueGroup> {
  const parsed = KalshiEventSchema.safeParse(raw);
  if (!parsed.success) {
    const t = (raw as { event_ticker?: unknown } | null)?.event_ticker;
    return { skipped: 1, malformedId: typeof t === 'string' && t.length > 0 && t.length <= 200 ? `ks-${t}` : undefined };
  }
  const e = parsed.data;
  const markets: VenueMarket[] = [];
  let skipped = 0;
  for (const rm of e.markets ?? []) {
    const m = mapKalshiMarket(rm);
    if (m) markets.push(m);
    else skipped++;
  }
  return {
    skipped,
    value: {
      id: `ks-${e.event_ticker}`,
      venue: 'kalshi',
      venueEventId: e.event_ticker,
      slug: e.event_ticker.toLowerCase(),
      title: e.title,
      description: e.sub_title ?? '',
      category: normalizeCategory(e.category),
      // Every event on the `status=open` listing has at least one open market.
      status: 'active',
      imageUrl: null,
      seriesTicker: e.series_ticker,
      markets,
    },
  };
}

const CandleSchema = z.object({
  end_period_ts: z.number().int().positive(),
  price: z.object({ close_dollars: fixedOrEmpty, previous_dollars: fixedOrEmpty }).nullish(),
  yes_bid: z.object({ close_dollars: fixedOrEmpty }).nullish(),
  yes_ask: z.object({ close_dollars: fixedOrEmpty }).nullish(),
});

export const KalshiCandlesSchema = z.object({ candlesticks: z.array(z.unknown()) });

/**
 * Candlesticks → points: the same yes-price rule as the listing (quote
 * midpoint when tight, else the period's last trade, else the last trade
 * before it). Malformed candles are skipped.
 */
export function mapKalshiCandles(raw: unknown): { points: Array<{ ts: Date; price: number }>; skipped: number } {
  const parsed = KalshiCandlesSchema.safeParse(raw);
  if (!parsed.success) throw new Error('candlesticks answer is not { candlesticks: [...] }');
  const points: Array<{ ts: Date; price: number }> = [];
  let skipped = 0;
  for (const row of parsed.data.candlesticks) {
    const c = CandleSchema.safeParse(row);
    if (!c.success) {
      skipped++;
      continue;
    }
    const price = kalshiYesPrice({
      yes_bid_dollars: c.data.yes_bid?.close_dollars,
      yes_ask_dollars: c.data.yes_ask?.close_dollars,
      last_price_dollars: c.data.price?.close_dollars || c.data.price?.previous_dollars,
    });
    if (price === undefined) continue;
    points.push({ ts: new Date(c.data.end_period_ts * 1000), price });
  }
  return { points, skipped };
}
