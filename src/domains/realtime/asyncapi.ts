import { z } from 'zod';
import { AUTH_EXPIRED, AUTH_REVOKED, NOTIFICATIONS_CHANNEL } from './channels.js';
import {
  AuthExpiredSchema,
  AuthRequestSchema,
  AuthRevokedSchema,
  ChannelRequestSchema,
  LastSeqSchema,
  REALTIME_EVENTS,
  type Ack,
  type RealtimeErrorCode,
} from './schemas.js';

/**
 * docs/decisions.md §15.4: the Socket.IO protocol as an AsyncAPI 3.0 document
 * (served at /docs/asyncapi.json), generated from the same Zod schemas the
 * code uses: every channel and event of REALTIME_EVENTS, the events sent to
 * one socket, and the client's messages with their acknowledgements. A new
 * event in REALTIME_EVENTS appears here with no change to this file.
 *
 * The document describes this service, so `send` is server → client and
 * `receive` is client → server. A Socket.IO event is a message whose `name`
 * is the event name; its payload is the first argument of `emit`.
 */

const ERROR_CODES = [
  'FORBIDDEN',
  'RATE_LIMITED',
  'INVALID_CHANNEL',
  'UNAUTHORIZED',
  'TOO_MANY_CONNECTIONS',
  'VALIDATION_ERROR',
  'UNAVAILABLE',
  'SESSION_REVOKED',
] as const satisfies readonly RealtimeErrorCode[];

/** The acknowledgement of `subscribe`, `unsubscribe` and `auth`, as a schema (kept equal to the `Ack` type below). */
const AckSchema = z.union([
  z.strictObject({
    ok: z.literal(true),
    seq: z.number().int().min(0).optional().meta({
      description: '`subscribe` to `user:notifications`: the user’s latest stream seq, after any replayed events (docs/decisions.md §12.3)',
    }),
    reset: z.literal(true).optional().meta({
      description: 'The events after `lastSeq` are no longer kept (or `lastSeq` is ahead): reload over REST',
    }),
  }),
  z.strictObject({
    ok: z.literal(false),
    error: z.strictObject({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      retryAfter: z.number().int().min(1).optional().meta({ description: 'Seconds to wait (RATE_LIMITED)' }),
    }),
  }),
]);

/** `subscribe` as documented: `lastSeq` is checked on its own by the plugin (a bad one is VALIDATION_ERROR). */
const SubscribeRequestSchema = ChannelRequestSchema.extend({
  lastSeq: LastSeqSchema.optional().meta({
    description: '`user:notifications` only: the last stream seq this client saw; the events after it are replayed before the ack',
  }),
});

// Compile-time: the schema and the type the plugin acks with are exactly the same (keys included), and every code is listed.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const ackMatches: Same<z.output<typeof AckSchema>, Ack> = true;
const codesListed: Same<(typeof ERROR_CODES)[number], RealtimeErrorCode> = true;
void ackMatches;
void codesListed;

type Json = Record<string, unknown>;

/** What a client names in `subscribe` for a contract key: the private notifications room is reached through `user:notifications`. */
const SUBSCRIBED_AS: Record<string, string> = { 'user:<userId>:notifications': NOTIFICATIONS_CHANNEL };

const PARAMETERS: Record<string, string> = {
  marketId: 'Our market id: `pm-<Polymarket market id>` or `ks-<Kalshi ticker>`',
  userId: 'The signed-in user’s id',
};

/** `market:<marketId>` → `market`; `user:<userId>:notifications` → `user-notifications` (AsyncAPI ids allow letters, digits, `.`, `-`, `_`). */
function channelId(key: string): string {
  return key
    .replace(/<[^>]*>/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .join('-');
}

/** `market:update` → `market.update`. */
function messageId(event: string): string {
  return event.replace(/[^A-Za-z0-9._-]+/g, '.');
}

/** The id a payload schema has in the OpenAPI document (its `.meta({ id })`); the AsyncAPI components reuse it. */
function schemaId(schema: z.ZodType): string {
  const id = z.globalRegistry.get(schema)?.id;
  if (!id) throw new Error('a realtime payload schema has no id');
  return id;
}

const ref = ($ref: string) => ({ $ref });

export interface AsyncApiOptions {
  /** `info.version`: the service's version. */
  version?: string;
}

export function asyncApiDocument(opts: AsyncApiOptions = {}): Json {
  const payloads = z.registry<{ id: string }>();
  const addPayload = (schema: z.ZodType, id = schemaId(schema)): string => {
    if (!payloads.has(schema)) payloads.add(schema, { id });
    return id;
  };

  const channels: Record<string, Json> = {};
  const operations: Record<string, Json> = {};
  const messages: Record<string, Json> = {};
  const addMessage = (event: string, schema: z.ZodType, channel: string, id = schemaId(schema)): string => {
    let key = messageId(event);
    if (messages[key] && (messages[key].payload as { $ref: string }).$ref !== `#/components/schemas/${id}`) key = `${channel}.${key}`;
    const description = z.globalRegistry.get(schema)?.description;
    messages[key] = {
      name: event,
      title: event,
      ...(description ? { summary: description } : {}),
      contentType: 'application/json',
      payload: ref(`#/components/schemas/${addPayload(schema, id)}`),
    };
    return key;
  };

  for (const [key, events] of Object.entries(REALTIME_EVENTS) as Array<[string, Record<string, z.ZodType>]>) {
    const id = channelId(key);
    const address = SUBSCRIBED_AS[key] ?? key.replace(/<([A-Za-z0-9]+)>/g, '{$1}');
    const params = [...address.matchAll(/\{([A-Za-z0-9]+)\}/g)].map((m) => m[1]);
    const channelMessages: Record<string, Json> = {};
    for (const [event, schema] of Object.entries(events)) {
      const m = addMessage(event, schema, id);
      channelMessages[m] = ref(`#/components/messages/${m}`);
      operations[`${id}.${m}`] = {
        action: 'send',
        title: `${event} on ${address}`,
        summary: `Emits \`${event}\` to the sockets subscribed to \`${address}\``,
        channel: ref(`#/channels/${id}`),
        messages: [ref(`#/channels/${id}/messages/${m}`)],
      };
    }
    channels[id] = {
      address,
      title: address,
      description:
        SUBSCRIBED_AS[key] === undefined
          ? `Subscribe with \`subscribe\` \`{ channel: '${address.replace(/\{([A-Za-z0-9]+)\}/g, '<$1>')}' }\`.`
          : `Subscribe with \`subscribe\` \`{ channel: '${address}' }\` (signed-in sockets only): each socket receives its own user's events (the server publishes to \`${key}\`).`,
      messages: channelMessages,
      ...(params.length ? { parameters: Object.fromEntries(params.map((p) => [p, { description: PARAMETERS[p] ?? p }])) } : {}),
    };
  }

  // Events sent to one socket, outside any channel.
  const socketMessages: Record<string, Json> = {};
  for (const [event, schema] of [
    [AUTH_EXPIRED, AuthExpiredSchema],
    [AUTH_REVOKED, AuthRevokedSchema],
  ] as const) {
    const m = addMessage(event, schema, 'socket');
    socketMessages[m] = ref(`#/components/messages/${m}`);
    operations[`socket.${m}`] = {
      action: 'send',
      title: event,
      channel: ref('#/channels/socket'),
      messages: [ref(`#/channels/socket/messages/${m}`)],
    };
  }
  channels.socket = {
    address: null,
    title: 'This socket',
    description: 'Events the server sends to one socket, whatever it subscribed to.',
    messages: socketMessages,
  };

  // Client → server messages, each answered through Socket.IO's acknowledgement callback.
  const ackId = addMessage('ack', AckSchema, 'control', 'RealtimeAck');
  messages[ackId] = {
    ...messages[ackId],
    title: 'Acknowledgement',
    summary:
      'The argument of the acknowledgement callback: `{ ok: true }` (`seq`, `reset` on a `user:notifications` subscribe) or `{ ok: false, error: { code, message, retryAfter? } }`',
  };
  const controlMessages: Record<string, Json> = { [ackId]: ref(`#/components/messages/${ackId}`) };
  const requests: Array<[string, z.ZodType, string, string]> = [
    [
      'subscribe',
      SubscribeRequestSchema,
      'SubscribeRequest',
      'Join a channel (for `user:notifications`, optionally resuming after `lastSeq`). Codes: INVALID_CHANNEL, FORBIDDEN, RATE_LIMITED, VALIDATION_ERROR.',
    ],
    [
      'unsubscribe',
      ChannelRequestSchema.omit({ lastSeq: true }),
      'ChannelRequest',
      'Leave a channel. Codes: INVALID_CHANNEL, RATE_LIMITED.',
    ],
    [
      'auth',
      AuthRequestSchema,
      'AuthRequest',
      'Sign in again after `auth:expired` (or sign in an anonymous connection). Codes: UNAUTHORIZED, FORBIDDEN, VALIDATION_ERROR, TOO_MANY_CONNECTIONS, RATE_LIMITED, SESSION_REVOKED.',
    ],
  ];
  for (const [event, schema, id, summary] of requests) {
    const m = addMessage(event, schema, 'control', id);
    controlMessages[m] = ref(`#/components/messages/${m}`);
    operations[`control.${m}`] = {
      action: 'receive',
      title: event,
      summary,
      channel: ref('#/channels/control'),
      messages: [ref(`#/channels/control/messages/${m}`)],
      reply: { channel: ref('#/channels/control'), messages: [ref(`#/channels/control/messages/${ackId}`)] },
    };
  }
  channels.control = {
    address: null,
    title: 'Client requests',
    description: 'Messages a client emits, each answered through the acknowledgement callback (a missing callback is fine).',
    messages: controlMessages,
  };

  const generated = z.toJSONSchema(payloads, { target: 'draft-7', io: 'output', uri: (id) => `#/components/schemas/${id}` });
  const schemas = Object.fromEntries(
    Object.entries(generated.schemas).map(([id, s]) => {
      const { $schema: _s, $id: _i, ...rest } = s as Json;
      return [id, rest];
    }),
  );

  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Prediction-market trading platform: live updates',
      version: opts.version ?? '1.0.0',
      description: [
        'Socket.IO 4 on the API’s own port, path `/socket.io/` (WebSocket transport; HTTP long-polling works too).',
        'Each message is a Socket.IO event: `name` is the event name and `payload` its first argument.',
        'Connect with `io(url, { auth: { token } })`: a valid access token signs the socket in; no token connects anonymously (public channels only).',
        'A refused connection is `connect_error` with `message` set to the code (UNAUTHORIZED, TOO_MANY_CONNECTIONS, SESSION_REVOKED, UNAVAILABLE).',
        'The HTTP API is described at `/docs` (OpenAPI `/docs/json`), whose `x-realtime` section lists the same channels.',
      ].join('\n\n'),
    },
    defaultContentType: 'application/json',
    servers: {
      api: {
        host: '{host}',
        protocol: 'ws',
        pathname: '/socket.io/',
        title: 'This deployment',
        description: 'The host serving this document (Socket.IO, Engine.IO protocol 4).',
        variables: { host: { default: '127.0.0.1:3000', description: 'Host and port of the API' } },
        security: [ref('#/components/securitySchemes/accessToken')],
      },
    },
    channels,
    operations,
    components: {
      schemas,
      messages,
      securitySchemes: {
        accessToken: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'The access token of the HTTP API, sent in the Socket.IO handshake as `auth: { token }` (optional: anonymous sockets see public channels only).',
        },
      },
    },
  };
}
