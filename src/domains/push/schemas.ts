import { z } from 'zod';
import { NOTIFICATION_TYPES } from '../notifications/types.js';

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

export const PushPreferencesSchema = z
  .object({
    enabled: z.boolean().meta({ description: 'Master switch for push' }),
    types: z.object(typeFlags).meta({ description: 'Per notification type; all default true' }),
  })
  .meta({ id: 'PushPreferences' });
export type PushPreferences = z.infer<typeof PushPreferencesSchema>;

export const UpdatePushPreferencesBodySchema = z.strictObject({
  enabled: z.boolean().optional(),
  // Strict: an unknown type key is a 400, not silently stored.
  types: z.strictObject(Object.fromEntries(NOTIFICATION_TYPES.map((t) => [t, z.boolean().optional()]))).optional(),
});
export type UpdatePushPreferences = z.infer<typeof UpdatePushPreferencesBodySchema>;
