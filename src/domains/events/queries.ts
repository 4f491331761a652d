import { and, asc, count, desc, eq, sql } from 'drizzle-orm';
import { eventGroups, markets } from '../../../drizzle/index.js';
import type { Db, DbHandle } from '../../db/index.js';

/** Read queries of the events domain (the writes live in catalogue.ts, prices.ts and history.ts). */

export async function selectGroups(db: Db, f: { category?: string; status?: string; limit: number; offset: number }) {
  const where = and(
    f.category !== undefined ? eq(eventGroups.category, f.category) : undefined,
    f.status !== undefined ? eq(eventGroups.status, f.status) : undefined,
  );
  const [rows, [{ n }]] = await Promise.all([
    db
      .select({
        id: eventGroups.id,
        slug: eventGroups.slug,
        title: eventGroups.title,
        category: eventGroups.category,
        marketCount: eventGroups.marketCount,
        totalVolume: eventGroups.totalVolume,
        status: eventGroups.status,
        imageUrl: eventGroups.imageUrl,
      })
      .from(eventGroups)
      .where(where)
      .orderBy(desc(eventGroups.totalVolume), asc(eventGroups.id))
      .limit(f.limit)
      .offset(f.offset),
    db.select({ n: count() }).from(eventGroups).where(where),
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

export async function selectMarketsOfGroup(db: Db, groupId: string, limit?: number) {
  const q = db
    .select({
      id: markets.id,
      title: markets.title,
      outcome: markets.outcome,
      yesPrice: markets.yesPrice,
      volume: markets.volume,
      status: markets.status,
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
