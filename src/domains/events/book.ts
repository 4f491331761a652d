import { sql } from 'drizzle-orm';
import type { DbHandle } from '../../db/index.js';
import { notFound, unavailable } from '../../errors.js';
import { UpstreamError } from '../../lib/http.js';
import { getKalshiOrderbook } from '../../venues/kalshi/trade-api.js';
import { bookSummary, EMPTY_BOOK, type OrderBook } from '../../venues/order-book.js';
import { getClobBook } from '../../venues/polymarket/clob.js';
import type { VenueClient } from '../../venues/clients.js';
import type { MarketBook } from './schemas.js';

/**
 * Order books on request (docs/decisions.md §16.4, §16.5). One venue read per
 * market serves every request and every depth for 5 s: the book is read
 * whole (the deepest the venue gives) and cut per request, and requests that
 * arrive while a read is in flight wait for that same read. Reads go through
 * the venue's shared limiter (the process's venue clients). When the venue
 * fails (network error, timeout, 5xx, 429), the last book read in the last
 * 60 s is served `stale: true`, else 503 UNAVAILABLE with Retry-After; a
 * failed read also holds for 5 s, so a failing venue is not asked more often
 * than a healthy one. A closed or resolved market has empty sides and costs
 * no venue read; reading a book does not make a market tracked.
 *
 * The cache is per instance: N instances read a market's book at most N times
 * per 5 s.
 */

/** One venue read serves this long. */
export const BOOK_FRESH_MS = 5_000;
/** A book this young is served, marked stale, when the venue fails. */
export const BOOK_STALE_MS = 60_000;
/** Most markets whose books are held at once (the oldest are dropped first). */
const MAX_BOOKS = 10_000;

export interface BookDeps {
  dbh: DbHandle;
  clock: () => Date;
  /** The process's shared venue clients (one limiter per venue API). */
  venues: { clob: VenueClient; kalshi: VenueClient };
  log: { warn(obj: object, msg: string): void };
}

interface Read {
  book: OrderBook;
  fetchedAt: number;
}

interface Entry {
  /** The last successful read. */
  good?: Read;
  /** When the last read (good or failed) finished; a new read waits until BOOK_FRESH_MS after it. */
  readAt: number;
  failed: boolean;
  inflight?: Promise<void>;
}

interface MarketRow {
  id: string;
  venue: string;
  venue_market_id: string;
  yes_token_id: string | null;
  outcome: string;
  status: string;
}

export interface BookService {
  getBook(marketId: string, depth: number): Promise<MarketBook>;
}

export function createBookService(deps: BookDeps): BookService {
  const entries = new Map<string, Entry>();

  const readVenue = async (m: MarketRow): Promise<OrderBook> => {
    if (m.venue === 'polymarket') {
      // A market without a token has no CLOB book to read.
      if (!m.yes_token_id) return EMPTY_BOOK;
      const r = await getClobBook(deps.venues.clob, m.yes_token_id);
      if (r.skipped > 0) deps.log.warn({ marketId: m.id, skipped: r.skipped }, 'malformed CLOB book levels skipped');
      return r.book;
    }
    const r = await getKalshiOrderbook(deps.venues.kalshi, m.venue_market_id);
    if (r.skipped > 0) deps.log.warn({ marketId: m.id, skipped: r.skipped }, 'malformed Kalshi book levels skipped');
    return r.book;
  };

  const refresh = (m: MarketRow, entry: Entry): Promise<void> => {
    entry.inflight ??= readVenue(m)
      .then(
        (book) => {
          const at = deps.clock().getTime();
          entry.good = { book, fetchedAt: at };
          entry.readAt = at;
          entry.failed = false;
        },
        (err: unknown) => {
          if (!(err instanceof UpstreamError)) throw err;
          deps.log.warn({ marketId: m.id, err: err.message }, 'order book read failed');
          entry.readAt = deps.clock().getTime();
          entry.failed = true;
        },
      )
      .finally(() => {
        entry.inflight = undefined;
      });
    return entry.inflight;
  };

  const entryOf = (id: string): Entry => {
    let e = entries.get(id);
    if (e) {
      // Most recently used last: Maps iterate in insertion order.
      entries.delete(id);
      entries.set(id, e);
      return e;
    }
    e = { readAt: -Infinity, failed: false };
    entries.set(id, e);
    if (entries.size > MAX_BOOKS) {
      const oldest = entries.keys().next().value;
      if (oldest !== undefined) entries.delete(oldest);
    }
    return e;
  };

  return {
    async getBook(marketId, depth) {
      const [m] = await deps.dbh.rows<MarketRow>(
        sql`select id, venue, venue_market_id, yes_token_id, outcome, status from markets where id = ${marketId}`,
      );
      if (!m) throw notFound('Market');
      const shape = (book: OrderBook, fetchedAt: number, stale: boolean): MarketBook => {
        const cut = { bids: book.bids.slice(0, depth), asks: book.asks.slice(0, depth) };
        return { marketId: m.id, outcome: m.outcome, ...cut, ...bookSummary(book), fetchedAt: new Date(fetchedAt).toISOString(), stale };
      };
      // docs/decisions.md §16.4: a closed or resolved market has no book to read.
      if (m.status !== 'active') return shape(EMPTY_BOOK, deps.clock().getTime(), false);
      const entry = entryOf(m.id);
      if (entry.inflight) await entry.inflight;
      else if (deps.clock().getTime() - entry.readAt >= BOOK_FRESH_MS) await refresh(m, entry);
      const now = deps.clock().getTime();
      if (!entry.failed && entry.good) return shape(entry.good.book, entry.good.fetchedAt, false);
      if (entry.good && now - entry.good.fetchedAt <= BOOK_STALE_MS) return shape(entry.good.book, entry.good.fetchedAt, true);
      const retryAfter = Math.max(1, Math.ceil((entry.readAt + BOOK_FRESH_MS - now) / 1000));
      throw unavailable('The venue did not answer for this order book; try again shortly', retryAfter);
    },
  };
}
