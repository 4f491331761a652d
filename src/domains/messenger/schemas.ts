import { z } from 'zod';

/** 1 MiB on the webhook (docs/decisions.md §2), over the global 64 KiB. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;
/** Link codes live 10 minutes (docs/decisions.md §7). */
export const LINK_CODE_TTL_MS = 10 * 60 * 1000;

/**
 * Route-level webhook body: anything JSON. Telegram retries every non-2xx
 * answer, so a body that is not an update we understand must still get 200;
 * the service parses it with TelegramUpdateSchema below.
 */
export const WebhookBodySchema = z.unknown().meta({
  description:
    'A Telegram Update object (https://core.telegram.org/bots/api#update). Any JSON is accepted with 200; only private-chat text messages are acted on.',
});

export const WebhookResponseSchema = z.object({ ok: z.literal(true) });

const TelegramId = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

/** The part of an Update we act on (Bot API: Update, Message, User, Chat). */
export const TelegramUpdateSchema = z.looseObject({
  update_id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  message: z
    .looseObject({
      message_id: z.number().int(),
      from: z.looseObject({ id: TelegramId, is_bot: z.boolean().optional() }).optional(),
      chat: z.looseObject({ id: TelegramId, type: z.string() }),
      text: z.string().optional(),
    })
    .optional(),
});
export type TelegramUpdate = z.infer<typeof TelegramUpdateSchema>;

/** Only the id is needed to deduplicate, even when the rest of the update is garbage. */
export const UpdateIdSchema = z.looseObject({ update_id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) });

export const LinkCodeSchema = z
  .object({
    code: z.string().meta({ description: 'One-time code, 43 characters of [A-Za-z0-9_-] (256 random bits, base64url)' }),
    deepLink: z.string().meta({ description: '`https://t.me/<bot>?start=<code>`: opening it sends `/start <code>` to the bot' }),
    expiresAt: z.string().meta({ description: 'ISO 8601; 10 minutes after issue' }),
  })
  .meta({ id: 'MessengerLinkCode' });

export const LinkStatusSchema = z
  .object({
    linked: z.boolean(),
    walletType: z.enum(['connected', 'created_via_bot']).nullable(),
    connectedAt: z.string().nullable(),
    lastCommandAt: z.string().nullable(),
  })
  .meta({ id: 'MessengerLinkStatus' });
export type LinkStatus = z.infer<typeof LinkStatusSchema>;
