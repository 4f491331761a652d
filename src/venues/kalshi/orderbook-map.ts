import { z } from 'zod';
import { decimalOf, sortBook, type BookLevel, type OrderBook } from '../order-book.js';

/**
 * `GET /markets/{ticker}/orderbook` (docs/venues.md §8 E1): since the
 * 2026-03 fixed-point migration the body is `{"orderbook_fp": {"yes_dollars":
 * [[price, count], …], "no_dollars": [[price, count], …]}}`, bids only, as
 * strings. A YES bid at p is a bid of the YES book; a NO bid at p is a YES
 * ask at 1 − p. An empty side may be missing or null; levels are sorted here
 * (the venue's own order is documented both ways).
 */
const Pair = z.tuple([z.unknown(), z.unknown()]).rest(z.unknown());
const KalshiOrderbookSchema = z.object({
  orderbook_fp: z.object({ yes_dollars: z.array(Pair).nullish(), no_dollars: z.array(Pair).nullish() }).nullish(),
});

export function parseKalshiOrderbook(body: unknown): { book: OrderBook; skipped: number } {
  const parsed = KalshiOrderbookSchema.safeParse(body);
  if (!parsed.success) throw new Error('answer is not { orderbook_fp: { yes_dollars, no_dollars } }');
  const ob = parsed.data.orderbook_fp;
  const level = (pair: unknown[], flip: boolean): BookLevel => {
    const p = decimalOf(pair[0]);
    return { price: p === undefined || p > 1 ? NaN : flip ? 1 - p : p, size: decimalOf(pair[1]) ?? NaN };
  };
  return sortBook(
    (ob?.yes_dollars ?? []).map((pair) => level(pair, false)),
    (ob?.no_dollars ?? []).map((pair) => level(pair, true)),
  );
}
