import { notifyClosingSoon, notifyResolvedAndNewMarkets } from '../domains/watchlist/lifecycle.js';
import { lastSuccessAt } from './runs.js';
import type { JobDefinition } from './types.js';

const NAME = 'watchlist-check';
/** Changes written while the previous run was reading are seen again (watch_notices makes that harmless). */
const OVERLAP_MS = 5 * 60_000;
/** The first run looks this far back. */
const FIRST_RUN_MS = 60 * 60_000;
const HOUR_MS = 3_600_000;

/**
 * docs/decisions.md §17.2: every minute, the watchlist's lifecycle
 * notifications that are not price moves (those go out with each price
 * write, see the price-change handler): `market_resolved` and `new_market`
 * from what the catalogue and price writes changed since this job's last
 * successful run, and `market_closing_soon` (checked at least every 5
 * minutes: here every minute; the first run of each hour and a run-now look
 * at every close within 24 hours).
 */
export const watchlistCheckJob: JobDefinition = {
  name: NAME,
  schedule: '* * * * *',
  async run(deps) {
    const now = deps.clock();
    const last = await lastSuccessAt(deps.db, NAME);
    const since = new Date((last?.getTime() ?? now.getTime() - FIRST_RUN_MS) - OVERLAP_MS);
    const full = deps.trigger === 'manual' || !last || Math.floor(last.getTime() / HOUR_MS) !== Math.floor(now.getTime() / HOUR_MS);
    const lifecycle = await notifyResolvedAndNewMarkets(deps, since);
    const closing = await notifyClosingSoon(deps, since, { full });
    return { items: lifecycle + closing };
  },
};
