/**
 * Channel names of docs/decisions.md §8 and the Socket.IO room each one maps to.
 *
 * Domains never touch sockets: they call `app.publish(channel, event, payload)`
 * with one of the channel strings built here, and the realtime plugin emits
 * `event` to the room of the same name. A room is exactly the channel string,
 * except for `user:notifications`: every signed-in client subscribes to that
 * same name, so each one is put in its own private room
 * `user:<userId>:notifications`, and that is what the notifications domain
 * publishes to (`userNotificationsChannel(userId)`).
 */

/** Server → client event names (public contract). */
export const MARKET_UPDATE = 'market:update';
export const MONITOR_UPDATE = 'monitor:update';
export const NOTIFICATION = 'notification';
export const AUTH_EXPIRED = 'auth:expired';
export const AUTH_REVOKED = 'auth:revoked';

/** Our market ids: `pm-<gamma id>` / `ks-<ticker>` (docs/venues.md); kept open to other venues' id shapes. */
const MARKET_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Monitor names are short lower-case slugs such as `leaderboard-sync` or `events-sync`. */
const MONITOR_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** User ids are UUIDs in the schema; any token subject of this shape is accepted. */
const USER_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

export const NOTIFICATIONS_CHANNEL = 'user:notifications';

/** `market:<marketId>` → event `market:update` with a MarketUpdate. */
export function marketChannel(marketId: string): string {
  return `market:${marketId}`;
}

/** `monitor:<name>` → event `monitor:update`. */
export function monitorChannel(name: string): string {
  return `monitor:${name}`;
}

/** `user:<userId>`: per-user updates, delivered only to sockets signed in as that user. */
export function userChannel(userId: string): string {
  return `user:${userId}`;
}

/**
 * Where the notifications domain publishes a user's `notification` events:
 * the private room of the clients that subscribed to `user:notifications`.
 */
export function userNotificationsChannel(userId: string): string {
  return `user:${userId}:notifications`;
}

export type ParsedChannel =
  | { kind: 'market'; room: string }
  | { kind: 'monitor'; room: string }
  | { kind: 'user'; userId: string; room: string }
  | { kind: 'notifications' };

/** What a client may name in subscribe/unsubscribe; undefined when the name is not a channel. */
export function parseChannel(channel: string): ParsedChannel | undefined {
  if (channel === NOTIFICATIONS_CHANNEL) return { kind: 'notifications' };
  const colon = channel.indexOf(':');
  if (colon < 0) return undefined;
  const kind = channel.slice(0, colon);
  const rest = channel.slice(colon + 1);
  if (kind === 'market' && MARKET_ID.test(rest)) return { kind: 'market', room: channel };
  if (kind === 'monitor' && MONITOR_NAME.test(rest)) return { kind: 'monitor', room: channel };
  if (kind === 'user' && USER_ID.test(rest)) return { kind: 'user', userId: rest, room: channel };
  return undefined;
}

/** Rooms only a signed-in owner may be in; they are left when the token expires. */
export function isPrivateRoom(room: string): boolean {
  return room.startsWith('user:');
}
