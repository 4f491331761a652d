import { sql } from 'drizzle-orm';
import { UpstreamError } from '../../lib/http.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { CatalogueGroup } from '../../venues/catalogue.js';
import { readClobPrices } from '../../venues/polymarket/clob.js';
import { getGammaCatalogueEvent } from '../../venues/polymarket/gamma.js';
import { getKalshiMarketsByTickers } from '../../venues/kalshi/trade-api.js';
import type { Venue } from '../../venues/catalogue.js';
import type { OnPriceChanges } from './changes.js';
import { writeGroups } from './catalogue.js';
import {
  applyReadings,
  idsIn,
  json,
  recordVenueRun,
  refreshPassedEndDates,
  VENUES,
  writeTx,
  type MarketDataDeps,
  type PriceReading,
} from './store.js';

/**
 * Prices of the tracked markets (docs/decisions.md §11.2, docs/venues.md
 * "Tracked markets"): every 60 s through the venues' batch endpoints
 * (CLOB `POST /midpoints`, `/spreads`, `/last-trades-prices` ≤ 500 tokens;
 * Kalshi `GET /markets?tickers=` 100 at a time), written set-based.
 */

/** How long a group stays tracked after its detail or chart was read. */
export const READ_TRACKS_FOR_MS = 24 * 60 * 60_000;
/** Price readings written per statement. */
const WRITE_CHUNK = 5000;

export interface TrackedMarket {
  id: string;
  venue: Venue;
  venue_market_id: string;
  yes_token_id: string | null;
}

/**
 * The tracked set: active markets with an active price alert, with a
 * `market:<id>` subscriber (deps.subscribedMarketIds), read through
 * `GET /markets/:id` in the last 24 h (docs/decisions.md §16.3), of a group read in the
 * last 24 h, of a group on anyone's watchlist (docs/decisions.md §17.1), or
 * of the PRICE_TRACK_TOP groups by stored 24 h volume. The watched groups
 * are read with a loose index scan of watchlist_group_idx (one probe per
 * distinct group, not one row per watcher).
 */
export async function selectTrackedMarkets(deps: MarketDataDeps): Promise<TrackedMarket[]> {
  const subscribed = deps.subscribedMarketIds ? await deps.subscribedMarketIds() : [];
  const readSince = new Date(deps.clock().getTime() - READ_TRACKS_FOR_MS).toISOString();
  return deps.dbh.rows<TrackedMarket>(
    sql`with recursive watched(id) as (
          (select event_group_id from watchlist order by event_group_id limit 1)
          union all
          select (select w.event_group_id from watchlist w where w.event_group_id > watched.id order by w.event_group_id limit 1)
          from watched where watched.id is not null
        ),
        groups as (
          (select id from event_groups where status = 'active' order by volume_24h desc, id limit ${deps.config.PRICE_TRACK_TOP})
          union
          select id from event_groups where read_at >= ${readSince}::timestamptz
          union
          select id from watched where id is not null
        ),
        ids as (
          select m.id from markets m join groups g on g.id = m.event_group_id
          union
          select id from markets where read_at >= ${readSince}::timestamptz
          union
          select market_id from price_alerts where active
          union
          select json_array_elements_text(${json(subscribed)})
        )
        select m.id, m.venue, m.venue_market_id, m.yes_token_id
        from markets m join ids on ids.id = m.id
        where m.status = 'active'
        order by m.id`,
  );
}

/**
 * Polymarket: the display rule over the CLOB batch answers; absent everywhere → keeps its last price (null if none).
 * `bookless`: the markets absent from `/midpoints` (no book: closed, resolved, or no orders at all).
 */
async function readPolymarket(
  deps: MarketDataDeps,
  markets: TrackedMarket[],
): Promise<{ readings: PriceReading[]; bookless: string[]; skipped: number }> {
  const withToken = markets.filter((m) => m.yes_token_id);
  if (withToken.length === 0) return { readings: [], bookless: [], skipped: 0 };
  const { quotes, skipped } = await readClobPrices(
    deps.venues.clob,
    withToken.map((m) => m.yes_token_id!),
  );
  if (skipped > 0) deps.log.warn({ skipped }, 'malformed CLOB price entries skipped');
  const bookless = withToken.filter((m) => quotes.get(m.yes_token_id!)?.midpoint === undefined).map((m) => m.id);
  const readings = withToken.map((m): PriceReading => {
    const price = quotes.get(m.yes_token_id!)?.price;
    return price === undefined ? { id: m.id, p: null, keep: true } : { id: m.id, p: price };
  });
  return { readings, bookless, skipped };
}

/** Watched groups re-read per price cycle because a market's book went away, and how soon one may be re-read again. */
export const BOOKLESS_REREAD_PER_RUN = 20;
const BOOKLESS_REREAD_EVERY_MS = 4 * 60_000;

/**
 * docs/decisions.md §17.2: a tracked market's resolution reaches its watchers
 * within 5 minutes. Kalshi's batch answer carries a market's status; the
 * CLOB only stops quoting a market that closed or resolved. So the watched
 * Polymarket groups with a tracked market absent from `/midpoints` are
 * re-read from Gamma (`GET /events/{id}`, the catalogue's re-read call), at
 * most BOOKLESS_REREAD_PER_RUN a cycle and each at most every 4 minutes
 * (a catalogue write moves its `last_seen_at`), and written as the
 * catalogue writes them (status, settlement, result).
 */
async function rereadBooklessWatched(deps: MarketDataDeps, bookless: string[], onChanges?: OnPriceChanges): Promise<number> {
  if (bookless.length === 0) return 0;
  const before = new Date(deps.clock().getTime() - BOOKLESS_REREAD_EVERY_MS).toISOString();
  const groups = await deps.dbh.rows<{ id: string; venue_event_id: string }>(
    sql`select g.id, g.venue_event_id from event_groups g
        where g.id in (select m.event_group_id from markets m where m.id in ${idsIn(bookless)})
          and g.status = 'active' and g.last_seen_at < ${before}::timestamptz
          and exists (select 1 from watchlist w where w.event_group_id = g.id)
        order by g.last_seen_at, g.id limit ${BOOKLESS_REREAD_PER_RUN}`,
  );
  const found: CatalogueGroup[] = [];
  const unreadable: string[] = [];
  await mapLimit(groups, 4, async (g) => {
    try {
      const r = await getGammaCatalogueEvent(deps.venues.gamma, g.venue_event_id);
      if (r) found.push(r);
      else if (r === null) unreadable.push(g.id);
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      deps.log.warn({ group: g.id, err: err.message }, 'watched group re-read failed; next cycle');
    }
  });
  const changes = await writeGroups(deps, found, unreadable);
  if (changes.length > 0) await onChanges?.(changes);
  return found.length;
}

/** Kalshi: `GET /markets?tickers=` (price, volumes, status); tickers the venue did not return are left for the catalogue. */
async function readKalshi(deps: MarketDataDeps, markets: TrackedMarket[]): Promise<{ readings: PriceReading[]; skipped: number }> {
  if (markets.length === 0) return { readings: [], skipped: 0 };
  const { quotes, skipped } = await getKalshiMarketsByTickers(
    deps.venues.kalshi,
    markets.map((m) => m.venue_market_id),
  );
  if (skipped > 0) deps.log.warn({ skipped }, 'malformed Kalshi markets skipped');
  const readings = [...quotes.values()].map((q) => ({
    id: q.marketId,
    p: q.yesPrice,
    v: q.volume,
    v24: q.volume24h,
    st: q.status,
    res: q.result,
    rl: q.resolvedOutcome,
    ch: q.venueChange24h,
  }));
  return { readings, skipped };
}

export interface PriceCycleOutcome {
  /** Markets read. */
  items: number;
  /** Venue entries (a token's price, a market) skipped as malformed. */
  skipped: number;
  failures: string[];
}

/** One price cycle over the tracked set; each venue on its own (a failure keeps that venue's last prices). */
export async function refreshTrackedPrices(deps: MarketDataDeps, opts: { onChanges?: OnPriceChanges } = {}): Promise<PriceCycleOutcome> {
  const tracked = await selectTrackedMarkets(deps);
  const failed: Array<string | undefined> = [];
  let items = 0;
  let skipped = 0;
  await Promise.all(
    VENUES.map(async (venue, i) => {
      const mine = tracked.filter((m) => m.venue === venue);
      try {
        const read = venue === 'polymarket' ? await readPolymarket(deps, mine) : { ...(await readKalshi(deps, mine)), bookless: [] };
        const { readings } = read;
        skipped += read.skipped;
        for (let i = 0; i < readings.length; i += WRITE_CHUNK) {
          const chunk = readings.slice(i, i + WRITE_CHUNK);
          const changes = await writeTx(deps, (tx) => applyReadings(deps, tx, chunk, { tracked: true }));
          if (changes.length > 0) await opts.onChanges?.(changes);
        }
        items += readings.length;
        await rereadBooklessWatched(deps, read.bookless, opts.onChanges);
        await recordVenueRun(deps, venue, 'prices', true);
      } catch (err) {
        failed[i] = `${venue}: ${err instanceof Error ? err.message : String(err)}`;
        deps.log.error({ venue, err }, 'price refresh failed; keeping its last prices');
        await recordVenueRun(deps, venue, 'prices', false).catch(() => {});
      }
    }),
  );
  // Closes scheduled in the last minute: those groups show their next one (docs/decisions.md §16.2).
  await refreshPassedEndDates(deps);
  return { items, skipped, failures: failed.filter((f) => f !== undefined) };
}
