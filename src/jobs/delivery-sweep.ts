import { sweepDeliveries } from '../domains/notifications/delivery.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §9: every 15 s, the notification outbox's due deliveries
 * (retries, and rows a notify kick left behind) and, hourly per instance, the
 * pruning of settled rows. A notification's first attempt does not wait for
 * this: notify() kicks it at once, also with JOBS=off.
 */
export const deliverySweepJob: JobDefinition = {
  name: 'delivery-sweep',
  schedule: '*/15 * * * * *',
  run: async (deps) => {
    const r = await sweepDeliveries(deps);
    // docs/decisions.md §13.2: a paused channel makes the run fail, naming why (InvalidCredentials).
    const paused = Object.entries(r.paused);
    if (paused.length > 0) {
      throw new Error(
        `delivery paused: ${paused.map(([c, why]) => `${c} (${why})`).join(', ')}; resume with POST /api/v1/internal/deliveries/resume`,
      );
    }
    return { items: r.claimed + r.pruned };
  },
};
