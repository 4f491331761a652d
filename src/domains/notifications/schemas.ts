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
export type NotifyInput = z.infer<typeof NotifyBodySchema>;
