import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { sendSerialized } from '../../lib/serializer.js';
import { createDeliveryState, drainDeliveries, type DeliveryState } from './delivery.js';
import { ListNotificationsQuerySchema, NotificationIdParamsSchema, NotificationListSchema, NotifyBodySchema } from './schemas.js';
import {
  deleteNotification,
  listNotifications,
  markAllNotificationsRead,
  markNotificationRead,
  notifyFromService,
  toNotificationJson,
  type NotifyDeps,
} from './service.js';
import { NotificationSchema, type NotificationChannel } from './types.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The notify path's delivery state (channels, in-flight kicks), shared by the routes and the jobs. */
    delivery: DeliveryState;
  }
}

export interface NotificationsOptions {
  /** The out-of-app delivery channels (push, messenger), handed in by the composition root. */
  channels: NotificationChannel[];
}

/**
 * The notify path's delivery state for the whole app, built from the channel
 * list the composition root (src/app.ts) passes in: the notifications domain
 * imports no channel. Closing the app waits for the delivery kicks still in
 * flight before the database pool closes. Due retries and pruning are the
 * delivery-sweep job's (src/jobs/delivery-sweep.ts).
 */
export const notificationsPlugin = fp<NotificationsOptions>(
  async (app, opts) => {
    const delivery = createDeliveryState(opts.channels);
    app.decorate('delivery', delivery);
    app.addHook('onClose', async () => drainDeliveries(delivery));
  },
  { name: 'notifications', fastify: '5.x', dependencies: ['infra'] },
);

const notifyDeps = (app: FastifyInstance): NotifyDeps => ({
  db: app.db,
  config: app.config,
  log: app.log,
  clock: app.clock,
  publish: app.publish,
  delivery: app.delivery,
});

/** Seed §4.4 with docs/decisions.md §6, under /api/v1/notifications. */
export const notificationRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = notifyDeps(app);
  app.get(
    '/',
    {
      schema: {
        operationId: 'listNotifications',
        tags: ['notifications'],
        summary: "The caller's notifications, newest first",
        description:
          "Filters `read` (`true`/`false`) and `type`; keyset pagination with an opaque `cursor` (`nextCursor` is null on the last page). `unreadCount` counts every unread notification of the caller, whatever the filters. `seq` is the caller's latest `user:notifications` stream seq when the page was read: subscribe with it as `lastSeq` to receive every later change (docs/decisions.md §12.4).",
        querystring: ListNotificationsQuerySchema,
        response: { 200: NotificationListSchema, ...problemResponses(400, 401) },
      },
    },
    // Serialised by PostgreSQL and listNotifications: sent as is.
    (request, reply) => sendSerialized(reply, undefined, () => listNotifications(deps, { userId: request.user.id, ...request.query })),
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
    async (request) => markAllNotificationsRead(deps, request.user.id),
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
    async (request) => markNotificationRead(deps, request.user.id, request.params.id),
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
      await deleteNotification(deps, request.user.id, request.params.id);
      return reply.code(204).send(null);
    },
  );
};

/** POST /api/v1/internal/notifications (registered only while INTERNAL_API_TOKEN is set). */
export const internalNotificationRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = notifyDeps(app);
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
      const stored = await notifyFromService(deps, request.body);
      return reply.code(201).send(toNotificationJson(stored));
    },
  );
};
