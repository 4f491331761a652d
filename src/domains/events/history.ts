import { sql } from 'drizzle-orm';
import { UpstreamError } from '../../lib/http.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { HistoryPoint } from '../../venues/catalogue.js';
import { CLOB_HISTORY_BATCH_LIMIT, getClobPriceHistories } from '../../venues/polymarket/clob.js';
import { getKalshiCandles } from '../../venues/kalshi/trade-api.js';
import { idsIn, json, type MarketDataDeps } from './store.js';

/**
 * Chart history (docs/decisions.md §11.5): our own stored points, from the
 * first time a market is tracked; minute points for 48 h, hourly points
 * after that, kept (at least a year: nothing deletes them while the market
 * exists). The venue backfill seeds only newly tracked markets, with what the
 * venue still has (≈ 31 days on the CLOB, nothing for resolved markets).
 */
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const RETENTION = { minuteForMs: 2 * DAY_MS } as const;

/** Markets backfilled per price-sync run; the rest follow on the next runs. */
export const BACKFILL_PER_RUN = 200;
const BACKFILL_CONCURRENCY = 4;
/** Kalshi candlesticks are read for this long before now (hourly: 720 candles). */
const KALSHI_BACKFILL_DAYS = 30;

/**
 * Keeps the last point of each hour for buckets older than 48 h. Only the
 * hours that aged past the cutoff since `since` (the caller's watermark:
 * price-sync passes its last successful run) are scanned, so a cycle touches
 * a few minutes' worth of rows. Without `since` everything is compacted.
 */
export async function compactHistory(deps: Pick<MarketDataDeps, 'dbh' | 'clock'>, since?: Date): Promise<number> {
  const cutoff = new Date(deps.clock().getTime() - RETENTION.minuteForMs);
  const from = since ? new Date(since.getTime() - RETENTION.minuteForMs - HOUR_MS) : new Date(0);
  const rows = await deps.dbh.rows<{ n: number }>(
    sql`with doomed as (
          select market_id, ts from (
            select market_id, ts, row_number() over (partition by market_id, date_trunc('hour', ts) order by ts desc) as rn
            from price_history
            where ts >= date_trunc('hour', ${from.toISOString()}::timestamptz)
              and ts < date_trunc('hour', ${cutoff.toISOString()}::timestamptz)
          ) x where rn > 1
        ),
        del as (
          delete from price_history p using doomed d where p.market_id = d.market_id and p.ts = d.ts returning 1
        )
        select count(*)::int as n from del`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** The longest move window (alerts' `windowMinutes` ≤ 1440, docs/decisions.md §14.3): readings older than this are never read. */
export const READINGS_KEEP_MS = DAY_MS;

/**
 * Drops price_readings older than a day (drizzle/events.ts priceReadings):
 * one range delete on price_readings_at_idx per price-sync, so the table
 * holds a day of price changes, not a growing history.
 */
export async function pruneReadings(deps: Pick<MarketDataDeps, 'dbh' | 'clock'>): Promise<number> {
  const cutoff = new Date(deps.clock().getTime() - READINGS_KEEP_MS).toISOString();
  const rows = await deps.dbh.rows<{ n: number }>(
    sql`with del as (delete from price_readings where at < ${cutoff}::timestamptz returning 1) select count(*)::int as n from del`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Inserts venue points downsampled to the retention rules, never overwriting ours. */
async function insertHistory(deps: MarketDataDeps, marketId: string, points: HistoryPoint[]) {
  const now = deps.clock().getTime();
  const byBucket = new Map<string, HistoryPoint>();
  for (const p of points) {
    const age = now - p.ts.getTime();
    if (age < 0) continue;
    const key = age > RETENTION.minuteForMs ? `h${Math.floor(p.ts.getTime() / HOUR_MS)}` : `m${Math.floor(p.ts.getTime() / 60_000)}`;
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
 * Backfills markets tracked for the first time (docs/decisions.md §11.2: in
 * the next price-sync). Polymarket markets go 20 tokens per
 * `POST /batch-prices-history` (docs/venues.md "What we call"), Kalshi one
 * candlestick read each. A market is marked done on success or on a 4xx
 * (retrying would not help); outages leave it for the next run.
 */
export async function backfillTrackedHistory(deps: MarketDataDeps, limit = BACKFILL_PER_RUN): Promise<{ done: number; failed: number }> {
  const todo = await deps.dbh.rows<{
    id: string;
    venue: string;
    venue_market_id: string;
    yes_token_id: string | null;
    series_ticker: string | null;
  }>(
    sql`select m.id, m.venue, m.venue_market_id, m.yes_token_id, g.series_ticker
        from markets m join event_groups g on g.id = m.event_group_id
        where m.history_backfilled_at is null and m.tracked_at is not null
        order by m.tracked_at, m.id limit ${limit}`,
  );
  let done = 0;
  let failed = 0;
  const finished: string[] = [];
  const giveUp = (err: unknown) =>
    err instanceof UpstreamError && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 429;
  const warn = (ids: string[], err: unknown) =>
    deps.log.warn({ marketIds: ids, err: err instanceof Error ? err.message : String(err) }, 'history backfill failed');

  // One unit of work: a batch of ≤ 20 Polymarket markets, or one other market.
  const clob = todo.filter((m) => m.venue === 'polymarket' && m.yes_token_id);
  const units: Array<typeof todo> = [];
  for (let i = 0; i < clob.length; i += CLOB_HISTORY_BATCH_LIMIT) units.push(clob.slice(i, i + CLOB_HISTORY_BATCH_LIMIT));
  for (const m of todo) if (!clob.includes(m)) units.push([m]);

  await mapLimit(units, BACKFILL_CONCURRENCY, async (unit) => {
    const ids = unit.map((m) => m.id);
    try {
      const pointsOf = new Map<string, HistoryPoint[]>();
      if (unit[0].venue === 'polymarket' && unit[0].yes_token_id) {
        const { byToken } = await getClobPriceHistories(
          deps.venues.clob,
          unit.map((m) => m.yes_token_id!),
        );
        for (const m of unit) pointsOf.set(m.id, byToken.get(m.yes_token_id!) ?? []);
      } else {
        const m = unit[0];
        if (m.venue === 'kalshi' && m.series_ticker) {
          const to = deps.clock();
          const from = new Date(to.getTime() - KALSHI_BACKFILL_DAYS * DAY_MS);
          pointsOf.set(m.id, (await getKalshiCandles(deps.venues.kalshi, m.series_ticker, m.venue_market_id, from, to)).points);
        }
      }
      for (const m of unit) await insertHistory(deps, m.id, pointsOf.get(m.id) ?? []);
      finished.push(...ids);
      done += unit.length;
    } catch (err) {
      failed += unit.length;
      if (giveUp(err)) finished.push(...ids);
      warn(ids, err);
    }
  });
  if (finished.length > 0) {
    await deps.dbh.rows(
      sql`update markets set history_backfilled_at = ${deps.clock().toISOString()}::timestamptz where id in ${idsIn(finished)}`,
    );
  }
  return { done, failed };
}
