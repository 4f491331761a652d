import { sql } from 'drizzle-orm';
import { UpstreamError } from '../../lib/http.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { Category, CatalogueGroup, CataloguePage, Venue } from '../../venues/catalogue.js';
import { getGammaCatalogueEvent, listGammaEventsKeyset, listGammaNewMarkets } from '../../venues/polymarket/gamma.js';
import {
  getKalshiCatalogueEvent,
  getKalshiSeriesCategories,
  listKalshiEventPages,
  listKalshiMarketsCreatedSince,
} from '../../venues/kalshi/trade-api.js';
import type { DbOrTx } from '../../db/index.js';
import type { OnPriceChanges } from './changes.js';
import { searchText } from './search-text.js';
import { assignSlugs, slugPatterns } from './slugs.js';
import {
  applyReadings,
  idsIn,
  json,
  readVenueStates,
  recordVenueRun,
  refreshGroupDerived,
  refreshGroupSearch,
  refreshGroupTotals,
  VENUES,
  writeTx,
  type MarketDataDeps,
  type VenueState,
} from './store.js';

/**
 * The catalogue (docs/decisions.md §11.1, docs/venues.md "What we call"):
 * which groups and markets exist, their titles, categories and status.
 *
 * Every run (events-sync, 5 min) reads what is new: Gamma's keyset listing
 * newest first until a page holds only known ids; Kalshi's events updated
 * since a stored watermark (`min_updated_ts`). At most hourly, and on a
 * manual run, a full reconcile lists every open event of both venues; the
 * groups it no longer lists are re-read one by one (a bounded number per
 * run) and closed or resolved as the venue says. Pages are mapped, deduped
 * and written one at a time, so memory does not grow with the catalogue.
 */

/** docs/decisions.md §11.1: groups that close or resolve change status within 60 minutes. */
export const FULL_RECONCILE_MS = 60 * 60_000;
/** Groups that left the listing re-read per venue and run (the rest follow in the next runs). */
export const REREAD_PER_RUN = 100;
const REREAD_CONCURRENCY = 4;
/** The Kalshi series list (≈ 19 MB) is refreshed at most daily (docs/venues.md "What we call"). */
const SERIES_REFRESH_MS = 24 * 60 * 60_000;
/** Overlap of successive Kalshi increments, so an event updated during a pass is not missed. */
const WATERMARK_OVERLAP_MS = 5 * 60_000;

export interface CatalogueOptions {
  /** Full reconcile of both venues now (the manual run-now does one). */
  full?: boolean;
  /** Each page's price changes, as they are written (the job publishes them and checks alerts). */
  onChanges?: OnPriceChanges;
}

export interface CatalogueOutcome {
  items: number;
  /** Venue rows (events, or markets inside them) skipped as malformed, both venues. */
  skipped: number;
  /** One error per venue that failed; the other venue's data is written all the same. */
  failures: string[];
}

/** Both venues, independently: a venue that fails keeps its last good data (docs/decisions.md §11.4). */
export async function syncCatalogue(deps: MarketDataDeps, opts: CatalogueOptions = {}): Promise<CatalogueOutcome> {
  await backfillSearchTexts(deps);
  const states = await readVenueStates(deps.dbh);
  const settled = await Promise.allSettled(VENUES.map((v) => syncVenue(deps, v, states.get(v), opts)));
  let items = 0;
  let skipped = 0;
  const failures: string[] = [];
  for (const [i, r] of settled.entries()) {
    const venue = VENUES[i];
    if (r.status === 'fulfilled') {
      items += r.value.items;
      skipped += r.value.skipped;
    } else {
      failures.push(`${venue}: ${r.reason instanceof Error ? r.reason.message : String(r.reason)}`);
      deps.log.error({ venue, err: r.reason }, 'catalogue sync failed; keeping its last good data');
      await recordVenueRun(deps, venue, 'catalogue', false).catch(() => {});
    }
  }
  return { items, skipped, failures };
}

async function syncVenue(
  deps: MarketDataDeps,
  venue: Venue,
  state: VenueState | undefined,
  opts: CatalogueOptions,
): Promise<{ items: number; skipped: number }> {
  const started = deps.clock();
  const full = opts.full === true || !state?.fullListedAt || started.getTime() - state.fullListedAt.getTime() >= FULL_RECONCILE_MS;
  let items = 0;
  let received = 0;
  let complete = false;
  let skipped = 0;
  const write = async (page: CataloguePage) => {
    skipped += page.skipped;
    received += page.received;
    items += page.groups.length;
    const changes = await writeGroups(deps, page.groups, page.malformedGroupIds);
    if (changes.length > 0) await opts.onChanges?.(changes);
  };

  if (venue === 'polymarket') {
    for await (const page of listGammaEventsKeyset(deps.venues.gamma)) {
      // An increment stops at the first page that names only groups we already hold.
      const known = full ? 0 : await countKnown(deps, page.ids);
      await write(page);
      if (page.final) complete = true;
      if (!full && page.ids.length > 0 && known === page.ids.length) break;
    }
    if (!full) {
      const fresh = await syncNewGammaMarkets(deps, opts);
      items += fresh.items;
      skipped += fresh.skipped;
    }
  } else {
    const categories = await kalshiCategories(deps, state);
    const since = state?.watermark ? new Date(state.watermark.getTime() - WATERMARK_OVERLAP_MS) : undefined;
    const listing = full || !since ? { status: 'open' as const } : { minUpdated: since };
    for await (const page of listKalshiEventPages(deps.venues.kalshi, categories, listing)) {
      await write(page);
      if (page.final) complete = true;
    }
    if (!full && since) {
      const fresh = await syncNewKalshiMarkets(deps, since, categories, opts);
      items += fresh.items;
      skipped += fresh.skipped;
      // The watermark moves only when both listings reached their end.
      if (!fresh.complete) complete = false;
    }
  }
  if (skipped > 0) deps.log.warn({ venue, skipped }, 'malformed venue rows skipped');

  let fullListedAt: Date | undefined;
  if (full && complete) {
    // An empty listing while we hold open groups looks like an outage, not a mass close.
    const [held] = await deps.dbh.rows<{ n: number }>(
      sql`select count(*)::int as n from event_groups where venue = ${venue} and status = 'active'`,
    );
    if (received === 0 && Number(held?.n ?? 0) > 0) deps.log.warn({ venue }, 'full listing came back empty; not closing groups this run');
    else fullListedAt = started;
  }
  await recordVenueRun(deps, venue, 'catalogue', true, {
    fullListedAt,
    // Only a listing that went to its end moves the watermark.
    watermark: venue === 'kalshi' && complete ? started : undefined,
  });
  const reread = await rereadLeftGroups(deps, venue, opts);
  return { items: items + reread.items, skipped: skipped + reread.skipped };
}

/** Parent groups re-read per venue and increment because they gained markets (the rest follow in the next runs). */
export const NEW_MARKET_GROUPS_PER_RUN = 100;

/**
 * docs/venues.md "What we call", new markets inside known groups (every
 * increment): Gamma `/markets/keyset` newest first down to the highest market
 * id we hold; each new market's event is re-read by id and written, so a
 * market added to an event we already list appears within one run.
 */
async function syncNewGammaMarkets(deps: MarketDataDeps, opts: CatalogueOptions): Promise<{ items: number; skipped: number }> {
  const [top] = await deps.dbh.rows<{ id: string | null }>(
    sql`select max(venue_market_id::numeric)::text as id from markets where venue = 'polymarket' and venue_market_id ~ '^[0-9]{1,20}$'`,
  );
  if (!top?.id) return { items: 0, skipped: 0 };
  const fresh = await listGammaNewMarkets(deps.venues.gamma, BigInt(top.id));
  const unknown = await unknownMarkets(
    deps,
    fresh.markets.map((m) => ({ id: `pm-${m.id}`, group: m.eventId })),
  );
  const groups = [...new Set(unknown)].slice(0, NEW_MARKET_GROUPS_PER_RUN);
  const reread = await rereadGroups(deps, groups, (id) => getGammaCatalogueEvent(deps.venues.gamma, id), opts);
  if (groups.length > 0) deps.log.info({ venue: 'polymarket', groups: groups.length }, 'groups with new markets re-read');
  return { items: reread.items, skipped: fresh.skipped + reread.skipped };
}

/**
 * docs/venues.md "What we call" and §8 E3, Kalshi: `GET /markets?min_created_ts=W`
 * (W = the last complete pass − 5 minutes), then each event that gained a
 * market we do not hold is re-read with `GET /events/{event_ticker}`.
 */
async function syncNewKalshiMarkets(
  deps: MarketDataDeps,
  since: Date,
  categories: ReadonlyMap<string, Category>,
  opts: CatalogueOptions,
): Promise<{ items: number; skipped: number; complete: boolean }> {
  const fresh = await listKalshiMarketsCreatedSince(deps.venues.kalshi, since);
  const unknown = await unknownMarkets(
    deps,
    fresh.markets.map((m) => ({ id: `ks-${m.ticker}`, group: m.eventTicker })),
  );
  const all = [...new Set(unknown)];
  const groups = all.slice(0, NEW_MARKET_GROUPS_PER_RUN);
  const reread = await rereadGroups(deps, groups, (t) => getKalshiCatalogueEvent(deps.venues.kalshi, t, categories), opts);
  if (groups.length > 0) deps.log.info({ venue: 'kalshi', groups: groups.length }, 'groups with new markets re-read');
  return { items: reread.items, skipped: fresh.skipped + reread.skipped, complete: fresh.complete && all.length === groups.length };
}

/** The venue group ids of the markets we do not hold yet. */
async function unknownMarkets(deps: MarketDataDeps, markets: Array<{ id: string; group: string }>): Promise<string[]> {
  if (markets.length === 0) return [];
  const held = await deps.dbh.rows<{ id: string }>(sql`select id from markets where id in ${idsIn(markets.map((m) => m.id))}`);
  const known = new Set(held.map((r) => r.id));
  return markets.filter((m) => !known.has(m.id)).map((m) => m.group);
}

/** Re-reads groups by their venue id and writes them as the catalogue does; a failed read waits for the next run. */
async function rereadGroups(
  deps: MarketDataDeps,
  venueIds: string[],
  read: (venueId: string) => Promise<CatalogueGroup | null | undefined>,
  opts: CatalogueOptions,
): Promise<{ items: number; skipped: number }> {
  if (venueIds.length === 0) return { items: 0, skipped: 0 };
  const found: CatalogueGroup[] = [];
  let unreadable = 0;
  await mapLimit(venueIds, REREAD_CONCURRENCY, async (id) => {
    try {
      const r = await read(id);
      if (r) found.push(r);
      else if (r === null) unreadable++;
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      deps.log.warn({ group: id, err: err.message }, 'group re-read failed; next run');
    }
  });
  const changes = await writeGroups(deps, found);
  if (changes.length > 0) await opts.onChanges?.(changes);
  return { items: found.length, skipped: unreadable };
}

async function countKnown(deps: MarketDataDeps, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const [r] = await deps.dbh.rows<{ n: number }>(sql`select count(*)::int as n from event_groups where id in ${idsIn(ids)}`);
  return Number(r?.n ?? 0);
}

/**
 * docs/venues.md "Categories", Kalshi: `GET /series` (one un-paged answer)
 * stored, refreshed at most daily; a failed refresh keeps the stored map.
 */
async function kalshiCategories(deps: MarketDataDeps, state: VenueState | undefined): Promise<Map<string, Category>> {
  const now = deps.clock();
  if (!state?.seriesAt || now.getTime() - state.seriesAt.getTime() >= SERIES_REFRESH_MS) {
    try {
      const { categories, skipped } = await getKalshiSeriesCategories(deps.venues.kalshi);
      if (skipped > 0) deps.log.warn({ skipped }, 'malformed Kalshi series skipped');
      const rows = [...categories].map(([t, c]) => ({ t, c }));
      await deps.db.transaction(async (tx) => {
        for (let i = 0; i < rows.length; i += 5000) {
          await deps.dbh.rows(
            sql`insert into kalshi_series (ticker, category, updated_at)
                select t, c, ${now.toISOString()}::timestamptz from json_to_recordset(${json(rows.slice(i, i + 5000))}) as x(t text, c text)
                on conflict (ticker) do update set category = excluded.category, updated_at = excluded.updated_at
                where kalshi_series.category <> excluded.category`,
            tx,
          );
        }
        await deps.dbh.rows(
          sql`insert into venue_sync_state (venue, series_at) values ('kalshi', ${now.toISOString()}::timestamptz)
              on conflict (venue) do update set series_at = excluded.series_at`,
          tx,
        );
      });
      return categories;
    } catch (err) {
      deps.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'Kalshi series refresh failed; using the stored categories');
    }
  }
  const rows = await deps.dbh.rows<{ ticker: string; category: Category }>(sql`select ticker, category from kalshi_series`);
  return new Map(rows.map((r) => [r.ticker, r.category]));
}

/**
 * Writes one page of groups in one transaction: slugs, groups, markets,
 * then the catalogue's prices (applyReadings: history and changes). A group
 * we have never held is written only while it is active (an increment also
 * lists events that closed long ago). Groups named by malformed rows are
 * still listed: their `last_seen_at` moves so they are not closed.
 */
export async function writeGroups(deps: MarketDataDeps, groups: CatalogueGroup[], malformedIds: string[] = []) {
  if (groups.length === 0 && malformedIds.length === 0) return [];
  const now = deps.clock().toISOString();
  return writeTx(deps, async (tx) => {
    if (malformedIds.length > 0) {
      await deps.dbh.rows(sql`update event_groups set last_seen_at = ${now}::timestamptz where id in ${idsIn(malformedIds)}`, tx);
    }
    if (groups.length === 0) return [];
    const ids = groups.map((g) => g.id);
    const slugs = [...new Set(groups.map((g) => g.slug))];
    const existing = await deps.dbh.rows<{ id: string; slug: string }>(
      sql`select id, slug from event_groups
          where id in ${idsIn(ids)} or slug in ${idsIn(slugs)}
             or slug like any (select json_array_elements_text(${json(slugPatterns(groups))}))`,
      tx,
    );
    const held = new Set(existing.map((e) => e.id));
    const kept = groups.filter((g) => g.status === 'active' || held.has(g.id));
    if (kept.length === 0) return [];
    const assigned = assignSlugs(kept, existing);
    for (const r of assigned.renames) {
      await deps.dbh.rows(sql`update event_groups set slug = ${r.slug}, updated_at = ${now}::timestamptz where id = ${r.id}`, tx);
    }
    await upsertGroups(deps, tx, kept, assigned.slugs, now);
    await refreshGroupSearch(
      deps.dbh,
      tx,
      kept.map((g) => g.id),
    );
    const readings = kept.flatMap((g) =>
      g.markets.map((m) => ({
        id: m.id,
        p: m.yesPrice,
        v: m.volume,
        v24: m.volume24h,
        st: m.status,
        res: m.result,
        rl: m.resolvedOutcome,
        ch: m.venueChange24h,
      })),
    );
    const changes = await applyReadings(deps, tx, readings, { yieldToTracked: true, derive: false });
    const keptIds = kept.map((g) => g.id);
    await refreshGroupTotals(deps.dbh, tx, keptIds);
    await refreshGroupDerived(deps, tx, keptIds);
    return changes;
  });
}

async function upsertGroups(deps: MarketDataDeps, tx: DbOrTx, groups: CatalogueGroup[], slugs: Map<string, string>, now: string) {
  const rows = groups.map((g) => ({
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
    vca: g.createdAt?.toISOString() ?? null,
    words: searchText(g.title),
  }));
  // venue_created_at (docs/decisions.md §16.5): Gamma's `createdAt` as read; Kalshi's is the earliest market
  // `open_time` ever seen, since a re-read may leave out markets settled before the venue's historical cutoff.
  await deps.dbh.rows(
    sql`insert into event_groups (id, venue, venue_event_id, slug, title, description, category, status, image_url, series_ticker,
                                  venue_created_at, search_title, created_at, updated_at, last_seen_at)
        select id, venue, venue_event_id, slug, title, description, category, status, image_url, series_ticker, vca,
               strip(to_tsvector('simple', words)), ${now}::timestamptz, ${now}::timestamptz, ${now}::timestamptz
        from json_to_recordset(${json(rows)}) as x(id text, venue text, venue_event_id text, slug text, title text,
             description text, category text, status text, image_url text, series_ticker text, vca timestamptz, words text)
        on conflict (id) do update set slug = excluded.slug, title = excluded.title, description = excluded.description,
          search_title = excluded.search_title,
          category = excluded.category, status = excluded.status, image_url = excluded.image_url,
          series_ticker = excluded.series_ticker, last_seen_at = excluded.last_seen_at,
          venue_created_at = case when excluded.venue = 'kalshi' then least(event_groups.venue_created_at, excluded.venue_created_at)
                                  else coalesce(excluded.venue_created_at, event_groups.venue_created_at) end,
          updated_at = case when (event_groups.slug, event_groups.title, event_groups.description, event_groups.category,
                                  event_groups.status, event_groups.image_url)
                                 is distinct from (excluded.slug, excluded.title, excluded.description, excluded.category,
                                  excluded.status, excluded.image_url)
                            then excluded.updated_at else event_groups.updated_at end`,
    tx,
  );
  const markets = groups.flatMap((g) =>
    g.markets.map((m) => ({
      id: m.id,
      gid: g.id,
      venue: m.venue,
      vid: m.venueMarketId,
      title: m.title,
      outcome: m.outcome,
      token: m.tokenId,
      cid: m.conditionId,
      ends: m.endDate?.toISOString() ?? null,
      words: searchText(m.title, ...m.outcomeLabels),
    })),
  );
  if (markets.length === 0) return;
  // Prices, volumes, status and the venue's 24 h change go through applyReadings, which detects changes and writes history.
  await deps.dbh.rows(
    sql`insert into markets (id, event_group_id, venue, venue_market_id, title, outcome, yes_token_id, condition_id, end_date, search_text,
                         created_at, updated_at)
        select distinct on (id) id, gid, venue, vid, title, outcome, token, cid, ends, words, ${now}::timestamptz, ${now}::timestamptz
        from json_to_recordset(${json(markets)})
             as x(id text, gid text, venue text, vid text, title text, outcome text, token text, cid text, ends timestamptz, words text)
        on conflict (id) do update set event_group_id = excluded.event_group_id, title = excluded.title, outcome = excluded.outcome,
          yes_token_id = coalesce(excluded.yes_token_id, markets.yes_token_id),
          condition_id = coalesce(excluded.condition_id, markets.condition_id),
          end_date = excluded.end_date, search_text = excluded.search_text
        where (markets.event_group_id, markets.title, markets.outcome, markets.yes_token_id, markets.condition_id, markets.end_date,
               markets.search_text)
              is distinct from (excluded.event_group_id, excluded.title, excluded.outcome, coalesce(excluded.yes_token_id, markets.yes_token_id),
                                coalesce(excluded.condition_id, markets.condition_id), excluded.end_date, excluded.search_text)`,
    tx,
  );
}

/** Closes groups the venue no longer knows (404) and their still-active markets. */
async function closeGroups(deps: MarketDataDeps, ids: string[]) {
  if (ids.length === 0) return;
  const now = deps.clock().toISOString();
  await writeTx(deps, (tx) =>
    deps.dbh.rows(
      sql`with gone as (
            update event_groups set status = 'closed', updated_at = ${now}::timestamptz, last_seen_at = ${now}::timestamptz
            where id in ${idsIn(ids)} and status = 'active'
            returning id
          )
          update markets set status = 'closed', updated_at = ${now}::timestamptz
          where event_group_id in (select id from gone) and status = 'active'`,
      tx,
    ),
  );
}

/**
 * Groups still active here that the last complete listing did not name:
 * re-read by id (Gamma `GET /events/{id}`, Kalshi `GET /events/{ticker}`),
 * oldest first and at most REREAD_PER_RUN a run, then written as the venue
 * says (closed, resolved, or still open); a 404 closes them. A re-read that
 * fails leaves the group as it is for the next run.
 */
async function rereadLeftGroups(deps: MarketDataDeps, venue: Venue, opts: CatalogueOptions): Promise<{ items: number; skipped: number }> {
  const [state] = await deps.dbh.rows<{ at: string | Date | null }>(
    sql`select full_listed_at as at from venue_sync_state where venue = ${venue}`,
  );
  if (!state?.at) return { items: 0, skipped: 0 };
  const left = await deps.dbh.rows<{ id: string; venue_event_id: string }>(
    sql`select id, venue_event_id from event_groups
        where venue = ${venue} and status = 'active' and last_seen_at < ${new Date(state.at).toISOString()}::timestamptz
        order by last_seen_at, id limit ${REREAD_PER_RUN}`,
  );
  if (left.length === 0) return { items: 0, skipped: 0 };
  const categories = venue === 'kalshi' ? await kalshiCategories(deps, { seriesAt: deps.clock() } as VenueState) : undefined;
  const gone: string[] = [];
  const found: CatalogueGroup[] = [];
  const unreadable: string[] = [];
  let failed = 0;
  await mapLimit(left, REREAD_CONCURRENCY, async (g) => {
    try {
      const r =
        venue === 'polymarket'
          ? await getGammaCatalogueEvent(deps.venues.gamma, g.venue_event_id)
          : await getKalshiCatalogueEvent(deps.venues.kalshi, g.venue_event_id, categories!);
      if (r === undefined) gone.push(g.id);
      else if (r === null) unreadable.push(g.id);
      else found.push(r);
    } catch (err) {
      failed++;
      if (!(err instanceof UpstreamError)) throw err;
    }
  });
  await closeGroups(deps, gone);
  const changes = await writeGroups(deps, found, unreadable);
  if (changes.length > 0) await opts.onChanges?.(changes);
  deps.log.info({ venue, reread: left.length, closed: gone.length, failed }, 'groups that left the listing re-read');
  // A re-read event that failed parsing is one skipped row.
  return { items: found.length + gone.length, skipped: unreadable.length };
}

/** Groups given search texts per statement, and at most per run, by backfillSearchTexts. */
const SEARCH_BACKFILL_BATCH = 2000;
const SEARCH_BACKFILL_PER_RUN = 20_000;

/**
 * Groups stored before search existed (docs/decisions.md §16.1) get their
 * search words from what we hold: titles, the priced outcome label and, for
 * a Yes/No market, "No". The venue's other label of a non-Yes/No market
 * arrives with the group's next catalogue write. Returns the groups done.
 */
export async function backfillSearchTexts(deps: Pick<MarketDataDeps, 'db' | 'dbh'>): Promise<number> {
  let done = 0;
  while (done < SEARCH_BACKFILL_PER_RUN) {
    const groups = await deps.dbh.rows<{ id: string; title: string }>(
      sql`select id, title from event_groups where search_all is null order by id limit ${SEARCH_BACKFILL_BATCH}`,
    );
    if (groups.length === 0) break;
    const ids = groups.map((g) => g.id);
    const markets = await deps.dbh.rows<{ id: string; title: string; outcome: string }>(
      sql`select id, title, outcome from markets where event_group_id in ${idsIn(ids)} and search_text = ''`,
    );
    const g = groups.map((r) => ({ id: r.id, words: searchText(r.title) }));
    const m = markets.map((r) => ({ id: r.id, words: searchText(r.title, r.outcome, r.outcome === 'Yes' ? 'No' : '') }));
    await writeTx(deps, async (tx) => {
      await deps.dbh.rows(
        sql`update event_groups e set search_title = strip(to_tsvector('simple', x.words))
            from json_to_recordset(${json(g)}) as x(id text, words text) where e.id = x.id`,
        tx,
      );
      if (m.length > 0) {
        await deps.dbh.rows(
          sql`update markets k set search_text = x.words
              from json_to_recordset(${json(m)}) as x(id text, words text) where k.id = x.id and k.search_text = ''`,
          tx,
        );
      }
      await refreshGroupSearch(deps.dbh, tx, ids);
    });
    done += groups.length;
  }
  return done;
}
