import type { Socket } from 'socket.io';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../errors.js';
import { addressKey, clientAddress, networkKeys, type TrustedProxies } from '../../lib/client-address.js';
import { MemorySlidingWindow } from '../../lib/sliding-window.js';
import type { AuthUser } from '../auth/guard.js';
import { AUTH_EXPIRED, isPrivateRoom, NOTIFICATIONS_CHANNEL } from './channels.js';
import type { ConnectionRegistry } from './connection-limits.js';
import {
  AuthRequestSchema,
  ChannelRequestSchema,
  LastSeqSchema,
  type Ack,
  type AckFn,
  type ClientToServerEvents,
  type InterServerEvents,
  type RealtimeErrorCode,
  type ServerToClientEvents,
  type SocketData,
} from './schemas.js';
import { fail, resolveSubscribe, resolveUnsubscribe } from './service.js';
import type { UserStreams } from './streams.js';

export type RealtimeSocket = Socket<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;

/** The limits and timings of the protocol (a part of the plugin's RealtimeOptions). */
export interface ProtocolOptions {
  maxMessagesPerMinute: number;
  maxAuthPerMinute: number;
  maxChannelsPerSocket: number;
  expiryLeadMs: number;
}

export interface ProtocolDeps {
  options: ProtocolOptions;
  log: FastifyBaseLogger;
  /** Where connections are counted (per user, per address, in total). */
  registry: ConnectionRegistry;
  /** The users' streams served on `user:notifications`. */
  hub: UserStreams;
  verifyAccessToken(token: string): AuthUser & { exp: number };
  /** Whether a session has ended (docs/decisions.md §10.6), asked again once a socket is registered. */
  isRevoked(sid: string): boolean;
  trustedProxies: TrustedProxies;
  /** Called once a socket is admitted (it joins the namespace, so it is no longer a pending Engine.IO connection). */
  admitted(socket: RealtimeSocket): void;
}

const MINUTE = 60_000;

/** Client events with a handler; any other event only spends the socket's message budget. */
const HANDLED_EVENTS = new Set(['subscribe', 'unsubscribe', 'auth']);
// setTimeout's ceiling; longer-lived tokens are re-armed when it fires.
const MAX_TIMER_MS = 2_147_483_647;

/** A connection refusal: the client's `connect_error` has `message` = code and `data` = { code, message }. */
export function refusal(code: RealtimeErrorCode, message: string): Error & { data: { code: string; message: string } } {
  return Object.assign(new Error(code), { data: { code, message } });
}

/** A refusal code for a token that does not verify: a revoked session says so (docs/decisions.md §10.6). */
const tokenFailure = (err: unknown): 'SESSION_REVOKED' | 'UNAUTHORIZED' =>
  err instanceof AppError && err.code === 'SESSION_REVOKED' ? 'SESSION_REVOKED' : 'UNAUTHORIZED';

/** Splits (payload, ack) leniently: a client may omit either, and a missing ack must not crash us. */
function splitArgs(args: unknown[]): { payload: unknown; ack: AckFn; extra: boolean } {
  const last = args[args.length - 1];
  const ack = typeof last === 'function' ? (args.pop() as AckFn) : () => {};
  return { payload: args[0], ack, extra: args.length > 1 };
}

/**
 * The client protocol of docs/decisions.md §8 on one instance: the handshake
 * (token, connection limits), the subscribe/unsubscribe/auth messages with
 * their per-socket rate limits, and token expiry (private channels are left
 * `expiryLeadMs` before the token's `exp`). The plugin (plugin.ts) wires it
 * to the Socket.IO server.
 */
export function createProtocol(deps: ProtocolDeps) {
  const { options: o, log, registry, hub } = deps;
  // Per-socket message rate: a socket lives on one instance, so an in-process window is exact.
  const window = new MemorySlidingWindow();
  const expiryTimers = new Map<string, NodeJS.Timeout>();
  let closing = false;

  function verify(token: string): AuthUser & { exp: number } {
    const user = deps.verifyAccessToken(token);
    // A token inside the expiry lead would be dropped at once: treat it as expired already.
    if (user.exp * 1000 - Date.now() <= o.expiryLeadMs) throw new AppError(401, 'UNAUTHORIZED', 'The access token has expired');
    return user;
  }

  /** The handshake: rejects with a refusal (see `refusal`) or admits the socket. */
  async function admit(socket: RealtimeSocket) {
    if (closing) throw refusal('UNAVAILABLE', 'The server is shutting down, reconnect');
    const raw: unknown = (socket.handshake.auth as Record<string, unknown> | undefined)?.token;
    let user: (AuthUser & { exp: number }) | undefined;
    if (raw !== undefined && raw !== null) {
      if (typeof raw !== 'string') throw refusal('UNAUTHORIZED', 'auth.token must be an access token string');
      try {
        user = verify(raw);
      } catch (err) {
        if (tokenFailure(err) === 'SESSION_REVOKED') throw refusal('SESSION_REVOKED', 'The session of this access token has ended');
        throw refusal('UNAUTHORIZED', 'The access token is invalid or expired');
      }
    }
    // docs/decisions.md §10.1: the same client address as HTTP limits, IPv6 counted by its /64.
    const ip = addressKey(clientAddress(socket.handshake.address, socket.handshake.headers['x-forwarded-for'], deps.trustedProxies));
    const verdict = await registry.admit(socket.id, { userId: user?.id, ip, ...networkKeys(ip) });
    if (!verdict.ok) {
      const what = { total: 'the server', user: 'this user', ip: 'this address', network: 'this network' }[verdict.scope];
      throw refusal('TOO_MANY_CONNECTIONS', `Too many connections for ${what}`);
    }
    if (socket.conn.readyState !== 'open') {
      // The client left while we were counting it.
      registry.release(socket.id);
      throw refusal('UNAVAILABLE', 'The connection closed during the handshake');
    }
    // The session may have ended while the registry (Redis) was counting us: its revocation went
    // to the sockets already connected, not to this one (issue #34). Check again, now registered.
    if (user?.sid !== undefined && deps.isRevoked(user.sid)) {
      registry.release(socket.id);
      throw refusal('SESSION_REVOKED', 'The session of this access token has ended');
    }
    socket.conn.once('close', () => release(socket.id));
    deps.admitted(socket);
    socket.data = { user, boundUserId: user?.id, sid: user?.sid, ip };
  }

  function release(socketId: string) {
    hub.unsubscribe(socketId);
    registry.release(socketId);
    void window.reset(socketId);
    void window.reset(`auth:${socketId}`);
    const timer = expiryTimers.get(socketId);
    if (timer) clearTimeout(timer);
    expiryTimers.delete(socketId);
  }

  function armExpiry(socket: RealtimeSocket) {
    const previous = expiryTimers.get(socket.id);
    if (previous) clearTimeout(previous);
    const user = socket.data.user;
    if (!user) return;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, user.exp * 1000 - o.expiryLeadMs - Date.now()));
    const timer = setTimeout(() => {
      expiryTimers.delete(socket.id);
      if (socket.data.user !== user) return;
      if (user.exp * 1000 - o.expiryLeadMs > Date.now()) return armExpiry(socket);
      expire(socket, user);
    }, delay);
    timer.unref();
    expiryTimers.set(socket.id, timer);
  }

  function expire(socket: RealtimeSocket, user: AuthUser & { exp: number }) {
    socket.data.user = undefined;
    hub.unsubscribe(socket.id);
    const left: string[] = [];
    for (const room of [...socket.rooms]) {
      if (room !== socket.id && isPrivateRoom(room)) {
        void socket.leave(room);
        left.push(room.endsWith(':notifications') ? NOTIFICATIONS_CHANNEL : room);
      }
    }
    socket.emit(AUTH_EXPIRED, {
      channels: left,
      expiresAt: new Date(user.exp * 1000).toISOString(),
      message: 'The access token expires: private channels were left. Send auth with a fresh token, then subscribe again',
    });
  }

  function limited(key: string, max: number): Ack | undefined {
    const hit = window.hitSync(key, MINUTE, max);
    if (hit.current <= max) return undefined;
    const retryAfter = Math.max(1, Math.ceil(hit.ttlMs / 1000));
    return fail('RATE_LIMITED', `At most ${max} messages a minute, retry in ${retryAfter} s`, retryAfter);
  }

  async function onChannelMessage(socket: RealtimeSocket, kind: 'subscribe' | 'unsubscribe', args: unknown[]) {
    const { payload, ack, extra } = splitArgs(args);
    const over = limited(socket.id, o.maxMessagesPerMinute);
    if (over) return ack(over);
    const parsed = ChannelRequestSchema.safeParse(payload);
    if (!parsed.success || extra) return ack(fail('INVALID_CHANNEL', 'Expected { channel: string }'));
    const { channel } = parsed.data;
    let lastSeq: number | undefined;
    if (parsed.data.lastSeq !== undefined) {
      const seq = LastSeqSchema.safeParse(parsed.data.lastSeq);
      if (!seq.success) return ack(fail('VALIDATION_ERROR', 'lastSeq must be a non-negative integer'));
      if (kind !== 'subscribe' || channel !== NOTIFICATIONS_CHANNEL) {
        return ack(fail('VALIDATION_ERROR', 'lastSeq applies to subscribe on user:notifications only'));
      }
      lastSeq = seq.data;
    }
    if (kind === 'unsubscribe') {
      const decision = resolveUnsubscribe(channel, socket.data.boundUserId);
      if (!decision.ok) return ack(fail(decision.code, decision.message));
      if (channel === NOTIFICATIONS_CHANNEL) hub.unsubscribe(socket.id);
      if (decision.room) await socket.leave(decision.room);
      return ack({ ok: true });
    }
    const user = socket.data.user;
    const decision = resolveSubscribe(channel, user);
    if (!decision.ok) return ack(fail(decision.code, decision.message));
    if (!socket.rooms.has(decision.room) && socket.rooms.size - 1 >= o.maxChannelsPerSocket) {
      return ack(fail('RATE_LIMITED', `At most ${o.maxChannelsPerSocket} channels per connection`));
    }
    await socket.join(decision.room);
    if (channel !== NOTIFICATIONS_CHANNEL || !user) return ack({ ok: true });
    // The room marks the subscription (channel count, token expiry); the events come from the hub:
    // the stored ones after lastSeq first, then live ones, and the ack after the replay.
    let outcome;
    try {
      outcome = await hub.subscribe(socket, user.id, lastSeq);
    } catch (err) {
      log.warn({ err, userId: user.id }, 'subscribing to a user stream failed');
      return ack(fail('UNAVAILABLE', 'The stream could not be read, retry'));
    }
    if (!outcome.ok) return ack(fail('UNAVAILABLE', 'The subscription was replaced or left before it was ready'));
    const { ok, ...rest } = outcome;
    ack({ ok, ...rest });
  }

  async function onAuth(socket: RealtimeSocket, args: unknown[]) {
    const { payload, ack, extra } = splitArgs(args);
    const over = limited(`auth:${socket.id}`, o.maxAuthPerMinute);
    if (over) return ack(over);
    const parsed = AuthRequestSchema.safeParse(payload);
    if (!parsed.success || extra) return ack(fail('VALIDATION_ERROR', 'Expected { token: string }'));
    let user: AuthUser & { exp: number };
    try {
      user = verify(parsed.data.token);
    } catch (err) {
      if (tokenFailure(err) === 'SESSION_REVOKED') return ack(fail('SESSION_REVOKED', 'The session of this access token has ended'));
      return ack(fail('UNAUTHORIZED', 'The access token is invalid or expired'));
    }
    const bound = socket.data.boundUserId;
    if (bound && bound !== user.id) {
      return ack(fail('FORBIDDEN', 'This connection belongs to another user: reconnect to switch users'));
    }
    if (!bound) {
      const verdict = await registry.admitUser(socket.id, user.id);
      if (!verdict.ok) return ack(fail('TOO_MANY_CONNECTIONS', 'Too many connections for this user'));
      if (!socket.connected) return;
      socket.data.boundUserId = user.id;
    }
    socket.data.user = user;
    socket.data.sid = user.sid;
    armExpiry(socket);
    ack({ ok: true });
  }

  function guard(socket: RealtimeSocket, what: string, run: () => Promise<void>) {
    run().catch((err: unknown) => log.error({ err, socketId: socket.id, socketEvent: what }, 'realtime handler failed'));
  }

  /** A socket that joined the namespace: its messages and its token's expiry. */
  function connected(socket: RealtimeSocket) {
    // socket.handshake already holds what we need; dropping the first HTTP request
    // saves memory per idle connection (socket.io docs, "Memory usage").
    (socket.conn as unknown as { request: unknown }).request = null;
    // A namespace-level disconnect can leave the engine connection open: release on both.
    socket.once('disconnect', () => release(socket.id));
    armExpiry(socket);
    socket.on('subscribe', (...args: unknown[]) => guard(socket, 'subscribe', () => onChannelMessage(socket, 'subscribe', args)));
    socket.on('unsubscribe', (...args: unknown[]) => guard(socket, 'unsubscribe', () => onChannelMessage(socket, 'unsubscribe', args)));
    socket.on('auth', (...args: unknown[]) => guard(socket, 'auth', () => onAuth(socket, args)));
    // An event we do not handle still costs the socket a message (issue #34: 2,000 unknown 8 KB
    // events went unnoticed): it counts against the subscribe budget, and one past it disconnects.
    socket.onAny((event: string) => {
      if (HANDLED_EVENTS.has(event)) return;
      if (window.hitSync(socket.id, MINUTE, o.maxMessagesPerMinute).current > o.maxMessagesPerMinute) socket.disconnect(true);
    });
  }

  return {
    admit,
    connected,
    /** From now on every handshake is refused (the server is shutting down). */
    stopAdmitting() {
      closing = true;
    },
    close() {
      for (const t of expiryTimers.values()) clearTimeout(t);
      expiryTimers.clear();
      window.close();
    },
  };
}
