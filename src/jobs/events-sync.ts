import { checkPriceAlerts } from '../domains/alerts/service.js';
import { publishPriceChanges, type PriceChange } from '../domains/events/changes.js';
import { syncCatalogue } from '../domains/events/catalogue.js';
import type { JobDefinition, JobDeps } from './types.js';

/** Each written page's price changes go out live and through the price-alert check (docs/decisions.md §5, §6). */
export function handlePriceChanges(deps: JobDeps) {
  return async (changes: PriceChange[]) => {
    deps.dataChanged('events');
    publishPriceChanges(deps, changes);
    await checkPriceAlerts(deps, changes);
  };
}

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
      outcome = await syncCatalogue(deps, { full: deps.trigger === 'manual', onChanges: handlePriceChanges(deps) });
    } finally {
      deps.dataChanged('events');
    }
    if (outcome.failures.length > 0) throw new Error(`venue catalogue failed (${outcome.failures.join('; ')})`);
    return { items: outcome.items };
  },
};
