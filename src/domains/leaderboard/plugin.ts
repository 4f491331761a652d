import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import {
  AddressParamsSchema,
  BiggestWinSchema,
  BiggestWinsQuerySchema,
  HistoryQuerySchema,
  LeaderboardPageSchema,
  LeaderboardQuerySchema,
  ProfileQuerySchema,
  TraderProfileSchema,
  TraderHistorySchema,
} from './schemas.js';
import {
  createLeaderboardCache,
  createOnDemandState,
  getTraderProfile,
  hasFreshPointers,
  invalidateLeaderboardCache,
  leaderboardPageKey,
  listBiggestWins,
  listLeaderboard,
  refreshPointers,
  type ProfileDeps,
} from './service.js';
import { serveCached } from '../../lib/serve-cached.js';
import { applyHit } from '../../plugins/rate-limit.js';
import type { DataTopic } from '../../plugins/signals.js';
import { getTraderHistory } from './history.js';

const PROFILE_TTL_MS = 5 * 60_000;

const lastModified = (page: { syncedAt: string | null }) => page.syncedAt;

/** docs/decisions.md §11.7: on-demand profiles per client address per minute, cached answers and 503s included. */
export const ON_DEMAND_PER_MINUTE = 30;

/** Public leaderboard routes (docs/api-contract.md §4.3, docs/decisions.md §4), under /api/v1/leaderboard. */
export const leaderboardRoutes: FastifyPluginAsyncZod = async (app) => {
  const cache = createLeaderboardCache();
  // A sync or enrichment in this process signals after it writes: drop cached pages at once.
  const onDataChanged = (topic: DataTopic) => {
    if (topic !== 'leaderboard') return;
    invalidateLeaderboardCache(cache);
  };
  app.signals.on('dataChanged', onDataChanged);
  app.addHook('onClose', async () => {
    app.signals.off('dataChanged', onDataChanged);
  });

  const onDemand = createOnDemandState();
  const deps = (): ProfileDeps => ({
    db: app.db,
    dbh: app.dbh,
    secret: app.config.JWT_SECRET,
    cache,
    clock: app.clock,
    // The process's one Data API client (its limiter is shared with leaderboard-sync and enrichment),
    // with fewer, shorter attempts: someone is waiting for this answer.
    api: { ...app.venues.data, http: { ...app.venues.data.http, timeoutMs: 5_000, attempts: 2 } },
    profileTtlMs: PROFILE_TTL_MS,
    onDemand,
  });

  const readDeps = deps();

  app.get(
    '/',
    {
      config: { public: true },
      schema: {
        operationId: 'listLeaderboard',
        tags: ['leaderboard'],
        summary: 'Ranked traders of one board, keyset-paginated',
        description: [
          'One board per (period, category), synced from Polymarket every 10 minutes and switched atomically.',
          '`rank` is the position in the full ordering of (tab, period, category, sort, sortDirection); search and paging never renumber it.',
          'Ties break by wallet address ascending (lower-case) in both directions.',
          '`search` is a case-insensitive substring of the display name or the address; `%`, `_` and `\\` are literal.',
          '`cursor` is opaque, HMAC-signed and bound to the query: reusing it with another tab, sort, direction, period, category or search is 400 INVALID_CURSOR; `limit` may change between pages.',
          'A walk keeps reading the snapshot it started on while that snapshot is retained (about 30 minutes after it is replaced).',
          "`pnl` and `volume` are the venue figures for the period; `roi`, `winRate` (fractions 0–1), `wins`, `losses`, `bestTrade`, `sharpeRatio`, `tradeCount`, `avgEntry`, `avgTrade` and `sparkline` are computed by enrichment (every 30 minutes, best ranked first) from the trader's closed positions and trades within the board's period, losses included: the 7D board shows 7-day figures, ALL all-time. 0 until the trader is first enriched.",
          "`syncedAt` is the board's last successful sync, also sent as `Last-Modified`; `stale` is true when it is older than 30 minutes, the latest leaderboard-sync failed, or there was none (`syncedAt: null`, no `Last-Modified`). Through a venue outage the last good board is served, marked stale.",
          "`rankChange` is the 1-day rank change of the trader's history on this (category, period) (`changes['1d'].rank` of GET /leaderboard/{address}/history): positive when the trader moved up, null without a point a day old; the same whatever the sort or tab.",
          'Before the first sync the board is empty: `{ traders: [], nextCursor: null, syncedAt: null, stale: true }`.',
          'Unknown query parameters are 400 VALIDATION_ERROR, so a misspelt parameter never silently falls back to its default.',
        ].join(' '),
        querystring: LeaderboardQuerySchema,
        response: { 200: LeaderboardPageSchema, ...problemResponses(400, 503) },
      },
    },
    // A kept page synchronously, with its freshness and Last-Modified (docs/decisions.md §11.4: `syncedAt`).
    (request, reply) => {
      const serve = () => {
        const key = leaderboardPageKey(readDeps, request.query);
        return serveCached(reply, cache.pages, key, () => listLeaderboard(readDeps, request.query, key), { lastModified });
      };
      return hasFreshPointers(readDeps) ? serve() : refreshPointers(readDeps).then(serve);
    },
  );

  app.get(
    '/biggest-wins',
    {
      config: { public: true },
      schema: {
        operationId: 'listBiggestWins',
        tags: ['leaderboard'],
        summary: 'Largest realized wins of ranked traders within a period',
        description:
          'Closed positions of ranked traders resolved within `period` (default 1D), largest realized PnL first (ties by wallet). `side` is the outcome held, lower-case (`yes`, `no`, or the outcome name); `entryPrice` is the average entry price, `exitPrice` the settlement price. Refreshed by enrichment every 30 minutes from the closed positions it reads newest first (the same rows as the figures). `Last-Modified`: when enrichment last wrote (absent before the first enrichment).',
        querystring: BiggestWinsQuerySchema,
        response: { 200: z.array(BiggestWinSchema), ...problemResponses(400, 503) },
      },
    },
    async (request, reply) => {
      const { wins, syncedAt } = await listBiggestWins(readDeps, request.query);
      // docs/decisions.md §11.4: when enrichment last wrote them.
      if (syncedAt) reply.header('last-modified', syncedAt.toUTCString());
      return wins;
    },
  );

  app.get(
    '/:address',
    {
      config: { public: true },
      schema: {
        operationId: 'getTraderProfile',
        tags: ['leaderboard'],
        summary: 'Profile of any EVM wallet address',
        description: [
          '`period` (1D, 7D, 30D, ALL; default 30D as in the seed example).',
          "A trader on the current OVERALL board of the period who has been enriched is answered from stored data: `totalPnl` is the venue PnL for the period; `roi`, `winRate`, `totalTrades` and `recentTrades` are the period's (closed positions and trades within it, losses included).",
          'Any other address is an on-demand profile, fetched from Polymarket and cached for 5 minutes; its figures cover closed positions and trades within the period (open positions always count). An address with no activity is 200 with zeros and empty arrays, cached too.',
          'For an address on no board: 30 requests per minute per client address, cached answers and 503s included, then 429 RATE_LIMITED with Retry-After. At most 4 venue fetches are in flight per instance; a request that cannot start one within 5 s is 503 UNAVAILABLE with Retry-After.',
          '`syncedAt` is when the figures were last computed from the venue, also sent as `Last-Modified`; `stale` is true when that is older than 90 minutes (ranked) or 24 hours (on demand), or when the venue could not be read and the last copy is served. The venue down on an uncached address is 503 UNAVAILABLE.',
          '`marketId` of positions and trades is the Polymarket condition id; `side` of a trade is `buy` or `sell`; `timestamp` is ISO 8601.',
        ].join(' '),
        params: AddressParamsSchema,
        querystring: ProfileQuerySchema,
        response: { 200: TraderProfileSchema, ...problemResponses(400, 429, 503) },
      },
    },
    async (request, reply) => {
      const admitOnDemand = async () => {
        const hit = await app.limiter.hit(`leaderboard-on-demand:${request.clientKey}`, 60_000, ON_DEMAND_PER_MINUTE);
        applyHit(reply, ON_DEMAND_PER_MINUTE, hit);
      };
      const profile = await getTraderProfile({ ...deps(), admitOnDemand }, request.params.address, request.query.period);
      // docs/decisions.md §11.4: venue-backed answers carry their freshness instant.
      if (profile.syncedAt) reply.header('last-modified', new Date(profile.syncedAt).toUTCString());
      return profile;
    },
  );

  app.get(
    '/:address/history',
    {
      config: { public: true },
      schema: {
        operationId: 'getTraderHistory',
        tags: ['leaderboard'],
        summary: "A trader's rank, PnL and volume over time on one board",
        description: [
          'What every leaderboard sync saw of this address on the (`category`, `period`) board (defaults OVERALL, ALL; `days` 1–365, default 90; any address case).',
          "`points` ascend by `at` (the sync time): one per clock hour (the last sync of that hour) within 7 days of the board's last sync, one per UTC day (its last sync) before that; kept at least 400 days. A sync where the trader was not on the board leaves no point.",
          '`rank` is the venue rank on the PnL ordering, null for a trader only on the volume ordering.',
          "`changes` compare the trader's entry on the current board with the newest point at least 1, 7 or 30 days older than the board's last sync: `rank` = rank then − rank now (positive: moved up; null when either is null), `pnl` = pnl now − pnl then. A change is null when no point is that old, and all are null when the trader is not on the current board.",
          'An address never on the board is 200 with `points: []` and null changes; a malformed address is 400.',
          "`syncedAt` is the board's last successful sync (null before the first; otherwise also sent as `Last-Modified`); `stale` is true when that is older than 30 minutes, the latest leaderboard-sync failed, or there was none.",
        ].join(' '),
        params: AddressParamsSchema,
        querystring: HistoryQuerySchema,
        response: { 200: TraderHistorySchema, ...problemResponses(400, 503) },
      },
    },
    async (request, reply) => {
      const history = await getTraderHistory(readDeps, request.params.address, request.query);
      // docs/decisions.md §11.4: venue-backed answers carry their freshness instant.
      if (history.syncedAt) reply.header('last-modified', new Date(history.syncedAt).toUTCString());
      return history;
    },
  );
};
