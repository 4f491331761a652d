import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { DbHandle } from '../../db/index.js';
import { createMarketWsClient, type MarketWsClient, type MarketWsOptions } from '../../venues/polymarket/market-ws.js';
import type { PublishFn } from '../realtime/channels.js';
import { publishPriceChanges, type PriceChange } from './changes.js';
import type { HotMarketRegistry, RegistryOptions } from './hot-market-registry.js';
import type { LeaseOptions } from './hot-market-lease.js';

/**
 * The hot-market feed (docs/decisions.md §11.2), on the lease holder
 * (hot-market-lease.ts): follows the registry (hot-market-registry.ts),
 * lingers on markets whose last subscriber left (so a page reload does not
 * churn the venue subscription), publishes each price change from the
 * venue's market WebSocket, stores it, and hands the stored ones to the
 * price-change handler. The 60 s REST cycle stays the safety net: nothing
 * here is a job, and a failing socket only means the markets wait for that
 * cycle.
 */

export interface HotMarketsOptions extends RegistryOptions, LeaseOptions {
  /** How often the holder reads the registry and adjusts its venue subscriptions. */
  reconcileMs: number;
  /** How long a market stays subscribed at the venue after its last subscriber left. */
  lingerMs: number;
  /** Price changes are written and published in batches this often. */
  flushMs: number;
  /** The venue socket's timings (tests shrink them). */
  ws: Partial<
    Pick<
      MarketWsOptions,
      'pingMs' | 'silenceMs' | 'dataSilenceMs' | 'connectSpacingMs' | 'backoffMinMs' | 'backoffMaxMs' | 'maxTokensPerConnection'
    >
  >;
}

/**
 * docs/decisions.md §11.2's deadlines: subscribed within 10 s of the first
 * subscriber (reconcile 2 s + a connection), resubscribed within 30 s of a
 * dropped or silent connection (market-ws.ts silence 20 s + backoff), let go
 * within 90 s after the last subscriber leaves (linger 45 s, or an instance's
 * entry TTL 30 s + linger when it died, + reconcile).
 */
export const HOT_MARKETS_DEFAULTS: HotMarketsOptions = {
  heartbeatMs: 10_000,
  entryTtlMs: 30_000,
  leaseTtlMs: 15_000,
  leaseRenewMs: 5_000,
  reconcileMs: 2_000,
  lingerMs: 45_000,
  flushMs: 200,
  ws: {},
};

// ---------------------------------------------------------------- price writes

/**
 * Stores one market's price from the socket in the columns the REST price
 * path writes (prices.ts: yes_price, price_updated_at,
 * updated_at, the minute's history point, and the price it replaces in
 * price_readings, store.ts applyReadings). One market per statement:
 * a single row lock can never deadlock with the sync jobs' page-wide
 * writes. Returns the market's volume when the price changed, else undefined.
 */
export async function storeHotPrice(
  deps: { dbh: DbHandle },
  marketId: string,
  price: number,
  now: Date,
): Promise<{ volume: number } | undefined> {
  const minute = new Date(Math.floor(now.getTime() / 60_000) * 60_000);
  const rows = await deps.dbh.rows<{ volume: number }>(
    sql`with old as (
          select id, yes_price, price_updated_at from markets
          where id = ${marketId} and yes_price is distinct from ${price}::float8
          for update
        ),
        upd as (
          update markets m set yes_price = ${price}::float8, price_updated_at = ${now.toISOString()}::timestamptz,
            updated_at = ${now.toISOString()}::timestamptz
          from old where m.id = old.id
          returning m.id, m.volume
        ),
        runs as (
          insert into price_readings (market_id, at, price)
          select id, price_updated_at, yes_price from old where yes_price is not null and price_updated_at is not null
          returning 1
        ),
        hist as (
          insert into price_history (market_id, ts, price)
          select id, ${minute.toISOString()}::timestamptz, ${price}::float8 from upd
          on conflict (market_id, ts) do update set price = excluded.price
          returning 1
        )
        select volume from upd`,
  );
  return rows[0] ? { volume: Number(rows[0].volume) } : undefined;
}

// ---------------------------------------------------------------- the feed

export interface HotFeedDeps {
  dbh: DbHandle;
  log: FastifyBaseLogger;
  clock: () => Date;
  publish: PublishFn;
  /** `POLYMARKET_MARKET_WS_URL`. */
  url: string;
  registry: Pick<HotMarketRegistry, 'subscribedMarketIds'>;
  options: HotMarketsOptions;
  /** After changes are stored (they are published already): the price-change handler (src/jobs/price-changes.ts, passed in by src/app.ts). */
  onChanges(changes: PriceChange[]): Promise<void>;
}

export interface HotFeed {
  /** Start (lease taken) or stop (lease lost) following the venue. */
  setActive(active: boolean): void;
  /** Tokens followed and connections, for tests and logs. */
  stats(): { markets: number; tokens: number; connections: number; open: number };
  close(): Promise<void>;
}

interface Followed {
  marketId: string;
  tokenId: string;
  price: number | null;
  /** The stored volume (the socket carries none): sent with `market:update`. */
  volume: number;
}

export function createHotFeed(deps: HotFeedDeps): HotFeed {
  const o = deps.options;
  /** Market id → when it was last seen with a subscriber (the linger clock). */
  const lastSeen = new Map<string, number>();
  const byToken = new Map<string, Followed>();
  /** Market id → the changed price and the volume to publish with it. */
  const pending = new Map<string, { price: number; volume: number }>();
  let client: MarketWsClient | undefined;
  let timer: NodeJS.Timeout | undefined;
  let flushTimer: NodeJS.Timeout | undefined;
  /** Flushes run one after another. */
  let chain: Promise<void> = Promise.resolve();
  let reconciling = false;
  let closed = false;

  function onPrice(tokenId: string, price: number) {
    const f = byToken.get(tokenId);
    if (!f || f.price === price) return;
    f.price = price;
    pending.set(f.marketId, { price, volume: f.volume });
    if (!flushTimer && !closed) {
      flushTimer = setTimeout(() => {
        flushTimer = undefined;
        chain = chain.then(flush).catch((err: unknown) => deps.log.error({ err }, 'hot markets: flush failed'));
      }, o.flushMs);
      flushTimer.unref();
    }
  }

  async function flush() {
    const batch = [...pending];
    pending.clear();
    if (batch.length === 0) return;
    const now = deps.clock();
    // Published first: the 2 s of docs/decisions.md §11.2 never wait on a busy database.
    publishPriceChanges(
      deps,
      batch.map(([marketId, p]) => ({ marketId, yesPrice: p.price, volume: p.volume, timestamp: now })),
    );
    const stored: PriceChange[] = [];
    for (const [marketId, p] of batch) {
      try {
        const row = await storeHotPrice(deps, marketId, p.price, now);
        if (row) stored.push({ marketId, yesPrice: p.price, volume: row.volume, timestamp: now });
      } catch (err) {
        deps.log.warn({ err, marketId }, 'hot markets: storing a price failed; the REST cycle will catch up');
      }
    }
    if (stored.length === 0) return;
    await deps.onChanges(stored).catch((err: unknown) => deps.log.error({ err }, 'hot markets: after-change step failed'));
  }

  async function reconcile() {
    if (reconciling || closed || !client) return;
    reconciling = true;
    try {
      const now = Date.now();
      const ids = (await deps.registry.subscribedMarketIds()).filter((id) => id.startsWith('pm-'));
      for (const id of ids) lastSeen.set(id, now);
      for (const [id, seen] of lastSeen) if (now - seen > o.lingerMs) lastSeen.delete(id);
      const wanted = [...lastSeen.keys()];
      // Tokens and stored prices of the wanted markets (open Polymarket markets with a YES token).
      const rows =
        wanted.length === 0
          ? []
          : await deps.dbh.rows<{ id: string; token: string; price: number | null; volume: number }>(
              sql`select id, yes_token_id as token, yes_price as price, volume from markets
                  where id in (select json_array_elements_text(${JSON.stringify(wanted)}::json))
                    and venue = 'polymarket' and status = 'active' and yes_token_id is not null`,
            );
      if (closed || !client) return;
      const next = new Map<string, Followed>();
      for (const r of rows) {
        const had = byToken.get(r.token);
        // The stored price is the reference (the REST cycle may have moved it); a change waiting to be written wins.
        const price = pending.has(r.id) && had ? had.price : r.price === null ? null : Number(r.price);
        next.set(r.token, { marketId: r.id, tokenId: r.token, price, volume: Number(r.volume) });
      }
      byToken.clear();
      for (const [t, f] of next) byToken.set(t, f);
      client.setTokens(next.keys());
    } catch (err) {
      deps.log.warn({ err }, 'hot markets: reconcile failed; retrying');
    } finally {
      reconciling = false;
    }
  }

  function start() {
    if (client || closed) return;
    client = createMarketWsClient({ url: deps.url, log: deps.log, onPrice, ...o.ws });
    void reconcile();
    timer = setInterval(() => void reconcile(), o.reconcileMs);
    timer.unref();
  }

  function stop() {
    if (timer) clearInterval(timer);
    timer = undefined;
    client?.close();
    client = undefined;
    byToken.clear();
  }

  return {
    setActive: (active) => (active ? start() : stop()),
    stats() {
      const s = client?.stats() ?? { tokens: 0, connections: 0, open: 0 };
      return { markets: byToken.size, ...s };
    },
    async close() {
      closed = true;
      if (flushTimer) clearTimeout(flushTimer);
      flushTimer = undefined;
      stop();
      await chain;
    },
  };
}
