import { z } from 'zod';
import { NOTIFICATION_TYPES, NotificationTypeSchema } from '../notifications/types.js';
import { HHMM, isTimeZone } from '../notifications/quiet-hours.js';

export const PushTokenSchema = z
  .string()
  .min(1)
  .max(512)
  // Printable ASCII without spaces: Expo tokens look like ExponentPushToken[xxxxxxxx].
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
  .meta({ description: 'Device push token, e.g. `ExponentPushToken[…]`' });

export const RegisterDeviceBodySchema = z.strictObject({
  token: PushTokenSchema,
  platform: z.enum(['ios', 'android', 'web']),
});

export const UnregisterDeviceBodySchema = z.strictObject({ token: PushTokenSchema });

export const MessageSchema = z.object({ message: z.string() });

const typeFlags = Object.fromEntries(NOTIFICATION_TYPES.map((t) => [t, z.boolean()])) as Record<
  (typeof NOTIFICATION_TYPES)[number],
  z.ZodBoolean
>;

const hhmm = (what: string) =>
  z
    .string()
    .max(5)
    .regex(HHMM, 'must be HH:MM, 00:00–23:59')
    .meta({ description: `${what}, local wall time \`HH:MM\` (00:00–23:59)`, example: what === 'Start' ? '22:00' : '07:00' });

/** docs/decisions.md §14.4. */
export const QuietHoursSchema = z
  .object({
    start: hhmm('Start'),
    end: hhmm('End (exclusive)'),
    timezone: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z][A-Za-z0-9_+\-/]*$/, 'must be an IANA time zone, e.g. Europe/Berlin')
      .refine(isTimeZone, 'must be an IANA time zone, e.g. Europe/Berlin')
      .meta({ description: 'IANA time zone, stored as given', example: 'Europe/Berlin' }),
  })
  .meta({
    id: 'QuietHours',
    description:
      'While the local time in `timezone` is in [`start`, `end`) — a window may cross midnight, e.g. 22:00–07:00 — push and ' +
      'Telegram deliveries of types not in `urgentTypes` are held; when the window ends they go out within 60 s as one ' +
      'digest per device and chat (docs/decisions.md §14.4). In-app notifications and the live stream are unaffected.',
  });

const QuietHoursInputSchema = z
  .strictObject({ start: QuietHoursSchema.shape.start, end: QuietHoursSchema.shape.end, timezone: QuietHoursSchema.shape.timezone })
  .refine((q) => q.start !== q.end, { message: 'start and end must differ', path: ['end'] });

export const PushPreferencesSchema = z
  .object({
    enabled: z.boolean().meta({ description: 'Master switch for push' }),
    types: z.object(typeFlags).meta({ description: 'Per notification type; all default true' }),
    quietHours: QuietHoursSchema.nullable().meta({ description: 'null (the default): no quiet hours' }),
    urgentTypes: z
      .array(NotificationTypeSchema)
      .meta({ description: 'Types delivered at once even inside quiet hours (default `[]`); not counted in the digest' }),
  })
  .meta({ id: 'PushPreferences' });
export type PushPreferences = z.infer<typeof PushPreferencesSchema>;

export const UpdatePushPreferencesBodySchema = z.strictObject({
  enabled: z.boolean().optional(),
  // Strict: an unknown type key is a 400, not silently stored.
  types: z.strictObject(Object.fromEntries(NOTIFICATION_TYPES.map((t) => [t, z.boolean().optional()]))).optional(),
  quietHours: QuietHoursInputSchema.nullable()
    .optional()
    .meta({ description: 'Replaces the stored window; null removes it (held deliveries are then released within 60 s)' }),
  urgentTypes: z
    .array(NotificationTypeSchema)
    .max(NOTIFICATION_TYPES.length * 4)
    .optional()
    .meta({
      description: 'Replaces the stored list (duplicates are dropped); an unknown type is 400',
    }),
});
export type UpdatePushPreferences = z.infer<typeof UpdatePushPreferencesBodySchema>;
