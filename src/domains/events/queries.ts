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
  /** Tests only: another count cap than SEARCH_COUNT_CAP, and a forced choice between walking and sorting a large segment. */
  tuning?: { countCap?: number; walk?: boolean };
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
 * A search counts its matches up to this many (docs/decisions.md §16.6: a
 * search matching 10,000 groups costs at most 2× one matching 10). Counting
 * is a pass over every match (the GIN index finds them, each is read), so an
 * exact count of a search matching most of the 34,000 groups would cost many
 * times its page. Up to the cap `total` is exact and the page is sorted from
 * the matches; past it the page is found as searchGroups says and `total` is
 * exact only when that counted it, else a lower bound (listEvents).
 */
export const SEARCH_COUNT_CAP = 1_000;

/**
 * How much more a group reached by walking a sort's btree costs than a match
 * read through the GIN bitmap (a random heap fetch and a test against the
 * search, against a heap page read in order): about 2.4 measured at the §11
 * scale (tests/bench/RESULTS.md, issue 30).
 */
const WALK_COST = 3;

export interface GroupPage {
  rows: GroupRow[];
  /** Every match, or with `q` at most SEARCH_COUNT_CAP + 1 (more than the cap: `capped`). */
  total: number;
  capped: boolean;
}

/** The ORDER BY of a sort over `event_groups g` (no tiers); each but `closing` after a passed end date is an index order. */
async function orderOf(dbh: DbHandle, sort: EventSort, now: Date): Promise<{ order: SQL; walkable: boolean }> {
  switch (sort) {
    case 'volume24h':
      return { order: sql`g.volume_24h desc nulls last, ${BY_ID}`, walkable: true };
    case 'newest':
      return { order: sql`g.venue_created_at desc nulls last, ${BY_ID}`, walkable: true };
    case 'closing': {
      const nowIso = now.toISOString();
      const [passed] = await dbh.rows<{ any: boolean }>(
        sql`select exists (select 1 from event_groups where end_date <= ${nowIso}::timestamptz) as any`,
      );
      return passed?.any
        ? { order: sql`(case when g.end_date > ${nowIso}::timestamptz then g.end_date end) asc nulls last, ${BY_ID}`, walkable: false }
        : { order: sql`g.end_date asc nulls last, ${BY_ID}`, walkable: true };
    }
    case 'movers':
      return { order: sql`abs(g.change_24h) desc nulls last, ${BY_ID}`, walkable: true };
    default:
      return { order: sql`g.total_volume desc nulls last, ${BY_ID}`, walkable: true };
  }
}

/**
 * One page of groups and the count of all that match, in one of the §16.1
 * orderings. Each ordering is an index of drizzle/events.ts, so a page
 * without `q` is an index range; with `q` see searchGroups. `closing` puts
 * groups whose stored `end_date` is in the future first: the stored value is
 * re-derived every minute when it passes (store.ts refreshPassedEndDates),
 * and while one has passed and not yet been re-derived the order compares
 * with `now` instead of the index.
 */
export async function selectGroups(dbh: DbHandle, f: GroupFilter): Promise<GroupPage> {
  const conds: SQL[] = [];
  if (f.category !== undefined) conds.push(sql`g.category = ${f.category}`);
  if (f.status !== undefined) conds.push(sql`g.status = ${f.status}`);
  if (f.venue !== undefined) conds.push(sql`g.venue = ${f.venue}`);
  if (f.query !== undefined) return searchGroups(dbh, f, conds);
  const where = conds.length > 0 ? sql`where ${sql.join(conds, sql` and `)}` : sql``;
  const { order } = await orderOf(dbh, f.sort === 'relevance' ? 'volume' : f.sort, f.now);
  const [rows, [{ n }]] = await Promise.all([
    dbh.rows<GroupRow>(sql`select ${SUMMARY_COLUMNS} from event_groups g ${where} order by ${order} limit ${f.limit} offset ${f.offset}`),
    dbh.rows<{ n: number }>(sql`select count(*)::int as n from event_groups g ${where}`),
  ]);
  return { rows, total: Number(n), capped: false };
}

/** The sort keys of SUMMARY_COLUMNS, enough to order matches before their rows are read. */
const SORT_KEYS = sql.raw(`g.id, g.total_volume, g.volume_24h, g.venue_created_at, g.end_date, g.change_24h`);

/**
 * A search (docs/decisions.md §16.1, §16.5). The GIN index on `search_all`
 * finds the matches; `relevance` ranks groups whose own title matches (the
 * GIN index on `search_title`: a title match is a match) before the others.
 *
 * Sorting the matches costs their number s; walking the sort's btree in
 * order, testing each group against the search until offset + limit match,
 * costs about (offset + limit) × groups / s × WALK_COST. The break-even is
 * s* = √((offset + limit) × groups × WALK_COST), at least SEARCH_COUNT_CAP
 * (≈ 2,300 for a first page of 50 among 34,000 groups; ≈ 23,000 at offset
 * 5,000). The first statement reads up to s* + 1 matches (their sort keys)
 * through one GIN lookup: when that is all of them it sorts them, reads the
 * page's rows and has the exact count; so a search matching few groups costs
 * one GIN lookup. A larger search is paged segment by segment (relevance:
 * the title tier, then the others; any other sort: one segment), a segment
 * of known size up to s* by sorting it, a larger one by the walk. A page
 * costs about 2 s* at most, never a pass over every match, and `total` is
 * then a lower bound (listEvents).
 */
async function searchGroups(dbh: DbHandle, f: GroupFilter, conds: SQL[]): Promise<GroupPage> {
  const filters = conds.length > 0 ? sql` and ${sql.join(conds, sql` and `)}` : sql``;
  const relevance = f.sort === 'relevance';
  const { order, walkable } = await orderOf(dbh, relevance ? 'volume24h' : f.sort, f.now);
  const cap = f.tuning?.countCap ?? SEARCH_COUNT_CAP;
  const reach = f.offset + f.limit;
  // A one-row materialised CTE: the query is parsed once, not once per row it is compared with.
  const withQ = sql`with q as materialized (select to_tsquery('simple', ${f.query}) as tq)`;
  const ranked = relevance ? sql`g.in_title desc, ${order}` : order;
  const [first, ...more] = await dbh.rows<GroupRow & { n: number; t: number; c2: number }>(
    sql`${withQ},
        lim as materialized (select greatest(${cap}::int, ceil(sqrt(${reach}::float8 * greatest(reltuples, 1) * ${WALK_COST})))::int as c2
                             from pg_class where oid = 'event_groups'::regclass),
        m as materialized (select ${SORT_KEYS}, g.search_title @@ q.tq as in_title from event_groups g cross join q
                           where g.search_all @@ q.tq${filters} limit (select c2 + 1 from lim)),
        c as (select count(*)::int as n, count(*) filter (where in_title)::int as t, (select c2 from lim) as c2 from m),
        k as (select g.*, row_number() over (order by ${ranked}) as rank from m g, c
              where c.n <= c.c2 order by ${ranked} limit ${f.limit} offset ${f.offset})
        select ${SUMMARY_COLUMNS}, c.n, c.t, c.c2 from c
        left join k on true left join event_groups g on g.id = k.id order by k.rank`,
  );
  const n = Number(first.n);
  const c2 = Number(first.c2);
  if (n <= c2) {
    const rows = [first, ...more].filter((r) => r.id !== null).map(({ n: _n, t: _t, c2: _c2, ...r }): GroupRow => r);
    return { rows, total: n, capped: false };
  }

  // More than s* matches: walk (a segment whose size is known, at most s*, is sorted).
  const segments: Array<{ cond: SQL; size?: number }> = [];
  if (relevance) {
    let t1: number | undefined;
    // Most of the first s* + 1 matches match in their title: the tier is large, walk it. Else count it (the title GIN index).
    if (Number(first.t) * 2 <= c2) {
      const [{ t }] = await dbh.rows<{ t: number }>(
        sql`${withQ} select count(*)::int as t from (select 1 from event_groups g cross join q
            where g.search_title @@ q.tq${filters} limit ${c2 + 1}) s`,
      );
      t1 = Number(t) <= c2 ? Number(t) : undefined;
    }
    segments.push({ cond: sql`g.search_title @@ q.tq`, size: t1 });
    segments.push({ cond: sql`g.search_all @@ q.tq and not (g.search_title @@ q.tq)` });
  } else segments.push({ cond: sql`g.search_all @@ q.tq` });

  const rows: GroupRow[] = [];
  let skip = f.offset;
  for (const seg of segments) {
    if (seg.size !== undefined && skip >= seg.size) {
      skip -= seg.size;
      continue;
    }
    const want = f.limit - rows.length;
    const where = sql`${seg.cond}${filters}`;
    const walk = walkable && (f.tuning?.walk ?? seg.size === undefined);
    const page = walk
      ? await walkSegment(
          dbh,
          sql`${withQ} select ${SUMMARY_COLUMNS} from event_groups g cross join q where ${where} order by ${order} limit ${want} offset ${skip}`,
        )
      : await dbh.rows<GroupRow>(
          // The segment's sort keys, sorted; then the page's rows.
          sql`${withQ}, m as materialized (select ${SORT_KEYS} from event_groups g cross join q where ${where}),
              k as (select g.*, row_number() over (order by ${order}) as rank from m g order by ${order} limit ${want} offset ${skip})
              select ${SUMMARY_COLUMNS} from k join event_groups g on g.id = k.id order by k.rank`,
        );
    rows.push(...page);
    if (rows.length === f.limit) break;
    // The segment ends inside this page: the next one starts at its first row...
    if (page.length > 0 || seg.size !== undefined) skip = 0;
    else {
      // ...or before the page began: skip what is left of the offset past it.
      const [{ c }] = await dbh.rows<{ c: number }>(
        sql`${withQ} select count(*)::int as c from event_groups g cross join q where ${where}`,
      );
      skip -= Number(c);
    }
  }
  return { rows, total: n, capped: true };
}

/**
 * Runs a segment's page as a walk of the sort's btree: bitmap and sequential
 * scans are turned off for this one statement (SET LOCAL in its own
 * transaction), so the planner, which cannot tell how many groups a prefix
 * search matches, takes the index in order and stops after offset + limit
 * matches.
 */
async function walkSegment(dbh: DbHandle, query: SQL): Promise<GroupRow[]> {
  return dbh.db.transaction(async (tx) => {
    await dbh.rows(sql`select set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)`, tx);
    return dbh.rows<GroupRow>(query, tx);
  });
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
