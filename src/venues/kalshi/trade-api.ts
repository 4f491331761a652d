import { z } from 'zod';
import { buildUrl, requestJson, UpstreamError, type RequestOptions } from '../../lib/http.js';
import { mapListedPage, type Category, type CatalogueGroup, type HistoryPoint, type ListedPage, type MarketStatus } from '../catalogue.js';
import {
  KalshiEventEnvelopeSchema,
  KalshiEventsEnvelopeSchema,
  KalshiMarketsEnvelopeSchema,
  mapKalshiCatalogueEvent,
  mapKalshiCandles,
  mapKalshiCatalogueMarket,
  mapKalshiSeriesList,
  isKalshiPlaceholder,
  parseKalshiMarket,
} from './events-map.js';
import { parseKalshiOrderbook } from './orderbook-map.js';
import { readBook, type OrderBook } from '../order-book.js';

/**
 * Kalshi Trade API v2, the calls of docs/venues.md "What we call": the
 * page-at-a-time `GET /events` listing (`status=open` or `min_updated_ts`),
 * GET /events/{ticker}, GET /series, GET /markets?tickers= and
 * GET /series/{series}/markets/{ticker}/candlesticks for the chart backfill.
 * Market data needs no authentication.
 */
export const KALSHI_PAGE = 200;

export interface KalshiOptions {
  baseUrl: string;
  http?: RequestOptions;
}

/** Hourly candlesticks of one market between two instants (unix seconds on the wire). */
export async function getKalshiCandles(
  opts: KalshiOptions,
  seriesTicker: string,
  marketTicker: string,
  from: Date,
  to: Date,
): Promise<{ points: HistoryPoint[]; skipped: number }> {
  const url = buildUrl(
    opts.baseUrl,
    `/series/${encodeURIComponent(seriesTicker)}/markets/${encodeURIComponent(marketTicker)}/candlesticks`,
    { start_ts: Math.floor(from.getTime() / 1000), end_ts: Math.floor(to.getTime() / 1000), period_interval: 60 },
  );
  return mapKalshiCandles(await requestJson<unknown>(url, opts.http));
}

// ------------------------------------------------- catalogue, series, batch prices

/** 1,000 pages of 200: far above today's ≈ 60; a pass that reaches it ends unfinished. */
const CATALOGUE_MAX_PAGES = 1000;
/** docs/venues.md §5e: `GET /markets?tickers=` in batches of 100, with `limit` set to the batch. */
export const KALSHI_TICKERS_PER_CALL = 100;

export interface KalshiEventsOptions {
  /** `status=open` for the full reconcile; omit for the increment. */
  status?: 'open' | 'closed' | 'settled';
  /** Events whose metadata changed after this instant (the increment's watermark). */
  minUpdated?: Date;
  /** Resume after this cursor. */
  cursor?: string;
  maxPages?: number;
}

export type KalshiEventsPage = ListedPage;

/**
 * docs/venues.md "What we call": `GET /events?[status=open|min_updated_ts=W]&with_nested_markets=true&limit=200[&cursor=C]`
 * until `cursor` is `""`, one mapped page at a time. `categories` is the
 * series map of getKalshiSeriesCategories. Events already yielded in this
 * pass are left out and counted in `duplicates`.
 */
export async function* listKalshiEventPages(
  client: KalshiOptions,
  categories: ReadonlyMap<string, Category>,
  opts: KalshiEventsOptions = {},
): AsyncGenerator<KalshiEventsPage> {
  const pass = { seen: new Set<string>(), cursors: new Set<string>() };
  let cursor = opts.cursor;
  const maxPages = opts.maxPages ?? CATALOGUE_MAX_PAGES;
  for (let page = 0; page < maxPages; page++) {
    const url = buildUrl(client.baseUrl, '/events', {
      status: opts.status,
      min_updated_ts: opts.minUpdated ? Math.floor(opts.minUpdated.getTime() / 1000) : undefined,
      with_nested_markets: true,
      limit: KALSHI_PAGE,
      cursor,
    });
    const env = KalshiEventsEnvelopeSchema.safeParse(await requestJson<unknown>(url, client.http));
    if (!env.success) throw new UpstreamError('Kalshi /events did not answer { events, cursor }', 200, url);
    // `""` on the wire ends the listing.
    const out = mapListedPage(
      env.data.events,
      (raw) => mapKalshiCatalogueEvent(raw, categories),
      pass,
      env.data.cursor || undefined,
      () => new UpstreamError('Kalshi /events repeated a cursor', 200, url),
    );
    yield out;
    if (out.final) return;
    cursor = out.nextCursor;
  }
}

/**
 * `GET /events/{event_ticker}?with_nested_markets=true` mapped as the
 * catalogue maps it (a group that left the listing: closed or resolved?).
 * `undefined` on 404, `null` when the row is malformed.
 */
export async function getKalshiCatalogueEvent(
  client: KalshiOptions,
  eventTicker: string,
  categories: ReadonlyMap<string, Category>,
): Promise<CatalogueGroup | null | undefined> {
  const url = buildUrl(client.baseUrl, `/events/${encodeURIComponent(eventTicker)}`, { with_nested_markets: true });
  let body: unknown;
  try {
    body = await requestJson<unknown>(url, client.http);
  } catch (err) {
    if (err instanceof UpstreamError && err.status === 404) return undefined;
    throw err;
  }
  const env = KalshiEventEnvelopeSchema.safeParse(body);
  if (!env.success || env.data.event === null || typeof env.data.event !== 'object') return null;
  const event = env.data.event as { markets?: unknown };
  // `event.markets` is the current place; the deprecated top-level `markets` is the fallback.
  const withMarkets = Array.isArray(event.markets) ? event : { ...event, markets: env.data.markets ?? [] };
  return mapKalshiCatalogueEvent(withMarkets, categories).value ?? null;
}

/** docs/venues.md §5d: `GET /series`, one un-paged answer → series ticker → our category. */
export async function getKalshiSeriesCategories(client: KalshiOptions): Promise<{ categories: Map<string, Category>; skipped: number }> {
  const url = buildUrl(client.baseUrl, '/series');
  try {
    return mapKalshiSeriesList(await requestJson<unknown>(url, client.http));
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    throw new UpstreamError('Kalshi /series did not answer { series: [...] }', 200, url);
  }
}

/** A tracked Kalshi market's fresh figures (docs/venues.md "Prices"). */
export interface KalshiQuote {
  /** `ks-<ticker>`. */
  marketId: string;
  ticker: string;
  yesPrice: number | null;
  volume: number;
  volume24h: number;
  status: MarketStatus;
  /** Resolved only (docs/decisions.md §17.2). */
  result: 'yes' | 'no' | null;
  resolvedOutcome: string | null;
  /** Last − previous price (docs/decisions.md §16.2); null when the venue gives neither. */
  venueChange24h: number | null;
}

/**
 * docs/venues.md "What we call", prices of tracked markets:
 * `GET /markets?tickers=T1,…,Tn&limit=n`, n ≤ 100 (without `limit` the venue
 * truncates at its default of 100). Tickers the venue did not return are
 * listed in `missing`; malformed rows are skipped and counted.
 */
export async function getKalshiMarketsByTickers(
  client: KalshiOptions,
  tickers: string[],
): Promise<{ quotes: Map<string, KalshiQuote>; missing: string[]; skipped: number }> {
  const unique = [...new Set(tickers)];
  const quotes = new Map<string, KalshiQuote>();
  let skipped = 0;
  for (let i = 0; i < unique.length; i += KALSHI_TICKERS_PER_CALL) {
    const batch = unique.slice(i, i + KALSHI_TICKERS_PER_CALL);
    const url = buildUrl(client.baseUrl, '/markets', { tickers: batch.join(','), limit: batch.length });
    const env = KalshiMarketsEnvelopeSchema.safeParse(await requestJson<unknown>(url, client.http));
    if (!env.success) throw new UpstreamError('Kalshi /markets did not answer { markets, cursor }', 200, url);
    for (const raw of env.data.markets) {
      const m = parseKalshiMarket(raw);
      if (!m) {
        skipped++;
        continue;
      }
      const mapped = mapKalshiCatalogueMarket(m, 1, '');
      quotes.set(m.ticker, {
        marketId: mapped.id,
        ticker: m.ticker,
        yesPrice: mapped.yesPrice,
        volume: mapped.volume,
        volume24h: mapped.volume24h,
        status: mapped.status,
        result: mapped.result,
        resolvedOutcome: mapped.resolvedOutcome,
        venueChange24h: mapped.venueChange24h,
      });
    }
  }
  return { quotes, missing: unique.filter((t) => !quotes.has(t)), skipped };
}

/**
 * `GET /markets/{ticker}/orderbook` (docs/venues.md "What we call", §8 E1),
 * every level (no `depth`: the deepest the venue gives), as the YES book best
 * first. A ticker the venue does not know (404) is an empty book; network
 * errors, timeouts, 429 and 5xx throw UpstreamError.
 */
export async function getKalshiOrderbook(client: KalshiOptions, ticker: string): Promise<{ book: OrderBook; skipped: number }> {
  const url = buildUrl(client.baseUrl, `/markets/${encodeURIComponent(ticker)}/orderbook`);
  return readBook(url, client.http, parseKalshiOrderbook, 'Kalshi orderbook');
}

/** Pages of `GET /markets?min_created_ts=` one increment reads at most (1,000 markets each). */
const NEW_MARKETS_MAX_PAGES = 20;
const KalshiNewMarketSchema = z.object({
  ticker: z.string().trim().min(1).max(200),
  event_ticker: z.string().min(1),
  status: z.string().min(1),
});

/**
 * docs/venues.md "What we call", new markets inside known groups (§8 E3):
 * `GET /markets?min_created_ts=W&limit=1000[&cursor=C]` until `cursor` is `""`.
 * Placeholders that have not opened are left out; malformed rows are counted.
 */
export async function listKalshiMarketsCreatedSince(
  client: KalshiOptions,
  since: Date,
): Promise<{ markets: Array<{ ticker: string; eventTicker: string }>; skipped: number; complete: boolean }> {
  const markets: Array<{ ticker: string; eventTicker: string }> = [];
  let skipped = 0;
  let cursor: string | undefined;
  const cursors = new Set<string>();
  for (let page = 0; page < NEW_MARKETS_MAX_PAGES; page++) {
    const url = buildUrl(client.baseUrl, '/markets', { min_created_ts: Math.floor(since.getTime() / 1000), limit: 1000, cursor });
    const env = KalshiMarketsEnvelopeSchema.safeParse(await requestJson<unknown>(url, client.http));
    if (!env.success) throw new UpstreamError('Kalshi /markets did not answer { markets, cursor }', 200, url);
    for (const raw of env.data.markets) {
      const m = KalshiNewMarketSchema.safeParse(raw);
      if (!m.success) skipped++;
      else if (!isKalshiPlaceholder(m.data.status)) markets.push({ ticker: m.data.ticker, eventTicker: m.data.event_ticker });
    }
    cursor = env.data.cursor || undefined;
    if (cursor === undefined) return { markets, skipped, complete: true };
    if (cursors.has(cursor)) throw new UpstreamError('Kalshi /markets repeated a cursor', 200, url);
    cursors.add(cursor);
  }
  return { markets, skipped, complete: false };
}
