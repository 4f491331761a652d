import { buildUrl, requestJson, type RequestOptions } from '../../lib/http.js';
import {
  ClosedPositionRowSchema,
  LeaderboardRowSchema,
  parseRows,
  PositionRowSchema,
  TradeRowSchema,
  type ClosedPositionRow,
  type LeaderboardRow,
  type Parsed,
  type PositionRow,
  type TradeRow,
  type VenuePeriod,
} from './data-map.js';

/**
 * Polymarket Data API adapter: exactly the calls of docs/venues.md "What we call".
 * Every listing is a bare array, paged by limit/offset until a short page.
 */
export interface DataApi {
  baseUrl: string;
  http?: RequestOptions;
}

export const LEADERBOARD_PAGE = 50;
/** The venue's offset ceiling (docs/venues.md §1): at most 21 pages per ordering. */
export const LEADERBOARD_MAX_OFFSET = 1000;
export const CLOSED_PAGE = 50;

async function getRows<T>(
  api: DataApi,
  path: string,
  query: Record<string, string | number | boolean>,
  schema: Parameters<typeof parseRows<T>>[0],
): Promise<Parsed<T>> {
  const body = await requestJson(buildUrl(api.baseUrl, path, query), { timeoutMs: 10_000, attempts: 3, ...api.http });
  return parseRows(schema, body);
}

/** One (category, period, orderBy) ordering, every page up to the venue's ceiling. */
export async function fetchLeaderboard(
  api: DataApi,
  q: { category: string; timePeriod: VenuePeriod; orderBy: 'PNL' | 'VOL' },
): Promise<Parsed<LeaderboardRow>> {
  const rows: LeaderboardRow[] = [];
  let skipped = 0;
  for (let offset = 0; offset <= LEADERBOARD_MAX_OFFSET; offset += LEADERBOARD_PAGE) {
    const page = await getRows(api, '/v1/leaderboard', { ...q, limit: LEADERBOARD_PAGE, offset }, LeaderboardRowSchema);
    rows.push(...page.rows);
    skipped += page.skipped;
    if (page.rows.length + page.skipped < LEADERBOARD_PAGE) break;
  }
  return { rows, skipped };
}

export const POSITIONS_PAGE = 500;
/** docs/venues.md "What we call" (unredeemed losses): at most 10 pages of open positions per trader. */
export const POSITIONS_MAX_PAGES = 10;

/**
 * `GET /positions?user=A&sizeThreshold=0&limit=500&offset=N` until a short
 * page or 10 pages: a trader who never redeems keeps every resolved loser
 * there, so one page of 500 would drop losses (docs/venues.md "What we call").
 */
export async function fetchPositions(api: DataApi, user: string, maxPages = POSITIONS_MAX_PAGES): Promise<Parsed<PositionRow>> {
  const rows: PositionRow[] = [];
  let skipped = 0;
  for (let p = 0; p < maxPages; p++) {
    const page = await getRows(
      api,
      '/positions',
      { user, sizeThreshold: 0, limit: POSITIONS_PAGE, offset: p * POSITIONS_PAGE },
      PositionRowSchema,
    );
    rows.push(...page.rows);
    skipped += page.skipped;
    if (page.rows.length + page.skipped < POSITIONS_PAGE) break;
  }
  return { rows, skipped };
}

export function fetchTrades(api: DataApi, user: string): Promise<Parsed<TradeRow>> {
  return getRows(api, '/trades', { user, limit: 500, takerOnly: false }, TradeRowSchema);
}

/** docs/venues.md "What we call": at most 20 pages of closed positions per trader. */
export const CLOSED_MAX_PAGES = 20;

export interface ClosedPositionsRead extends Parsed<ClosedPositionRow> {
  /**
   * True when every closed position since `since` was read (the venue ran out
   * of rows, or a row older than `since` was reached); false when the page
   * cap stopped the read first.
   */
  complete: boolean;
}

/**
 * docs/venues.md §2b: `GET /closed-positions?user=A&sortBy=TIMESTAMP&sortDirection=DESC&limit=50&offset=N`,
 * newest first, until a short page, a row closed before `since`, or
 * `maxPages`. The venue's default order (`REALIZEDPNL DESC`) would keep only
 * the biggest wins under a page cap. Rows closed before `since` are dropped.
 */
export async function fetchClosedPositionsNewestFirst(
  api: DataApi,
  user: string,
  opts: { since?: Date; maxPages?: number } = {},
): Promise<ClosedPositionsRead> {
  const sinceSec = opts.since ? Math.floor(opts.since.getTime() / 1000) : undefined;
  const maxPages = opts.maxPages ?? CLOSED_MAX_PAGES;
  const rows: ClosedPositionRow[] = [];
  let skipped = 0;
  for (let p = 0; p < maxPages; p++) {
    const page = await getRows(
      api,
      '/closed-positions',
      { user, sortBy: 'TIMESTAMP', sortDirection: 'DESC', limit: CLOSED_PAGE, offset: p * CLOSED_PAGE },
      ClosedPositionRowSchema,
    );
    skipped += page.skipped;
    let reachedSince = false;
    for (const r of page.rows) {
      if (sinceSec !== undefined && r.timestamp < sinceSec) reachedSince = true;
      else rows.push(r);
    }
    if (reachedSince || page.rows.length + page.skipped < CLOSED_PAGE) return { rows, skipped, complete: true };
  }
  return { rows, skipped, complete: false };
}

/**
 * Everything the figures of one trader are computed from, closed positions
 * newest first back to `since` (docs/decisions.md §11.6). One request at a
 * time: the process's Data API limiter is shared by every job and profile,
 * so parallel calls would only queue there and delay the others.
 */
export async function fetchTraderActivitySince(api: DataApi, user: string, opts: { since?: Date; maxClosedPages?: number } = {}) {
  const positions = await fetchPositions(api, user);
  const closed = await fetchClosedPositionsNewestFirst(api, user, { since: opts.since, maxPages: opts.maxClosedPages });
  const trades = await fetchTrades(api, user);
  return {
    positions: positions.rows,
    closed: closed.rows,
    closedComplete: closed.complete,
    trades: trades.rows,
    skipped: positions.skipped + closed.skipped + trades.skipped,
    /** Per listing: rows the venue sent that all failed strict parsing (a listing with only malformed rows). */
    allMalformed: [positions, closed, trades].some((l) => l.rows.length === 0 && l.skipped > 0),
  };
}
