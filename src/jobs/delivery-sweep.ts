import { sweepDeliveries } from '../domains/notifications/delivery.js';
import { releaseHeldDeliveries } from '../domains/notifications/quiet-hours.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §9: every 15 s, the notification outbox's due deliveries
 * (retries, and rows a notify kick left behind), the held quiet-hours
 * deliveries of users whose window is over (docs/decisions.md §14.4: released
 * first, so their digests go out in the same run) and, hourly per instance,
 * the pruning of settled rows. A notification's first attempt does not wait
 * for this: notify() kicks it at once, also with JOBS=off.
 */
export const deliverySweepJob: JobDefinition = {
  name: 'delivery-sweep',
  schedule: '*/15 * * * * *',
  run: async (deps) => {
    const quiet = await releaseHeldDeliveries(deps);
    if (quiet.released > 0)
      deps.log.info({ released: quiet.released, digests: quiet.digests.length }, 'quiet hours over: held deliveries released');
    const r = await sweepDeliveries(deps);
    // docs/decisions.md §13.2: a paused channel makes the run fail, naming why (InvalidCredentials).
    const paused = Object.entries(r.paused);
    if (paused.length > 0) {
      throw new Error(
        `delivery paused: ${paused.map(([c, why]) => `${c} (${why})`).join(', ')}; resume with POST /api/v1/internal/deliveries/resume`,
      );
    }
    return { items: quiet.released + r.claimed + r.pruned };
  },
};
