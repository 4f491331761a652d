import { asc, desc, eq, sql, type SQL } from 'drizzle-orm';
import { eventGroups, markets } from '../../../drizzle/index.js';
import type { Db, DbHandle } from '../../db/index.js';
import type { EventSort } from './schemas.js';
import { marketChangeSql } from './store.js';

/** Read queries of the events domain (the writes live in catalogue.ts, prices.ts and history.ts). */

export interface GroupFilter {
  category?: string;
  status?: string;
  venue?: string;
  /** `to_tsquery('simple', …)` input (search-text.ts prefixQuery): every word a prefix of a searched word. */
  query?: string;
  sort: EventSort;
  limit: number;
  offset: number;
  now: Date;
}

/** The columns of an `EventSummary` (service.ts toEventSummary), from `event_groups g`. */
export const SUMMARY_COLUMNS = sql.raw(
  `g.id, g.slug, g.title, g.category, g.market_count, g.total_volume, g.status, g.image_url, g.venue, g.volume_24h, g.end_date, g.venue_created_at, g.change_24h`,
);

export interface GroupRow {
  id: string;
  slug: string;
  title: string;
  category: string;
  market_count: number;
  total_volume: number;
  status: string;
  image_url: string | null;
  venue: string;
  volume_24h: number;
  end_date: string | Date | null;
  venue_created_at: string | Date | null;
  change_24h: number | null;
}

/** Every ordering ends with the id in byte order (`collate "C"`), so offset paging never repeats or skips (§16.5). */
const BY_ID = sql.raw(`g.id collate "C"`);

/**
 * One page of groups and the count of all that match, in one of the §16.1
 * orderings. Each ordering is an index of drizzle/events.ts, so a page
 * without `q` is an index range; with `q` the GIN index on `search_all`
 * finds the matches. `closing` puts groups whose stored `end_date` is in the
 * future first: the stored value is re-derived every minute when it passes
 * (store.ts refreshPassedEndDates), and while one has passed and not yet been
 * re-derived the order compares with `now` instead of the index.
 */
export async function selectGroups(dbh: DbHandle, f: GroupFilter): Promise<{ rows: GroupRow[]; total: number }> {
  const nowIso = f.now.toISOString();
  const conds: SQL[] = [];
  if (f.category !== undefined) conds.push(sql`g.category = ${f.category}`);
  if (f.status !== undefined) conds.push(sql`g.status = ${f.status}`);
  if (f.venue !== undefined) conds.push(sql`g.venue = ${f.venue}`);
  if (f.query !== undefined) conds.push(sql`g.search_all @@ q.tq`);
  const where = conds.length > 0 ? sql`where ${sql.join(conds, sql` and `)}` : sql``;
  // A one-row materialised CTE: the query is parsed once, not once per row it is compared with.
  const withQ = f.query !== undefined ? sql`with q as materialized (select to_tsquery('simple', ${f.query}) as tq) ` : sql``;
  const from = f.query !== undefined ? sql`event_groups g cross join q` : sql`event_groups g`;
  let order: SQL;
  switch (f.sort) {
    case 'volume24h':
      order = sql`g.volume_24h desc nulls last, ${BY_ID}`;
      break;
    case 'newest':
      order = sql`g.venue_created_at desc nulls last, ${BY_ID}`;
      break;
    case 'closing': {
      const [passed] = await dbh.rows<{ any: boolean }>(
        sql`select exists (select 1 from event_groups where end_date <= ${nowIso}::timestamptz) as any`,
      );
      order = passed?.any
        ? sql`(case when g.end_date > ${nowIso}::timestamptz then g.end_date end) asc nulls last, ${BY_ID}`
        : sql`g.end_date asc nulls last, ${BY_ID}`;
      break;
    }
    case 'movers':
      order = sql`abs(g.change_24h) desc nulls last, ${BY_ID}`;
      break;
    case 'relevance':
      order =
        f.query !== undefined
          ? sql`(g.search_title @@ q.tq) desc, g.volume_24h desc nulls last, ${BY_ID}`
          : sql`g.total_volume desc nulls last, ${BY_ID}`;
      break;
    default:
      order = sql`g.total_volume desc nulls last, ${BY_ID}`;
  }
  const [rows, [{ n }]] = await Promise.all([
    dbh.rows<GroupRow>(
      sql`${withQ}select ${SUMMARY_COLUMNS} from ${from} ${where}
          order by ${order} limit ${f.limit} offset ${f.offset}`,
    ),
    dbh.rows<{ n: number }>(sql`${withQ}select count(*)::int as n from ${from} ${where}`),
  ]);
  return { rows, total: Number(n) };
}

export async function selectGroupBySlug(db: Db, slug: string) {
  const [g] = await db
    .select({
      id: eventGroups.id,
      slug: eventGroups.slug,
      title: eventGroups.title,
      category: eventGroups.category,
      totalVolume: eventGroups.totalVolume,
      status: eventGroups.status,
      description: eventGroups.description,
      venue: eventGroups.venue,
    })
    .from(eventGroups)
    .where(eq(eventGroups.slug, slug))
    .limit(1);
  return g;
}

export async function selectMarketsOfGroup(db: Db, groupId: string, now: Date, limit?: number) {
  const q = db
    .select({
      id: markets.id,
      title: markets.title,
      outcome: markets.outcome,
      yesPrice: markets.yesPrice,
      volume: markets.volume,
      volume24h: markets.volume24h,
      change24h: sql<number | null>`${marketChangeSql(now, '"markets"')}`,
      status: markets.status,
      endDate: markets.endDate,
      priceUpdatedAt: markets.priceUpdatedAt,
    })
    .from(markets)
    .where(eq(markets.eventGroupId, groupId))
    .orderBy(desc(markets.volume), asc(markets.id));
  return limit === undefined ? q : q.limit(limit);
}

/**
 * Records a read of a group's detail or chart: its markets are tracked for
 * 24 h (docs/decisions.md §11.2). At most one write a minute per group.
 */
export async function recordGroupRead(dbh: DbHandle, groupId: string, now: Date): Promise<void> {
  const iso = now.toISOString();
  await dbh.rows(
    sql`update event_groups set read_at = ${iso}::timestamptz
        where id = ${groupId} and (read_at is null or read_at < ${iso}::timestamptz - interval '1 minute')`,
  );
}

/** The earliest history point among these markets (the start of an `ALL` chart). */
export async function selectFirstPointAt(dbh: DbHandle, marketIds: string[]): Promise<Date | undefined> {
  const [r] = await dbh.rows<{ at: string | Date | null }>(
    sql`select min(ts) as at from price_history where market_id in (select json_array_elements_text(${JSON.stringify(marketIds)}::json))`,
  );
  return r?.at ? new Date(r.at) : undefined;
}

/**
 * Chart points, downsampled in SQL: the last point of each of `buckets`
 * equal time buckets in [from, to], plus the last point before `from`
 * (carried to `from`, so a line starts at the left edge even when its price
 * did not move inside the range).
 */
export async function selectChartPoints(dbh: DbHandle, marketIds: string[], from: Date, to: Date, buckets: number) {
  const ids = sql`(select json_array_elements_text(${JSON.stringify(marketIds)}::json))`;
  const bucketSec = Math.max(1, (to.getTime() - from.getTime()) / 1000 / buckets);
  const fromIso = from.toISOString();
  return dbh.rows<{ market_id: string; ts: string | Date; price: number }>(
    sql`(select distinct on (market_id) market_id, ${fromIso}::timestamptz as ts, price
         from price_history where market_id in ${ids} and ts < ${fromIso}::timestamptz
         order by market_id, ts desc)
        union all
        (select distinct on (market_id, b) market_id, ts, price from (
           select market_id, ts, price,
                  least(floor(extract(epoch from (ts - ${fromIso}::timestamptz)) / ${bucketSec}::float8), ${buckets - 1})::int as b
           from price_history
           where market_id in ${ids} and ts >= ${fromIso}::timestamptz and ts <= ${to.toISOString()}::timestamptz
         ) q order by market_id, b, ts desc)`,
  );
}

export interface MarketRow {
  id: string;
  title: string;
  outcome: string;
  yes_price: number | null;
  volume: number;
  volume_24h: number;
  change_24h: number | null;
  status: string;
  end_date: string | Date | null;
  price_updated_at: string | Date | null;
  gid: string;
  slug: string;
  gtitle: string;
  category: string;
  venue: string;
}

/** One market with its group (GET /markets/:id, docs/decisions.md §16.3). */
export async function selectMarket(dbh: DbHandle, id: string, now: Date): Promise<MarketRow | undefined> {
  const [r] = await dbh.rows<MarketRow>(
    sql`select m.id, m.title, m.outcome, m.yes_price, m.volume, m.volume_24h, ${marketChangeSql(now)} as change_24h, m.status,
               m.end_date, m.price_updated_at, g.id as gid, g.slug, g.title as gtitle, g.category, g.venue
        from markets m join event_groups g on g.id = m.event_group_id
        where m.id = ${id}`,
  );
  return r;
}

/**
 * Records a read of one market: it is tracked for 24 h (docs/decisions.md
 * §16.3, docs/venues.md "Tracked markets"). At most one write a minute per market.
 */
export async function recordMarketRead(dbh: DbHandle, marketId: string, now: Date): Promise<void> {
  const iso = now.toISOString();
  await dbh.rows(
    sql`update markets set read_at = ${iso}::timestamptz
        where id = ${marketId} and (read_at is null or read_at < ${iso}::timestamptz - interval '1 minute')`,
  );
}
