import { z } from 'zod';
import { buildUrl, requestJson, UpstreamError, type RequestOptions } from '../../lib/http.js';

/**
 * docs/venues.md "What we call", big trades on a market (decisions §18.4), and §8 E2:
 * `GET /markets/trades?ticker=T&min_ts=S&limit=1000[&cursor=C]`, `{ trades, cursor }` with `""` on
 * the last page (the cursor does not keep the filters: they are sent again). Counts and prices are
 * decimal strings; there is no size filter at the venue.
 */
export const KALSHI_TRADES_PAGE = 1000;
/** Pages per read: 5,000 trades of one ticker since the last read (≈ a minute) is far beyond any market's. */
export const KALSHI_TRADES_MAX_PAGES = 5;

const decimal = z
  .union([z.string().regex(/^\d+(\.\d+)?$/), z.number().finite().nonnegative()])
  .transform((v) => Number(v))
  .pipe(z.number().finite().nonnegative());

const KalshiTradeSchema = z.object({
  trade_id: z.string().min(1),
  ticker: z.string().min(1),
  count_fp: decimal,
  yes_price_dollars: decimal.pipe(z.number().max(1)),
  no_price_dollars: decimal.pipe(z.number().max(1)),
  // `taker_side` is deprecated (§8 E2) and read only when the current field is absent.
  taker_outcome_side: z.enum(['yes', 'no']).nullish(),
  taker_side: z.enum(['yes', 'no']).nullish(),
  created_time: z.string().refine((s) => Number.isFinite(Date.parse(s)), 'an ISO time'),
});

const EnvelopeSchema = z.object({ trades: z.array(z.unknown()).nullable(), cursor: z.string().nullish() });

/** One Kalshi trade as we use it: the taker's side names the outcome bought and its price. */
export interface KalshiTrade {
  tradeId: string;
  ticker: string;
  count: number;
  /** `yes` buys YES (or sells NO); `no` buys NO. */
  takerSide: 'yes' | 'no';
  /** The price of the taker's side, dollars. */
  price: number;
  /** USD: count × the price of the taker's side (§8 E2). */
  usd: number;
  at: Date;
}

export interface KalshiTradesRead {
  trades: KalshiTrade[];
  skipped: number;
  /** False when the page cap stopped the read before the last page. */
  complete: boolean;
}

export function parseKalshiTrade(raw: unknown): KalshiTrade | undefined {
  const r = KalshiTradeSchema.safeParse(raw);
  if (!r.success) return undefined;
  const side = r.data.taker_outcome_side ?? r.data.taker_side;
  if (!side) return undefined;
  const price = side === 'yes' ? r.data.yes_price_dollars : r.data.no_price_dollars;
  return {
    tradeId: r.data.trade_id,
    ticker: r.data.ticker,
    count: r.data.count_fp,
    takerSide: side,
    price,
    usd: r.data.count_fp * price,
    at: new Date(r.data.created_time),
  };
}

/** The trades of one ticker since `minTs` (unix seconds), every page up to `maxPages`. Malformed rows are skipped and counted. */
export async function fetchKalshiMarketTrades(
  client: { baseUrl: string; http?: RequestOptions },
  ticker: string,
  minTs: number,
  opts: { maxPages?: number } = {},
): Promise<KalshiTradesRead> {
  const trades: KalshiTrade[] = [];
  const seen = new Set<string>();
  let skipped = 0;
  let cursor: string | undefined;
  const maxPages = opts.maxPages ?? KALSHI_TRADES_MAX_PAGES;
  for (let p = 0; p < maxPages; p++) {
    const url = buildUrl(client.baseUrl, '/markets/trades', { ticker, min_ts: Math.floor(minTs), limit: KALSHI_TRADES_PAGE, cursor });
    const env = EnvelopeSchema.safeParse(await requestJson<unknown>(url, client.http));
    if (!env.success) throw new UpstreamError('Kalshi /markets/trades did not answer { trades, cursor }', 200, url);
    for (const raw of env.data.trades ?? []) {
      const t = parseKalshiTrade(raw);
      if (!t || t.ticker !== ticker) skipped++;
      else if (!seen.has(t.tradeId)) {
        seen.add(t.tradeId);
        trades.push(t);
      }
    }
    if (!env.data.cursor) return { trades, skipped, complete: true };
    cursor = env.data.cursor;
  }
  return { trades, skipped, complete: false };
}
