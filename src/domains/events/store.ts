import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import { lockKey, type Db, type DbHandle, type DbOrTx } from '../../db/index.js';
import type { VenueClients } from '../../venues/clients.js';
import type { Venue } from '../../venues/catalogue.js';
import type { PriceChange } from './changes.js';
import { TRACKED_WITHIN_MS } from './freshness.js';

/**
 * The shared write side of market data (catalogue.ts, prices.ts, history.ts).
 * Every write is set-based: one statement per page of groups, markets,
 * prices or history, fed as one JSON parameter (json_to_recordset), so it
 * works the same on postgres-js and PGlite and never meets the
 * 65,535-parameter limit.
 */
export interface MarketDataDeps {
  db: Db;
  dbh: DbHandle;
  log: FastifyBaseLogger;
  clock: () => Date;
  /** The process's venue clients: one rate limiter per venue API (docs/venues.md "What we call"). */
  venues: VenueClients;
  config: Pick<Config, 'PRICE_TRACK_TOP'>;
  /** Markets with a `market:<id>` subscriber on any instance (docs/decisions.md §11.2); none when absent. */
  subscribedMarketIds?: () => Promise<string[]>;
}

export const VENUES: readonly Venue[] = ['polymarket', 'kalshi'];

export function json(value: unknown) {
  return sql`${JSON.stringify(value)}::json`;
}

export function idsIn(ids: readonly string[]) {
  return sql`(select json_array_elements_text(${json(ids)}))`;
}

/**
 * events-sync and price-sync run concurrently (separate job locks) and both
 * write markets and groups, in different orders: their write transactions
 * take this transaction-scoped lock first, so they queue instead of deadlocking.
 */
const WRITE_LOCK = lockKey('events:write').toString();
export async function lockWrites(dbh: DbHandle, tx: DbOrTx) {
  await dbh.rows(sql`select pg_advisory_xact_lock(${WRITE_LOCK}::bigint)`, tx);
}

/** Runs `fn` in one transaction holding the write lock. */
export function writeTx<T>(deps: Pick<MarketDataDeps, 'db' | 'dbh'>, fn: (tx: DbOrTx) => Promise<T>): Promise<T> {
  return deps.db.transaction(async (tx) => {
    await lockWrites(deps.dbh, tx);
    return fn(tx);
  });
}

/**
 * One price read of a market. `p` null = the venue has no quote and no trade;
 * `keep` = the venue said nothing new (docs/venues.md "Prices": a token
 * absent from every CLOB answer keeps its last known price). `v`, `v24`,
 * `st` are left as stored when null.
 */
export interface PriceReading {
  id: string;
  p: number | null;
  keep?: boolean;
  v?: number | null;
  v24?: number | null;
  st?: string | null;
  /** A resolved market's result and winning outcome label (docs/decisions.md §17.2); kept as stored when null. */
  res?: 'yes' | 'no' | null;
  rl?: string | null;
  /** The venue's own 24 h change (docs/decisions.md §16.2): a number or null is written as read; undefined leaves it as stored. */
  ch?: number | null;
}

export interface ApplyOptions {
  /** The price cycle: marks the markets tracked now. */
  tracked?: boolean;
  /**
   * The catalogue: a market the price cycle refreshed in the last 3 minutes
   * keeps that fresher price (Gamma answers are CDN-cached for 300 s), unless
   * the catalogue says it is no longer active (then its settlement counts).
   */
  yieldToTracked?: boolean;
  /** Re-derive the touched groups' end date and 24 h change (default true; the catalogue does it for every group it writes). */
  derive?: boolean;
}

/**
 * Writes price reads in one statement: prices, volumes, status,
 * `price_updated_at` (the read happened, whatever it said), a minute
 * history point for each changed non-null price and, for each change, the
 * price it ended with its last reading (price_readings: every reading counts
 * for moves, docs/decisions.md §14.2); then the affected groups'
 * totals. Returns the markets whose price changed to a number (first reads of
 * a market are not changes: nobody can follow or alert on it yet).
 */
export async function applyReadings(
  deps: Pick<MarketDataDeps, 'dbh' | 'clock'>,
  tx: DbOrTx,
  readings: PriceReading[],
  opts: ApplyOptions = {},
): Promise<PriceChange[]> {
  if (readings.length === 0) return [];
  const now = deps.clock();
  const nowIso = now.toISOString();
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000).toISOString();
  const recent = new Date(now.getTime() - 180_000).toISOString();
  const payload = readings.map((r) => ({
    id: r.id,
    p: r.p,
    keep: r.keep ?? false,
    v: r.v ?? null,
    v24: r.v24 ?? null,
    st: r.st ?? null,
    res: r.res ?? null,
    rl: r.rl ?? null,
    ch: r.ch ?? null,
    chset: r.ch !== undefined,
  }));
  const rows = await deps.dbh.rows<{ id: string; p: number; v: number; gid: string; first: boolean; moved: boolean; totals: boolean }>(
    sql`with incoming as (
          select distinct on (id) id, p, keep, v, v24, st, res, rl, ch, chset
          from json_to_recordset(${json(payload)})
               as x(id text, p float8, keep boolean, v float8, v24 float8, st text, res text, rl text, ch float8, chset boolean)
        ),
        cur as (
          select i.id, m.event_group_id as gid, m.yes_price as old_p, m.price_updated_at as old_pu, m.volume as old_v, m.volume_24h as old_v24, m.status as old_st,
                 (m.price_updated_at is null and m.yes_price is null) as first,
                 (i.keep or (${opts.yieldToTracked ?? false} and coalesce(i.st, m.status) = 'active' and m.tracked_at > ${recent}::timestamptz)) as held,
                 i.p, coalesce(i.v, m.volume) as v, coalesce(i.v24, m.volume_24h) as v24, coalesce(i.st, m.status) as st,
                 i.res, i.rl,
                 m.venue_change_24h as old_ch, case when i.chset then i.ch else m.venue_change_24h end as ch
          from incoming i join markets m on m.id = i.id
        ),
        next as (
          select *, case when held then old_p else p end as np from cur
        ),
        upd as (
          update markets m set yes_price = n.np, volume = n.v, volume_24h = n.v24, status = n.st, venue_change_24h = n.ch,
            price_updated_at = case when n.held and not ${opts.tracked ?? false} then m.price_updated_at else ${nowIso}::timestamptz end,
            tracked_at = case when ${opts.tracked ?? false} then ${nowIso}::timestamptz else m.tracked_at end,
            -- docs/decisions.md §17.2: when we first saw it resolved, and how (a market no longer resolved loses both).
            resolved_at = case when n.st <> 'resolved' then null when n.old_st = 'resolved' then m.resolved_at else ${nowIso}::timestamptz end,
            result = case when n.st <> 'resolved' then null
                          else coalesce(n.res, m.result, case when n.np >= 0.5 then 'yes' when n.np is not null then 'no' end) end,
            resolved_outcome = case when n.st <> 'resolved' then null else coalesce(n.rl, m.resolved_outcome) end,
            updated_at = case when n.np is distinct from n.old_p or n.v <> n.old_v or n.st <> n.old_st then ${nowIso}::timestamptz else m.updated_at end
          from next n where m.id = n.id
          returning m.id
        ),
        hist as (
          insert into price_history (market_id, ts, price)
          select id, ${minute}::timestamptz, np from next where np is not null and np is distinct from old_p
          on conflict (market_id, ts) do update set price = excluded.price
          returning 1
        ),
        runs as (
          -- The price the market held until now, with its last reading (priceReadings in drizzle/events.ts).
          insert into price_readings (market_id, at, price)
          select id, old_pu, old_p from next where np is distinct from old_p and old_p is not null and old_pu is not null
          returning 1
        )
        select id, np as p, v, gid, first, (np is not null and np is distinct from old_p) as moved,
               (v <> old_v or v24 <> old_v24 or st <> old_st) as totals
        from next where np is distinct from old_p or v <> old_v or v24 <> old_v24 or st <> old_st or ch is distinct from old_ch`,
    tx,
  );
  const groups = [...new Set(rows.filter((r) => r.totals).map((r) => r.gid))];
  if (groups.length > 0) await refreshGroupTotals(deps.dbh, tx, groups);
  // A tracked market's change is ours (a reading 23–25 h old), which moves with time: its groups are re-derived every cycle.
  if (opts.derive !== false) {
    const derived = opts.tracked ? await groupsOf(deps.dbh, tx, readings) : [...new Set(rows.map((r) => r.gid))];
    await refreshGroupDerived(deps, tx, derived);
  }
  return rows
    .filter((r) => r.moved && !r.first)
    .map((r) => ({ marketId: r.id, yesPrice: Number(r.p), volume: Number(r.v), timestamp: now }));
}

async function groupsOf(dbh: DbHandle, tx: DbOrTx, readings: PriceReading[]): Promise<string[]> {
  const rows = await dbh.rows<{ gid: string }>(
    sql`select distinct event_group_id as gid from markets where id in ${idsIn(readings.map((r) => r.id))}`,
    tx,
  );
  return rows.map((r) => r.gid);
}

const HOUR = 3_600_000;

/**
 * docs/decisions.md §16.2: a market's `change24h`, as an SQL expression over
 * `markets m` at `now`: ours (its price minus our reading nearest to 24 h
 * ago, 23–25 h old) when the market is tracked and we hold such a reading,
 * else the venue's own change; null when its price is null.
 */
export function marketChangeSql(now: Date, table = 'm') {
  const t = now.getTime();
  const iso = (ms: number) => new Date(ms).toISOString();
  const m = sql.raw(table);
  return sql`(case when ${m}.yes_price is null then null else coalesce(
      case when ${m}.tracked_at >= ${iso(t - TRACKED_WITHIN_MS)}::timestamptz then (
        select round((${m}.yes_price - h.price)::numeric, 6)::float8 from price_history h
        where h.market_id = ${m}.id and h.ts >= ${iso(t - 25 * HOUR)}::timestamptz and h.ts <= ${iso(t - 23 * HOUR)}::timestamptz
        order by abs(extract(epoch from (h.ts - ${iso(t - 24 * HOUR)}::timestamptz))), h.ts desc limit 1
      ) end,
      ${m}.venue_change_24h) end)`;
}

/**
 * Re-derives what a group shows of its markets (docs/decisions.md §16.2,
 * §16.5): `end_date`, the earliest scheduled close still in the future among
 * its active markets, and `change_24h`, the change of its active market that
 * moved most in absolute terms (ties by market id). Writes only what changed.
 */
export async function refreshGroupDerived(deps: Pick<MarketDataDeps, 'dbh' | 'clock'>, tx: DbOrTx, groupIds: readonly string[]) {
  if (groupIds.length === 0) return;
  const now = deps.clock();
  const nowIso = now.toISOString();
  await deps.dbh.rows(
    sql`with ids as (select distinct id from ${idsIn(groupIds)} as x(id)),
        eff as (
          select m.event_group_id as gid, m.id, m.end_date, ${marketChangeSql(now)} as c
          from markets m where m.event_group_id in (select id from ids) and m.status = 'active'
        ),
        best as (
          select distinct on (gid) gid, c from eff where c is not null order by gid, abs(c) desc, id collate "C"
        ),
        ends as (
          select gid, min(end_date) as e from eff where end_date > ${nowIso}::timestamptz group by gid
        ),
        d as (
          select ids.id, ends.e, best.c from ids left join ends on ends.gid = ids.id left join best on best.gid = ids.id
        )
        update event_groups g set end_date = d.e, change_24h = d.c
        from d where g.id = d.id and (g.end_date is distinct from d.e or g.change_24h is distinct from d.c)`,
    tx,
  );
}

/**
 * Groups whose stored `end_date` has passed get their next one (docs/decisions.md
 * §16.2: the earliest close still in the future). The price cycle runs it every
 * minute; the list's `closing` order does not rely on it (queries.ts).
 */
export async function refreshPassedEndDates(deps: Pick<MarketDataDeps, 'db' | 'dbh' | 'clock'>) {
  const passed = await deps.dbh.rows<{ id: string }>(
    sql`select id from event_groups where end_date <= ${deps.clock().toISOString()}::timestamptz`,
  );
  if (passed.length === 0) return 0;
  await writeTx(deps, (tx) =>
    refreshGroupDerived(
      deps,
      tx,
      passed.map((r) => r.id),
    ),
  );
  return passed.length;
}

/**
 * A group's searched words (docs/decisions.md §16.5): its title's, then every
 * market's title and outcome labels (open, closed or resolved), as one
 * 'simple' tsvector without positions; written only when it changed.
 */
export async function refreshGroupSearch(dbh: DbHandle, tx: DbOrTx, groupIds: readonly string[]) {
  if (groupIds.length === 0) return;
  await dbh.rows(
    sql`update event_groups g set search_all = s.a
        from (select g2.id, coalesce(g2.search_title, ''::tsvector)
                            || coalesce(strip(to_tsvector('simple', (select string_agg(m.search_text, ' ') from markets m
                                                                     where m.event_group_id = g2.id))), ''::tsvector) as a
              from event_groups g2 where g2.id in ${idsIn(groupIds)}) s
        where g.id = s.id and g.search_all is distinct from s.a`,
    tx,
  );
}

/** totalVolume = sum of the group's market volumes, volume24h = its active markets' (§16.5); marketCount = its markets. */
export async function refreshGroupTotals(dbh: DbHandle, tx: DbOrTx, groupIds: readonly string[]) {
  if (groupIds.length === 0) return;
  await dbh.rows(
    sql`update event_groups g set total_volume = s.v, volume_24h = s.v24, market_count = s.n
        from (select event_group_id, coalesce(sum(volume), 0)::float8 as v,
                     coalesce(sum(volume_24h) filter (where status = 'active'), 0)::float8 as v24, count(*)::int as n
              from markets where event_group_id in ${idsIn(groupIds)} group by event_group_id) s
        where g.id = s.event_group_id and (g.total_volume <> s.v or g.volume_24h <> s.v24 or g.market_count <> s.n)`,
    tx,
  );
}

/** Records the outcome of a venue's catalogue or price run (docs/decisions.md §11.4 freshness). */
export async function recordVenueRun(
  deps: Pick<MarketDataDeps, 'dbh' | 'clock'>,
  venue: Venue,
  kind: 'catalogue' | 'prices',
  ok: boolean,
  extra: { fullListedAt?: Date; watermark?: Date } = {},
) {
  const now = deps.clock().toISOString();
  const okAt = kind === 'catalogue' && ok ? sql`${now}::timestamptz` : sql`null`;
  const failedCatalogue = kind === 'catalogue' ? sql`${!ok}` : sql`null`;
  const failedPrices = kind === 'prices' ? sql`${!ok}` : sql`null`;
  const full = extra.fullListedAt ? sql`${extra.fullListedAt.toISOString()}::timestamptz` : sql`null`;
  const watermark = extra.watermark ? sql`${extra.watermark.toISOString()}::timestamptz` : sql`null`;
  await deps.dbh.rows(
    sql`insert into venue_sync_state (venue, catalogue_ok_at, catalogue_failed, prices_failed, full_listed_at, watermark, updated_at)
        values (${venue}, ${okAt}, coalesce(${failedCatalogue}::boolean, false), coalesce(${failedPrices}::boolean, false),
                ${full}, ${watermark}, ${now}::timestamptz)
        on conflict (venue) do update set
          catalogue_ok_at = coalesce(excluded.catalogue_ok_at, venue_sync_state.catalogue_ok_at),
          catalogue_failed = coalesce(${failedCatalogue}::boolean, venue_sync_state.catalogue_failed),
          prices_failed = coalesce(${failedPrices}::boolean, venue_sync_state.prices_failed),
          full_listed_at = coalesce(excluded.full_listed_at, venue_sync_state.full_listed_at),
          watermark = coalesce(excluded.watermark, venue_sync_state.watermark),
          updated_at = excluded.updated_at`,
  );
}

export interface VenueState {
  venue: Venue;
  watermark: Date | null;
  fullListedAt: Date | null;
  catalogueOkAt: Date | null;
  catalogueFailed: boolean;
  pricesFailed: boolean;
  seriesAt: Date | null;
}

const date = (v: string | Date | null) => (v === null ? null : new Date(v));

export async function readVenueStates(dbh: DbHandle): Promise<Map<Venue, VenueState>> {
  const rows = await dbh.rows<{
    venue: Venue;
    watermark: string | Date | null;
    full_listed_at: string | Date | null;
    catalogue_ok_at: string | Date | null;
    catalogue_failed: boolean;
    prices_failed: boolean;
    series_at: string | Date | null;
  }>(sql`select venue, watermark, full_listed_at, catalogue_ok_at, catalogue_failed, prices_failed, series_at from venue_sync_state`);
  return new Map(
    rows.map((r) => [
      r.venue,
      {
        venue: r.venue,
        watermark: date(r.watermark),
        fullListedAt: date(r.full_listed_at),
        catalogueOkAt: date(r.catalogue_ok_at),
        catalogueFailed: r.catalogue_failed,
        pricesFailed: r.prices_failed,
        seriesAt: date(r.series_at),
      },
    ]),
  );
}
