import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { problemResponses } from '../../errors.js';
import { createBookService, BOOK_FRESH_MS, BOOK_STALE_MS } from './book.js';
import { BookQuerySchema, MarketBookSchema, MarketParamsSchema, MarketSchema } from './schemas.js';
import { getMarket } from './service.js';

/** `Last-Modified` of an ISO instant (to the second); none when null. */
const httpDate = (iso: string | null) => (iso === null ? undefined : new Date(iso).toUTCString());

/**
 * GET /api/v1/markets/:id and /markets/:id/book (docs/decisions.md §16.3,
 * §16.4), both public: one market with its group (alerts, notifications and
 * the client link a `marketId` here), and its YES order book read from the
 * venue on request.
 */
export const marketRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = { db: app.db, dbh: app.dbh, clock: app.clock };
  // On request: a short timeout and one retry, so a stalled venue turns into a stale book or a 503 within seconds.
  const onDemand = (c: typeof app.venues.clob) => ({
    ...c,
    http: { ...c.http, timeoutMs: Math.min(c.http.timeoutMs ?? 5_000, 5_000), attempts: 2 },
  });
  const books = createBookService({
    dbh: app.dbh,
    clock: app.clock,
    log: app.log,
    venues: { clob: onDemand(app.venues.clob), kalshi: onDemand(app.venues.kalshi) },
  });

  app.get(
    '/:id',
    {
      config: { public: true },
      schema: {
        operationId: 'getMarket',
        tags: ['events'],
        summary: 'One market with its group',
        description:
          'The market as the group’s detail shows it, with `volume24h`, `change24h` and `endDate` (its own scheduled close, past or future), and its group (`event`). 404 NOT_FOUND for an unknown id. ' +
          'Reading it makes the market tracked for 24 h: its price is refreshed every 60 s from the next cycle on (docs/decisions.md §11.2). ' +
          '`syncedAt`: its `priceUpdatedAt` (else the catalogue refresh); `stale` when older than 3 minutes while tracked, 90 minutes otherwise, or when its venue’s latest run failed. `Last-Modified` is `syncedAt` (to the second).',
        params: MarketParamsSchema,
        response: { 200: MarketSchema, ...problemResponses(400, 404) },
      },
    },
    async (request, reply) => {
      const market = await getMarket(deps, request.params.id);
      const lm = httpDate(market.syncedAt);
      if (lm) reply.header('last-modified', lm);
      return market;
    },
  );

  app.get(
    '/:id/book',
    {
      config: { public: true },
      schema: {
        operationId: 'getMarketBook',
        tags: ['events'],
        summary: 'The market’s order book, on request',
        description:
          'The book of the side `yesPrice` prices (`outcome`), best level first: bids descending, asks ascending, prices in [0, 1], sizes in contracts (Kalshi) or shares (Polymarket). `depth` 1–50 levels per side (default 10). ' +
          '`midpoint` and `spread` are null when a side is empty. From Polymarket CLOB `GET /book` and Kalshi `GET /markets/{ticker}/orderbook` (a NO bid at p is a YES ask at 1 − p). ' +
          `One venue read serves every request and every depth for that market for ${BOOK_FRESH_MS / 1000} s (\`fetchedAt\` says when it was read; concurrent requests share one read), through the venue’s shared rate limiter. ` +
          `When the venue fails (network error, timeout, 5xx, 429) the last book read in the last ${BOOK_STALE_MS / 1000} s is served with \`stale: true\`, else 503 UNAVAILABLE with \`Retry-After\`. ` +
          'A closed or resolved market: 200 with empty sides (no venue read). An active market the venue has no book for: 200 with empty sides. Unknown id: 404. Reading a book does not make a market tracked. `Last-Modified` is `fetchedAt`.',
        params: MarketParamsSchema,
        querystring: BookQuerySchema,
        response: { 200: MarketBookSchema, ...problemResponses(400, 404, 503) },
      },
    },
    async (request, reply) => {
      const book = await books.getBook(request.params.id, request.query.depth);
      reply.header('last-modified', httpDate(book.fetchedAt));
      return book;
    },
  );
};
