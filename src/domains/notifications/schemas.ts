import { z } from 'zod';
import { NotificationSchema, NotificationTypeSchema } from './types.js';
import { shallowJsonObject } from '../../lib/json-depth.js';

export const ListNotificationsQuerySchema = z.object({
  // Query strings are text: only the exact words true/false are accepted.
  read: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .meta({ description: 'Only read (`true`) or unread (`false`) notifications' }),
  type: NotificationTypeSchema.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().min(1).max(2048).optional().meta({ description: '`nextCursor` of the previous page' }),
});

export const NotificationListSchema = z.object({
  notifications: z.array(NotificationSchema),
  unreadCount: z.number().int().meta({ description: 'All unread notifications of the user, whatever the filters' }),
  seq: z.number().int().min(0).meta({
    description:
      "The user's latest stream `seq` when the page was read (docs/decisions.md §12.4): subscribe to `user:notifications` with it as `lastSeq` to get every change after this page",
  }),
  nextCursor: z.string().nullable().meta({ description: 'null on the last page' }),
});

export const NotificationIdParamsSchema = z.object({ id: z.string().max(100) });

export const NotifyBodySchema = z.strictObject({
  userId: z.uuid().max(36),
  type: NotificationTypeSchema,
  title: z.string().trim().min(1).max(200),
  message: z.string().trim().min(1).max(2000),
  data: shallowJsonObject(16)
    .optional()
    .meta({ description: 'Related ids, e.g. `orderId`, `marketId`; a JSON object nesting at most 16 levels' }),
});

// ---- The delivery ledger's internal API (docs/decisions.md §13.4) ----

export const DELIVERY_STATUSES = ['pending', 'sent', 'skipped', 'failed'] as const;
export const DELIVERY_CHANNELS = ['push', 'messenger'] as const;

export const DeliverySchema = z
  .object({
    id: z.string(),
    notificationId: z.string().nullable().meta({
      description: 'null on a quiet-hours digest (docs/decisions.md §14.4), which is not stored as a notification: see `digest`',
    }),
    userId: z.string(),
    channel: z.enum(DELIVERY_CHANNELS),
    target: z.object({
      kind: z.enum(['device', 'chat']),
      id: z.string().meta({ description: 'The Expo push token or the Telegram chat id' }),
    }),
    status: z.enum(DELIVERY_STATUSES).meta({
      description:
        "`pending` includes rows held for the user's quiet hours (`heldAt` set): they are not attempted until the window ends. " +
        'Then the release settles them as `skipped` with `lastError` "quiet hours: sent in a digest" (their content went out in ' +
        'the digest row) or "preferences" (the type or push was turned off meanwhile), and writes one digest row per device or chat',
    }),
    attempts: z.number().int().meta({ description: 'Provider attempts so far (a rate-limit wait is not one)' }),
    lastError: z.string().nullable(),
    updatedAt: z.string().meta({ description: 'ISO 8601' }),
    heldAt: z.string().nullable().meta({
      description:
        'ISO 8601: when the row was held for quiet hours (docs/decisions.md §14.4); kept after it is settled; null if never held',
    }),
    digest: z
      .object({ count: z.number().int().min(1).meta({ description: 'Held notifications this digest stands for' }) })
      .nullable()
      .meta({ description: "Set on a quiet-hours digest row (its `notificationId` is null); null on a notification's row" }),
  })
  .meta({ id: 'Delivery' });
export type Delivery = z.infer<typeof DeliverySchema>;

export const ListDeliveriesQuerySchema = z.object({
  status: z.enum(DELIVERY_STATUSES).default('failed'),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().min(1).max(2048).optional().meta({ description: '`nextCursor` of the previous page' }),
});

export const DeliveryListSchema = z.object({
  deliveries: z.array(DeliverySchema),
  nextCursor: z.string().nullable().meta({ description: 'null on the last page' }),
});

export const DeliveryIdParamsSchema = z.object({ id: z.string().max(100) });

export const DeliveryChannelSummarySchema = z
  .object({
    channel: z.enum(DELIVERY_CHANNELS),
    paused: z.boolean(),
    pausedReason: z.string().nullable().meta({ description: 'e.g. `InvalidCredentials`; null when not paused' }),
    pending: z.number().int().meta({ description: 'Pending rows, held ones included' }),
    failed: z.number().int(),
    held: z.number().int().meta({ description: "Pending rows held for their users' quiet hours (docs/decisions.md §14.4)" }),
  })
  .meta({ id: 'DeliveryChannelSummary' });

export const DeliverySummarySchema = z.object({ channels: z.array(DeliveryChannelSummarySchema) });

export const ResumeChannelBodySchema = z.strictObject({ channel: z.enum(DELIVERY_CHANNELS) });
