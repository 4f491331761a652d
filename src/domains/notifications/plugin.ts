import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { createBodyCache } from '../../lib/body-cache.js';
import { serveCached } from '../../lib/serve-cached.js';
import { createDeliveryState, drainDeliveries, liftStalePauses, stopDeliveryWakeups, type DeliveryState } from './delivery.js';
import {
  DeliveryChannelSummarySchema,
  DeliveryIdParamsSchema,
  DeliveryListSchema,
  DeliverySchema,
  DeliverySummarySchema,
  ListDeliveriesQuerySchema,
  ListNotificationsQuerySchema,
  NotificationIdParamsSchema,
  NotificationListSchema,
  NotifyBodySchema,
  ResumeChannelBodySchema,
} from './schemas.js';
import { deliverySummary, listDeliveries, resumeDeliveryChannel, retryDelivery } from './deliveries.js';
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

/**
 * The first pages of users' notification lists, serialised, per instance, in a
 * body cache grouped by user (src/lib/body-cache.ts; issue #21: a bearer read
 * that does no work must not cost a database round trip).
 *
 * Correctness rests on one fact: every change to a user's notifications (new,
 * read, all read, deleted) is stored with a stream event and published after
 * commit (docs/decisions.md §12), and the user stream hub signals
 * `userStreamChanged` for it on every instance (stream-hub.ts): the user's
 * pages are dropped here before the writer answers, on other instances as
 * soon as the event arrives. A read in flight when that lands does not keep
 * what it read. Only pages without a cursor are kept (what a client reads on
 * open and after each event).
 *
 * The TTL bounds staleness should an event ever be lost; the budget is in
 * bytes, and one user holds at most PAGE_CACHE_USER_BYTES of it (issue #34:
 * one user's many filters and limits must not evict everyone else's pages).
 */
const PAGE_CACHE_TTL_MS = 15_000;
const PAGE_CACHE_BYTES = 16 * 1024 * 1024;
/** ~30 first pages of 100 typical notifications: far more than one client reads. */
const PAGE_CACHE_USER_BYTES = 1024 * 1024;

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
    const delivery = createDeliveryState(opts.channels, { redis: app.redisClient, keyPrefix: app.keyPrefix });
    app.decorate('delivery', delivery);
    // docs/decisions.md §13.2: a pause taken with other credentials is lifted when the service starts.
    // Not awaited: a database that is down at start must not stop the process from starting (and
    // answering /health/ready with 503); the pause then stays until the resume route or a restart.
    const liftAtStart = liftStalePauses(app.db, opts.channels, app.config).then(
      (lifted) => {
        if (lifted.length > 0) app.log.info({ channels: lifted }, 'delivery channels resumed: their credentials changed');
      },
      (err: unknown) => app.log.warn({ err }, 'delivery channels: stored pauses could not be checked at start'),
    );
    app.addHook('onClose', async () => {
      await liftAtStart;
      stopDeliveryWakeups(delivery);
      await drainDeliveries(delivery);
    });
  },
  { name: 'notifications', fastify: '5.x', dependencies: ['context', 'db', 'redis'] },
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
  const pages = createBodyCache({
    ttlMs: PAGE_CACHE_TTL_MS,
    maxBytes: PAGE_CACHE_BYTES,
    maxGroupBytes: PAGE_CACHE_USER_BYTES,
    // With Redis configured but not answering, events from other instances may be missed: emptied and bypassed.
    usable: () => !app.redisClient || app.redisReady(),
    now: () => app.clock().getTime(),
  });
  // Every change to a user's notifications is published after commit and reaches the user's stream
  // (stream-hub.ts), from this instance and from the others alike: the stream signals it.
  const onChange = (userId: string) => pages.invalidate(userId);
  app.signals.on('userStreamChanged', onChange);
  app.addHook('onClose', async () => {
    app.signals.off('userStreamChanged', onChange);
  });
  app.get(
    '/',
    {
      schema: {
        operationId: 'listNotifications',
        tags: ['notifications'],
        summary: "The caller's notifications, newest first",
        description:
          "Filters `read` (`true`/`false`) and `type`; keyset pagination with an opaque `cursor` (`nextCursor` is null on the last page). `unreadCount` counts every unread notification of the caller, whatever the filters. `seq` is the caller's latest `user:notifications` stream seq when the page was read: subscribe with it as `lastSeq` to receive every later change (docs/decisions.md §12.4). First pages (no `cursor`) are served from a per-instance cache that every change to the caller's notifications drops before the change is answered; on other instances as soon as its stream event arrives (milliseconds).",
        querystring: ListNotificationsQuerySchema,
        response: { 200: NotificationListSchema, ...problemResponses(400, 401) },
      },
    },
    // A first page (no cursor) from the page cache, synchronously; deeper pages from the database every time.
    (request, reply) => {
      const input = { userId: request.user.id, ...request.query };
      const key = input.cursor === undefined ? `${input.limit}|${input.read ?? ''}|${input.type ?? ''}` : undefined;
      return serveCached(reply, pages, key, () => listNotifications(deps, input), { group: input.userId });
    },
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

/**
 * The delivery ledger under /api/v1/internal/deliveries (docs/decisions.md
 * §13.4; registered only while INTERNAL_API_TOKEN is set).
 */
export const internalDeliveryRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = notifyDeps(app);
  app.get(
    '/deliveries',
    {
      config: { internal: true },
      schema: {
        operationId: 'listDeliveries',
        tags: ['internal'],
        summary: 'Delivery ledger rows by status (dead letters by default)',
        description:
          'One row per (notification, channel, device or chat). `status` defaults to `failed` (the dead letters); newest `updatedAt` first; `nextCursor` pages on (a cursor is only valid for the status it was issued for). ' +
          "Quiet hours (docs/decisions.md §14.4) add no status: a row held for the user's quiet hours is `pending` with `heldAt` set and is not attempted; " +
          'when the window ends it becomes `skipped` (`lastError` "quiet hours: sent in a digest", or "preferences") and a digest row ' +
          '(`notificationId` null, `digest.count` set) is written per device or chat and delivered like any other row.',
        querystring: ListDeliveriesQuerySchema,
        response: { 200: DeliveryListSchema, ...problemResponses(400, 401) },
      },
    },
    async (request) => listDeliveries(deps, request.query),
  );

  app.get(
    '/deliveries/summary',
    {
      config: { internal: true },
      schema: {
        operationId: 'getDeliverySummary',
        tags: ['internal'],
        summary: 'Per channel: paused or not (and why), pending and failed rows',
        description: '`held` counts the pending rows held for quiet hours (docs/decisions.md §14.4); they are included in `pending`.',
        response: { 200: DeliverySummarySchema, ...problemResponses(401) },
      },
    },
    async () => deliverySummary(deps),
  );

  app.post(
    '/deliveries/resume',
    {
      config: { internal: true },
      schema: {
        operationId: 'resumeDeliveryChannel',
        tags: ['internal'],
        summary: 'Lift a channel pause (push pauses on Expo InvalidCredentials)',
        description:
          "The channel's waiting rows go out with the next delivery-sweep run. Resuming a channel that is not paused changes nothing (200). A pause is also lifted when the service starts with a different `PUSH_ACCESS_TOKEN`.",
        body: ResumeChannelBodySchema,
        response: { 200: DeliveryChannelSummarySchema, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => resumeDeliveryChannel(deps, request.body.channel),
  );

  app.post(
    '/deliveries/:id/retry',
    {
      config: { internal: true },
      schema: {
        operationId: 'retryDelivery',
        tags: ['internal'],
        summary: 'Re-queue a dead letter',
        description:
          'The row is `pending` again, due now, with a fresh hour of retries; only that device or chat is sent to. Unknown id → 404; a row that is not `failed` → 409 `DELIVERY_NOT_FAILED`.',
        params: DeliveryIdParamsSchema,
        response: { 202: DeliverySchema, ...problemResponses(401, 404, 409) },
      },
    },
    async (request, reply) => reply.code(202).send(await retryDelivery(deps, request.params.id)),
  );
};
