import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { problemResponses } from '../../errors.js';
import { LinkCodeSchema, LinkStatusSchema, WEBHOOK_BODY_LIMIT, WebhookBodySchema, WebhookResponseSchema } from './schemas.js';
import type { ServiceDeps } from '../../lib/deps.js';
import type { FloodControl } from './flood.js';
import { checkWebhookSecret, getLinkStatus, handleUpdate, issueLinkCode, sendReplies, unlinkUser } from './service.js';

/** How long the webhook waits for its replies before answering anyway (they still go out). */
const REPLY_WAIT_MS = 2_000;

/** /api/v1/messenger-bot: the Telegram webhook and account linking (docs/api-contract.md §4.2, docs/decisions.md §7). */
export const messengerRoutes: FastifyPluginAsyncZod<{ flood: FloodControl }> = async (app, opts) => {
  const deps = (log = app.log): ServiceDeps => ({ db: app.db, config: app.config, log, clock: app.clock });

  // Replies go out after the webhook has answered; shutdown waits for them.
  const pending = new Set<Promise<void>>();
  app.addHook('onClose', async () => {
    await Promise.allSettled([...pending]);
  });

  app.post(
    '/webhook',
    {
      config: { public: true },
      bodyLimit: WEBHOOK_BODY_LIMIT,
      // Rejected before the body is read or anything is stored.
      onRequest: async (request) => {
        checkWebhookSecret(app.config.MESSENGER_WEBHOOK_SECRET, request.headers['x-telegram-bot-api-secret-token']);
      },
      schema: {
        operationId: 'messengerWebhook',
        tags: ['messenger'],
        security: [{ webhookSecret: [] }],
        summary: 'Telegram Bot API webhook',
        description: [
          'Public, but the `X-Telegram-Bot-Api-Secret-Token` header must equal `MESSENGER_WEBHOOK_SECRET` (constant-time compare):',
          'wrong or missing → 401 `INVALID_WEBHOOK_SECRET` and nothing stored; secret unset → 503. Body limit 1 MiB (413 over it).',
          'Any JSON body gets 200 `{ ok: true }`, because Telegram retries every other answer: a repeated `update_id` is processed once',
          '(also across instances), and bodies that are not updates, non-text messages, group chats and unknown commands change nothing',
          '(only the update_id is remembered). A body that is not JSON at all is 400 (415 for another content type).',
          'Commands in the private chat: `/start <code>` links, `/start`, `/status`, `/unlink`, `/help`. Replies are sent after the commit',
          '(the answer waits for them at most 2 s); a Telegram failure while replying never changes the status.',
        ].join(' '),
        body: WebhookBodySchema,
        response: { 200: WebhookResponseSchema, ...problemResponses(400, 401, 413, 415, 503) },
      },
    },
    async (request) => {
      const d = deps(request.log);
      const { replies } = await handleUpdate(d, request.body);
      if (replies.length > 0) {
        const p = sendReplies({ ...d, flood: opts.flood }, replies).finally(() => pending.delete(p));
        pending.add(p);
        // Usually the reply is out before we answer; a slow Telegram only delays the answer by REPLY_WAIT_MS.
        const timer = new AbortController();
        await Promise.race([p, sleep(REPLY_WAIT_MS, undefined, { ref: false, signal: timer.signal }).catch(() => {})]);
        timer.abort();
      }
      return { ok: true as const };
    },
  );

  app.post(
    '/link',
    {
      config: { rateLimit: { max: 10, timeWindow: 60_000, hook: 'preHandler', keyGenerator: (req) => `user:${req.user?.id ?? req.ip}` } },
      schema: {
        operationId: 'createMessengerLink',
        tags: ['messenger'],
        summary: 'Issue a one-time Telegram link code and deep link',
        description:
          "The code is single-use, lives 10 minutes and is stored hashed; issuing a new one retires the caller's earlier codes. " +
          'Opening `deepLink` sends `/start <code>` to the bot, which binds that Telegram user to the caller (replacing any earlier binding of either side). ' +
          '503 while `MESSENGER_BOT_USERNAME` is unset. 10 requests a minute per user.',
        response: { 201: LinkCodeSchema, ...problemResponses(401, 429, 503) },
      },
    },
    async (request, reply) => reply.code(201).send(await issueLinkCode(deps(request.log), request.user.id)),
  );

  app.get(
    '/link',
    {
      schema: {
        operationId: 'getMessengerLink',
        tags: ['messenger'],
        summary: "The caller's Telegram link",
        description: 'Lets the app show whether a chat is linked (for example after opening the deep link).',
        response: { 200: LinkStatusSchema, ...problemResponses(401) },
      },
    },
    async (request) => getLinkStatus(deps(request.log), request.user.id),
  );

  app.delete(
    '/link',
    {
      schema: {
        operationId: 'deleteMessengerLink',
        tags: ['messenger'],
        summary: "Remove the caller's Telegram link",
        description: 'Idempotent: 204 whether or not a chat was linked. Notifications stop going to the chat at once.',
        response: { 204: z.null().meta({ description: 'Unlinked (or was not linked)' }), ...problemResponses(401) },
      },
    },
    async (request, reply) => {
      await unlinkUser(deps(request.log), request.user.id);
      return reply.code(204).send(null);
    },
  );
};
