import { buildUrl, requestJson, UpstreamError, type RequestOptions } from '../../lib/http.js';
import type { HistoryPoint } from '../catalogue.js';
import { readBook, type OrderBook } from '../order-book.js';
import {
  clobDisplayPrice,
  mapClobBatchHistory,
  mapClobHistory,
  needsLastTrade,
  parseClobBook,
  parseLastTrades,
  parseTokenDecimals,
  type ClobQuote,
  type TokenValues,
} from './clob-map.js';

/**
 * Polymarket CLOB (docs/venues.md "What we call", §4a, §4b, §8 D2): the chart
 * backfill `POST /batch-prices-history` (≤ 20 tokens; a single token
 * `GET /prices-history?market=<token>&interval=max&fidelity=60`; ≈ 31 days,
 * `[]` for resolved markets) and the batch price reads
 * `POST /midpoints`, `POST /spreads`, `POST /last-trades-prices`, at most
 * 500 tokens per request (501 → 400 "Payload exceeds the limit").
 */
interface ClobOptions {
  baseUrl: string;
  http?: RequestOptions;
}

export async function getClobPriceHistory(opts: ClobOptions, yesTokenId: string): Promise<{ points: HistoryPoint[]; skipped: number }> {
  const url = buildUrl(opts.baseUrl, '/prices-history', { market: yesTokenId, interval: 'max', fidelity: 60 });
  return mapClobHistory(await requestJson<unknown>(url, opts.http));
}

/** docs/venues.md §8 D2: at most 20 tokens per `POST /batch-prices-history`. */
export const CLOB_HISTORY_BATCH_LIMIT = 20;

/**
 * Chart backfill of several tokens (docs/venues.md "What we call"):
 * `POST /batch-prices-history` `{"markets":[≤ 20 tokens],"interval":"max","fidelity":60}`,
 * 20× fewer requests than one `GET /prices-history` per token; a single token
 * takes the single route. Every asked token gets an entry (a token the venue
 * left out has no points); a request that fails throws for its whole batch.
 */
export async function getClobPriceHistories(
  opts: ClobOptions,
  tokenIds: string[],
): Promise<{ byToken: Map<string, HistoryPoint[]>; skipped: number }> {
  const unique = [...new Set(tokenIds)];
  if (unique.length === 1) {
    const one = await getClobPriceHistory(opts, unique[0]);
    return { byToken: new Map([[unique[0], one.points]]), skipped: one.skipped };
  }
  const byToken = new Map<string, HistoryPoint[]>();
  let skipped = 0;
  for (let i = 0; i < unique.length; i += CLOB_HISTORY_BATCH_LIMIT) {
    const batch = unique.slice(i, i + CLOB_HISTORY_BATCH_LIMIT);
    const url = buildUrl(opts.baseUrl, '/batch-prices-history');
    const body = await requestJson<unknown>(url, { ...opts.http, method: 'POST', json: { markets: batch, interval: 'max', fidelity: 60 } });
    let page: ReturnType<typeof mapClobBatchHistory>;
    try {
      page = mapClobBatchHistory(body);
    } catch {
      throw new UpstreamError('CLOB /batch-prices-history answered an unexpected shape', 200, url);
    }
    skipped += page.skipped;
    for (const t of batch) byToken.set(t, page.byToken.get(t) ?? []);
  }
  return { byToken, skipped };
}

/** docs/venues.md §4b: the venue's cap per batch request. */
export const CLOB_BATCH_LIMIT = 500;

async function postTokens(
  client: ClobOptions,
  path: '/midpoints' | '/spreads' | '/last-trades-prices',
  tokenIds: string[],
  parse: (body: unknown) => TokenValues,
): Promise<TokenValues> {
  const unique = [...new Set(tokenIds)];
  const values = new Map<string, number>();
  let skipped = 0;
  for (let i = 0; i < unique.length; i += CLOB_BATCH_LIMIT) {
    const batch = unique.slice(i, i + CLOB_BATCH_LIMIT);
    const url = buildUrl(client.baseUrl, path);
    const body = await requestJson<unknown>(url, { ...client.http, method: 'POST', json: batch.map((token_id) => ({ token_id })) });
    let page: TokenValues;
    try {
      page = parse(body);
    } catch {
      throw new UpstreamError(`CLOB ${path} answered an unexpected shape`, 200, url);
    }
    skipped += page.skipped;
    // Only what was asked: a token the venue adds on its own is not ours to store.
    const asked = new Set(batch);
    for (const [k, v] of page.values) if (asked.has(k)) values.set(k, v);
  }
  return { values, skipped };
}

/** `POST /midpoints`: token → midpoint; resolved and book-less tokens are absent. */
export function getClobMidpoints(client: ClobOptions, tokenIds: string[]): Promise<TokenValues> {
  return postTokens(client, '/midpoints', tokenIds, parseTokenDecimals);
}

/** `POST /spreads`: token → best ask − best bid. */
export function getClobSpreads(client: ClobOptions, tokenIds: string[]): Promise<TokenValues> {
  return postTokens(client, '/spreads', tokenIds, parseTokenDecimals);
}

/** `POST /last-trades-prices`: token → last trade price; never-traded tokens are absent. */
export function getClobLastTradePrices(client: ClobOptions, tokenIds: string[]): Promise<TokenValues> {
  return postTokens(client, '/last-trades-prices', tokenIds, parseLastTrades);
}

/**
 * docs/venues.md "Prices", Polymarket tracked: midpoints and spreads of every
 * token; the last trade of tokens whose spread is wider than 0.10 or that are
 * absent from `/midpoints`. Each quote's `price` follows the one rule; a
 * token with no `price` has neither a usable midpoint nor a trade (the caller
 * keeps its last known price, or null if it never had one).
 */
export async function readClobPrices(
  client: ClobOptions,
  tokenIds: string[],
): Promise<{ quotes: Map<string, ClobQuote>; skipped: number }> {
  const unique = [...new Set(tokenIds)];
  const mids = await getClobMidpoints(client, unique);
  const spreads = await getClobSpreads(
    client,
    unique.filter((t) => mids.values.has(t)),
  );
  const quotes = new Map<string, ClobQuote>();
  for (const t of unique) quotes.set(t, { midpoint: mids.values.get(t), spread: spreads.values.get(t) });
  const wide = unique.filter((t) => needsLastTrade(quotes.get(t)!));
  const lasts = wide.length > 0 ? await getClobLastTradePrices(client, wide) : { values: new Map<string, number>(), skipped: 0 };
  for (const [t, q] of quotes) {
    q.lastTrade = lasts.values.get(t);
    q.price = clobDisplayPrice(q);
  }
  return { quotes, skipped: mids.skipped + spreads.skipped + lasts.skipped };
}

/**
 * `GET /book?token_id=<token>` (docs/venues.md §8 D1): the token's whole
 * book, best level first. A token the venue has no book for (404 "No
 * orderbook exists…", or 400 for a token it does not know) is an empty book;
 * network errors, timeouts, 429 and 5xx throw UpstreamError.
 */
export async function getClobBook(client: ClobOptions, tokenId: string): Promise<{ book: OrderBook; skipped: number }> {
  const url = buildUrl(client.baseUrl, '/book', { token_id: tokenId });
  return readBook(url, client.http, parseClobBook, 'CLOB /book');
}
