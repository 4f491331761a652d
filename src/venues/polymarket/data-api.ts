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

export function fetchPositions(api: DataApi, user: string): Promise<Parsed<PositionRow>> {
  return getRows(api, '/positions', { user, sizeThreshold: 0, limit: 500 }, PositionRowSchema);
}

/** Closed positions, page by page until a short page or `maxPages` (bounds the load one whale puts on the venue). */
export async function fetchClosedPositions(api: DataApi, user: string, maxPages = 20): Promise<Parsed<ClosedPositionRow>> {
  const rows: ClosedPositionRow[] = [];
  let skipped = 0;
  for (let p = 0; p < maxPages; p++) {
    const page = await getRows(api, '/closed-positions', { user, limit: CLOSED_PAGE, offset: p * CLOSED_PAGE }, ClosedPositionRowSchema);
    rows.push(...page.rows);
    skipped += page.skipped;
    if (page.rows.length + page.skipped < CLOSED_PAGE) break;
  }
  return { rows, skipped };
}

export function fetchTrades(api: DataApi, user: string): Promise<Parsed<TradeRow>> {
  return getRows(api, '/trades', { user, limit: 500, takerOnly: false }, TradeRowSchema);
}

/** Everything the figures of one trader are computed from. */
export async function fetchTraderActivity(api: DataApi, user: string, maxClosedPages?: number) {
  const [positions, closed, trades] = await Promise.all([
    fetchPositions(api, user),
    fetchClosedPositions(api, user, maxClosedPages),
    fetchTrades(api, user),
  ]);
  return {
    positions: positions.rows,
    closed: closed.rows,
    trades: trades.rows,
    skipped: positions.skipped + closed.skipped + trades.skipped,
  };
}
export type TraderActivity = Awaited<ReturnType<typeof fetchTraderActivity>>;
