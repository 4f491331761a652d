import fp from 'fastify-plugin';
import type { PriceChange } from './changes.js';
import { createHotFeed, HOT_MARKETS_DEFAULTS, type HotFeed, type HotMarketsOptions } from './hot-market-feed.js';
import { createHotMarketsLease } from './hot-market-lease.js';
import { createHotMarketRegistry } from './hot-market-registry.js';

declare module 'fastify' {
  interface FastifyInstance {
    hotMarkets: {
      /**
       * Market ids with a live `market:<id>` subscriber on any instance
       * (docs/decisions.md §11.2, venues.md "Tracked markets"): the price
       * refresh tracks them.
       */
      subscribedMarketIds(): Promise<string[]>;
      /** True on the instance that holds the venue sockets. */
      isHolder(): boolean;
      stats(): { markets: number; tokens: number; connections: number; open: number };
    };
  }
}

export type HotMarketsPluginOptions = Partial<Omit<HotMarketsOptions, 'ws'>> & { ws?: HotMarketsOptions['ws'] };

/**
 * Hot markets (docs/decisions.md §11.2): Polymarket markets with a live
 * `market:<id>` subscriber on any instance follow the venue's market
 * WebSocket, so a venue change reaches subscribers as `market:update` within
 * 2 s. Three parts, each a plain object with explicit deps: the registry
 * (hot-market-registry.ts), the lease (hot-market-lease.ts) and the feed
 * (hot-market-feed.ts). Registered before the realtime plugin, which tells
 * the registry about this instance's `market:<id>` rooms through the
 * `marketRoom` signal. The registry always runs (the price refresh reads
 * it); the venue feed runs on the lease holder while
 * `POLYMARKET_MARKET_WS_URL` is set, whatever `JOBS` says, and hands what it
 * stored to `onPriceChanges` (src/jobs/price-changes.ts, from src/app.ts).
 */
export const hotMarketsPlugin = fp<HotMarketsPluginOptions & { onPriceChanges: (changes: PriceChange[]) => Promise<void> }>(
  async (app, { onPriceChanges, ...opts }) => {
    const o: HotMarketsOptions = { ...HOT_MARKETS_DEFAULTS, ...opts, ws: { ...HOT_MARKETS_DEFAULTS.ws, ...opts.ws } };
    const log = app.log.child({ component: 'hot-markets' });
    const base = { redis: app.redisClient, prefix: app.keyPrefix, instanceId: app.instanceId, log };
    const registry = createHotMarketRegistry({ ...base, options: o });
    const url = app.config.POLYMARKET_MARKET_WS_URL;
    let feed: HotFeed | undefined;
    let lease: ReturnType<typeof createHotMarketsLease> | undefined;

    app.decorate('hotMarkets', {
      subscribedMarketIds: () => registry.subscribedMarketIds(),
      isHolder: () => lease?.isHolder() ?? false,
      stats: () => feed?.stats() ?? { markets: 0, tokens: 0, connections: 0, open: 0 },
    });

    const onMarketRoom = (marketId: string, open: boolean) => (open ? registry.add(marketId) : registry.remove(marketId));
    app.signals.on('marketRoom', onMarketRoom);

    app.addHook('onReady', async () => {
      if (!url) return;
      feed = createHotFeed({
        dbh: app.dbh,
        log,
        clock: app.clock,
        publish: app.publish,
        url,
        registry,
        options: o,
        // The REST cycle will not see these as changes any more: the handler checks alerts here.
        onChanges: onPriceChanges,
      });
      lease = createHotMarketsLease({ ...base, options: o, onChange: (holder) => feed?.setActive(holder) });
    });

    app.addHook('preClose', async () => {
      app.signals.off('marketRoom', onMarketRoom);
      await lease?.close();
      await feed?.close();
    });
    app.addHook('onClose', async () => {
      await registry.close();
    });
  },
  { name: 'hot-markets', fastify: '5.x', dependencies: ['context', 'db', 'redis', 'signals', 'publish'] },
);
