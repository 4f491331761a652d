import type { AuthUser } from '../auth/guard.js';
import { parseChannel, userNotificationsChannel } from './channels.js';
import type { Ack, RealtimeErrorCode } from './schemas.js';

export type RoomDecision = { ok: true; room: string } | { ok: false; code: RealtimeErrorCode; message: string };

export function fail(code: RealtimeErrorCode, message: string, retryAfter?: number): Ack {
  return { ok: false, error: retryAfter === undefined ? { code, message } : { code, message, retryAfter } };
}

/**
 * Which room a `subscribe` joins, or why not. Public channels are open; a
 * `user:<id>` channel needs that user's valid token; `user:notifications` is
 * the caller's own stream and needs any valid token.
 */
export function resolveSubscribe(channel: string, user: AuthUser | undefined): RoomDecision {
  const parsed = parseChannel(channel);
  if (!parsed) return { ok: false, code: 'INVALID_CHANNEL', message: `Unknown channel "${channel.slice(0, 200)}"` };
  switch (parsed.kind) {
    case 'market':
    case 'monitor':
      return { ok: true, room: parsed.room };
    case 'notifications':
      if (!user) return { ok: false, code: 'FORBIDDEN', message: 'user:notifications needs a valid access token' };
      return { ok: true, room: userNotificationsChannel(user.id) };
    case 'user':
      if (!user) return { ok: false, code: 'FORBIDDEN', message: 'Private channels need a valid access token' };
      if (user.id !== parsed.userId) return { ok: false, code: 'FORBIDDEN', message: 'This channel belongs to another user' };
      return { ok: true, room: parsed.room };
  }
}

/**
 * Which room an `unsubscribe` leaves. Leaving a room one is not in is a
 * harmless no-op, so only the channel's shape is checked; `user:notifications`
 * resolves through the user the connection is bound to (even after expiry).
 */
export function resolveUnsubscribe(channel: string, boundUserId: string | undefined): RoomDecision | { ok: true; room: undefined } {
  const parsed = parseChannel(channel);
  if (!parsed) return { ok: false, code: 'INVALID_CHANNEL', message: `Unknown channel "${channel.slice(0, 200)}"` };
  if (parsed.kind === 'notifications') return { ok: true, room: boundUserId ? userNotificationsChannel(boundUserId) : undefined };
  return { ok: true, room: parsed.room };
}
