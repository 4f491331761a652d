import { checkPriceAlerts, type AlertCheckDeps } from '../domains/alerts/trigger.js';
import { publishPriceChanges, type PriceChange } from '../domains/events/changes.js';
import { notifyMarketMoves } from '../domains/watchlist/lifecycle.js';
import type { DataTopic } from '../plugins/signals.js';

export interface PriceChangeDeps extends AlertCheckDeps {
  /** Tells this instance's read caches that stored data changed (app.signals `dataChanged`). */
  dataChanged(topic: DataTopic): void;
}

/**
 * The one place where "a price changed" leads somewhere (docs/decisions.md
 * §5, §6, §11.2), for every source of price changes: price-sync and
 * events-sync with each written chunk, and the hot-market feed (handed in
 * by src/app.ts) with each stored batch. The events read caches drop,
 * `market:update` goes out on each market's channel, price alerts are
 * checked, and so are the watchlist's moves (`market_moved`, §17.2). A check driven by price changes belongs here, after these.
 *
 * `published`: the changes were already sent to live clients (the hot
 * feed publishes before it stores, so the 2 s of §11.2 never wait on the
 * database).
 */
export async function handlePriceChanges(deps: PriceChangeDeps, changes: PriceChange[], opts: { published?: boolean } = {}): Promise<void> {
  deps.dataChanged('events');
  if (!opts.published) publishPriceChanges(deps, changes);
  await checkPriceAlerts(deps, changes);
  await notifyMarketMoves(deps, changes);
}
