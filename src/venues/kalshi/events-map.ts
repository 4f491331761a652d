import { z } from 'zod';
import {
  displayPrice,
  priceChange,
  roundProbability,
  venueInstant,
  type Category,
  type CatalogueGroup,
  type CatalogueMarket,
  type GroupStatus,
  type HistoryPoint,
  type MapResult,
  type MarketStatus,
} from '../catalogue.js';

/**
 * Pure mapping of Kalshi events, markets and series (docs/venues.md §5, §5d,
 * §5e) to CatalogueGroup, following "What we call": titles from
 * `yes_sub_title`, the one price rule over the `*_dollars` strings (bid
 * "0.0000" / ask "1.0000" = no quote, last "0.0000" without volume = no
 * trade), placeholders left out, categories from the series, never from the
 * event's deprecated `category`.
 */

const FIXED = /^-?\d+(\.\d+)?$/;
/** A fixed-point string (a JSON number is read too); `""` (seen on empty books) and null mean "not set". */
const fixed = z.union([z.string().trim().regex(FIXED), z.literal(''), z.number().finite().transform(String)]).nullish();
const text = z.string().nullish();

export const KalshiCatalogueMarketSchema = z.object({
  ticker: z.string().trim().min(1).max(200),
  event_ticker: z.string().min(1),
  title: text,
  yes_sub_title: text,
  // Enums are parsed as free strings (docs/venues.md §5d: they gain values).
  status: z.string().min(1),
  yes_bid_dollars: fixed,
  yes_ask_dollars: fixed,
  last_price_dollars: fixed,
  volume_fp: fixed,
  volume_24h_fp: fixed,
  notional_value_dollars: fixed,
  result: text,
  settlement_value_dollars: fixed,
  // Descriptive (docs/decisions.md §16.2, §16.5): unreadable values say nothing rather than failing the market.
  previous_price_dollars: z.unknown().optional(),
  close_time: z.unknown().optional(),
  open_time: z.unknown().optional(),
  created_time: z.unknown().optional(),
});
export type KalshiCatalogueMarket = z.infer<typeof KalshiCatalogueMarketSchema>;

export const KalshiCatalogueEventSchema = z.object({
  event_ticker: z.string().trim().min(1).max(200),
  series_ticker: z.string().trim().min(1).max(200),
  title: z.string().trim().min(1).max(1000),
  sub_title: text,
  markets: z.array(z.unknown()).nullish(),
});

/** A listing's array; `null` (or absent) is an empty list (docs/venues.md "What we call"). */
const nullList = z
  .array(z.unknown())
  .nullish()
  .transform((v) => v ?? []);

/** `GET /events` page envelope; `cursor` `""` (or absent) = the last page. */
export const KalshiEventsEnvelopeSchema = z.object({ events: nullList, cursor: z.string().nullish() });
/** `GET /events/{event_ticker}`: `event.markets` with nested markets; the top-level `markets` is deprecated. */
export const KalshiEventEnvelopeSchema = z.object({ event: z.unknown(), markets: z.array(z.unknown()).nullish() });
/** `GET /markets` envelope. */
export const KalshiMarketsEnvelopeSchema = z.object({ markets: nullList, cursor: z.string().nullish() });
/** `GET /series`: one un-paged response. */
export const KalshiSeriesEnvelopeSchema = z.object({ series: z.array(z.unknown()).nullable() });
const KalshiSeriesSchema = z.object({ ticker: z.string().trim().min(1).max(200), category: z.string().nullish() });

const num = (s: string | null | undefined): number | undefined => (s == null || s === '' ? undefined : Number(s));

/** docs/venues.md "Markets of a group": markets that have never opened are left out. */
export function isKalshiPlaceholder(status: string): boolean {
  return status === 'initialized' || status === 'unopened';
}

/** Kalshi market status (spec v3.29: initialized|inactive|active|closed|determined|disputed|amended|finalized) → ours. */
export function kalshiMarketStatus(s: string): MarketStatus {
  if (s === 'active') return 'active';
  if (s === 'determined' || s === 'finalized' || s === 'amended' || s === 'settled') return 'resolved';
  // closed, inactive (paused), disputed (settlement not final): not trading, not settled.
  return 'closed';
}

/**
 * docs/venues.md "Prices", Kalshi: the one rule over `yes_bid_dollars`,
 * `yes_ask_dollars`, `last_price_dollars`. A bid of 0 or an ask of 1 is no
 * order (so bid "0.0000" with ask "1.0000" is no quote), and a last price of
 * 0 on a market without volume is no trade. A resolved market prices its
 * settlement: `result` yes → 1, no → 0, scalar → `settlement_value_dollars`.
 */
export function kalshiYesPrice(
  m: Pick<
    KalshiCatalogueMarket,
    'yes_bid_dollars' | 'yes_ask_dollars' | 'last_price_dollars' | 'volume_fp' | 'result' | 'settlement_value_dollars'
  >,
  status: MarketStatus = 'active',
): number | null {
  if (status === 'resolved') {
    if (m.result === 'yes') return 1;
    if (m.result === 'no') return 0;
    const v = num(m.settlement_value_dollars);
    return v !== undefined && v >= 0 && v <= 1 ? roundProbability(v) : null;
  }
  const bid = num(m.yes_bid_dollars);
  const ask = num(m.yes_ask_dollars);
  const last = num(m.last_price_dollars);
  const volume = num(m.volume_fp) ?? 0;
  return displayPrice({
    bid: bid !== undefined && bid > 0 && bid <= 1 ? bid : null,
    ask: ask !== undefined && ask >= 0 && ask < 1 ? ask : null,
    last: last !== undefined && last >= 0 && last <= 1 && !(last === 0 && volume === 0) ? last : null,
  });
}

/** docs/venues.md "Titles": `yes_sub_title` when the event has more than one market and it is non-empty, else `title`. */
export function kalshiMarketTitle(
  m: Pick<KalshiCatalogueMarket, 'title' | 'yes_sub_title'>,
  marketsInGroup: number,
  eventTitle: string,
): string {
  const sub = m.yes_sub_title?.trim();
  return (marketsInGroup > 1 && sub ? sub : m.title?.trim() || eventTitle).slice(0, 1000);
}

/** docs/venues.md "Categories", Kalshi: the series' `category` → ours; anything else, or no series, → OTHER. */
const SERIES_CATEGORY: Readonly<Record<string, Category>> = {
  Politics: 'POLITICS',
  Elections: 'POLITICS',
  World: 'POLITICS',
  Sports: 'SPORTS',
  Crypto: 'CRYPTO',
  Economics: 'ECONOMICS',
  Financials: 'ECONOMICS',
  Companies: 'ECONOMICS',
  Commodities: 'ECONOMICS',
  Energy: 'ECONOMICS',
  'Science and Technology': 'TECH',
  Entertainment: 'CULTURE',
  Social: 'CULTURE',
  Mentions: 'CULTURE',
  'Climate and Weather': 'WEATHER',
};

export function kalshiCategory(seriesCategory: string | null | undefined): Category {
  return (seriesCategory && Object.hasOwn(SERIES_CATEGORY, seriesCategory) ? SERIES_CATEGORY[seriesCategory] : undefined) ?? 'OTHER';
}

/** `GET /series` body → series ticker → our category; malformed series rows are skipped and counted. */
export function mapKalshiSeriesList(body: unknown): { categories: Map<string, Category>; skipped: number } {
  const env = KalshiSeriesEnvelopeSchema.safeParse(body);
  if (!env.success) throw new Error('series answer is not { series: [...] }');
  const categories = new Map<string, Category>();
  let skipped = 0;
  for (const row of env.data.series ?? []) {
    const s = KalshiSeriesSchema.safeParse(row);
    if (s.success) categories.set(s.data.ticker, kalshiCategory(s.data.category));
    else skipped++;
  }
  return { categories, skipped };
}

const usd = (contracts: string | null | undefined, notional: number) => {
  const c = num(contracts) ?? 0;
  return Number.isFinite(c) && c > 0 ? Math.round(c * notional * 100) / 100 : 0;
};

/**
 * A resolved Kalshi market's result (docs/decisions.md §17.2): `result` yes or
 * no; a scalar settlement counts as yes at a settlement value of at least 0.5.
 */
export function kalshiResolution(
  m: Pick<KalshiCatalogueMarket, 'result' | 'settlement_value_dollars'>,
  status: MarketStatus,
): { result: 'yes' | 'no' | null; resolvedOutcome: string | null } {
  if (status !== 'resolved') return { result: null, resolvedOutcome: null };
  let result: 'yes' | 'no' | null = m.result === 'yes' || m.result === 'no' ? m.result : null;
  if (result === null) {
    const v = num(m.settlement_value_dollars);
    if (v !== undefined && v >= 0 && v <= 1) result = v >= 0.5 ? 'yes' : 'no';
  }
  return { result, resolvedOutcome: result === null ? null : result === 'yes' ? 'Yes' : 'No' };
}

/** One strictly parsed Kalshi market → ours; `marketsInGroup` decides its title. */
export function mapKalshiCatalogueMarket(m: KalshiCatalogueMarket, marketsInGroup: number, eventTitle: string): CatalogueMarket {
  const status = kalshiMarketStatus(m.status);
  // Volume in USD: contracts × notional value per contract ($1 on binary markets).
  const notional = num(m.notional_value_dollars) ?? 1;
  return {
    id: `ks-${m.ticker}`,
    venue: 'kalshi',
    venueMarketId: m.ticker,
    title: kalshiMarketTitle(m, marketsInGroup, eventTitle),
    outcome: 'Yes',
    outcomeLabels: ['Yes', 'No'],
    yesPrice: kalshiYesPrice(m, status),
    volume: usd(m.volume_fp, notional),
    volume24h: usd(m.volume_24h_fp, notional),
    status,
    endDate: venueInstant(m.close_time),
    venueChange24h: kalshiChange24h(m),
    tokenId: null,
    ...kalshiResolution(m, status),
    conditionId: null,
  };
}

/**
 * docs/decisions.md §16.5: the venue's own 24 h change of a Kalshi market is
 * the change of its last price, `last_price_dollars` − `previous_price_dollars`;
 * null when either is missing.
 */
export function kalshiChange24h(m: Pick<KalshiCatalogueMarket, 'last_price_dollars' | 'previous_price_dollars'>): number | null {
  const last = num(m.last_price_dollars);
  const prev =
    typeof m.previous_price_dollars === 'string' && FIXED.test(m.previous_price_dollars) ? Number(m.previous_price_dollars) : undefined;
  if (last === undefined || prev === undefined) return null;
  return priceChange(last - prev);
}

/** When a Kalshi market opened: `open_time`, else `created_time` (§16.5: a group's `createdAt` is its earliest). */
function kalshiOpenedAt(m: KalshiCatalogueMarket): Date | null {
  return venueInstant(m.open_time) ?? venueInstant(m.created_time);
}

/** Parses one market row strictly (for `GET /markets?tickers=`); undefined when malformed. */
export function parseKalshiMarket(raw: unknown): KalshiCatalogueMarket | undefined {
  const r = KalshiCatalogueMarketSchema.safeParse(raw);
  return r.success ? r.data : undefined;
}

/**
 * One Kalshi event with nested markets → our group. `categories` is the
 * series map of `GET /series`. A group without a market of its own (every
 * nested market a placeholder, or settled before the historical cutoff) is
 * `closed`.
 */
export function mapKalshiCatalogueEvent(raw: unknown, categories: ReadonlyMap<string, Category>): MapResult<CatalogueGroup> {
  const parsed = KalshiCatalogueEventSchema.safeParse(raw);
  if (!parsed.success) {
    const t = (raw as { event_ticker?: unknown } | null)?.event_ticker;
    return { skipped: 1, malformedId: typeof t === 'string' && t.length > 0 && t.length <= 200 ? `ks-${t}` : undefined };
  }
  const e = parsed.data;
  let skipped = 0;
  const members: KalshiCatalogueMarket[] = [];
  for (const rm of e.markets ?? []) {
    const m = KalshiCatalogueMarketSchema.safeParse(rm);
    if (!m.success) skipped++;
    else if (!isKalshiPlaceholder(m.data.status)) members.push(m.data);
  }
  const markets = members.map((m) => mapKalshiCatalogueMarket(m, members.length, e.title));
  let status: GroupStatus = 'closed';
  if (markets.some((m) => m.status === 'active')) status = 'active';
  else if (markets.length > 0 && markets.every((m) => m.status === 'resolved')) status = 'resolved';
  return {
    skipped,
    value: {
      id: `ks-${e.event_ticker}`,
      venue: 'kalshi',
      venueEventId: e.event_ticker,
      slug: e.event_ticker.toLowerCase(),
      title: e.title,
      description: e.sub_title ?? '',
      category: categories.get(e.series_ticker) ?? 'OTHER',
      status,
      imageUrl: null,
      seriesTicker: e.series_ticker,
      createdAt: earliest(members.map(kalshiOpenedAt)),
      markets,
    },
  };
}

function earliest(dates: Array<Date | null>): Date | null {
  let out: Date | null = null;
  for (const d of dates) if (d !== null && (out === null || d < out)) out = d;
  return out;
}

const CandleSchema = z.object({
  end_period_ts: z.number().int().positive(),
  price: z.object({ close_dollars: fixed, previous_dollars: fixed }).nullish(),
  yes_bid: z.object({ close_dollars: fixed }).nullish(),
  yes_ask: z.object({ close_dollars: fixed }).nullish(),
  volume_fp: fixed,
});
const KalshiCandlesSchema = z.object({ candlesticks: z.array(z.unknown()) });

/**
 * Candlesticks (docs/venues.md §6) → points, by the one price rule over the
 * period's closing quotes and its last trade (else the last trade before
 * it). A period with no quote and no trade gives no point (never 0).
 */
export function mapKalshiCandles(raw: unknown): { points: HistoryPoint[]; skipped: number } {
  const parsed = KalshiCandlesSchema.safeParse(raw);
  if (!parsed.success) throw new Error('candlesticks answer is not { candlesticks: [...] }');
  const points: HistoryPoint[] = [];
  let skipped = 0;
  for (const row of parsed.data.candlesticks) {
    const c = CandleSchema.safeParse(row);
    if (!c.success) {
      skipped++;
      continue;
    }
    const last = c.data.price?.close_dollars || c.data.price?.previous_dollars;
    const price = kalshiYesPrice({
      yes_bid_dollars: c.data.yes_bid?.close_dollars,
      yes_ask_dollars: c.data.yes_ask?.close_dollars,
      last_price_dollars: last,
      // A trade price carried in the candle is a real trade, whatever this period's volume.
      volume_fp: last ? '1' : '0',
      result: '',
      settlement_value_dollars: null,
    });
    if (price !== null) points.push({ ts: new Date(c.data.end_period_ts * 1000), price });
  }
  return { points, skipped };
}
