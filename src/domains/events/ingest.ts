import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import { UpstreamError, type RequestOptions } from '../../lib/http.js';
import { marketChannel, type PublishFn } from '../realtime/channels.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { Listing, PriceQuote, VenueGroup } from '../../venues/groups.js';
import { getGammaEvent, listOpenGammaEvents } from '../../venues/polymarket/gamma.js';
import { getClobPriceHistory } from '../../venues/polymarket/clob.js';
import { getKalshiCandles, listOpenKalshiEvents } from '../../venues/kalshi/trade-api.js';
import { lockKey, type Db, type DbHandle, type DbOrTx } from '../../db/index.js';

/**
 * The write side of market data, called by the events-sync and price-sync
 * jobs (src/jobs/), which also run the price-alert check on the changes and
 * signal the read caches. Every write is set-based: one statement per page of
 * groups, markets, prices or history, fed as one JSON parameter
 * (json_to_recordset) so it works the same on postgres-js and PGlite and
 * never hits the 65,535-parameter limit.
 */

export interface IngestDeps {
  db: Db;
  dbh: DbHandle;
  config: Pick<Config, 'POLYMARKET_GAMMA_API_URL' | 'POLYMARKET_CLOB_API_URL' | 'KALSHI_API_URL'>;
  log: FastifyBaseLogger;
  clock: () => Date;
  http?: RequestOptions;
}

/** A market whose yes price changed in a sync (docs/decisions.md §5): published live and checked against price alerts. */
export interface PriceChange {
  marketId: string;
  yesPrice: number;
  volume: number;
  timestamp: Date;
}

/**
 * What one sync did. A venue whose listing failed is left out (its last good
 * data stays) and reported in `failure`, which the job throws after the
 * other venue's changes are handled, so job_runs records the run as failed.
 */
export interface SyncOutcome {
  items: number;
  changes: PriceChange[];
  failure?: Error;
}

/** Markets whose history is fetched per events-sync run; the rest follow on the next runs. */
export const BACKFILL_PER_RUN = 200;
const BACKFILL_CONCURRENCY = 6;
const REREAD_CONCURRENCY = 5;
/** Kalshi candlesticks are read for this long before now (hourly: 720 candles). */
const KALSHI_BACKFILL_DAYS = 30;
const DAY_MS = 86_400_000;

/** Retention of price_history (README "Market data"). */
export const RETENTION = { minuteForMs: DAY_MS, hourlyForMs: 90 * DAY_MS } as const;

type Venue = 'polymarket' | 'kalshi';

async function readListing(deps: IngestDeps, venue: Venue): Promise<Listing & { truncated: boolean }> {
  return venue === 'polymarket'
    ? listOpenGammaEvents({ baseUrl: deps.config.POLYMARKET_GAMMA_API_URL, http: deps.http })
    : listOpenKalshiEvents({ baseUrl: deps.config.KALSHI_API_URL, http: deps.http });
}

/**
 * Reads both venues' listings independently: a venue that fails is reported
 * and left out, so its last good data stays while the other venue updates.
 */
async function readListings(deps: IngestDeps) {
  const venues: Venue[] = ['polymarket', 'kalshi'];
  const settled = await Promise.allSettled(venues.map((v) => readListing(deps, v)));
  const ok = new Map<Venue, Listing & { truncated: boolean }>();
  const failures: string[] = [];
  settled.forEach((r, i) => {
    if (r.status === 'fulfilled') {
      ok.set(venues[i], r.value);
      if (r.value.skipped > 0) deps.log.warn({ venue: venues[i], skipped: r.value.skipped }, 'malformed venue rows skipped');
    } else {
      const msg = r.reason instanceof Error ? r.reason.message : String(r.reason);
      failures.push(`${venues[i]}: ${msg}`);
      deps.log.error({ venue: venues[i], err: r.reason }, 'venue listing failed; keeping its last good data');
    }
  });
  return { ok, failures };
}

/**
 * events-sync and price-sync run concurrently (separate job locks) and both
 * lock markets and groups, in different orders: their write transactions
 * take this transaction-scoped lock first, so they queue instead of deadlocking.
 */
const WRITE_LOCK = lockKey('events:write').toString();
async function lockWrites(deps: IngestDeps, tx: DbOrTx) {
  await deps.dbh.rows(sql`select pg_advisory_xact_lock(${WRITE_LOCK}::bigint)`, tx);
}

function json(value: unknown) {
  return sql`${JSON.stringify(value)}::json`;
}

function venueFailure(failures: string[]): Error | undefined {
  return failures.length > 0 ? new Error(`venue listing failed (${failures.join('; ')})`) : undefined;
}

// ---------------------------------------------------------------- prices

/**
 * Writes quotes for markets we track: one statement updates the changed
 * prices/volumes and appends a history point (minute resolution) for each
 * changed price; a second one refreshes the affected groups' totals.
 * Returns the markets whose price changed.
 */
export async function applyQuotes(deps: IngestDeps, quotes: PriceQuote[], on?: DbOrTx): Promise<PriceChange[]> {
  if (quotes.length === 0) return [];
  const now = deps.clock();
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  const payload = quotes.map((q) => ({ id: q.marketId, p: q.yesPrice, v: q.volume }));
  const run = async (tx: DbOrTx) => {
    const rows = await deps.dbh.rows<{ id: string; p: number; v: number; gid: string; price_changed: boolean }>(
      sql`with incoming as (
            select distinct on (id) id, p, v from json_to_recordset(${json(payload)}) as x(id text, p float8, v float8)
          ),
          changed as (
            select i.id, i.p, i.v, m.event_group_id as gid, (m.yes_price is distinct from i.p) as price_changed
            from incoming i join markets m on m.id = i.id
            where m.yes_price is distinct from i.p or m.volume is distinct from i.v
          ),
          upd as (
            update markets m set yes_price = c.p, volume = c.v, price_updated_at = ${now.toISOString()}::timestamptz,
              updated_at = ${now.toISOString()}::timestamptz
            from changed c where m.id = c.id
            returning m.id
          ),
          hist as (
            insert into price_history (market_id, ts, price)
            select id, ${minute.toISOString()}::timestamptz, p from changed where price_changed
            on conflict (market_id, ts) do update set price = excluded.price
            returning 1
          )
          select id, p, v, gid, price_changed from changed`,
      tx,
    );
    const groups = [...new Set(rows.map((r) => r.gid))];
    if (groups.length > 0) await refreshGroupTotals(deps, tx, groups);
    return rows;
  };
  const rows = on
    ? await run(on)
    : await deps.db.transaction(async (tx) => {
        await lockWrites(deps, tx);
        return run(tx);
      });
  return rows.filter((r) => r.price_changed).map((r) => ({ marketId: r.id, yesPrice: Number(r.p), volume: Number(r.v), timestamp: now }));
}

/** totalVolume = sum of the group's market volumes; marketCount = its markets. */
async function refreshGroupTotals(deps: IngestDeps, tx: DbOrTx, groupIds: string[] | 'all') {
  const filter = groupIds === 'all' ? sql`true` : sql`event_group_id in (select json_array_elements_text(${json(groupIds)}))`;
  await deps.dbh.rows(
    sql`update event_groups g set total_volume = s.v, market_count = s.n
        from (select event_group_id, coalesce(sum(volume), 0)::float8 as v, count(*)::int as n
              from markets where ${filter} group by event_group_id) s
        where g.id = s.event_group_id and (g.total_volume <> s.v or g.market_count <> s.n)`,
    tx,
  );
}

/** Sends changed prices to the live channels (docs/decisions.md §5, §8). */
export function publishPriceChanges(deps: { publish: PublishFn }, changes: PriceChange[]): void {
  for (const c of changes) {
    deps.publish(marketChannel(c.marketId), 'market:update', {
      marketId: c.marketId,
      yesPrice: c.yesPrice,
      volume: c.volume,
      timestamp: c.timestamp.toISOString(),
    });
  }
}

function quotesOf(groups: VenueGroup[]): PriceQuote[] {
  const out: PriceQuote[] = [];
  for (const g of groups) for (const m of g.markets) out.push({ marketId: m.id, yesPrice: m.yesPrice, volume: m.volume });
  return out;
}

/**
 * One price-sync cycle: both listings (prices only), one set-based write,
 * then history compaction of the buckets that aged since `compactSince` (the
 * job's last successful run). Returns the changed prices; publishing them
 * and the alert check are the job's next steps.
 */
export async function syncPrices(deps: IngestDeps, opts: { compactSince?: Date } = {}): Promise<SyncOutcome> {
  const { ok, failures } = await readListings(deps);
  const quotes: PriceQuote[] = [];
  for (const l of ok.values()) quotes.push(...quotesOf(l.groups));
  const changes = await applyQuotes(deps, quotes);
  await compactHistory(deps, opts.compactSince);
  return { items: changes.length, changes, failure: venueFailure(failures) };
}

// ---------------------------------------------------------------- history

/**
 * Downsampling (README "Market data"): minute points for the last day, the
 * last point of each hour up to 90 days, the last point of each day beyond.
 * Only complete buckets older than the cutoffs, and only those that became
 * old since `since` (the caller's watermark: price-sync passes its last
 * successful run), are scanned, so a cycle touches a few minutes' worth of
 * rows. Without `since` everything is compacted.
 */
export async function compactHistory(deps: Pick<IngestDeps, 'dbh' | 'clock'>, since?: Date): Promise<number> {
  const now = deps.clock();
  let removed = 0;
  for (const [keepFor, unit] of [
    [RETENTION.minuteForMs, 'hour'],
    [RETENTION.hourlyForMs, 'day'],
  ] as const) {
    const cutoff = new Date(now.getTime() - keepFor);
    // From one bucket before the previous cutoff (a first run compacts everything).
    const from = since ? new Date(since.getTime() - keepFor - (unit === 'hour' ? 3_600_000 : DAY_MS)) : new Date(0);
    const rows = await deps.dbh.rows<{ n: number }>(
      sql`with doomed as (
            select market_id, ts from (
              select market_id, ts, row_number() over (partition by market_id, date_trunc(${unit}, ts) order by ts desc) as rn
              from price_history
              where ts >= date_trunc(${unit}, ${from.toISOString()}::timestamptz)
                and ts < date_trunc(${unit}, ${cutoff.toISOString()}::timestamptz)
            ) x where rn > 1
          ),
          del as (
            delete from price_history p using doomed d where p.market_id = d.market_id and p.ts = d.ts returning 1
          )
          select count(*)::int as n from del`,
    );
    removed += Number(rows[0]?.n ?? 0);
  }
  return removed;
}

/** Inserts venue history points, downsampled to the retention rules, never overwriting ours. */
async function insertHistory(deps: IngestDeps, marketId: string, points: Array<{ ts: Date; price: number }>) {
  const now = deps.clock().getTime();
  const byBucket = new Map<string, { ts: Date; price: number }>();
  for (const p of points) {
    const age = now - p.ts.getTime();
    if (age < 0) continue;
    const key =
      age > RETENTION.hourlyForMs
        ? `d${Math.floor(p.ts.getTime() / DAY_MS)}`
        : age > RETENTION.minuteForMs
          ? `h${Math.floor(p.ts.getTime() / 3_600_000)}`
          : `m${Math.floor(p.ts.getTime() / 60_000)}`;
    const prev = byBucket.get(key);
    if (!prev || prev.ts < p.ts) byBucket.set(key, p);
  }
  const rows = [...byBucket.values()].map((p) => ({ t: new Date(Math.floor(p.ts.getTime() / 1000) * 1000).toISOString(), p: p.price }));
  if (rows.length === 0) return;
  await deps.dbh.rows(
    sql`insert into price_history (market_id, ts, price)
        select ${marketId}, t, p from json_to_recordset(${json(rows)}) as x(t timestamptz, p float8)
        on conflict (market_id, ts) do nothing`,
  );
}

/**
 * First ingestion of a market backfills its history from the venue (CLOB
 * prices-history, Kalshi hourly candlesticks). A market is marked done on
 * success or on a 4xx (retrying would not help); outages leave it for the
 * next run. Bounded per run so a first sync of 10,000 markets spreads out.
 */
export async function backfillHistory(deps: IngestDeps, limit = BACKFILL_PER_RUN): Promise<{ done: number; failed: number }> {
  const todo = await deps.dbh.rows<{
    id: string;
    venue: string;
    venue_market_id: string;
    yes_token_id: string | null;
    series_ticker: string | null;
  }>(
    sql`select m.id, m.venue, m.venue_market_id, m.yes_token_id, g.series_ticker
        from markets m join event_groups g on g.id = m.event_group_id
        where m.history_backfilled_at is null
        order by m.volume desc, m.id limit ${limit}`,
  );
  let done = 0;
  let failed = 0;
  const finished: string[] = [];
  await mapLimit(todo, BACKFILL_CONCURRENCY, async (m) => {
    try {
      let points: Array<{ ts: Date; price: number }> = [];
      if (m.venue === 'polymarket' && m.yes_token_id) {
        points = (await getClobPriceHistory({ baseUrl: deps.config.POLYMARKET_CLOB_API_URL, http: deps.http }, m.yes_token_id)).points;
      } else if (m.venue === 'kalshi' && m.series_ticker) {
        const to = deps.clock();
        const from = new Date(to.getTime() - KALSHI_BACKFILL_DAYS * DAY_MS);
        points = (
          await getKalshiCandles({ baseUrl: deps.config.KALSHI_API_URL, http: deps.http }, m.series_ticker, m.venue_market_id, from, to)
        ).points;
      }
      await insertHistory(deps, m.id, points);
      finished.push(m.id);
      done++;
    } catch (err) {
      failed++;
      if (err instanceof UpstreamError && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 429) {
        finished.push(m.id);
      }
      deps.log.warn({ marketId: m.id, err: err instanceof Error ? err.message : String(err) }, 'history backfill failed');
    }
  });
  if (finished.length > 0) {
    await deps.dbh.rows(
      sql`update markets set history_backfilled_at = ${deps.clock().toISOString()}::timestamptz
          where id in (select json_array_elements_text(${json(finished)}))`,
    );
  }
  return { done, failed };
}

// ---------------------------------------------------------------- groups

/**
 * Slugs (docs/venues.md "Our ids"): Polymarket's slug, or the lower-cased Kalshi
 * event ticker suffixed `-kalshi` when another group holds it. A Kalshi group
 * keeps the slug it was first given, so its URL is stable; a Polymarket group
 * arriving on a slug a Kalshi group holds takes it, and the Kalshi group moves
 * to `-kalshi`.
 */
export function assignSlugs(
  groups: VenueGroup[],
  existing: Array<{ id: string; slug: string }>,
): { slugs: Map<string, string>; renames: Array<{ id: string; slug: string }> } {
  const owner = new Map<string, string>();
  const slugOf = new Map<string, string>();
  for (const e of existing) {
    owner.set(e.slug, e.id);
    slugOf.set(e.id, e.slug);
  }
  const slugs = new Map<string, string>();
  const renames: Array<{ id: string; slug: string }> = [];
  const take = (id: string, slug: string) => {
    const old = slugOf.get(id);
    if (old !== undefined && old !== slug && owner.get(old) === id) owner.delete(old);
    owner.set(slug, id);
    slugOf.set(id, slug);
  };
  const free = (slug: string, id: string) => {
    const o = owner.get(slug);
    return o === undefined || o === id;
  };
  const ordered = [...groups.filter((g) => g.venue === 'polymarket'), ...groups.filter((g) => g.venue !== 'polymarket')];
  for (const g of ordered) {
    let slug: string;
    if (g.venue === 'polymarket') {
      slug = g.slug;
      const holder = owner.get(slug);
      if (holder !== undefined && holder !== g.id) {
        if (holder.startsWith('ks-')) {
          let moved = `${slug}-kalshi`;
          for (let n = 2; !free(moved, holder); n++) moved = `${slug}-kalshi-${n}`;
          take(holder, moved);
          renames.push({ id: holder, slug: moved });
        } else {
          slug = `${g.slug}-${g.venueEventId}`;
        }
      }
    } else {
      const kept = slugOf.get(g.id);
      if (kept !== undefined && owner.get(kept) === g.id) slug = kept;
      else {
        slug = g.slug;
        if (!free(slug, g.id)) slug = `${g.slug}-kalshi`;
        for (let n = 2; !free(slug, g.id); n++) slug = `${g.slug}-kalshi-${n}`;
      }
    }
    take(g.id, slug);
    slugs.set(g.id, slug);
  }
  // A group renamed and then processed itself keeps its latest assignment.
  return { slugs, renames: renames.filter((r) => !slugs.has(r.id) || slugs.get(r.id) === r.slug) };
}

async function upsertGroups(deps: IngestDeps, tx: DbOrTx, groups: VenueGroup[], slugs: Map<string, string>) {
  const now = deps.clock().toISOString();
  const CHUNK = 1000;
  for (let i = 0; i < groups.length; i += CHUNK) {
    const part = groups.slice(i, i + CHUNK);
    const rows = part.map((g) => ({
      id: g.id,
      venue: g.venue,
      venue_event_id: g.venueEventId,
      slug: slugs.get(g.id) ?? g.slug,
      title: g.title,
      description: g.description,
      category: g.category,
      status: g.status,
      image_url: g.imageUrl,
      series_ticker: g.seriesTicker,
    }));
    await deps.dbh.rows(
      sql`insert into event_groups (id, venue, venue_event_id, slug, title, description, category, status, image_url, series_ticker, created_at, updated_at, last_seen_at)
          select id, venue, venue_event_id, slug, title, description, category, status, image_url, series_ticker,
                 ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz
          from json_to_recordset(${json(rows)}) as x(id text, venue text, venue_event_id text, slug text, title text,
               description text, category text, status text, image_url text, series_ticker text)
          on conflict (id) do update set slug = excluded.slug, title = excluded.title, description = excluded.description,
            category = excluded.category, status = excluded.status, image_url = excluded.image_url,
            series_ticker = excluded.series_ticker, updated_at = excluded.updated_at, last_seen_at = excluded.last_seen_at`,
      tx,
    );
    const markets = part.flatMap((g) =>
      g.markets.map((m) => ({
        id: m.id,
        gid: g.id,
        venue: m.venue,
        vid: m.venueMarketId,
        title: m.title,
        status: m.status,
        token: m.yesTokenId,
      })),
    );
    if (markets.length === 0) continue;
    // Prices and volumes are left to applyQuotes, which detects changes and writes history.
    await deps.dbh.rows(
      sql`insert into markets (id, event_group_id, venue, venue_market_id, title, status, yes_token_id, created_at, updated_at)
          select distinct on (id) id, gid, venue, vid, title, status, token, ${now}::timestamptz, ${now}::timestamptz
          from json_to_recordset(${json(markets)}) as x(id text, gid text, venue text, vid text, title text, status text, token text)
          on conflict (id) do update set event_group_id = excluded.event_group_id, title = excluded.title,
            status = excluded.status, yes_token_id = coalesce(excluded.yes_token_id, markets.yes_token_id),
            updated_at = excluded.updated_at`,
      tx,
    );
  }
}

/** Closes the given groups and their still-active markets (venue says gone, or left Kalshi's open list). */
async function closeGroups(deps: IngestDeps, tx: DbOrTx, ids: string[]) {
  if (ids.length === 0) return;
  const now = deps.clock().toISOString();
  await deps.dbh.rows(
    sql`with gone as (
          update event_groups set status = 'closed', updated_at = ${now}::timestamptz
          where id in (select json_array_elements_text(${json(ids)})) and status = 'active'
          returning id
        )
        update markets set status = 'closed', updated_at = ${now}::timestamptz
        where event_group_id in (select id from gone) and status = 'active'`,
    tx,
  );
}

/**
 * One events-sync run: both open listings; Polymarket groups that left the
 * list are re-read by id (closed or resolved as Gamma says; 404 → closed);
 * Kalshi groups that left the open list are closed (docs/venues.md lists no
 * Kalshi re-read call); then prices (with history). Returns the changed
 * prices; the job publishes them, runs the alert check, then the bounded
 * history backfill of first-seen markets (backfillHistory).
 */
export async function syncEvents(deps: IngestDeps): Promise<SyncOutcome> {
  const { ok, failures } = await readListings(deps);
  const groups: VenueGroup[] = [];
  const toClose: string[] = [];
  let rereadFailures = 0;

  const known = await deps.dbh.rows<{ id: string; venue: string; venue_event_id: string; slug: string; status: string }>(
    sql`select id, venue, venue_event_id, slug, status from event_groups`,
  );

  for (const [venue, listing] of ok) {
    groups.push(...listing.groups);
    // A truncated listing cannot tell which groups left it.
    if (listing.truncated) {
      deps.log.warn({ venue }, 'listing hit its page cap; not closing groups this run');
      continue;
    }
    const seen = new Set([...listing.groups.map((g) => g.id), ...listing.malformedGroupIds]);
    const missing = known.filter((k) => k.venue === venue && k.status === 'active' && !seen.has(k.id));
    if (missing.length === 0) continue;
    if (venue === 'kalshi') {
      // An empty page set while we track open groups looks like an outage, not a mass close.
      if (listing.groups.length === 0 && listing.malformedGroupIds.length === 0) {
        deps.log.warn('Kalshi open listing came back empty; not closing groups this run');
        continue;
      }
      toClose.push(...missing.map((k) => k.id));
      continue;
    }
    await mapLimit(missing, REREAD_CONCURRENCY, async (k) => {
      try {
        const g = await getGammaEvent({ baseUrl: deps.config.POLYMARKET_GAMMA_API_URL, http: deps.http }, k.venue_event_id);
        if (g === undefined) toClose.push(k.id);
        else if (g) groups.push(g);
      } catch (err) {
        rereadFailures++;
        deps.log.warn({ groupId: k.id, err: err instanceof Error ? err.message : String(err) }, 'group re-read failed; left as is');
      }
    });
  }

  const { slugs, renames } = assignSlugs(
    groups,
    known.map((k) => ({ id: k.id, slug: k.slug })),
  );
  const changes = await deps.db.transaction(async (tx) => {
    await lockWrites(deps, tx);
    for (const r of renames) {
      await deps.dbh.rows(sql`update event_groups set slug = ${r.slug}, updated_at = now() where id = ${r.id}`, tx);
    }
    await upsertGroups(deps, tx, groups, slugs);
    await closeGroups(deps, tx, toClose);
    const c = await applyQuotes(deps, quotesOf(groups), tx);
    await refreshGroupTotals(deps, tx, 'all');
    return c;
  });
  deps.log.info({ groups: groups.length, closed: toClose.length, rereadFailures, failures }, 'events synced');
  return { items: groups.length, changes, failure: venueFailure(failures) };
}
