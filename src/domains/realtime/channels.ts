import type { MonitorName, RealtimeEvents } from './schemas.js';

/**
 * Channel names of docs/decisions.md §8, the Socket.IO room each one maps to,
 * and the typed `publish` every producer calls.
 *
 * Domains never touch sockets: they call `publish(channel, event, payload)`
 * with a channel built here, and the realtime plugin emits `event` to the
 * room of the same name. A room is exactly the channel string, except for
 * `user:notifications`: every signed-in client subscribes to that same name,
 * so each one is put in its own private room `user:<userId>:notifications`,
 * and that is what the notifications domain publishes to
 * (`userNotificationsChannel(userId)`).
 */

/** Sent to one socket when its token is about to expire (not a channel event). */
export const AUTH_EXPIRED = 'auth:expired';
export const AUTH_REVOKED = 'auth:revoked';

/** Our market ids: `pm-<gamma id>` / `ks-<ticker>` (docs/venues.md); kept open to other venues' id shapes. */
const MARKET_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Monitor names are short lower-case slugs such as `leaderboard`. */
const MONITOR_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** User ids are UUIDs in the schema; any token subject of this shape is accepted. */
const USER_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,63}$/;

export const NOTIFICATIONS_CHANNEL = 'user:notifications';

/** `market:<marketId>` → event `market:update`. */
export function marketChannel(marketId: string): `market:${string}` {
  return `market:${marketId}`;
}

/** The market id of a `market:<id>` room, or undefined for any other room. */
export function marketOfRoom(room: string): string | undefined {
  return room.startsWith('market:') ? room.slice('market:'.length) : undefined;
}

/** `monitor:<name>` → event `monitor:update`. */
export function monitorChannel<N extends MonitorName>(name: N): `monitor:${N}` {
  return `monitor:${name}`;
}

/** `user:<userId>`: per-user updates, delivered only to sockets signed in as that user (no event defined yet). */
export function userChannel(userId: string): `user:${string}` {
  return `user:${userId}`;
}

/**
 * Where the notifications domain publishes a user's `notification` events:
 * the private room of the clients that subscribed to `user:notifications`.
 */
export function userNotificationsChannel(userId: string): `user:${string}:notifications` {
  return `user:${userId}:notifications`;
}

const USER_NOTIFICATIONS_CHANNEL = /^user:([^:]+):notifications$/;

/** The user id of a `userNotificationsChannel()` name, or undefined for any other channel. */
export function userOfNotificationsChannel(channel: string): string | undefined {
  return USER_NOTIFICATIONS_CHANNEL.exec(channel)?.[1];
}

/** A contract key as a channel type: `market:<marketId>` → `market:${string}`. */
type ChannelOf<K extends string> = K extends `${infer Head}<${string}>${infer Tail}` ? `${Head}${string}${ChannelOf<Tail>}` : K;

/** Every channel something is published on (the keys of REALTIME_EVENTS). */
export type Channel = { [K in keyof RealtimeEvents]: ChannelOf<K> }[keyof RealtimeEvents];

/** The events of a channel: event name → payload. */
export type EventsOf<C extends Channel> = {
  [K in keyof RealtimeEvents]: C extends ChannelOf<K> ? RealtimeEvents[K] : never;
}[keyof RealtimeEvents];

/**
 * The one way domains reach live clients. A channel, event or payload outside
 * the contract (schemas.ts REALTIME_EVENTS) does not compile.
 */
export type PublishFn = <C extends Channel, E extends keyof EventsOf<C> & string>(channel: C, event: E, payload: EventsOf<C>[E]) => void;

/** What travels on the in-process bus from publish() to the realtime plugin. */
export interface Published {
  channel: string;
  event: string;
  payload: unknown;
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
