import { z } from 'zod';
import { isTightSpread, roundProbability, type HistoryPoint } from '../catalogue.js';
import { decimalOf, sortBook, type OrderBook } from '../order-book.js';

/**
 * Pure parsing of the CLOB batch price reads (docs/venues.md §4b): answers
 * are decimal strings; a token the venue has no book or trade for is left
 * out of the answer. Each entry is checked on its own: a malformed one is
 * skipped and counted, never read as 0.
 */
const DECIMAL = /^\d+(\.\d+)?$/;

function probabilityOf(v: unknown): number | undefined {
  if (typeof v !== 'string' || !DECIMAL.test(v.trim())) return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : undefined;
}

export interface TokenValues {
  values: Map<string, number>;
  skipped: number;
}

/** `POST /midpoints` and `POST /spreads`: `{"<token_id>":"0.45", …}`. */
export function parseTokenDecimals(body: unknown): TokenValues {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new Error('answer is not an object of token prices');
  const values = new Map<string, number>();
  let skipped = 0;
  for (const [token, v] of Object.entries(body)) {
    const n = probabilityOf(v);
    if (n === undefined || !/^\d{1,100}$/.test(token)) skipped++;
    else values.set(token, n);
  }
  return { values, skipped };
}

const LastTradeSchema = z.object({ token_id: z.string().regex(/^\d{1,100}$/), price: z.string() });

/** `POST /last-trades-prices`: `[{"token_id":"…","price":"0.45","side":"BUY"}, …]`. */
export function parseLastTrades(body: unknown): TokenValues {
  if (!Array.isArray(body)) throw new Error('answer is not an array of last trades');
  const values = new Map<string, number>();
  let skipped = 0;
  for (const row of body) {
    const r = LastTradeSchema.safeParse(row);
    const n = r.success ? probabilityOf(r.data.price) : undefined;
    if (!r.success || n === undefined) skipped++;
    else values.set(r.data.token_id, n);
  }
  return { values, skipped };
}

export interface ClobQuote {
  midpoint?: number;
  spread?: number;
  lastTrade?: number;
  /**
   * docs/venues.md "Prices", Polymarket tracked: the midpoint when the spread
   * is at most 0.10, else the last trade; undefined when neither (the caller
   * keeps the last known price, or null if the market never had one).
   */
  price?: number;
}

/** True when the token must be asked in `/last-trades-prices`: no midpoint, no spread, or a spread wider than 0.10. */
export function needsLastTrade(q: Pick<ClobQuote, 'midpoint' | 'spread'>): boolean {
  return q.midpoint === undefined || q.spread === undefined || !isTightSpread(q.spread);
}

export function clobDisplayPrice(q: Pick<ClobQuote, 'midpoint' | 'spread' | 'lastTrade'>): number | undefined {
  if (!needsLastTrade(q)) return roundProbability(q.midpoint!);
  return q.lastTrade === undefined ? undefined : roundProbability(q.lastTrade);
}

const ClobHistorySchema = z.object({ history: z.array(z.unknown()) });
const ClobPointSchema = z.object({ t: z.number().int().positive(), p: z.number().finite().min(0).max(1) });

/** `GET /prices-history` body (docs/venues.md §4a) → points (unix seconds → Date); malformed points are skipped. */
export function mapClobHistory(raw: unknown): { points: HistoryPoint[]; skipped: number } {
  const parsed = ClobHistorySchema.safeParse(raw);
  if (!parsed.success) throw new Error('prices-history answer is not { history: [...] }');
  const points: HistoryPoint[] = [];
  let skipped = 0;
  for (const row of parsed.data.history) {
    const p = ClobPointSchema.safeParse(row);
    if (p.success) points.push({ ts: new Date(p.data.t * 1000), price: roundProbability(p.data.p) });
    else skipped++;
  }
  return { points, skipped };
}

const ClobBatchHistorySchema = z.object({ history: z.record(z.string(), z.array(z.unknown()).nullish()).nullish() });

/**
 * `POST /batch-prices-history` body (docs/venues.md §8 D2): `{ history: { "<token>": [{ t, p }] } }`
 * → points per token; a token left out has no points; malformed points are skipped and counted.
 */
export function mapClobBatchHistory(raw: unknown): { byToken: Map<string, HistoryPoint[]>; skipped: number } {
  const parsed = ClobBatchHistorySchema.safeParse(raw);
  if (!parsed.success) throw new Error('batch-prices-history answer is not { history: { token: [...] } }');
  const byToken = new Map<string, HistoryPoint[]>();
  let skipped = 0;
  for (const [token, rows] of Object.entries(parsed.data.history ?? {})) {
    const one = mapClobHistory({ history: rows ?? [] });
    byToken.set(token, one.points);
    skipped += one.skipped;
  }
  return { byToken, skipped };
}

const BookLevelSchema = z.object({ price: z.unknown(), size: z.unknown() });
const ClobBookSchema = z.object({ bids: z.array(BookLevelSchema).nullish(), asks: z.array(BookLevelSchema).nullish() });

/**
 * `GET /book?token_id=` (docs/venues.md §8 D1): `bids` ascending and `asks`
 * descending, the best level LAST, prices and sizes as decimal strings. We
 * sort ourselves (best first) rather than trust either order; a malformed
 * level is skipped and counted. Throws when the answer is not a book.
 */
export function parseClobBook(body: unknown): { book: OrderBook; skipped: number } {
  const parsed = ClobBookSchema.safeParse(body);
  if (!parsed.success) throw new Error('answer is not an order book summary');
  const levels = (rows: Array<{ price: unknown; size: unknown }> | null | undefined) =>
    (rows ?? []).map((r) => ({ price: decimalOf(r.price) ?? NaN, size: decimalOf(r.size) ?? NaN }));
  return sortBook(levels(parsed.data.bids), levels(parsed.data.asks));
}
