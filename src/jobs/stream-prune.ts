import { pruneStreamEvents } from '../domains/notifications/stream.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §12.1: hourly, the user stream events no longer kept for
 * resume (older than STREAM_KEEP_DAYS and not among a user's last
 * STREAM_KEEP_EVENTS). A client resuming from before them gets `reset: true`.
 */
export const streamPruneJob: JobDefinition = {
  name: 'stream-prune',
  schedule: '23 * * * *',
  run: async (deps) => ({ items: await pruneStreamEvents(deps, deps.clock()) }),
};
