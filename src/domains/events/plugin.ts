import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { problemResponses } from '../../errors.js';
import { normalizeCategory } from '../../venues/catalogue.js';
import { createBodyCache } from '../../lib/body-cache.js';
import { serveCached } from '../../lib/serve-cached.js';
import type { DataTopic } from '../../plugins/signals.js';
import { ChartQuerySchema, ChartSchema, EventDetailSchema, EventListQuerySchema, EventListSchema, SlugParamsSchema } from './schemas.js';
import { getChart, getEvent, listEvents } from './service.js';

/** docs/decisions.md §11.4: `Last-Modified` is the body's `syncedAt` (to the second); none while it is null. */
const lastModified = (body: { syncedAt: string | null }) => body.syncedAt;

/** Longest a response may be served after another instance's job changed the data. */
export const EVENTS_CACHE_TTL_MS = 5_000;

/**
 * GET /api/v1/events, /events/:slug and /events/:slug/chart (docs/api-contract.md
 * §4.7, docs/decisions.md §5), all public. Responses are serialised once and
 * served from a short per-instance cache (src/lib/body-cache.ts); the sync jobs of
 * this process clear it when they write (app.signals `dataChanged`).
 */
export const eventsRoutes: FastifyPluginAsyncZod = async (app) => {
  const cache = createBodyCache({ ttlMs: EVENTS_CACHE_TTL_MS, maxEntries: 5_000, maxBytes: 16 * 1024 * 1024 });
  const deps = { db: app.db, dbh: app.dbh, clock: app.clock };
  const cacheNote = `Served from a per-instance cache refreshed when the sync jobs write (at most ${EVENTS_CACHE_TTL_MS / 1000} s stale).`;

  // The sync jobs of this process signal after they write: drop every cached body at once.
  const onDataChanged = (topic: DataTopic) => {
    if (topic === 'events') cache.clear();
  };
  app.signals.on('dataChanged', onDataChanged);
  app.addHook('onClose', async () => {
    app.signals.off('dataChanged', onDataChanged);
  });

  app.get(
    '/',
    {
      config: { public: true },
      schema: {
        operationId: 'listEvents',
        tags: ['events'],
        summary: 'Event groups from Polymarket and Kalshi: search, filter and sort',
        description:
          'Search with `q` and order with `sort` (docs/decisions.md §16.1): by default `totalVolume` descending, or with `q` relevance (own-title matches first, then by 24 h volume); ties by `id` in byte order. ' +
          '`venue` keeps one venue’s groups. `category` is matched case-insensitively (categories are stored upper case); ' +
          '`status` is one of active, closed, resolved (every status when omitted). `limit` 1–100 (default 50; over 100 is a 400), `offset` ≥ 0. ' +
          `\`total\` counts every group matching the filters. ` +
          '`syncedAt`: the older of the two venues’ last successful catalogue refresh; `stale` when that is older than 15 minutes or the latest catalogue run of either venue failed (docs/decisions.md §11.4). ' +
          `\`Last-Modified\` is \`syncedAt\` (to the second), absent while it is null. ${cacheNote}`,
        querystring: EventListQuerySchema,
        response: { 200: EventListSchema, ...problemResponses(400) },
      },
    },
    (request, reply) => {
      const q = request.query;
      const key = `l|${q.category !== undefined ? normalizeCategory(q.category) : ''}|${q.status ?? ''}|${q.venue ?? ''}|${q.sort ?? ''}|${q.limit}|${q.offset}|${q.q ?? ''}`;
      return serveCached(reply, cache, key, () => listEvents(deps, q), { lastModified });
    },
  );

  app.get(
    '/:slug',
    {
      config: { public: true },
      schema: {
        operationId: 'getEvent',
        tags: ['events'],
        summary: 'One event group with its markets',
        description:
          'Markets ordered by volume descending: only those that opened (placeholders are left out), each with the `outcome` its `yesPrice` prices, its `status` and `priceUpdatedAt`. ' +
          'No `marketCount` or `imageUrl` here (docs/api-contract.md §2). 404 NOT_FOUND for an unknown slug. ' +
          'Reading a group’s detail or chart makes its markets tracked for 24 h: their prices are refreshed every 60 s from the next cycle on (docs/decisions.md §11.2). ' +
          '`syncedAt`: the oldest `priceUpdatedAt` of its markets (else the catalogue refresh); `stale` when older than 3 minutes for a tracked group, 90 minutes otherwise, or when its venue’s latest run failed. ' +
          `\`Last-Modified\` is \`syncedAt\` (to the second). ${cacheNote}`,
        params: SlugParamsSchema,
        response: { 200: EventDetailSchema, ...problemResponses(400, 404) },
      },
    },
    (request, reply) => {
      const { slug } = request.params;
      return serveCached(reply, cache, `d|${slug}`, () => getEvent(deps, slug), { lastModified });
    },
  );

  app.get(
    '/:slug/chart',
    {
      config: { public: true },
      schema: {
        operationId: 'getEventChart',
        tags: ['events'],
        summary: 'Price history of the group’s top markets, for a multi-line chart',
        description:
          '`range`: 1D, 1W (default), 1M or ALL (since the first stored point). `markets`: lines to draw, 1–10 (default 5), the group’s markets with the most volume. ' +
          'At most 300 points per line: the range is cut into 299 equal buckets and each keeps its last price; the first point carries the last price before the range to its start. ' +
          'Points are our own, stored from the first time a market is tracked (the venue backfill seeds what the venue still has): minute points for 48 h, hourly after that, kept after the market resolves, so `ALL` covers its whole stored life. ' +
          `\`syncedAt\`, \`stale\` and \`Last-Modified\` as on the group’s detail. ${cacheNote}`,
        params: SlugParamsSchema,
        querystring: ChartQuerySchema,
        response: { 200: ChartSchema, ...problemResponses(400, 404) },
      },
    },
    (request, reply) => {
      const { slug } = request.params;
      const q = request.query;
      return serveCached(reply, cache, `c|${slug}|${q.range}|${q.markets}`, () => getChart(deps, slug, q), { lastModified });
    },
  );
};
