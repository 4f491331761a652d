import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { AlertIdParamsSchema, CreateAlertBodySchema, PriceAlertSchema, UpdateAlertBodySchema } from './schemas.js';
import { createAlert, deleteAlert, listAlerts, updateAlert } from './service.js';

const TRIGGER_NOTE =
  "Alerts are checked on every price-sync cycle (60 s) against the markets whose price changed (docs/decisions.md §6, §14). The side's price is yesPrice, or 1 − yesPrice for `no`. `above`/`below` fire when it is ≥ / ≤ `targetPrice`; `moves` fires when it differs by at least `change` from any reading of the last `windowMinutes` taken since the alert was created or last fired. Firing sets `triggeredAt`/`triggeredPrice` (the current reading), adds 1 to `triggerCount` and sends one `price_alert_triggered` notification (`data.marketId`, `data.alertId`, `data.triggerCount`), once across instances. Without `repeat` the alert then becomes inactive. With `repeat` it stays active and fires again no sooner than `cooldownMinutes` after its last firing: a crossing alert once a later reading went back across the target by at least 0.02 (`above`: ≤ target − 0.02; `below`: ≥ target + 0.02), a move alert on a new move measured from readings after its last firing. When a cooldown ends, the market's current price counts as a reading even if it has not changed. `big_trade` alerts (docs/decisions.md §18.4) are checked on every price-sync too, against the venue's trades of the market (Polymarket: Data API trades filtered by cash; Kalshi: the ticker's trades), so a trade is noticed within 6 minutes (the venues' trade feeds may lag by up to 5): one trade of at least `minUsd` USD (price × size), either side, made after the alert was created, redefined or last fired, fires it. Its notification's `data` adds `usd`, `side` (`buy` | `sell`; a Kalshi taker always buys the outcome it names), `outcome`, `price`, `walletAddress` (the Polymarket trader; null on Kalshi) and `at` (the trade's time), and `triggeredPrice` is that trade's price. A repeating big-trade alert fires at most once per cooldown: trades during the cooldown are remembered, and the first check after it ends fires for the largest of them.";

/** Seed §4.5 with docs/decisions.md §6, under /api/v1/alerts. */
export const alertRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = { db: app.db, clock: app.clock };
  app.get(
    '/',
    {
      schema: {
        operationId: 'listAlerts',
        tags: ['alerts'],
        summary: "All the caller's price alerts, active and triggered, newest first",
        description: TRIGGER_NOTE,
        response: { 200: z.object({ alerts: z.array(PriceAlertSchema) }), ...problemResponses(401) },
      },
    },
    async (request) => ({ alerts: await listAlerts(deps, request.user.id) }),
  );

  app.post(
    '/',
    {
      schema: {
        operationId: 'createAlert',
        tags: ['alerts'],
        summary: 'Create a price alert',
        description: `The market must exist (404). At most 100 active alerts per user (409 ALERT_LIMIT). \`above\`/\`below\` need \`targetPrice\` and \`side\`; \`moves\` needs \`side\`, \`change\` (0.01–0.5) and \`windowMinutes\` (5–1440); \`big_trade\` needs \`minUsd\` (1,000–10,000,000) and nothing else. A field another condition takes must be null or absent: otherwise 400 VALIDATION_ERROR. \`repeat\` defaults to false, \`cooldownMinutes\` (1–10080) to 60. ${TRIGGER_NOTE}`,
        body: CreateAlertBodySchema,
        response: { 201: PriceAlertSchema, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await createAlert(deps, request.user.id, request.body)),
  );

  app.put(
    '/:id',
    {
      schema: {
        operationId: 'updateAlert',
        tags: ['alerts'],
        summary: 'Update a price alert (partial)',
        description:
          "Any of `targetPrice`, `condition`, `side`, `change`, `windowMinutes`, `minUsd`, `repeat`, `cooldownMinutes`, `active`; an empty body is 400. Fields left out keep their values when the (new) condition takes them and are dropped when it does not (from `above` to `moves`: `side` kept, `targetPrice` dropped; to `big_trade`: all but `minUsd` dropped); the result must be a valid alert as for POST (400 otherwise: a field the condition does not take, or a missing required one). A changed definition (`targetPrice`, `condition`, `side`, `change`, `windowMinutes`, `minUsd`) starts afresh: a repeating crossing alert is armed again, a move alert counts readings from now, a big-trade alert counts trades from now; the cooldown still runs from the last firing. Reactivating (`active: true` on an inactive alert) counts toward the 100-active limit, clears `triggeredAt`/`triggeredPrice` and keeps `triggerCount`. Another user's alert or an unknown id → 404.",
        params: AlertIdParamsSchema,
        body: UpdateAlertBodySchema,
        response: { 200: PriceAlertSchema, ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request) => updateAlert(deps, request.user.id, request.params.id, request.body),
  );

  app.delete(
    '/:id',
    {
      schema: {
        operationId: 'deleteAlert',
        tags: ['alerts'],
        summary: 'Delete a price alert',
        description: "Another user's alert or an unknown id → 404.",
        params: AlertIdParamsSchema,
        response: { 204: z.null().meta({ description: 'Deleted' }), ...problemResponses(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteAlert(deps, request.user.id, request.params.id);
      return reply.code(204).send(null);
    },
  );
};
