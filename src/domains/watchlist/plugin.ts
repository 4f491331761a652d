import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { WatchlistSchema, WatchParamsSchema, WatchSchema } from './schemas.js';
import { listWatchlist, unwatchGroup, watchGroup } from './service.js';

const LIFECYCLE_NOTE =
  'While a group is watched its markets are tracked (prices at most 60 s old, docs/decisions.md §11.2) and the watcher is notified, through the usual notify path (stored, streamed on `user:notifications`, push and Telegram as preferences and quiet hours allow), ' +
  'of `market_resolved` (within 60 minutes of the venue, 5 when tracked), `market_closing_soon` (an active market’s `endDate` is within 24 hours; checked every minute), `market_moved` (`yesPrice` moved by at least 0.10 against a reading of the last 60 minutes; at most one per group per 6 hours) and `new_market` (a market appeared in the group) — each once per (user, market), nothing from before `watchedAt`, nothing after unwatching (docs/decisions.md §17.2).';

/** docs/decisions.md §17.1, under /api/v1/watchlist (bearer). */
export const watchlistRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = { db: app.db, clock: app.clock };

  app.get(
    '/',
    {
      schema: {
        operationId: 'listWatchlist',
        tags: ['watchlist'],
        summary: 'The caller’s watched event groups, most recently watched first',
        description: `At most 500 groups, no paging. Closed and resolved groups stay until unwatched (and count toward the 500). ${LIFECYCLE_NOTE}`,
        response: { 200: WatchlistSchema, ...problemResponses(401) },
      },
    },
    async (request) => listWatchlist(deps, request.user.id),
  );

  app.put(
    '/:slug',
    {
      schema: {
        operationId: 'watchEvent',
        tags: ['watchlist'],
        summary: 'Watch an event group',
        description: `201 with \`{ slug, watchedAt }\` the first time; 200 with the same body when already watched (idempotent: \`watchedAt\` does not move). Unknown slug → 404. The 501st group → 409 WATCHLIST_FULL, also under concurrent requests. ${LIFECYCLE_NOTE}`,
        params: WatchParamsSchema,
        response: { 200: WatchSchema, 201: WatchSchema, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const { created, watch } = await watchGroup(deps, request.user.id, request.params.slug);
      return reply.code(created ? 201 : 200).send(watch);
    },
  );

  app.delete(
    '/:slug',
    {
      schema: {
        operationId: 'unwatchEvent',
        tags: ['watchlist'],
        summary: 'Stop watching an event group',
        description: '204 also when the group was not watched or the slug is unknown. No lifecycle notification for it is sent after this.',
        params: WatchParamsSchema,
        response: { 204: z.null().meta({ description: 'Not watched (any more)' }), ...problemResponses(400, 401) },
      },
    },
    async (request, reply) => {
      await unwatchGroup(deps, request.user.id, request.params.slug);
      return reply.code(204).send(null);
    },
  );
};
