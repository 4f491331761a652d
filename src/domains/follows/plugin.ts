import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { FollowListSchema, FollowParamsSchema, FollowSchema, TraderSearchQuerySchema, TraderSearchResultSchema } from './schemas.js';
import { createSearchState, searchTraders } from './search.js';
import { FOLLOW_LIMIT, followTrader, listFollows, unfollowTrader } from './service.js';

const TRADE_NOTE =
  'When a followed trader trades on Polymarket, each follower gets one `trader_trade` notification per (trader, market, side) per poll of the `follows-poll` job (every 60 s): title "<name> bought/sold <outcome> on <market title>", `data` `{ walletAddress, marketId, eventSlug, side, outcome, price, size, usd, at, transactionHash, fills }` (`size` and `usd` summed over the poll\'s fills, `price` their size-weighted average, `at`/`transactionHash` the newest fill\'s; `marketId`/`eventSlug` null when the market is not in our catalogue). Fills from before the follow are never sent; each fill is sent once. Delay: at most 5 minutes for the 300 most-followed traders; the others are read at most every 30 minutes as far as the venue budget allows (docs/decisions.md §18.3). Push preferences (`types.trader_trade`, on by default), quiet hours and Telegram apply as for every type.';

/** docs/decisions.md §18.1: GET /api/v1/traders/search (public). */
export const traderRoutes: FastifyPluginAsyncZod = async (app) => {
  const state = createSearchState();
  const deps = {
    dbh: app.dbh,
    log: app.log,
    state,
    // Someone is waiting: fewer, shorter attempts than the jobs' (the limiter is still the process's Gamma one).
    gamma: { ...app.venues.gamma, http: { ...app.venues.gamma.http, timeoutMs: 5_000, attempts: 2 } },
  };
  app.get(
    '/search',
    {
      config: { public: true },
      schema: {
        operationId: 'searchTraders',
        tags: ['traders'],
        summary: 'Find a trader by name or address',
        description: [
          'At most 10 traders: first our ranked traders (on any current leaderboard) whose display name or address starts with `q` (case-insensitive), by their OVERALL / ALL rank (`rank`, null when not on that board) then address;',
          "then Polymarket's profile search (Gamma `/public-search`, cached 10 minutes per `q`) in the venue's order, minus addresses already listed.",
          "An address `q` (0x + 40 hex) that is an account's signer address (EOA) resolves to that account's wallet (Gamma `/public-profile`, cached 24 hours): `walletAddress` is always the account wallet that GET /leaderboard/{address} and PUT /follows/{address} take.",
          'An address that is neither a known account nor the signer of one gives our matches only (possibly none: 200 with `[]`).',
          "`displayName` is the trader's name, else the address; `avatarUrl` is null when there is none.",
          'When the venue fails or is slow, the answer is our matches only (never a 5xx). `q` shorter than 2 or longer than 100 characters (after trimming) → 400.',
        ].join(' '),
        querystring: TraderSearchQuerySchema,
        response: { 200: TraderSearchResultSchema, ...problemResponses(400) },
      },
    },
    async (request) => searchTraders(deps, request.query.q),
  );
};

/** docs/decisions.md §18.2: the caller's followed traders, under /api/v1/follows. */
export const followRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = { db: app.db, clock: app.clock };
  app.get(
    '/',
    {
      schema: {
        operationId: 'listFollows',
        tags: ['follows'],
        summary: "The caller's followed traders, most recently followed first",
        description: `\`lastTradeAt\` is the newest fill the poller has seen for the trader (null before the first). ${TRADE_NOTE}`,
        response: { 200: FollowListSchema, ...problemResponses(401) },
      },
    },
    async (request) => listFollows(deps, request.user.id),
  );

  app.put(
    '/:address',
    {
      schema: {
        operationId: 'followTrader',
        tags: ['follows'],
        summary: 'Follow a trader',
        description: `The address is the trader's account wallet (any case; stored lower-case; use GET /traders/search to turn a name or a signer address into one); a malformed address → 400. 201 when newly followed, 200 with the stored \`followedAt\` when already followed. At most ${FOLLOW_LIMIT} per user: the next → 409 FOLLOW_LIMIT. ${TRADE_NOTE}`,
        params: FollowParamsSchema,
        response: { 200: FollowSchema, 201: FollowSchema, ...problemResponses(400, 401, 409) },
      },
    },
    async (request, reply) => {
      const { follow, created } = await followTrader(deps, request.user.id, request.params.address);
      return reply.code(created ? 201 : 200).send(follow);
    },
  );

  app.delete(
    '/:address',
    {
      schema: {
        operationId: 'unfollowTrader',
        tags: ['follows'],
        summary: 'Stop following a trader',
        description: 'Any case; 204 also when the trader was not followed; a malformed address → 400.',
        params: FollowParamsSchema,
        response: { 204: z.null().meta({ description: 'Not followed (any more)' }), ...problemResponses(400, 401) },
      },
    },
    async (request, reply) => {
      await unfollowTrader(deps, request.user.id, request.params.address);
      return reply.code(204).send(null);
    },
  );
};
