import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { problemResponses } from '../../errors.js';
import {
  MessageSchema,
  PushPreferencesSchema,
  RegisterDeviceBodySchema,
  UnregisterDeviceBodySchema,
  UpdatePushPreferencesBodySchema,
} from './schemas.js';
import { checkPushReceipts, getPreferences, registerDevice, unregisterDevice, updatePreferences } from './service.js';

/** How often Expo receipts are checked (tickets are asked about ~15 min after sending). */
export const RECEIPT_CHECK_MS = 5 * 60_000;

/** Seed §4.6 with docs/decisions.md §6, under /api/v1/push. */
export const pushRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/register',
    {
      schema: {
        operationId: 'registerPushDevice',
        tags: ['push'],
        summary: 'Register a device for push notifications',
        description:
          'Idempotent upsert by token: registering the same token again answers 201 again (the platform is updated). A token ' +
          'registered to another account is never moved: 409 CONFLICT until that account unregisters it (or Expo reports ' +
          'the device gone). Apps unregister their token when the user signs out, so the next user of the device can register it.',
        body: RegisterDeviceBodySchema,
        response: { 201: MessageSchema, ...problemResponses(400, 401, 409) },
      },
    },
    async (request, reply) => {
      await registerDevice(app, request.user.id, request.body.token, request.body.platform);
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
      const removed = await unregisterDevice(app, request.user.id, request.body.token);
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
        description: 'All five notification types are listed; anything never set is true.',
        response: { 200: PushPreferencesSchema, ...problemResponses(401) },
      },
    },
    async (request) => getPreferences(app, request.user.id),
  );

  app.put(
    '/preferences',
    {
      schema: {
        operationId: 'updatePushPreferences',
        tags: ['push'],
        summary: 'Update push preferences (merged)',
        description:
          'Merged into the stored preferences: `enabled` when given, and only the types named in `types` (the others keep their value). An unknown type is 400. Answers the full preferences.',
        body: UpdatePushPreferencesBodySchema,
        response: { 200: PushPreferencesSchema, ...problemResponses(400, 401) },
      },
    },
    async (request) => updatePreferences(app, request.user.id, request.body),
  );

  let timer: NodeJS.Timeout | undefined;
  let checking: Promise<unknown> | undefined;
  app.addHook('onReady', async () => {
    timer = setInterval(() => {
      if (checking) return;
      checking = checkPushReceipts(app)
        .catch((err) => app.log.warn({ err }, 'push receipt check failed'))
        .finally(() => (checking = undefined));
    }, RECEIPT_CHECK_MS);
    timer.unref();
  });
  app.addHook('preClose', async () => {
    if (timer) clearInterval(timer);
  });
  app.addHook('onClose', async () => {
    await checking;
  });
};
