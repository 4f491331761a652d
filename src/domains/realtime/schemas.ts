import { z } from 'zod';
import type { AuthUser } from '../auth/guard.js';
import { STREAM_EVENTS, type StreamPayload } from '../notifications/types.js';
import type { RelayedStreamEvent } from './streams.js';

/** Client → server `subscribe` / `unsubscribe` envelope. Anything else is INVALID_CHANNEL. */
export const ChannelRequestSchema = z.strictObject({
  channel: z.string().min(1).max(200),
  /** Checked on its own (LastSeqSchema): a bad `lastSeq` is VALIDATION_ERROR, not INVALID_CHANNEL. */
  lastSeq: z.unknown().optional(),
});
export type ChannelRequest = { channel: string; lastSeq?: number };

/** docs/decisions.md §12.3: `subscribe` `{ channel: 'user:notifications', lastSeq }` resumes after `lastSeq`. */
export const LastSeqSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Client → server `auth` payload (re-authentication after `auth:expired`). */
export const AuthRequestSchema = z.strictObject({ token: z.string().min(1).max(4096) });
export type AuthRequest = z.infer<typeof AuthRequestSchema>;

/** Codes an ack or a refused connection can carry (docs/decisions.md §8, plus §2's UNAUTHORIZED). */
export type RealtimeErrorCode =
  | 'FORBIDDEN'
  | 'RATE_LIMITED'
  | 'INVALID_CHANNEL'
  | 'UNAUTHORIZED'
  | 'TOO_MANY_CONNECTIONS'
  | 'VALIDATION_ERROR'
  | 'UNAVAILABLE'
  | 'SESSION_REVOKED';

/**
 * A `subscribe` to `user:notifications` acks `{ ok: true, seq }` (the user's latest seq, after any
 * replayed events) and adds `reset: true` when it could not resume (docs/decisions.md §12.3).
 */
export type Ack =
  { ok: true; seq?: number; reset?: true } | { ok: false; error: { code: RealtimeErrorCode; message: string; retryAfter?: number } };

export type AckFn = (response: Ack) => void;

// ---------------------------------------------------------------- server → client payloads
// Each has an OpenAPI component id: the document's `x-realtime` section points at
// them, and the client's types (client/src/schema.ts) are generated from them.

export const MarketUpdateSchema = z
  .strictObject({
    marketId: z.string().max(128).meta({ description: 'Our market id: `pm-<id>` or `ks-<ticker>`' }),
    yesPrice: z.number().min(0).max(1),
    volume: z.number(),
    timestamp: z.iso.datetime().meta({ description: 'ISO 8601: when the sync, or the venue socket of a hot market, saw the change' }),
  })
  .meta({
    id: 'MarketUpdate',
    description:
      '`market:update` on `market:<marketId>`: the market’s price or volume changed. Within 2 s of a venue change for a ' +
      'Polymarket market with a live subscriber (docs/decisions.md §11.2), else from the 60 s price cycle',
  });
export type MarketUpdate = z.infer<typeof MarketUpdateSchema>;

/** The monitors that publish: `monitor:<name>` channels with events. */
export const MONITOR_NAMES = ['leaderboard'] as const;
export type MonitorName = (typeof MONITOR_NAMES)[number];

export const MonitorUpdateSchema = z
  .strictObject({
    name: z.enum(MONITOR_NAMES).meta({ description: 'The monitor: the channel is `monitor:<name>`' }),
    kind: z.enum(['sync', 'enrich']).meta({
      description: '`sync`: leaderboard-sync switched to new board snapshots; `enrich`: leaderboard-enrich refreshed trader figures',
    }),
    syncedAt: z.iso.datetime().meta({ description: 'ISO 8601: when the run finished writing' }),
  })
  .meta({
    id: 'MonitorUpdate',
    description: '`monitor:update` on `monitor:leaderboard`, after every leaderboard sync and enrichment run: reload what you show',
  });
export type MonitorUpdate = z.infer<typeof MonitorUpdateSchema>;

/** `notification` on `user:notifications`: the Notification of docs/api-contract.md §2 plus the stream's `seq` and `unreadCount` (docs/decisions.md §12.2). */
export type NotificationMessage = StreamPayload<'notification'>;

export const AuthExpiredSchema = z
  .strictObject({
    channels: z.array(z.string().max(200)).max(100).meta({ description: 'The private channels the socket left' }),
    expiresAt: z.iso.datetime(),
    message: z.string().max(500),
  })
  .meta({
    id: 'AuthExpired',
    description: '`auth:expired`, to one socket: its token expires within 5 s and its private channels were left',
  });
export type AuthExpired = z.infer<typeof AuthExpiredSchema>;

export const AuthRevokedSchema = z
  .strictObject({
    code: z.literal('SESSION_REVOKED'),
    message: z.string().max(500),
  })
  .meta({
    id: 'AuthRevoked',
    description: '`auth:revoked`, to one socket: its session was ended (docs/decisions.md §10.6); the server disconnects it next',
  });
export type AuthRevoked = z.infer<typeof AuthRevokedSchema>;

/**
 * The realtime contract: channel → event → payload schema (`<…>` marks the
 * variable part of a channel name). `publish()` is typed against it
 * (channels.ts), ServerToClientEvents and the OpenAPI document's
 * `x-realtime` section are derived from it. A new event is one entry under
 * its channel; a new channel is one key here plus its case in parseChannel.
 */
export const REALTIME_EVENTS = {
  'market:<marketId>': { 'market:update': MarketUpdateSchema },
  'monitor:leaderboard': { 'monitor:update': MonitorUpdateSchema },
  /**
   * A user's stream behind a client's `user:notifications` subscription
   * (docs/decisions.md §12): ordered by `seq`, resumable with `lastSeq`.
   */
  'user:<userId>:notifications': STREAM_EVENTS,
} as const;

/** REALTIME_EVENTS as types: channel pattern → event → payload. */
export type RealtimeEvents = {
  [C in keyof typeof REALTIME_EVENTS]: { [E in keyof (typeof REALTIME_EVENTS)[C]]: z.output<(typeof REALTIME_EVENTS)[C][E]> };
};

type EventName = { [C in keyof RealtimeEvents]: keyof RealtimeEvents[C] }[keyof RealtimeEvents];
type PayloadOf<E> = { [C in keyof RealtimeEvents]: E extends keyof RealtimeEvents[C] ? RealtimeEvents[C][E] : never }[keyof RealtimeEvents];

/** What a socket can receive: every channel event, plus `auth:expired` sent to the socket itself. */
export type ServerToClientEvents = { [E in EventName]: (payload: PayloadOf<E>) => void } & {
  'auth:expired': (info: AuthExpired) => void;
  'auth:revoked': (info: AuthRevoked) => void;
};

/** The `x-realtime` section of the OpenAPI document: channels, events and `$ref`s to the payload components. */
export function realtimeDocument() {
  const ref = (schema: z.ZodType) => {
    const id = z.globalRegistry.get(schema)?.id;
    if (!id) throw new Error('a realtime payload schema has no OpenAPI id');
    return { $ref: `#/components/schemas/${id}` };
  };
  const channels: Record<string, Record<string, { $ref: string }>> = {};
  for (const [channel, events] of Object.entries(REALTIME_EVENTS) as Array<[string, Record<string, z.ZodType>]>) {
    channels[channel] = Object.fromEntries(Object.entries(events).map(([event, schema]) => [event, ref(schema)]));
  }
  return {
    description:
      'Socket.IO at /socket.io/ (docs/real-time.md). `channels`: the events published on each channel and their payloads; ' +
      'a client subscribes to `user:notifications` to join its own `user:<userId>:notifications`. `socket`: events sent to one socket. ' +
      'The user stream (docs/decisions.md §12): every event carries `seq` (per user, from 1, no gaps) and `unreadCount`; ' +
      '`subscribe` `{ channel: "user:notifications", lastSeq }` first sends the stored events after `lastSeq` in order, then acks ' +
      '`{ ok: true, seq }` (the latest) and continues live; `reset: true` in the ack means the events after `lastSeq` are no longer kept ' +
      '(or `lastSeq` is ahead): reload over REST (`GET /api/v1/notifications` carries `seq`). A `lastSeq` that is not a non-negative ' +
      'integer acks `VALIDATION_ERROR`.',
    channels,
    socket: { 'auth:expired': ref(AuthExpiredSchema), 'auth:revoked': ref(AuthRevokedSchema) },
  };
}

export interface ClientToServerEvents {
  subscribe: (request: ChannelRequest, ack?: AckFn) => void;
  unsubscribe: (request: ChannelRequest, ack?: AckFn) => void;
  auth: (request: AuthRequest, ack?: AckFn) => void;
}

/**
 * Between instances (through the Redis adapter): user stream events published on another instance.
 * `stream:events` carries every event published in one turn of the event loop (a fan-out's
 * thousands in a few messages); `stream:event`, one event, is what earlier versions send.
 */
export interface InterServerEvents {
  'stream:event': (event: RelayedStreamEvent) => void;
  'stream:events': (events: RelayedStreamEvent[]) => void;
}

export interface SocketData {
  /** The verified user while the token is valid; cleared when it expires. */
  user?: AuthUser & { exp: number };
  /** The user this connection is counted against (kept after expiry; a re-auth must be the same user). */
  boundUserId?: string;
  /** The session of the last token presented (kept after expiry): its revocation disconnects the socket. */
  sid?: string;
  ip: string;
}
