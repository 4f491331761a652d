import { syncPrices } from '../domains/events/ingest.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §5, §9: every 60 s, prices from the venues' listing calls,
 * price history, `market:<id>` updates and the alert-check hook.
 */
export const priceSyncJob: JobDefinition = {
  name: 'price-sync',
  schedule: '* * * * *',
  run: (deps) => syncPrices(deps),
};
