import { buildUrl, requestJson } from '../../lib/http.js';
import type { DataApi } from './data-api.js';
import { parseRows, TradeRowSchema, type TradeRow } from './data-map.js';

/**
 * docs/venues.md "What we call", big trades on a market (decisions §18.4), and §8 B1:
 * `GET /trades?market=C1,…,C20&filterType=CASH&filterAmount=A&takerOnly=true&limit=100`, a bare
 * array of camelCase rows, newest first, paged by `offset` (the venue's ceiling is 10,000; past it
 * the answer is a 400).
 */
export const MARKET_TRADES_PAGE = 100;
/** Condition ids per request (docs/venues.md "What we call"). */
export const MARKETS_PER_TRADES_CALL = 20;
/** Pages per read: 500 trades of at least the threshold since the last read is far beyond any market's. */
export const MARKET_TRADES_MAX_PAGES = 5;

export interface MarketTradesRead {
  rows: TradeRow[];
  skipped: number;
  /** False when the page cap stopped the read before it reached `sinceSec`. */
  complete: boolean;
}

/**
 * The trades of up to 20 markets (condition ids) of at least `minCash` USD, newest first, back to
 * `sinceSec` (unix seconds; older rows are dropped). One request at a time: the process's Data API
 * limiter is shared with every other Data API caller.
 */
export async function fetchMarketTrades(
  api: DataApi,
  conditionIds: readonly string[],
  minCash: number,
  opts: { sinceSec: number; maxPages?: number },
): Promise<MarketTradesRead> {
  if (conditionIds.length === 0) return { rows: [], skipped: 0, complete: true };
  if (conditionIds.length > MARKETS_PER_TRADES_CALL) throw new RangeError(`at most ${MARKETS_PER_TRADES_CALL} condition ids per call`);
  const rows: TradeRow[] = [];
  let skipped = 0;
  const maxPages = opts.maxPages ?? MARKET_TRADES_MAX_PAGES;
  for (let p = 0; p < maxPages; p++) {
    const url = buildUrl(api.baseUrl, '/trades', {
      market: conditionIds.join(','),
      filterType: 'CASH',
      filterAmount: Math.floor(minCash),
      takerOnly: true,
      limit: MARKET_TRADES_PAGE,
      offset: p * MARKET_TRADES_PAGE,
    });
    const page = parseRows(TradeRowSchema, await requestJson(url, { timeoutMs: 10_000, attempts: 3, ...api.http }));
    skipped += page.skipped;
    let reachedSince = false;
    for (const r of page.rows) {
      if (r.timestamp < opts.sinceSec) reachedSince = true;
      else rows.push(r);
    }
    if (reachedSince || page.rows.length + page.skipped < MARKET_TRADES_PAGE) return { rows, skipped, complete: true };
  }
  return { rows, skipped, complete: false };
}
