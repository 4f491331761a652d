import { checkPriceAlerts } from '../domains/alerts/service.js';
import { publishPriceChanges, syncPrices, type SyncOutcome } from '../domains/events/ingest.js';
import { lastSuccessAt } from './runs.js';
import type { JobDefinition } from './types.js';

const NAME = 'price-sync';

/**
 * docs/decisions.md §5, §9: every 60 s, prices from the venues' listing calls
 * and price history (compacted since this job's last successful run); then the
 * event caches drop, `market:<id>` updates go out and the price alerts the
 * changes cross fire (docs/decisions.md §6). A venue outage fails the run
 * after the other venue's changes are handled.
 */
export const priceSyncJob: JobDefinition = {
  name: NAME,
  schedule: '* * * * *',
  async run(deps) {
    const since = await lastSuccessAt(deps.db, NAME);
    let synced: SyncOutcome;
    try {
      synced = await syncPrices(deps, { compactSince: since });
    } finally {
      deps.dataChanged('events');
    }
    publishPriceChanges(deps, synced.changes);
    await checkPriceAlerts(deps, synced.changes);
    if (synced.failure) throw synced.failure;
    return { items: synced.items };
  },
};
