import { marketChannel, type PublishFn } from '../realtime/channels.js';

/**
 * A market whose yes price changed in a sync (docs/decisions.md §5): published
 * live and checked against price alerts. The one type the alerts domain takes
 * from events, kept apart from the write paths.
 */
export interface PriceChange {
  marketId: string;
  yesPrice: number;
  volume: number;
  timestamp: Date;
}

/** What a sync does with each batch of price changes as it writes them (the job publishes and checks alerts). */
export type OnPriceChanges = (changes: PriceChange[]) => Promise<void>;

/** Sends changed prices to the live channels (docs/decisions.md §5, §8). */
export function publishPriceChanges(deps: { publish: PublishFn }, changes: PriceChange[]): void {
  for (const c of changes) {
    deps.publish(marketChannel(c.marketId), 'market:update', {
      marketId: c.marketId,
      yesPrice: c.yesPrice,
      volume: c.volume,
      timestamp: c.timestamp.toISOString(),
    });
  }
}
