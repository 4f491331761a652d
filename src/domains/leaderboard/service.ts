import type { Db, DbHandle } from '../../db/index.js';
import { AppError, unavailable } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import { UpstreamError } from '../../lib/http.js';
import { createSemaphore, type Semaphore } from '../../lib/semaphore.js';
import { createBodyCache, type BodyCache } from '../../lib/body-cache.js';
import { notCacheable } from '../../lib/serve-cached.js';
import { fetchTraderActivitySince, type DataApi } from '../../venues/polymarket/data-api.js';
import { fallbackAvatar, periodMs, shortAddress, type Period } from '../../venues/polymarket/data-map.js';
import { computeFigures } from './figures.js';
import { BOARD_STALE_AFTER_MS, ON_DEMAND_PROFILE_STALE_MS, RANKED_PROFILE_STALE_MS } from './freshness.js';
import {
  countBefore,
  selectStoredBiggestWins,
  selectCachedProfile,
  selectEntry,
  selectPage,
  selectPointers,
  latestSyncFailed,
  latestEnrichment,
  selectPeriodStats,
  selectStats,
  isOnAnyBoard,
  snapshotIsReady,
  SORT_COLUMN,
  upsertCachedProfile,
  type EntryRow,
  type Pointer,
} from './queries.js';
import type { BiggestWin, LeaderboardEntry, LeaderboardPage, LeaderboardQuery, TraderProfile } from './schemas.js';

/**
 * In-process caches of the read side. The board only changes when a sync
 * switches a snapshot or enrichment bumps its version, so pages are kept in a
 * body cache (src/lib/body-cache.ts) by (snapshot, version, query, cursor,
 * stale), serialised with their freshness; the current pointers and whether
 * the latest sync failed are re-read at most every `pointerTtlMs` (and at once
 * when a job of this process signals a write), which bounds how stale another
 * instance's switch can look.
 */
export interface LeaderboardCache {
  pointerTtlMs: number;
  pointers?: { at: number; map: Map<string, Pointer>; lastSyncFailed: boolean };
  /** Serialised pages; undefined when pages are not cached (benchmarks of the uncached path). */
  pages: BodyCache | undefined;
}

/** Kept pages also expire after this: a bound should a page ever be kept under a key that no longer describes it. */
const PAGE_TTL_MS = 10 * 60_000;

export function createLeaderboardCache(opts: { pointerTtlMs?: number; maxPages?: number; maxBytes?: number } = {}): LeaderboardCache {
  const maxPages = opts.maxPages ?? 2_000;
  return {
    pointerTtlMs: opts.pointerTtlMs ?? 1_000,
    // Anonymous requests choose the keys: a budget of bytes as well as a count.
    pages:
      maxPages > 0 ? createBodyCache({ ttlMs: PAGE_TTL_MS, maxEntries: maxPages, maxBytes: opts.maxBytes ?? 16 * 1024 * 1024 }) : undefined,
  };
}

export function invalidateLeaderboardCache(cache: LeaderboardCache): void {
  cache.pointers = undefined;
  cache.pages?.clear();
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
  onDemand: OnDemandState;
  /** Counts an on-demand request of an address on no board against its client's limit; throws 429 past it. */
  admitOnDemand?: () => Promise<void>;
}

/** The cached current pointers, unless older than pointerTtlMs. */
function freshPointers(cache: LeaderboardCache, now: number): Map<string, Pointer> | undefined {
  const p = cache.pointers;
  return p && now - p.at <= cache.pointerTtlMs ? p.map : undefined;
}

/** Whether the cached pointers are fresh (within pointerTtlMs): then leaderboardPageKey can name a page. */
export function hasFreshPointers(deps: ReadDeps): boolean {
  return freshPointers(deps.cache, Date.now()) !== undefined;
}

/** Re-reads the current pointers and whether the latest sync failed (leaderboard_sync_state). */
export async function refreshPointers(deps: ReadDeps): Promise<Map<string, Pointer>> {
  const now = Date.now();
  const [rows, lastSyncFailed] = await Promise.all([selectPointers(deps.db), latestSyncFailed(deps.dbh)]);
  const map = new Map(rows.map((r) => [`${r.category}|${r.period}`, r]));
  deps.cache.pointers = { at: now, map, lastSyncFailed };
  return map;
}

async function currentPointer(deps: ReadDeps, category: string, period: string): Promise<Pointer | undefined> {
  const map = freshPointers(deps.cache, Date.now()) ?? (await refreshPointers(deps));
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

/**
 * The body-cache key of this query's page, synchronously, when the current
 * pointers are fresh and the board exists (the hot path of the most visited
 * public page: no promise, no database); otherwise undefined. The key names
 * the snapshot and version the page is read from and its `stale` (which turns
 * with the clock and the latest sync's outcome); `syncedAt` is the snapshot's.
 * Only pages of the current snapshot reached with a verified cursor are kept,
 * so an exact hit on the raw cursor string needs no second HMAC check.
 */
export function leaderboardPageKey(deps: ReadDeps, input: LeaderboardQuery): string | undefined {
  if (deps.cache.pages === undefined) return undefined;
  const p = freshPointers(deps.cache, Date.now());
  const pointer = p?.get(`${input.category}|${input.period}`);
  if (pointer === undefined) return undefined;
  const stale = boardIsStale(deps, pointer);
  return `${pointer.snapshotId}:${pointer.version}:${stale ? 1 : 0}:${queryKey(input)}:${input.limit}:${input.cursor ?? ''}`;
}

export interface BoardFreshness {
  syncedAt: Date | null;
  stale: boolean;
}

function boardIsStale(deps: ReadDeps, pointer: Pointer): boolean {
  return deps.cache.pointers!.lastSyncFailed || deps.clock().getTime() - pointer.switchedAt.getTime() > BOARD_STALE_AFTER_MS;
}

/**
 * docs/decisions.md §11.4 for one board, from the pointers the last read
 * cached (at most pointerTtlMs old): its last successful sync, stale when
 * older than 30 minutes, when the latest leaderboard sync failed, or before
 * the first sync.
 */
function cachedBoardFreshness(deps: ReadDeps, category: string, period: string): BoardFreshness {
  const pointer = deps.cache.pointers?.map.get(`${category}|${period}`);
  if (!pointer) return { syncedAt: null, stale: true };
  return { syncedAt: pointer.switchedAt, stale: boardIsStale(deps, pointer) };
}

/**
 * GET /leaderboard: one page with the board's freshness (`syncedAt`, `stale`). `keptAs` is the key the
 * caller will keep the page under (leaderboardPageKey before the read): a page that key does not describe
 * (read from an older snapshot, or the pointers moved meanwhile) is marked not cacheable.
 */
export async function listLeaderboard(deps: ReadDeps, input: LeaderboardQuery, keptAs?: string): Promise<LeaderboardPage> {
  const q = queryKey(input);
  const pointer = await currentPointer(deps, input.category, input.period);
  if (!pointer) {
    if (input.cursor) decodeQueryCursor(deps.secret, input.cursor, q);
    return notCacheable({ traders: [], nextCursor: null, syncedAt: null, stale: true });
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
  const f = cachedBoardFreshness(deps, input.category, input.period);
  const page: LeaderboardPage = { traders, nextCursor, syncedAt: f.syncedAt?.toISOString() ?? null, stale: f.stale };
  const current = version >= 0 && snapshotId === pointer.snapshotId;
  return current && keptAs !== undefined && keptAs === leaderboardPageKey(deps, input) ? page : notCacheable(page);
}

/** The biggest wins, and when enrichment last wrote them (their `Last-Modified`; null before the first enrichment). */
export async function listBiggestWins(
  deps: Pick<ReadDeps, 'db' | 'dbh' | 'clock'>,
  input: { period: Period; limit: number },
): Promise<{ wins: BiggestWin[]; syncedAt: Date | null }> {
  const ms = periodMs(input.period);
  const since = ms === undefined ? undefined : new Date(deps.clock().getTime() - ms);
  const [rows, syncedAt] = await Promise.all([selectStoredBiggestWins(deps.db, since, input.limit), latestEnrichment(deps.dbh)]);
  const wins = rows.map((r) => ({
    walletAddress: r.walletAddress,
    displayName: r.displayName,
    marketTitle: r.marketTitle,
    pnl: r.pnl,
    side: r.side,
    entryPrice: r.entryPrice,
    exitPrice: r.exitPrice,
    resolvedAt: r.resolvedAt.toISOString(),
  }));
  return { wins, syncedAt };
}

/** Closed-position pages an on-demand profile reads at most (50 rows each): someone is waiting. */
export const ON_DEMAND_CLOSED_PAGES = 10;
/** docs/decisions.md §11.7: venue fetches of on-demand profiles in flight per instance, and how long the next one waits. */
export const ON_DEMAND_IN_FLIGHT = 4;
export const ON_DEMAND_WAIT_MS = 5_000;

/** The per-instance state of on-demand profiles: the fetch slots, and fetches in flight by (address, period). */
export interface OnDemandState {
  slots: Semaphore;
  inFlight: Map<string, Promise<StoredProfile>>;
}

export function createOnDemandState(inFlight = ON_DEMAND_IN_FLIGHT): OnDemandState {
  return { slots: createSemaphore(inFlight), inFlight: new Map() };
}

type StoredProfile = Omit<TraderProfile, 'syncedAt' | 'stale'>;

const withFreshness = (p: StoredProfile, syncedAt: Date, stale: boolean): TraderProfile => ({
  ...p,
  syncedAt: syncedAt.toISOString(),
  stale,
});

/**
 * A trader's profile for `period`.
 *
 * Ranked (on the current OVERALL board of the period, with figures for the
 * period): from stored data; totalPnl is the venue's PnL for the period, the
 * other figures are the period's (docs/decisions.md §11.6); stale 90 minutes
 * after the figures were computed.
 *
 * Any other address is an on-demand profile (docs/decisions.md §11.7): an
 * address on no board first passes `admitOnDemand` (the per-client limit,
 * cached answers included); a copy fetched within `profileTtlMs` is served;
 * otherwise one of the instance's few fetch slots is awaited (at most
 * ON_DEMAND_WAIT_MS, then 503) and the venue read, closed positions newest
 * first back to the period's start. Through a venue failure the last copy is
 * served, marked stale; without one, 503.
 */
export async function getTraderProfile(deps: ProfileDeps, address: string, period: Period): Promise<TraderProfile> {
  const wallet = address.toLowerCase();
  const pointer = await currentPointer(deps, 'OVERALL', period);
  const now = deps.clock();
  const ms = periodMs(period);
  const since = ms === undefined ? undefined : new Date(now.getTime() - ms);
  const entry = pointer ? await selectEntry(deps.db, pointer.snapshotId, wallet) : undefined;
  if (entry) {
    const [figures, stats] = await Promise.all([selectPeriodStats(deps.db, wallet, period), selectStats(deps.db, wallet)]);
    if (figures && stats) {
      const recent = since ? stats.recentTrades.filter((t) => Date.parse(t.timestamp) >= since.getTime()) : stats.recentTrades;
      return withFreshness(
        {
          walletAddress: wallet,
          displayName: entry.displayName,
          totalPnl: entry.pnl,
          roi: figures.roi,
          winRate: figures.winRate,
          totalTrades: figures.tradeCount,
          topPositions: stats.topPositions,
          recentTrades: recent,
        },
        figures.enrichedAt,
        now.getTime() - figures.enrichedAt.getTime() > RANKED_PROFILE_STALE_MS,
      );
    }
  } else if (!(await isOnAnyBoard(deps.dbh, wallet))) {
    await deps.admitOnDemand?.();
  }

  const cached = await selectCachedProfile(deps.db, wallet, period);
  const cachedAnswer = (forceStale: boolean) =>
    cached &&
    withFreshness(
      cached.profile as unknown as StoredProfile,
      cached.fetchedAt,
      forceStale || now.getTime() - cached.fetchedAt.getTime() > ON_DEMAND_PROFILE_STALE_MS,
    );
  if (cached && now.getTime() - cached.fetchedAt.getTime() < deps.profileTtlMs) return cachedAnswer(false);

  // Concurrent requests for the same profile share one fetch.
  const key = `${wallet}|${period}`;
  let fetching = deps.onDemand.inFlight.get(key);
  if (!fetching) {
    fetching = fetchOnDemand(deps, wallet, period, since, now).finally(() => deps.onDemand.inFlight.delete(key));
    deps.onDemand.inFlight.set(key, fetching);
  }
  try {
    return withFreshness(await fetching, now, false);
  } catch (err) {
    // The last good copy beats an error while the venue is down or busy: served, marked stale.
    const stale = cachedAnswer(true);
    if (stale) return stale;
    throw err;
  }
}

async function fetchOnDemand(
  deps: ProfileDeps,
  wallet: string,
  period: Period,
  since: Date | undefined,
  now: Date,
): Promise<StoredProfile> {
  const release = await deps.onDemand.slots.acquire(ON_DEMAND_WAIT_MS);
  if (!release) throw unavailable('Too many trader profiles are being fetched right now, try again shortly', 5);
  let activity;
  try {
    activity = await fetchTraderActivitySince(deps.api, wallet, { since, maxClosedPages: ON_DEMAND_CLOSED_PAGES });
  } catch (err) {
    if (err instanceof UpstreamError || err instanceof Error)
      throw unavailable('The trader data venue is unavailable, try again shortly', 30);
    throw err;
  } finally {
    release();
  }
  // Rows came and none parsed: an answer of zeros would be a lie.
  if (activity.allMalformed) throw unavailable('The trader data venue answered unreadable data, try again shortly', 30);
  const f = computeFigures(activity, since?.getTime(), now.getTime());
  const named = activity.trades.find((t) => t.name.trim() || t.pseudonym.trim());
  const profile: StoredProfile = {
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
