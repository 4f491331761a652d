import fp from 'fastify-plugin';
import { checkPriceAlerts } from '../alerts/service.js';
import {
  createHotFeed,
  createHotMarketRegistry,
  createHotMarketsLease,
  HOT_MARKETS_DEFAULTS,
  type HotFeed,
  type HotMarketsOptions,
} from './hot-markets.js';

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

const MARKET_ROOM = 'market:';

/**
 * Hot markets (docs/decisions.md §11.2; src/domains/events/hot-markets.ts).
 * Registered before the realtime plugin; once the app is ready it watches the
 * Socket.IO adapter's rooms of this instance (`create-room` / `delete-room`
 * for `market:<id>`). The registry always runs (the price refresh reads it);
 * the venue feed runs on the lease holder while `POLYMARKET_MARKET_WS_URL`
 * is set, whatever `JOBS` says.
 */
export const hotMarketsPlugin = fp<HotMarketsPluginOptions>(
  async (app, opts) => {
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

    app.addHook('onReady', async () => {
      const adapter = app.io.of('/').adapter;
      adapter.on('create-room', (room: string) => {
        if (room.startsWith(MARKET_ROOM)) registry.add(room.slice(MARKET_ROOM.length));
      });
      adapter.on('delete-room', (room: string) => {
        if (room.startsWith(MARKET_ROOM)) registry.remove(room.slice(MARKET_ROOM.length));
      });
      if (!url) return;
      const alertDeps = { db: app.db, config: app.config, log, clock: app.clock, publish: app.publish, delivery: app.delivery };
      feed = createHotFeed({
        dbh: app.dbh,
        log,
        clock: app.clock,
        publish: app.publish,
        url,
        registry,
        options: o,
        async onChanges(changes) {
          app.signals.emit('dataChanged', 'events');
          // The REST cycle will not see these as changes any more: the alert check runs here.
          await checkPriceAlerts(alertDeps, changes);
        },
      });
      lease = createHotMarketsLease({ ...base, options: o, onChange: (holder) => feed?.setActive(holder) });
    });

    app.addHook('preClose', async () => {
      await lease?.close();
      await feed?.close();
    });
    app.addHook('onClose', async () => {
      await registry.close();
    });
  },
  { name: 'hot-markets', fastify: '5.x', dependencies: ['infra'] },
);
