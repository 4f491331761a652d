import { syncCatalogue } from '../domains/events/catalogue.js';
import { handlePriceChanges } from './price-changes.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §5, §9, §11.1: every 5 minutes, the catalogue of both
 * venues: what is new each run, a full reconcile at most hourly and on every
 * manual run (run-now). A venue outage fails the run (job_runs records it)
 * and leaves that venue's last good data in place.
 */
export const eventsSyncJob: JobDefinition = {
  name: 'events-sync',
  schedule: '*/5 * * * *',
  async run(deps) {
    let outcome;
    try {
      outcome = await syncCatalogue(deps, {
        // Run-now does the full reconcile unless it asks for `?mode=increment` (docs/decisions.md §9).
        full: deps.trigger === 'manual' && deps.mode !== 'increment',
        onChanges: (changes) => handlePriceChanges(deps, changes),
      });
    } finally {
      deps.dataChanged('events');
    }
    if (outcome.failures.length > 0) throw new Error(`venue catalogue failed (${outcome.failures.join('; ')})`);
    return { items: outcome.items, skipped: outcome.skipped };
  },
};
