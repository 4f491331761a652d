import type { Db } from '../../db/index.js';
import { AppError, notFound, unauthorized } from '../../errors.js';
import type { Clock } from '../../lib/deps.js';
import { toEventSummary } from '../events/service.js';
import {
  countWatches,
  deleteWatchBySlug,
  insertWatch,
  lockUser,
  selectGroupIdBySlug,
  selectWatch,
  selectWatchedGroups,
} from './queries.js';
import { MAX_WATCHED_GROUPS, type Watch, type Watchlist } from './schemas.js';

export interface WatchlistDeps {
  db: Db;
  clock: Clock;
}

/**
 * PUT /watchlist/:slug (docs/decisions.md §17.1): 201 the first time, 200
 * with the same body when already watched; unknown slug 404; the 501st 409
 * WATCHLIST_FULL. The user's row is locked for the check and the insert, so
 * concurrent requests never take a user past the cap.
 */
export async function watchGroup(deps: WatchlistDeps, userId: string, slug: string): Promise<{ created: boolean; watch: Watch }> {
  return deps.db.transaction(async (tx) => {
    const group = await selectGroupIdBySlug(tx, slug);
    if (!group) throw notFound('Event');
    if (!(await lockUser(tx, userId))) throw unauthorized('The account no longer exists');
    const existing = await selectWatch(tx, userId, group.id);
    if (existing) return { created: false, watch: { slug: group.slug, watchedAt: existing.toISOString() } };
    if ((await countWatches(tx, userId)) >= MAX_WATCHED_GROUPS) {
      throw new AppError(409, 'WATCHLIST_FULL', `At most ${MAX_WATCHED_GROUPS} watched groups per user; unwatch one first`);
    }
    const now = deps.clock();
    await insertWatch(tx, userId, group.id, now);
    return { created: true, watch: { slug: group.slug, watchedAt: now.toISOString() } };
  });
}

/** DELETE /watchlist/:slug: 204 whether or not it was watched, or the slug exists. */
export async function unwatchGroup(deps: WatchlistDeps, userId: string, slug: string): Promise<void> {
  await deleteWatchBySlug(deps.db, userId, slug);
}

/** GET /watchlist: the caller's groups as EventSummary with `watchedAt`, most recently watched first. */
export async function listWatchlist(deps: WatchlistDeps, userId: string): Promise<Watchlist> {
  const rows = await selectWatchedGroups(deps.db, userId);
  const now = deps.clock();
  return {
    events: rows.map((r) => ({ ...toEventSummary(r, now), watchedAt: new Date(r.watched_at).toISOString() })),
  };
}
