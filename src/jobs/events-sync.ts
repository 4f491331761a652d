import { syncEvents } from '../domains/events/ingest.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §5, §9: every 5 minutes, event groups and markets from
 * Polymarket and Kalshi. A venue outage fails the run (job_runs records it)
 * and leaves that venue's last good data in place.
 */
export const eventsSyncJob: JobDefinition = {
  name: 'events-sync',
  schedule: '*/5 * * * *',
  run: (deps) => syncEvents(deps),
};
