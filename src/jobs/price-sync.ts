import { checkBigTrades } from '../domains/alerts/big-trades.js';
import { backfillTrackedHistory, compactHistory, pruneReadings } from '../domains/events/history.js';
import { refreshTrackedPrices } from '../domains/events/prices.js';
import { handlePriceChanges } from './price-changes.js';
import { lastSuccessAt } from './runs.js';
import type { JobDefinition } from './types.js';

const NAME = 'price-sync';

/**
 * docs/decisions.md §5, §9, §11.2: every 60 s, the prices of the tracked
 * markets through the venues' batch endpoints; changes go out on
 * `market:<id>` and through the price-alert check as they are written; then
 * the big-trade check (docs/decisions.md §18.4: the trades of the markets
 * with active big-trade alerts), the chart backfill of newly tracked
 * markets, the history compaction since this job's last successful run and
 * the readings older than a day. A venue outage fails the run after the rest
 * is done.
 */
export const priceSyncJob: JobDefinition = {
  name: NAME,
  schedule: '* * * * *',
  async run(deps) {
    const since = await lastSuccessAt(deps.db, NAME);
    let outcome;
    let trades;
    try {
      outcome = await refreshTrackedPrices(deps, { onChanges: (changes) => handlePriceChanges(deps, changes) });
      trades = await checkBigTrades(deps);
      const backfill = await backfillTrackedHistory(deps);
      if (backfill.done > 0) deps.dataChanged('events');
      await compactHistory(deps, since);
      await pruneReadings(deps);
    } finally {
      deps.dataChanged('events');
    }
    if (outcome.failures.length > 0) throw new Error(`venue prices failed (${outcome.failures.join('; ')})`);
    if (trades.failures.length > 0) throw new Error(`big-trade reads failed (${trades.failures.join('; ')})`);
    return { items: outcome.items, skipped: outcome.skipped };
  },
};
