import type { Db, DbHandle } from '../../db/index.js';
import { notFound } from '../../errors.js';
import { normalizeCategory } from '../../venues/catalogue.js';
import { groupFreshness, listFreshness, marketFreshness } from './freshness.js';
import { prefixQuery } from './search-text.js';
import {
  recordGroupRead,
  selectChartPoints,
  selectFirstPointAt,
  selectGroupBySlug,
  SEARCH_COUNT_CAP,
  selectGroups,
  selectMarket,
  recordMarketRead,
  type GroupRow,
  selectMarketsOfGroup,
} from './queries.js';
import type { Chart, ChartQuery, EventDetail, EventList, EventListQuery, EventSummary, Market } from './schemas.js';

export interface EventsDeps {
  db: Db;
  dbh: DbHandle;
  clock: () => Date;
}

/**
 * Shown when a venue has no image for an event (Kalshi events never carry
 * one): a neutral rounded square, as a data URL so it needs no host of ours.
 */
export const FALLBACK_IMAGE_URL =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='12' fill='%23e5e7eb'/%3E%3C/svg%3E";

/** At most 300 points per chart line: 299 buckets plus the carried-in start point. */
export const CHART_MAX_POINTS = 300;
const RANGE_MS = { '1D': 86_400_000, '1W': 7 * 86_400_000, '1M': 30 * 86_400_000 } as const;

/** A group row as `EventSummary` (docs/decisions.md §5, §16.2); the watchlist lists groups the same way. */
export function toEventSummary(r: GroupRow, now: Date): EventSummary {
  const endDate = r.end_date === null ? null : new Date(r.end_date);
  return {
    id: r.id,
    slug: r.slug,
    title: r.title,
    category: r.category,
    marketCount: Number(r.market_count),
    totalVolume: Number(r.total_volume),
    status: r.status as EventSummary['status'],
    imageUrl: r.image_url ?? FALLBACK_IMAGE_URL,
    venue: r.venue as EventSummary['venue'],
    volume24h: Number(r.volume_24h),
    // Stored as of the last write; a close that has passed since is no longer "still in the future" (§16.2).
    endDate: endDate !== null && endDate > now ? endDate.toISOString() : null,
    createdAt: r.venue_created_at === null ? null : new Date(r.venue_created_at).toISOString(),
    change24h: r.change_24h === null ? null : Number(r.change_24h),
  };
}

export async function listEvents(deps: EventsDeps, q: EventListQuery): Promise<EventList> {
  const now = deps.clock();
  const fresh = await listFreshness(deps.dbh, now);
  let query: string | undefined;
  if (q.q !== undefined) {
    query = prefixQuery(q.q);
    // docs/decisions.md §16.1: a `q` with no letter or digit matches nothing.
    if (query === undefined) return { ...fresh, events: [], total: 0 };
  }
  const { rows, total, capped } = await selectGroups(deps.dbh, {
    // Stored categories are normalised; the filter goes through the same function, so any case matches.
    category: q.category !== undefined ? normalizeCategory(q.category) : undefined,
    status: q.status,
    venue: q.venue,
    query,
    sort: q.sort ?? (query !== undefined ? 'relevance' : 'volume'),
    limit: q.limit,
    offset: q.offset,
    now,
  });
  return {
    ...fresh,
    events: rows.map((r) => toEventSummary(r, now)),
    // A search past SEARCH_COUNT_CAP matches is not counted to the end: `total` is then a lower bound that
    // still says whether a next page exists (the page is full: at least one more than offset + limit).
    total: capped ? Math.max(SEARCH_COUNT_CAP, q.offset + rows.length + (rows.length === q.limit ? 1 : 0)) : total,
  };
}

export async function getEvent(deps: EventsDeps, slug: string): Promise<EventDetail> {
  const g = await selectGroupBySlug(deps.db, slug);
  if (!g) throw notFound('Event');
  const now = deps.clock();
  await recordGroupRead(deps.dbh, g.id, now);
  const [ms, fresh] = await Promise.all([selectMarketsOfGroup(deps.db, g.id, now), groupFreshness(deps.dbh, g.id, g.venue, now)]);
  return {
    ...fresh,
    id: g.id,
    slug: g.slug,
    title: g.title,
    category: g.category,
    totalVolume: g.totalVolume,
    status: g.status as EventDetail['status'],
    description: g.description,
    markets: ms.map((m) => ({
      id: m.id,
      title: m.title,
      outcome: m.outcome,
      yesPrice: m.yesPrice,
      volume: m.volume,
      volume24h: m.volume24h,
      change24h: m.change24h === null ? null : Number(m.change24h),
      status: m.status as EventDetail['status'],
      endDate: m.endDate ? m.endDate.toISOString() : null,
      priceUpdatedAt: m.priceUpdatedAt ? m.priceUpdatedAt.toISOString() : null,
    })),
  };
}

export async function getChart(deps: EventsDeps, slug: string, q: ChartQuery): Promise<Chart> {
  const g = await selectGroupBySlug(deps.db, slug);
  if (!g) throw notFound('Event');
  const to = deps.clock();
  await recordGroupRead(deps.dbh, g.id, to);
  const [ms, fresh] = await Promise.all([selectMarketsOfGroup(deps.db, g.id, to, q.markets), groupFreshness(deps.dbh, g.id, g.venue, to)]);
  if (ms.length === 0) return { ...fresh, outcomes: [] };
  const ids = ms.map((m) => m.id);
  let from: Date;
  if (q.range === 'ALL') {
    const first = await selectFirstPointAt(deps.dbh, ids);
    from = first && first < to ? first : new Date(to.getTime() - RANGE_MS['1D']);
  } else from = new Date(to.getTime() - RANGE_MS[q.range]);
  const rows = await selectChartPoints(deps.dbh, ids, from, to, CHART_MAX_POINTS - 1);
  const byMarket = new Map<string, Array<{ t: number; price: number }>>();
  for (const r of rows) {
    const list = byMarket.get(r.market_id) ?? [];
    list.push({ t: new Date(r.ts).getTime(), price: Number(r.price) });
    byMarket.set(r.market_id, list);
  }
  return {
    ...fresh,
    outcomes: ms.map((m) => ({
      marketId: m.id,
      title: m.title,
      dataPoints: (byMarket.get(m.id) ?? [])
        .sort((a, b) => a.t - b.t)
        // A point exactly at the range start supersedes the carried-in one.
        .filter((p, i, all) => i === all.length - 1 || all[i + 1].t !== p.t)
        .slice(-CHART_MAX_POINTS)
        .map((p) => ({ timestamp: new Date(p.t).toISOString(), price: p.price })),
    })),
  };
}

/**
 * GET /markets/:id (docs/decisions.md §16.3): one market with its group;
 * reading it makes the market tracked for 24 h; freshness as the group detail's.
 */
export async function getMarket(deps: EventsDeps, id: string): Promise<Market> {
  const now = deps.clock();
  const m = await selectMarket(deps.dbh, id, now);
  if (!m) throw notFound('Market');
  await recordMarketRead(deps.dbh, m.id, now);
  const fresh = await marketFreshness(deps.dbh, m.id, m.venue, now);
  return {
    ...fresh,
    id: m.id,
    title: m.title,
    outcome: m.outcome,
    yesPrice: m.yes_price === null ? null : Number(m.yes_price),
    volume: Number(m.volume),
    volume24h: Number(m.volume_24h),
    change24h: m.change_24h === null ? null : Number(m.change_24h),
    status: m.status as Market['status'],
    endDate: m.end_date === null ? null : new Date(m.end_date).toISOString(),
    priceUpdatedAt: m.price_updated_at === null ? null : new Date(m.price_updated_at).toISOString(),
    event: { id: m.gid, slug: m.slug, title: m.gtitle, category: m.category, venue: m.venue as Market['event']['venue'] },
  };
}
