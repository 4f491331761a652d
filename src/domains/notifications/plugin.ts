import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { problemResponses } from '../../errors.js';
import { drainDeliveries, processAllDueDeliveries, pruneSettledDeliveries } from './delivery.js';
import {
  ListNotificationsQuerySchema,
  NotificationIdParamsSchema,
  NotificationListSchema,
  NotificationSchema,
  NotifyBodySchema,
} from './schemas.js';
import {
  deleteNotification,
  listNotifications,
  markAllNotificationsRead,
  markNotificationRead,
  notifyFromService,
  toNotificationJson,
  type NotifyDeps,
} from './service.js';
import { z } from 'zod';
import { sendSerialized } from '../../lib/serializer.js';

/** How often the outbox is swept for due (retried) deliveries. */
export const DELIVERY_SWEEP_MS = 15_000;
/** How often settled outbox rows past their retention are deleted (by the same sweep). */
export const DELIVERY_PRUNE_MS = 60 * 60_000;

const notifyDeps = (app: Parameters<FastifyPluginAsyncZod>[0]): NotifyDeps => ({
  db: app.db,
  config: app.config,
  log: app.log,
  clock: app.clock,
  publish: app.publish,
});

/** Seed §4.4 with docs/decisions.md §6, under /api/v1/notifications. */
export const notificationRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/',
    {
      schema: {
        operationId: 'listNotifications',
        tags: ['notifications'],
        summary: "The caller's notifications, newest first",
        description:
          'Filters `read` (`true`/`false`) and `type`; keyset pagination with an opaque `cursor` (`nextCursor` is null on the last page). `unreadCount` counts every unread notification of the caller, whatever the filters.',
        querystring: ListNotificationsQuerySchema,
        response: { 200: NotificationListSchema, ...problemResponses(400, 401) },
      },
    },
    // Serialised by PostgreSQL and listNotifications: sent as is.
    (request, reply) => sendSerialized(reply, undefined, () => listNotifications(app, { userId: request.user.id, ...request.query })),
  );

  // Static segment: Fastify's router prefers it over /:id.
  app.patch(
    '/mark-all-read',
    {
      schema: {
        operationId: 'markAllNotificationsRead',
        tags: ['notifications'],
        summary: "Mark all the caller's notifications read",
        description: '`updated` is the number of notifications that changed from unread to read.',
        response: { 200: z.object({ updated: z.number().int() }), ...problemResponses(401) },
      },
    },
    async (request) => markAllNotificationsRead(app, request.user.id),
  );

  app.patch(
    '/:id',
    {
      schema: {
        operationId: 'markNotificationRead',
        tags: ['notifications'],
        summary: 'Mark one notification read',
        description: "Another user's notification, an unknown id or a malformed id is 404 (existence is not leaked).",
        params: NotificationIdParamsSchema,
        response: { 200: NotificationSchema, ...problemResponses(401, 404) },
      },
    },
    async (request) => markNotificationRead(app, request.user.id, request.params.id),
  );

  app.delete(
    '/:id',
    {
      schema: {
        operationId: 'deleteNotification',
        tags: ['notifications'],
        summary: 'Dismiss a notification (permanent removal)',
        description: "Another user's notification, an unknown id or a malformed id is 404.",
        params: NotificationIdParamsSchema,
        response: { 204: z.null().meta({ description: 'Removed' }), ...problemResponses(401, 404) },
      },
    },
    async (request, reply) => {
      await deleteNotification(app, request.user.id, request.params.id);
      return reply.code(204).send(null);
    },
  );

  // The outbox sweep: retries of failed deliveries and anything a kick left behind.
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> | undefined;
  let closing = false;
  let prunedAt = 0;
  const sweep = async () => {
    await processAllDueDeliveries(notifyDeps(app));
    const now = app.clock();
    if (now.getTime() - prunedAt >= DELIVERY_PRUNE_MS) {
      prunedAt = now.getTime();
      const pruned = await pruneSettledDeliveries(app.db, now);
      if (pruned > 0) app.log.info({ pruned }, 'settled notification deliveries pruned');
    }
  };
  app.addHook('onReady', async () => {
    timer = setInterval(() => {
      if (closing || sweeping) return;
      sweeping = sweep()
        .catch((err) => app.log.warn({ err }, 'notification delivery sweep failed'))
        .finally(() => (sweeping = undefined));
    }, DELIVERY_SWEEP_MS);
    timer.unref();
  });
  app.addHook('preClose', async () => {
    closing = true;
    if (timer) clearInterval(timer);
  });
  app.addHook('onClose', async () => {
    await sweeping;
    await drainDeliveries(app.db);
  });
};

/** POST /api/v1/internal/notifications (registered only while INTERNAL_API_TOKEN is set). */
export const internalNotificationRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/notifications',
    {
      config: { internal: true },
      schema: {
        operationId: 'createNotification',
        tags: ['internal'],
        summary: 'Raise a notification for a user (trading, copy-trading, missions services)',
        description:
          "Goes through the one notify path: stored, emitted on the user's `user:notifications` stream, and delivered by push/messenger as the user's preferences allow. Answers as soon as it is stored. Unknown user → 404.",
        body: NotifyBodySchema,
        response: { 201: NotificationSchema, ...problemResponses(400, 401, 404) },
      },
    },
    async (request, reply) => {
      const stored = await notifyFromService(notifyDeps(app), request.body);
      return reply.code(201).send(toNotificationJson(stored));
    },
  );
};
