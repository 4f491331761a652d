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
 * the chart backfill of newly tracked markets, the history compaction
 * since this job's last successful run and the readings older than a day. A venue outage fails the run after
 * the other venue's prices are written.
 */
export const priceSyncJob: JobDefinition = {
  name: NAME,
  schedule: '* * * * *',
  async run(deps) {
    const since = await lastSuccessAt(deps.db, NAME);
    let outcome;
    try {
      outcome = await refreshTrackedPrices(deps, { onChanges: (changes) => handlePriceChanges(deps, changes) });
      const backfill = await backfillTrackedHistory(deps);
      if (backfill.done > 0) deps.dataChanged('events');
      await compactHistory(deps, since);
      await pruneReadings(deps);
    } finally {
      deps.dataChanged('events');
    }
    if (outcome.failures.length > 0) throw new Error(`venue prices failed (${outcome.failures.join('; ')})`);
    return { items: outcome.items };
  },
};
