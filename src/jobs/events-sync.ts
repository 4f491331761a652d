import { checkPriceAlerts } from '../domains/alerts/service.js';
import { backfillHistory, publishPriceChanges, syncEvents, type SyncOutcome } from '../domains/events/ingest.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §5, §9: every 5 minutes, event groups and markets from
 * Polymarket and Kalshi; their price changes go out and are checked against
 * the price alerts as in price-sync; then the history of first-seen markets is
 * backfilled. A venue outage fails the run (job_runs records it) and leaves
 * that venue's last good data in place.
 */
export const eventsSyncJob: JobDefinition = {
  name: 'events-sync',
  schedule: '*/5 * * * *',
  async run(deps) {
    let synced: SyncOutcome;
    try {
      synced = await syncEvents(deps);
    } finally {
      deps.dataChanged('events');
    }
    publishPriceChanges(deps, synced.changes);
    await checkPriceAlerts(deps, synced.changes);
    const backfill = await backfillHistory(deps);
    if (backfill.done > 0) deps.dataChanged('events');
    if (synced.failure) throw synced.failure;
    return { items: synced.items };
  },
};
