import { z } from 'zod';
import type { AuthUser } from '../../plugins/auth.js';

/** Client → server `subscribe` / `unsubscribe` payload. Anything else is INVALID_CHANNEL. */
export const ChannelRequestSchema = z.strictObject({ channel: z.string().min(1).max(200) });
export type ChannelRequest = z.infer<typeof ChannelRequestSchema>;

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

export type Ack = { ok: true } | { ok: false; error: { code: RealtimeErrorCode; message: string; retryAfter?: number } };

export type AckFn = (response: Ack) => void;

/** `market:update` on `market:<marketId>` (docs/decisions.md §8). */
export interface MarketUpdate {
  marketId: string;
  yesPrice: number;
  volume: number;
  /** ISO 8601 */
  timestamp: string;
}

/** `monitor:update` on `monitor:<name>`: the publisher decides the fields beyond `name`. */
export interface MonitorUpdate {
  name: string;
  [field: string]: unknown;
}

/** `notification` on `user:notifications`: the Notification of docs/api-contract.md §2. */
export interface NotificationMessage {
  id: string;
  type: string;
  title: string;
  message: string;
  read: boolean;
  data: Record<string, unknown>;
  createdAt: string;
}

/** `auth:expired`: which private channels were left, and when the token expires. */
export interface AuthExpired {
  channels: string[];
  expiresAt: string;
  message: string;
}

/** `auth:revoked`: the connection's session was ended (docs/decisions.md §10.6); the server disconnects it next. */
export interface AuthRevoked {
  code: 'SESSION_REVOKED';
  message: string;
}

export interface ServerToClientEvents {
  'market:update': (update: MarketUpdate) => void;
  'monitor:update': (update: MonitorUpdate) => void;
  notification: (notification: NotificationMessage) => void;
  'auth:expired': (info: AuthExpired) => void;
  'auth:revoked': (info: AuthRevoked) => void;
}

export interface ClientToServerEvents {
  subscribe: (request: ChannelRequest, ack?: AckFn) => void;
  unsubscribe: (request: ChannelRequest, ack?: AckFn) => void;
  auth: (request: AuthRequest, ack?: AckFn) => void;
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface InterServerEvents {}

export interface SocketData {
  /** The verified user while the token is valid; cleared when it expires. */
  user?: AuthUser & { exp: number };
  /** The user this connection is counted against (kept after expiry; a re-auth must be the same user). */
  boundUserId?: string;
  /** The session of the last token presented (kept after expiry): its revocation disconnects the socket. */
  sid?: string;
  ip: string;
}
