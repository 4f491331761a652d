import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { DbHandle } from '../../db/index.js';
import { createMarketWsClient, type MarketWsClient, type MarketWsOptions } from '../../venues/polymarket/market-ws.js';
import type { PublishFn } from '../realtime/channels.js';
import { publishPriceChanges, type PriceChange } from './changes.js';

/**
 * Hot markets (docs/decisions.md §11.2): Polymarket markets with a live
 * `market:<id>` subscriber on any instance follow the venue's market
 * WebSocket, so a venue change reaches subscribers as `market:update` within
 * 2 s. Three parts, each a plain object with explicit deps:
 * - the registry: which markets have subscribers on ANY instance (each
 *   instance keeps its own set in Redis under a heartbeat and a TTL, so a
 *   crashed instance's markets age out; in-process without Redis);
 * - the lease: one instance holds the venue connections (a Redis key with
 *   renewal; the only instance without Redis);
 * - the feed, on the lease holder: follows the registry, lingers on markets
 *   whose last subscriber left (so a page reload does not churn the venue
 *   subscription), stores each price change and publishes it.
 * The 60 s REST cycle stays the safety net: nothing here is a job, and a
 * failing socket only means the markets wait for that cycle.
 */

export interface HotMarketsOptions {
  /** Registry: how often an instance re-announces its markets, and how long an announcement lives. */
  heartbeatMs: number;
  entryTtlMs: number;
  /** Lease: how long a holder's claim lives, and how often it is renewed (others try as often). */
  leaseTtlMs: number;
  leaseRenewMs: number;
  /** How often the holder reads the registry and adjusts its venue subscriptions. */
  reconcileMs: number;
  /** How long a market stays subscribed at the venue after its last subscriber left. */
  lingerMs: number;
  /** Price changes are written and published in batches this often. */
  flushMs: number;
  /** The venue socket's timings (tests shrink them). */
  ws: Partial<
    Pick<MarketWsOptions, 'pingMs' | 'silenceMs' | 'connectSpacingMs' | 'backoffMinMs' | 'backoffMaxMs' | 'maxTokensPerConnection'>
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

// ---------------------------------------------------------------- registry

export interface HotMarketRegistry {
  /** A `market:<id>` room appeared on this instance. */
  add(marketId: string): void;
  /** It emptied. */
  remove(marketId: string): void;
  /** Markets with a live subscriber on any instance (this one's when Redis is down). */
  subscribedMarketIds(): Promise<string[]>;
  close(): Promise<void>;
}

export interface RegistryDeps {
  redis: Redis | undefined;
  /** Key prefix (the app's keyPrefix). */
  prefix: string;
  instanceId: string;
  log: FastifyBaseLogger;
  options: Pick<HotMarketsOptions, 'heartbeatMs' | 'entryTtlMs'>;
}

export function createHotMarketRegistry(deps: RegistryDeps): HotMarketRegistry {
  const local = new Set<string>();
  const { redis } = deps;
  if (!redis) {
    return {
      add: (id) => void local.add(id),
      remove: (id) => void local.delete(id),
      subscribedMarketIds: () => Promise.resolve([...local]),
      close: () => Promise.resolve(),
    };
  }
  const instances = `${deps.prefix}hot:instances`;
  const mine = `${deps.prefix}hot:markets:${deps.instanceId}`;
  let warned = false;
  const onError = (err: unknown) => {
    if (!warned) deps.log.warn({ err }, 'hot markets: Redis unavailable, this instance counts only its own subscribers');
    warned = true;
  };
  const announce = () => {
    const ids = [...local];
    const m = redis.multi().del(mine);
    if (ids.length > 0) m.sadd(mine, ...ids).pexpire(mine, deps.options.entryTtlMs);
    m.zadd(instances, Date.now() + deps.options.entryTtlMs, deps.instanceId);
    m.exec().then(() => (warned = false), onError);
  };
  const timer = setInterval(announce, deps.options.heartbeatMs);
  timer.unref();
  return {
    add(id) {
      if (local.has(id)) return;
      local.add(id);
      redis
        .multi()
        .sadd(mine, id)
        .pexpire(mine, deps.options.entryTtlMs)
        .zadd(instances, Date.now() + deps.options.entryTtlMs, deps.instanceId)
        .exec()
        .catch(onError);
    },
    remove(id) {
      if (!local.delete(id)) return;
      redis.srem(mine, id).catch(onError);
    },
    async subscribedMarketIds() {
      try {
        const now = Date.now();
        const live = await redis.multi().zremrangebyscore(instances, '-inf', now).zrangebyscore(instances, now, '+inf').exec();
        const ids = (live?.[1]?.[1] as string[] | undefined) ?? [];
        const keys = ids.map((i) => `${deps.prefix}hot:markets:${i}`);
        const all = keys.length > 0 ? await redis.sunion(...keys) : [];
        return [...new Set([...all, ...local])];
      } catch (err) {
        onError(err);
        return [...local];
      }
    },
    async close() {
      clearInterval(timer);
      local.clear();
      await redis.multi().del(mine).zrem(instances, deps.instanceId).exec().catch(onError);
    },
  };
}

// ---------------------------------------------------------------- lease

export interface HotMarketsLease {
  isHolder(): boolean;
  /** Releases the lease if held (another instance takes over at its next try). */
  close(): Promise<void>;
}

// Take the lease when free, renew it when ours (the value is the holder's instance id): one
// script for both, so a slow answer can never make the holder think someone else has it.
const CLAIM = `local v = redis.call('get', KEYS[1])
if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end
if not v then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

export function createHotMarketsLease(
  deps: Omit<RegistryDeps, 'options'> & {
    options: Pick<HotMarketsOptions, 'leaseTtlMs' | 'leaseRenewMs'>;
    onChange(holder: boolean): void;
  },
): HotMarketsLease {
  const { redis } = deps;
  if (!redis) {
    // Without Redis the instance is alone (docs/operations.md "Several instances"): it holds the venue sockets.
    queueMicrotask(() => deps.onChange(true));
    return { isHolder: () => true, close: () => Promise.resolve() };
  }
  const key = `${deps.prefix}hot:lease`;
  let holder = false;
  let closed = false;
  const set = (next: boolean) => {
    if (next === holder) return;
    holder = next;
    deps.log.info({ holder }, holder ? 'hot markets: this instance holds the venue sockets' : 'hot markets: lease lost');
    deps.onChange(holder);
  };
  let ticking = false;
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      const claimed = await redis.eval(CLAIM, 1, key, deps.instanceId, String(deps.options.leaseTtlMs));
      if (!closed) set(Number(claimed) === 1);
    } catch (err) {
      // Unsure whether we still hold it: step down, so two holders never overlap for long.
      if (!closed) set(false);
      deps.log.warn({ err }, 'hot markets: lease check failed');
    } finally {
      ticking = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), deps.options.leaseRenewMs);
  timer.unref();
  return {
    isHolder: () => holder,
    async close() {
      closed = true;
      clearInterval(timer);
      const was = holder;
      holder = false;
      if (was) await redis.eval(RELEASE, 1, key, deps.instanceId).catch(() => undefined);
    },
  };
}

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
  /** After changes are stored and published: the read caches and the price-alert check. */
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
