import { requestJson, UpstreamError, type RequestOptions } from '../lib/http.js';
import { roundProbability } from './catalogue.js';

/**
 * An order book of the side `yesPrice` prices (docs/decisions.md §16.4):
 * best level first (bids descending, asks ascending), prices in [0, 1],
 * sizes in contracts or shares. The venue adapters produce it from CLOB
 * `GET /book` and Kalshi `GET /markets/{ticker}/orderbook` (docs/venues.md
 * §8 D1, E1), whatever order the venue sends its levels in.
 */
export interface BookLevel {
  price: number;
  size: number;
}

export interface OrderBook {
  bids: BookLevel[];
  asks: BookLevel[];
}

export const EMPTY_BOOK: OrderBook = Object.freeze({ bids: [], asks: [] });

const DECIMAL = /^\d+(\.\d+)?$/;

/** A decimal string (or number) the venue sends for a price or a size; undefined when unreadable. */
export function decimalOf(v: unknown): number | undefined {
  const n = typeof v === 'string' && DECIMAL.test(v.trim()) ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * Sorts levels best first and merges levels of one price; a level whose
 * price is outside [0, 1] or whose size is not positive is left out (and
 * counted), never read as 0.
 */
export function sortBook(bids: BookLevel[], asks: BookLevel[]): { book: OrderBook; skipped: number } {
  let skipped = 0;
  const clean = (levels: BookLevel[], desc: boolean) => {
    const byPrice = new Map<number, number>();
    for (const l of levels) {
      if (!(l.price >= 0 && l.price <= 1) || !(l.size > 0) || !Number.isFinite(l.size)) {
        skipped++;
        continue;
      }
      const p = roundProbability(l.price);
      byPrice.set(p, (byPrice.get(p) ?? 0) + l.size);
    }
    return [...byPrice]
      .map(([price, size]) => ({ price, size: Math.round(size * 1e6) / 1e6 }))
      .sort((a, b) => (desc ? b.price - a.price : a.price - b.price));
  };
  return { book: { bids: clean(bids, true), asks: clean(asks, false) }, skipped };
}

/** `midpoint` and `spread` of a book: null when a side is empty. */
export function bookSummary(book: OrderBook): { midpoint: number | null; spread: number | null } {
  const bid = book.bids[0]?.price;
  const ask = book.asks[0]?.price;
  if (bid === undefined || ask === undefined) return { midpoint: null, spread: null };
  return { midpoint: roundProbability((bid + ask) / 2), spread: roundProbability(ask - bid) };
}

/**
 * Reads one book from a venue and parses it (CLOB `GET /book`, Kalshi
 * `GET /markets/{ticker}/orderbook`). A 4xx other than 429 is the venue saying
 * it holds no book for that market: an empty book. Network errors, timeouts,
 * 429 and 5xx throw UpstreamError, and so does a body of an unexpected shape.
 */
export async function readBook(
  url: string,
  http: RequestOptions | undefined,
  parse: (body: unknown) => { book: OrderBook; skipped: number },
  what: string,
): Promise<{ book: OrderBook; skipped: number }> {
  let body: unknown;
  try {
    body = await requestJson<unknown>(url, http);
  } catch (err) {
    if (err instanceof UpstreamError && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 429) {
      return { book: EMPTY_BOOK, skipped: 0 };
    }
    throw err;
  }
  try {
    return parse(body);
  } catch {
    throw new UpstreamError(`${what} answered an unexpected shape`, 200, url);
  }
}
