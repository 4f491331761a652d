import type { Db, DbHandle } from '../../db/index.js';
import { AppError, unavailable } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import { UpstreamError } from '../../lib/http.js';
import { fetchTraderActivitySince, type DataApi } from '../../venues/polymarket/data-api.js';
import { fallbackAvatar, periodMs, shortAddress, type Period } from '../../venues/polymarket/data-map.js';
import { computeFigures } from './figures.js';
import {
  countBefore,
  selectBiggestWins,
  selectCachedProfile,
  selectEntry,
  selectPage,
  selectPointers,
  selectStats,
  snapshotIsReady,
  SORT_COLUMN,
  upsertCachedProfile,
  type EntryRow,
  type Pointer,
} from './queries.js';
import type { BiggestWin, LeaderboardEntry, LeaderboardPage, LeaderboardQuery, TraderProfile } from './schemas.js';

/**
 * In-process caches of the read side. The board only changes when a sync
 * switches a snapshot or enrichment bumps its version, so pages are cached
 * by (snapshot, version, query, cursor); the current pointers are re-read at
 * most every `pointerTtlMs` (and at once when a job of this process signals
 * a write), which bounds how stale another instance's switch can look.
 */
export interface LeaderboardCache {
  pointerTtlMs: number;
  pointers?: { at: number; map: Map<string, Pointer> };
  pages: Map<string, string>;
  maxPages: number;
  /** Budget of characters (≈ bytes of JSON) the pages may hold; anonymous requests choose the keys. */
  maxBytes: number;
  bytes: number;
}

export function createLeaderboardCache(opts: { pointerTtlMs?: number; maxPages?: number; maxBytes?: number } = {}): LeaderboardCache {
  return {
    pointerTtlMs: opts.pointerTtlMs ?? 1_000,
    pages: new Map(),
    maxPages: opts.maxPages ?? 2_000,
    maxBytes: opts.maxBytes ?? 16 * 1024 * 1024,
    bytes: 0,
  };
}

export function invalidateLeaderboardCache(cache: LeaderboardCache): void {
  cache.pointers = undefined;
  cache.pages.clear();
  cache.bytes = 0;
}

/** Keeps a page, oldest pages leaving first while over the count or the byte budget. */
export function keepPage(cache: LeaderboardCache, key: string, body: string): void {
  if (body.length > cache.maxBytes) return;
  const previous = cache.pages.get(key);
  if (previous !== undefined) {
    cache.pages.delete(key);
    cache.bytes -= previous.length;
  }
  for (const [oldest, page] of cache.pages) {
    if (cache.pages.size < cache.maxPages && cache.bytes + body.length <= cache.maxBytes) break;
    cache.pages.delete(oldest);
    cache.bytes -= page.length;
  }
  cache.pages.set(key, body);
  cache.bytes += body.length;
}

export interface ReadDeps {
  db: Db;
  dbh: DbHandle;
  secret: string;
  cache: LeaderboardCache;
  clock: () => Date;
}

export interface ProfileDeps extends ReadDeps {
  api: DataApi;
  /** How long an on-demand profile is served from trader_profiles. */
  profileTtlMs: number;
}

/** The cached current pointers, unless older than pointerTtlMs. */
function freshPointers(cache: LeaderboardCache, now: number): Map<string, Pointer> | undefined {
  const p = cache.pointers;
  return p && now - p.at <= cache.pointerTtlMs ? p.map : undefined;
}

async function currentPointer(deps: ReadDeps, category: string, period: string): Promise<Pointer | undefined> {
  const now = Date.now();
  let map = freshPointers(deps.cache, now);
  if (!map) {
    const rows = await selectPointers(deps.db);
    map = new Map(rows.map((r) => [`${r.category}|${r.period}`, r]));
    deps.cache.pointers = { at: now, map };
  }
  return map.get(`${category}|${period}`);
}

interface CursorPayload {
  /** The query the cursor belongs to (tab|sort|direction|period|category|search). */
  q: string;
  s: number;
  k: number;
  w: string;
  r: number;
}

const CURSOR_SCOPE = 'leaderboard';

/** Verifies a cursor's HMAC and that it belongs to this very query (tab, sort, direction, period, category, search). */
function decodeQueryCursor(secret: string, raw: string, q: string): CursorPayload {
  const c = decodeCursor<CursorPayload>(secret, CURSOR_SCOPE, raw);
  if (!c || c.q !== q || typeof c.k !== 'number' || typeof c.w !== 'string' || !Number.isInteger(c.s) || !Number.isInteger(c.r)) {
    throw new AppError(
      400,
      'INVALID_CURSOR',
      'The cursor belongs to another query (tab, sort, direction, period, category or search changed)',
    );
  }
  return c;
}

/** Escapes LIKE wildcards so a search for "50%" or "a_b" is literal. */
export function likePattern(search: string): string {
  return `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

function toEntry(row: EntryRow, rank: number): LeaderboardEntry {
  const spark = typeof row.sparkline === 'string' ? (JSON.parse(row.sparkline) as number[]) : row.sparkline;
  return {
    rank,
    walletAddress: row.wallet_address,
    displayName: row.display_name,
    avatarUrl: row.avatar_url ?? fallbackAvatar(row.wallet_address),
    isKol: row.is_kol,
    pnl: Number(row.pnl),
    roi: Number(row.roi),
    winRate: Number(row.win_rate),
    volume: Number(row.volume),
    tradeCount: Number(row.trade_count),
    wins: Number(row.wins),
    losses: Number(row.losses),
    bestTrade: Number(row.best_trade),
    sharpeRatio: Number(row.sharpe_ratio),
    avgEntry: Number(row.avg_entry),
    avgTrade: Number(row.avg_trade),
    sparkline: spark ?? [],
    rankChange: row.rank_change === null ? null : Number(row.rank_change),
  };
}

function queryKey(input: LeaderboardQuery): string {
  return `${input.tab}|${input.sort}|${input.sortDirection}|${input.period}|${input.category}|${input.search ?? ''}`;
}

function pageKey(pointer: Pointer, q: string, input: LeaderboardQuery): string {
  return `${pointer.snapshotId}:${pointer.version}:${q}:${input.limit}:${input.cursor ?? ''}`;
}

/**
 * The cached serialised page of this query, synchronously, when the current
 * pointers are fresh and the page was served before (the hot path of the
 * most visited public page: no promise, no database); otherwise undefined
 * and the caller goes through listLeaderboard.
 */
export function peekLeaderboard(deps: ReadDeps, input: LeaderboardQuery): string | undefined {
  const pointers = deps.cache.pages.size > 0 ? freshPointers(deps.cache, Date.now()) : undefined;
  const pointer = pointers?.get(`${input.category}|${input.period}`);
  return pointer ? deps.cache.pages.get(pageKey(pointer, queryKey(input), input)) : undefined;
}

/**
 * GET /leaderboard. Returns the serialised page (a JSON string), so cached
 * pages skip both the database and serialisation.
 */
export async function listLeaderboard(deps: ReadDeps, input: LeaderboardQuery): Promise<string> {
  const q = queryKey(input);
  const pointer = await currentPointer(deps, input.category, input.period);
  if (!pointer) {
    if (input.cursor) decodeQueryCursor(deps.secret, input.cursor, q);
    return JSON.stringify({ traders: [], nextCursor: null } satisfies LeaderboardPage);
  }
  // Only pages of the current snapshot reached with a verified cursor are cached, so an exact
  // hit on the raw cursor string needs no second HMAC check.
  const currentKey = deps.cache.maxPages > 0 ? pageKey(pointer, q, input) : undefined;
  if (currentKey) {
    const hit = deps.cache.pages.get(currentKey);
    if (hit !== undefined) return hit;
  }
  const cursor = input.cursor ? decodeQueryCursor(deps.secret, input.cursor, q) : undefined;

  // A cursor finishes its walk on the snapshot it started on while that snapshot is kept.
  let snapshotId = pointer.snapshotId;
  let version = pointer.version;
  let rankBase = cursor?.r ?? 0;
  if (cursor && cursor.s !== pointer.snapshotId) {
    if (await snapshotIsReady(deps.db, cursor.s, input.category, input.period)) {
      snapshotId = cursor.s;
      version = -1; // an old snapshot's figures may still move with enrichment: not cached
    } else {
      rankBase = await countBefore(deps.dbh, {
        snapshotId,
        kolOnly: input.tab === 'kol',
        sort: input.sort,
        direction: input.sortDirection,
        after: { key: cursor.k, wallet: cursor.w },
      });
    }
  }

  const cacheKey = version >= 0 && snapshotId === pointer.snapshotId ? currentKey : undefined;

  const rows = await selectPage(deps.dbh, {
    snapshotId,
    kolOnly: input.tab === 'kol',
    sort: input.sort,
    direction: input.sortDirection,
    after: cursor ? { key: cursor.k, wallet: cursor.w } : undefined,
    pattern: input.search ? likePattern(input.search) : undefined,
    limit: input.limit + 1,
  });
  const more = rows.length > input.limit;
  const pageRows = more ? rows.slice(0, input.limit) : rows;
  const traders = pageRows.map((r, i) => toEntry(r, r.rank !== undefined ? Number(r.rank) : rankBase + i + 1));
  let nextCursor: string | null = null;
  if (more) {
    const last = pageRows[pageRows.length - 1];
    const raw = Number(last[SORT_COLUMN[input.sort]]);
    const payload: CursorPayload = {
      q,
      s: snapshotId,
      k: input.sortDirection === 'asc' ? raw : -raw,
      w: last.wallet_address,
      r: traders[traders.length - 1].rank,
    };
    nextCursor = encodeCursor(deps.secret, CURSOR_SCOPE, payload);
  }
  const body = JSON.stringify({ traders, nextCursor } satisfies LeaderboardPage);
  if (cacheKey) keepPage(deps.cache, cacheKey, body);
  return body;
}

export async function listBiggestWins(
  deps: Pick<ReadDeps, 'db' | 'clock'>,
  input: { period: Period; limit: number },
): Promise<BiggestWin[]> {
  const ms = periodMs(input.period);
  const since = ms === undefined ? undefined : new Date(deps.clock().getTime() - ms);
  const rows = await selectBiggestWins(deps.db, since, input.limit);
  return rows.map((r) => ({
    walletAddress: r.walletAddress,
    displayName: r.displayName,
    marketTitle: r.marketTitle,
    pnl: r.pnl,
    side: r.side,
    entryPrice: r.entryPrice,
    exitPrice: r.exitPrice,
    resolvedAt: r.resolvedAt.toISOString(),
  }));
}

/**
 * A trader's profile for `period`. Ranked traders (on the current OVERALL
 * board of the period, already enriched) come from stored data: totalPnl is
 * the venue's PnL for the period, the other figures are all-time enrichment.
 * Any other address is fetched from the venue and cached for profileTtlMs;
 * its figures are computed over the period's closed positions and trades.
 */
/** Closed-position pages an on-demand profile reads at most (50 rows each): someone is waiting. */
export const ON_DEMAND_CLOSED_PAGES = 10;

export async function getTraderProfile(deps: ProfileDeps, address: string, period: Period): Promise<TraderProfile> {
  const wallet = address.toLowerCase();
  const pointer = await currentPointer(deps, 'OVERALL', period);
  if (pointer) {
    const [entry, stats] = await Promise.all([selectEntry(deps.db, pointer.snapshotId, wallet), selectStats(deps.db, wallet)]);
    if (entry && stats) {
      return {
        walletAddress: wallet,
        displayName: entry.displayName,
        totalPnl: entry.pnl,
        roi: stats.roi,
        winRate: stats.winRate,
        totalTrades: stats.tradeCount,
        topPositions: stats.topPositions,
        recentTrades: stats.recentTrades,
      };
    }
  }

  const now = deps.clock();
  const cached = await selectCachedProfile(deps.db, wallet, period);
  if (cached && now.getTime() - cached.fetchedAt.getTime() < deps.profileTtlMs) return cached.profile as unknown as TraderProfile;

  const ms = periodMs(period);
  let activity;
  try {
    activity = await fetchTraderActivitySince(deps.api, wallet, {
      since: ms === undefined ? undefined : new Date(now.getTime() - ms),
      maxClosedPages: ON_DEMAND_CLOSED_PAGES,
    });
  } catch (err) {
    // A stale copy beats an error while the venue is down.
    if (cached) return cached.profile as unknown as TraderProfile;
    if (err instanceof UpstreamError || err instanceof Error)
      throw unavailable('The trader data venue is unavailable, try again shortly', 30);
    throw err;
  }
  const f = computeFigures(activity, ms === undefined ? undefined : now.getTime() - ms);
  const named = activity.trades.find((t) => t.name.trim() || t.pseudonym.trim());
  const profile: TraderProfile = {
    walletAddress: wallet,
    displayName: named ? named.name.trim() || named.pseudonym.trim() : shortAddress(wallet),
    totalPnl: f.totalPnl,
    roi: f.roi,
    winRate: f.winRate,
    totalTrades: f.tradeCount,
    topPositions: f.topPositions,
    recentTrades: f.recentTrades,
  };
  await upsertCachedProfile(deps.db, wallet, period, profile, now);
  return profile;
}
