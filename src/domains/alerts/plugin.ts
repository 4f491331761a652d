import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { AlertIdParamsSchema, CreateAlertBodySchema, PriceAlertSchema, UpdateAlertBodySchema } from './schemas.js';
import { createAlert, deleteAlert, listAlerts, updateAlert } from './service.js';

const TRIGGER_NOTE =
  "Alerts are checked on every price-sync cycle (60 s) against the markets whose price changed: an active alert fires when its side's price (`no` = 1 − yesPrice) is ≥ target (`above`) or ≤ target (`below`). Firing sets `active: false` with `triggeredAt`/`triggeredPrice` and sends one `price_alert_triggered` notification (`data.marketId`, `data.alertId`).";

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
        description: `The market must exist (404). At most 100 active alerts per user (409 ALERT_LIMIT). ${TRIGGER_NOTE}`,
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
          "Any of `targetPrice`, `condition`, `side`, `active`; an empty body is 400. Reactivating (`active: true` on an inactive alert) counts toward the 100-active limit and clears `triggeredAt`/`triggeredPrice`. Another user's alert or an unknown id → 404.",
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
