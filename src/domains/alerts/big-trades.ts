import { sql, type SQL } from 'drizzle-orm';
import type { BigTradeJson } from '../../../drizzle/index.js';
import { rows } from '../../db/index.js';
import { UpstreamError } from '../../lib/http.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { VenueClients } from '../../venues/clients.js';
import { fetchKalshiMarketTrades } from '../../venues/kalshi/market-trades.js';
import { fetchMarketTrades, MARKETS_PER_TRADES_CALL } from '../../venues/polymarket/market-trades.js';
import { announceNotifications, storeNotifications, type NotifyDeps } from '../notifications/service.js';

/**
 * Big-trade alerts (docs/decisions.md §18.4, §18.5): on every price-sync, the trades of the markets
 * with active `big_trade` alerts are read from the venues (docs/venues.md "What we call": Data v1
 * `/trades` by condition id filtered by cash, 20 markets a request; Kalshi `/markets/trades` per
 * ticker) through the process's shared limiters, and one statement fires the alerts a trade
 * qualifies, once across instances.
 */
export interface BigTradeDeps extends NotifyDeps {
  venues: Pick<VenueClients, 'data' | 'kalshi'>;
  /** Aborted at shutdown: no further venue read starts (the job's venue clients carry it too). */
  signal?: AbortSignal;
}

/**
 * A read starts this long before the newest trade the last read showed (docs/venues.md "What we
 * call": `min_ts = watermark − 60`): trades of the same second, and rows a cached feed adds late.
 * A trade seen twice changes nothing (see bigTradeSql).
 */
const OVERLAP_SEC = 60;
/** Kalshi tickers read at once; the Kalshi limiter paces them (5 req/s shared with prices and the catalogue). */
const KALSHI_CONCURRENCY = 4;
/** Float slack on `usd ≥ minUsd` (price × size of decimals). */
const EPS = 1e-6;

interface Target {
  market_id: string;
  venue: 'polymarket' | 'kalshi';
  venue_market_id: string;
  condition_id: string | null;
  min_usd: number;
  /** The oldest instant any of the market's alerts still needs trades from. */
  since: Date | string;
}

/** One trade worth looking at: at least the market's lowest threshold. */
interface SeenTrade {
  m: string;
  usd: number;
  at: string;
  trade: BigTradeJson;
}

interface FiredTrade {
  id: string;
  user_id: string;
  market_id: string;
  trigger_count: number;
  min_usd: number;
  trade: BigTradeJson | string;
  market_title: string;
}

export interface BigTradeOutcome {
  /** Markets whose trades were read. */
  markets: number;
  fired: number;
  /** Venue reads that failed (the other markets are still checked). */
  failures: string[];
  skipped: number;
}

/** The markets with active big-trade alerts, their lowest threshold and how far back their trades are needed. */
function targetsSql(): SQL {
  return sql`
    select a.market_id, m.venue, m.venue_market_id, m.condition_id, min(a.min_usd) as min_usd,
           min(greatest(a.readings_from, coalesce(a.trades_seen_until, a.readings_from))) as since
    from price_alerts a join markets m on m.id = a.market_id
    where a.active and a.condition = 'big_trade' and m.status = 'active'
    group by a.market_id, m.venue, m.venue_market_id, m.condition_id`;
}

/**
 * The statement (exported for EXPLAIN in the benchmark). `trades` is JSON `[{ m, usd, at, trade }]`:
 * the trades read, at least their market's lowest threshold; `reads` is `[{ m, seen }]`: the
 * markets read and the newest trade time their feed showed. For every active big-trade alert of
 * those markets (and every one holding a trade whose cooldown has ended):
 *  - its candidate is the largest trade of at least `min_usd` after `readings_from` (creation, last
 *    firing or redefinition), or the trade it kept from earlier checks if that is larger;
 *  - it fires when it has one and is past its cooldown (never fired, or `triggered_at` +
 *    `cooldown_minutes` ≤ now): one-shot alerts go inactive, repeating ones count trades from now;
 *  - otherwise (cooling down) it keeps the candidate in `pending_trade`, so the first check after
 *    the cooldown fires for the largest trade since the last firing (§18.5).
 * FOR UPDATE SKIP LOCKED, with the decision taken on the locked row, makes each firing happen once
 * across instances and overlapping runs, as the price-alert check does. Returns the fired alerts.
 */
export function bigTradeSql(trades: string, reads: string, now: Date): SQL {
  const t = sql`${now.toISOString()}::timestamptz`;
  const cooled = (alias: 'a' | 'l') => {
    const a = sql.raw(alias);
    return sql`(${a}.triggered_at is null or ${a}.triggered_at + make_interval(mins => ${a}.cooldown_minutes) <= ${t})`;
  };
  return sql`
    with t as materialized (
      select x.m, x.usd, x.at, x.trade
      from jsonb_to_recordset(${trades}::jsonb) as x(m text, usd double precision, at timestamptz, trade jsonb)
    ),
    r as materialized (
      select x.m, x.seen from jsonb_to_recordset(${reads}::jsonb) as x(m text, seen timestamptz)
    ),
    cand as (
      select distinct on (a.id) a.id, t.trade
      from price_alerts a join t on t.m = a.market_id
      where a.active and a.condition = 'big_trade' and t.usd >= a.min_usd - ${EPS}::float8 and t.at > a.readings_from
      order by a.id, t.usd desc, t.at desc
    ),
    subject as (
      select a.id from price_alerts a
      where a.active and a.condition = 'big_trade' and a.market_id in (select m from r)
      union
      select a.id from price_alerts a
      where a.active and a.condition = 'big_trade' and a.pending_trade is not null and ${cooled('a')}
      union
      select id from cand
    ),
    locked as (
      select a.id, a.pending_trade, a.readings_from, a.triggered_at, a.cooldown_minutes, c.trade as cand
      from price_alerts a join subject s on s.id = a.id left join cand c on c.id = a.id
      where a.active and a.condition = 'big_trade'
      for update of a skip locked
    ),
    dec as (
      select l.id, b.best, (b.best is not null and ${cooled('l')}) as fire
      from locked l
      cross join lateral (
        select case
          when l.cand is not null and (l.cand->>'at')::timestamptz > l.readings_from
               and (l.pending_trade is null or (l.cand->>'usd')::float8 > (l.pending_trade->>'usd')::float8)
            then l.cand
          else l.pending_trade end as best
      ) b
    ),
    upd as (
      update price_alerts a set
        trigger_count = a.trigger_count + (case when d.fire then 1 else 0 end),
        active = case when d.fire then a.repeat else a.active end,
        triggered_at = case when d.fire then ${t} else a.triggered_at end,
        triggered_price = case when d.fire then (d.best->>'price')::float8 else a.triggered_price end,
        readings_from = case when d.fire then ${t} else a.readings_from end,
        pending_trade = case when d.fire then null else d.best end,
        trades_seen_until = greatest(a.trades_seen_until, (select max(r.seen) from r where r.m = a.market_id)),
        due_at = null,
        updated_at = ${t}
      from dec d
      where a.id = d.id
        and (d.fire or d.best is distinct from a.pending_trade
             or exists (select 1 from r where r.m = a.market_id and r.seen > coalesce(a.trades_seen_until, '-infinity'::timestamptz)))
      returning a.id, a.user_id, a.market_id, a.trigger_count, a.min_usd, d.best as trade, d.fire
    )
    select u.id, u.user_id, u.market_id, u.trigger_count, u.min_usd, u.trade, mk.title as market_title
    from upd u join markets mk on mk.id = u.market_id
    where u.fire`;
}

const usdText = (n: number) => `$${Math.round(n).toLocaleString('en-US')}`;
const cents = (p: number) => `${Math.round(p * 1000) / 10}¢`;

const toSec = (d: Date | string) => Math.floor(new Date(d).getTime() / 1000);

/** Polymarket: 20 condition ids a request, grouped by threshold (sorted), each group read at its lowest. */
async function readPolymarket(deps: BigTradeDeps, targets: Target[], out: Collected): Promise<void> {
  const byCondition = new Map<string, Target>();
  for (const tg of targets) if (tg.condition_id) byCondition.set(tg.condition_id.toLowerCase(), tg);
  const sorted = [...byCondition.values()].sort((a, b) => Number(a.min_usd) - Number(b.min_usd));
  for (let i = 0; i < sorted.length; i += MARKETS_PER_TRADES_CALL) {
    deps.signal?.throwIfAborted();
    const group = sorted.slice(i, i + MARKETS_PER_TRADES_CALL);
    const minUsd = Math.min(...group.map((g) => Number(g.min_usd)));
    const sinceSec = Math.min(...group.map((g) => toSec(g.since))) - OVERLAP_SEC;
    let read;
    try {
      read = await fetchMarketTrades(
        deps.venues.data,
        group.map((g) => g.condition_id!.toLowerCase()),
        minUsd,
        { sinceSec },
      );
    } catch (err) {
      if (!(err instanceof UpstreamError) && !(err instanceof Error && /JSON array/.test(err.message))) throw err;
      out.failures.push(`polymarket trades: ${err.message}`);
      continue;
    }
    out.skipped += read.skipped;
    let newest = 0;
    for (const r of read.rows) {
      newest = Math.max(newest, r.timestamp);
      const tg = byCondition.get(r.conditionId.toLowerCase());
      const usd = r.size * r.price;
      if (!tg || usd < Number(tg.min_usd) - EPS) continue;
      const at = new Date(r.timestamp * 1000).toISOString();
      out.trades.push({
        m: tg.market_id,
        usd,
        at,
        trade: {
          usd,
          side: r.side === 'BUY' ? 'buy' : 'sell',
          outcome: r.outcome,
          price: r.price,
          size: r.size,
          walletAddress: r.proxyWallet.toLowerCase(),
          at,
        },
      });
    }
    // A feed (cached or not) that shows a trade at `newest` holds every older one of these markets.
    for (const g of group) out.reads.push({ m: g.market_id, seen: newest > 0 ? new Date(newest * 1000).toISOString() : null });
  }
}

/** Kalshi: one ticker a request (no size filter at the venue), the Kalshi limiter pacing them. */
async function readKalshi(deps: BigTradeDeps, targets: Target[], out: Collected): Promise<void> {
  await mapLimit(targets, KALSHI_CONCURRENCY, async (tg) => {
    deps.signal?.throwIfAborted();
    let read;
    try {
      read = await fetchKalshiMarketTrades(deps.venues.kalshi, tg.venue_market_id, toSec(tg.since) - OVERLAP_SEC);
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      out.failures.push(`kalshi trades ${tg.venue_market_id}: ${err.message}`);
      return;
    }
    out.skipped += read.skipped;
    let newest = 0;
    for (const k of read.trades) {
      newest = Math.max(newest, k.at.getTime());
      if (k.usd < Number(tg.min_usd) - EPS) continue;
      const at = k.at.toISOString();
      out.trades.push({
        m: tg.market_id,
        usd: k.usd,
        at,
        trade: {
          usd: k.usd,
          side: 'buy',
          outcome: k.takerSide === 'yes' ? 'Yes' : 'No',
          price: k.price,
          size: k.count,
          walletAddress: null,
          at,
        },
      });
    }
    out.reads.push({ m: tg.market_id, seen: newest > 0 ? new Date(newest).toISOString() : null });
  });
}

interface Collected {
  trades: SeenTrade[];
  reads: Array<{ m: string; seen: string | null }>;
  failures: string[];
  skipped: number;
}

/**
 * The big-trade check of one price-sync (docs/decisions.md §18.4): reads the trades of every
 * market with an active big-trade alert (both venues at once, each through its own limiter), then
 * fires in one statement, storing the notifications in the same transaction and announcing them
 * after commit (as checkPriceAlerts does). A venue read that fails is reported in `failures`; the
 * others are still checked, and a repeating alert whose cooldown ended still fires for the trade
 * it kept.
 */
export async function checkBigTrades(deps: BigTradeDeps): Promise<BigTradeOutcome> {
  const targets = await rows<Target>(deps.db, targetsSql());
  const out: Collected = { trades: [], reads: [], failures: [], skipped: 0 };
  if (targets.length > 0) {
    await Promise.all([
      readPolymarket(
        deps,
        targets.filter((t) => t.venue === 'polymarket'),
        out,
      ),
      readKalshi(
        deps,
        targets.filter((t) => t.venue === 'kalshi'),
        out,
      ),
    ]);
  }
  const now = deps.clock();
  const stored = await deps.db.transaction(async (tx) => {
    const fired = await rows<FiredTrade>(tx, bigTradeSql(JSON.stringify(out.trades), JSON.stringify(out.reads), now));
    return storeNotifications(
      deps,
      tx,
      now,
      fired.map((f) => {
        const trade: BigTradeJson = typeof f.trade === 'string' ? (JSON.parse(f.trade) as BigTradeJson) : f.trade;
        return {
          userId: f.user_id,
          type: 'price_alert_triggered' as const,
          title: `Big trade: ${f.market_title}`.slice(0, 200),
          message: `${usdText(trade.usd)} ${trade.side} of ${trade.outcome} at ${cents(trade.price)} (your minimum ${usdText(Number(f.min_usd))})`,
          data: {
            marketId: f.market_id,
            alertId: f.id,
            triggerCount: Number(f.trigger_count),
            usd: trade.usd,
            side: trade.side,
            outcome: trade.outcome,
            price: trade.price,
            walletAddress: trade.walletAddress,
            at: trade.at,
          },
        };
      }),
    );
  });
  announceNotifications(deps, stored);
  if (stored.length > 0) deps.log.info({ fired: stored.length, markets: out.reads.length }, 'big-trade alerts fired');
  return { markets: out.reads.length, fired: stored.length, failures: out.failures, skipped: out.skipped };
}
