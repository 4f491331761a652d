import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { problemResponses } from '../../errors.js';
import {
  MessageSchema,
  PushPreferencesSchema,
  RegisterDeviceBodySchema,
  UnregisterDeviceBodySchema,
  UpdatePushPreferencesBodySchema,
} from './schemas.js';
import { kickInBackground, processDueDeliveries } from '../notifications/delivery.js';
import { releaseHeldDeliveries } from '../notifications/quiet-hours.js';
import { getPreferences, registerDevice, unregisterDevice, updatePreferences } from './service.js';

/**
 * Seed §4.6 with docs/decisions.md §6, under /api/v1/push. Expo receipts are
 * checked by the push-receipts job (src/jobs/push-receipts.ts).
 */
export const pushRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = { db: app.db, clock: app.clock };
  app.post(
    '/register',
    {
      schema: {
        operationId: 'registerPushDevice',
        tags: ['push'],
        summary: 'Register a device for push notifications',
        description:
          'Idempotent upsert by token: registering the same token again answers 201 again (the platform is updated). A token ' +
          'registered to another account moves to the caller (one phone, another account: the app cannot always unregister at ' +
          'sign-out, and the token is a device secret only the device holds). Unregister removes only the caller’s own ' +
          'registration, so the previous owner unregistering later leaves the new owner’s in place (docs/decisions.md §6).',
        body: RegisterDeviceBodySchema,
        response: { 201: MessageSchema, ...problemResponses(400, 401) },
      },
    },
    async (request, reply) => {
      await registerDevice(deps, request.user.id, request.body.token, request.body.platform);
      return reply.code(201).send({ message: 'Device registered' });
    },
  );

  app.delete(
    '/unregister',
    {
      schema: {
        operationId: 'unregisterPushDevice',
        tags: ['push'],
        summary: 'Unregister a device',
        description:
          "Removes the token only when it is registered to the caller. An unknown token, or another user's, also answers 200 (idempotent, and nothing about other users' devices is revealed) and changes nothing.",
        body: UnregisterDeviceBodySchema,
        response: { 200: MessageSchema, ...problemResponses(400, 401) },
      },
    },
    async (request) => {
      const removed = await unregisterDevice(deps, request.user.id, request.body.token);
      return { message: removed ? 'Device unregistered' : 'Device not registered' };
    },
  );

  app.get(
    '/preferences',
    {
      schema: {
        operationId: 'getPushPreferences',
        tags: ['push'],
        summary: "The caller's push preferences",
        description:
          'All five notification types are listed; anything never set is true. `quietHours` is null and `urgentTypes` empty ' +
          'until set (docs/decisions.md §14.4).',
        response: { 200: PushPreferencesSchema, ...problemResponses(401) },
      },
    },
    async (request) => getPreferences(deps, request.user.id),
  );

  app.put(
    '/preferences',
    {
      schema: {
        operationId: 'updatePushPreferences',
        tags: ['push'],
        summary: 'Update push preferences (merged)',
        description:
          'Merged into the stored preferences: `enabled` when given, and only the types named in `types` (the others keep their value); ' +
          '`quietHours` and `urgentTypes` replace the stored value when given (`quietHours: null` removes the window). An unknown type, ' +
          'a time that is not HH:MM (00:00–23:59), `start` equal to `end`, or a time zone that is not an IANA zone is 400. ' +
          'Answers the full preferences. When the change leaves the caller outside quiet hours, deliveries held so far go out ' +
          'at once as one digest per device and chat (docs/decisions.md §14.4; otherwise the next delivery-sweep run, within 15 s).',
        body: UpdatePushPreferencesBodySchema,
        response: { 200: PushPreferencesSchema, ...problemResponses(400, 401) },
      },
    },
    async (request) => {
      const prefs = await updatePreferences(deps, request.user.id, request.body);
      if (request.body.quietHours !== undefined || request.body.enabled !== undefined || request.body.types !== undefined) {
        // docs/decisions.md §14.4: a window changed so that now is outside it releases what it held, without waiting
        // for the sweep (which does the same within 15 s if this kick fails).
        const userId = request.user.id;
        const kickDeps = { db: app.db, config: app.config, log: app.log, clock: app.clock, delivery: app.delivery };
        kickInBackground(kickDeps, async () => {
          const { digests } = await releaseHeldDeliveries(kickDeps, { userIds: [userId] });
          if (digests.length > 0) await processDueDeliveries(kickDeps, { deliveryIds: digests });
        });
      }
      return prefs;
    },
  );
};
