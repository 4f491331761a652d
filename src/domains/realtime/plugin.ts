import fp from 'fastify-plugin';
import { Server, type Socket } from 'socket.io';
import { createAdapter } from '@socket.io/redis-adapter';
import type { Redis } from 'ioredis';
import { AppError } from '../../errors.js';
import { MemorySlidingWindow } from '../../lib/sliding-window.js';
import type { AuthUser } from '../auth/guard.js';
import {
  AUTH_EXPIRED,
  AUTH_REVOKED,
  isPrivateRoom,
  marketOfRoom,
  NOTIFICATIONS_CHANNEL,
  userOfNotificationsChannel,
  type Published,
} from './channels.js';
import type { RelayedStreamEvent, UserStreamsFactory } from './streams.js';
import { createMemoryRegistry, createRedisRegistry, type ConnectionRegistry } from './connection-limits.js';
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
import { addressKey, clientAddress, networkKeys } from '../../lib/client-address.js';

export type RealtimeServer = Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;
type RealtimeSocket = Socket<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;

declare module 'fastify' {
  interface FastifyInstance {
    /** The Socket.IO server. Domains publish with `app.publish`, not through this. */
    io: RealtimeServer;
  }
}

/** Seed §8 limits and the timings around them; tests shrink them. */
export interface RealtimeOptions {
  /** WebSocket connections in total (across instances with Redis). */
  maxConnections: number;
  maxConnectionsPerUser: number;
  maxConnectionsPerIp: number;
  /** Ceilings per IPv6 /56 and /48 (a /56 holds 256 /64s, each allowed maxConnectionsPerIp). */
  maxConnectionsPer56: number;
  maxConnectionsPer48: number;
  /** Of maxConnections, how many only signed-in sockets may take (default a fifth). */
  reservedForUsers?: number;
  /** subscribe + unsubscribe messages per socket per minute. */
  maxMessagesPerMinute: number;
  /** `auth` messages per socket per minute (kept apart so re-auth never eats the subscribe budget). */
  maxAuthPerMinute: number;
  /** Channels one socket may be in at once. */
  maxChannelsPerSocket: number;
  /** A socket leaves its private channels this long before its token's `exp`. */
  expiryLeadMs: number;
  /** Redis counters: heartbeat period and how long an entry outlives its last heartbeat. */
  heartbeatMs: number;
  entryTtlMs: number;
}

export const REALTIME_DEFAULTS: RealtimeOptions = {
  maxConnections: 5_000,
  maxConnectionsPerUser: 10,
  maxConnectionsPerIp: 20,
  maxConnectionsPer56: 200,
  maxConnectionsPer48: 500,
  maxMessagesPerMinute: 30,
  maxAuthPerMinute: 10,
  maxChannelsPerSocket: 100,
  expiryLeadMs: 5_000,
  heartbeatMs: 10_000,
  entryTtlMs: 30_000,
};

export type RealtimePluginOptions = Partial<RealtimeOptions> & {
  /** The users' streams served on `user:notifications` (the notifications domain's, built in src/app.ts). */
  userStreams: UserStreamsFactory;
};

const MINUTE = 60_000;
// setTimeout's ceiling; longer-lived tokens are re-armed when it fires.
const MAX_TIMER_MS = 2_147_483_647;

/** A connection refusal: the client's `connect_error` has `message` = code and `data` = { code, message }. */
function refusal(code: RealtimeErrorCode, message: string): Error & { data: { code: string; message: string } } {
  return Object.assign(new Error(code), { data: { code, message } });
}

/** Where allowRequest leaves the handshake's address key for the Engine.IO `connection` that follows. */
const PENDING_KEY = Symbol('pendingAddressKey');
type PendingRequest = { [PENDING_KEY]?: string[] };

/** Engine.IO connections not (yet) in the namespace, per client address key and its IPv6 /56 and /48. */
function createPendingEngineConnections(limits: { total: number }) {
  const byConn = new Map<object, string[]>();
  const byKey = new Map<string, number>();
  return {
    /** Whether the total, or any of the keys (address, /56, /48) with its ceiling, is full. */
    full: (keys: Array<[string, number]>) => byConn.size >= limits.total || keys.some(([key, max]) => (byKey.get(key) ?? 0) >= max),
    add(conn: object, keys: string[]) {
      if (byConn.has(conn)) return;
      byConn.set(conn, keys);
      for (const key of keys) byKey.set(key, (byKey.get(key) ?? 0) + 1);
    },
    remove(conn: object) {
      const keys = byConn.get(conn);
      if (keys === undefined) return;
      byConn.delete(conn);
      for (const key of keys) {
        const n = (byKey.get(key) ?? 1) - 1;
        if (n > 0) byKey.set(key, n);
        else byKey.delete(key);
      }
    },
  };
}

/**
 * Makes an ioredis client's promise-returning calls used by the adapter safe
 * to ignore: the adapter fires `publish`/`subscribe` without awaiting them, so
 * a Redis outage would otherwise surface as unhandled rejections.
 */
function swallowRejections(client: Redis, onError: (err: unknown) => void) {
  for (const name of ['publish', 'subscribe', 'psubscribe', 'unsubscribe', 'punsubscribe'] as const) {
    const original = (client[name] as (...args: unknown[]) => Promise<unknown>).bind(client);
    (client as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
      const p = original(...args);
      p.catch(onError);
      return p;
    };
  }
}

/**
 * Socket.IO on the Fastify server (style.md habit 10): our own small plugin
 * because fastify-socket.io still declares Fastify 4 only. It owns the
 * handshake (token, connection limits), the subscribe/unsubscribe/auth
 * protocol of docs/decisions.md §8, token expiry, and the bridge from
 * `app.publish` (the bus of realtime/publish.ts) to rooms. With Redis, `@socket.io/redis-adapter`
 * carries every publish to every instance and the connection limits are
 * shared (see connection-limits.ts).
 */
export const realtimePlugin = fp<RealtimePluginOptions>(
  async (app, { userStreams, ...opts }) => {
    const o: RealtimeOptions = { ...REALTIME_DEFAULTS, ...opts };
    const { config } = app;

    // Engine.IO connections that have not joined the namespace yet (no CONNECT packet): the
    // connection limits count sockets, so these are capped on their own, per client
    // address and in total, until they join or Socket.IO's connectTimeout drops them.
    const pending = createPendingEngineConnections({ total: o.maxConnections });
    const io: RealtimeServer = new Server(app.server, {
      serveClient: false,
      allowRequest: (req, callback) => {
        const key = addressKey(clientAddress(req.socket?.remoteAddress, req.headers['x-forwarded-for'], app.trustedProxies));
        const nets = networkKeys(key);
        const keys: Array<[string, number]> = [
          [key, o.maxConnectionsPerIp],
          ...(nets
            ? ([
                [nets.net56, o.maxConnectionsPer56],
                [nets.net48, o.maxConnectionsPer48],
              ] as Array<[string, number]>)
            : []),
        ];
        (req as PendingRequest)[PENDING_KEY] = keys.map(([k]) => k);
        if (pending.full(keys)) return callback('TOO_MANY_CONNECTIONS', false);
        callback(null, true);
      },
      // Client messages are tiny ({ channel }, { token }); refuse anything large early.
      maxHttpBufferSize: 16 * 1024,
      connectTimeout: 10_000,
      cors: config.CORS_ORIGINS.length > 0 ? { origin: [...config.CORS_ORIGINS], credentials: true } : undefined,
    });
    app.decorate('io', io);
    io.engine.on('connection', (conn: { request?: PendingRequest; once(event: 'close', fn: () => void): void }) => {
      const key = conn.request?.[PENDING_KEY];
      if (key === undefined) return;
      pending.add(conn, key);
      conn.once('close', () => pending.remove(conn));
    });

    const extraClients: Redis[] = [];
    let registry: ConnectionRegistry;
    const limits = {
      total: o.maxConnections,
      perUser: o.maxConnectionsPerUser,
      perIp: o.maxConnectionsPerIp,
      per56: o.maxConnectionsPer56,
      per48: o.maxConnectionsPer48,
      reservedForUsers: Math.min(o.reservedForUsers ?? Math.floor(o.maxConnections / 5), o.maxConnections),
    };
    const redis = app.redisClient;
    if (redis) {
      let warned = false;
      const onRedisError = (err: unknown) => {
        if (!warned) app.log.warn({ err }, 'Socket.IO Redis adapter: Redis unavailable, publishes reach this instance only');
        warned = true;
      };
      // Subscriber: queues its SUBSCRIBE until connected and re-subscribes after reconnects.
      const sub = redis.duplicate({ lazyConnect: true, enableOfflineQueue: true, maxRetriesPerRequest: null });
      // Publisher: fails fast while Redis is down (local delivery still happens).
      const pub = redis.duplicate({ lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
      for (const c of [pub, sub]) {
        c.on('error', onRedisError);
        c.on('ready', () => (warned = false));
        swallowRejections(c, onRedisError);
        extraClients.push(c);
      }
      await Promise.all([pub.connect().catch(onRedisError), sub.connect().catch(onRedisError)]);
      // A prefix of our own (ecosystem.md F5: adapters on one Redis must not share `socket.io#`),
      // under keyPrefix so parallel apps (tests, staging) never receive each other's packets.
      io.adapter(createAdapter(pub, sub, { key: `${app.keyPrefix}socket.io`, publishOnSpecificResponseChannel: true }));
      registry = createRedisRegistry(limits, {
        redis,
        prefix: `${app.keyPrefix}ws:conn:`,
        isUp: () => app.redisReady(),
        log: app.log,
        heartbeatMs: o.heartbeatMs,
        entryTtlMs: o.entryTtlMs,
      });
    } else {
      registry = createMemoryRegistry(limits);
    }

    // docs/decisions.md §11.2: this instance's market rooms, for the hot-market registry (after io.adapter(), which replaces the adapter).
    const rooms = io.of('/').adapter;
    rooms.on('create-room', (room: string) => {
      const marketId = marketOfRoom(room);
      if (marketId !== undefined) app.signals.emit('marketRoom', marketId, true);
    });
    rooms.on('delete-room', (room: string) => {
      const marketId = marketOfRoom(room);
      if (marketId !== undefined) app.signals.emit('marketRoom', marketId, false);
    });

    // Per-socket message rate: a socket lives on one instance, so an in-process window is exact.
    const window = new MemorySlidingWindow();
    const expiryTimers = new Map<string, NodeJS.Timeout>();
    let closing = false;

    // docs/decisions.md §12.3: users' streams reach sockets through their owner's hub (in seq order,
    // gaps filled from the database), not through a room broadcast.
    const hub = userStreams((ids, event, payload) =>
      (io.local.to(ids) as unknown as { emit(event: string, payload: unknown): boolean }).emit(event, payload),
    );

    /** A refusal code for a token that does not verify: a revoked session says so (docs/decisions.md §10.6). */
    const tokenFailure = (err: unknown): 'SESSION_REVOKED' | 'UNAUTHORIZED' =>
      err instanceof AppError && err.code === 'SESSION_REVOKED' ? 'SESSION_REVOKED' : 'UNAUTHORIZED';

    function verify(token: string): AuthUser & { exp: number } {
      const user = app.verifyAccessToken(token);
      // A token inside the expiry lead would be dropped at once: treat it as expired already.
      if (user.exp * 1000 - Date.now() <= o.expiryLeadMs) throw new AppError(401, 'UNAUTHORIZED', 'The access token has expired');
      return user;
    }

    io.use((socket, next) => {
      admit(socket).then(
        () => next(),
        (err: Error) => next(err),
      );
    });

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
      const ip = addressKey(clientAddress(socket.handshake.address, socket.handshake.headers['x-forwarded-for'], app.trustedProxies));
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
      socket.conn.once('close', () => release(socket.id));
      pending.remove(socket.conn);
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

    /** Splits (payload, ack) leniently: a client may omit either, and a missing ack must not crash us. */
    function splitArgs(args: unknown[]): { payload: unknown; ack: AckFn; extra: boolean } {
      const last = args[args.length - 1];
      const ack = typeof last === 'function' ? (args.pop() as AckFn) : () => {};
      return { payload: args[0], ack, extra: args.length > 1 };
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
        app.log.warn({ err, userId: user.id }, 'subscribing to a user stream failed');
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
      run().catch((err: unknown) => app.log.error({ err, socketId: socket.id, socketEvent: what }, 'realtime handler failed'));
    }

    io.on('connection', (socket) => {
      // socket.handshake already holds what we need; dropping the first HTTP request
      // saves memory per idle connection (socket.io docs, "Memory usage").
      (socket.conn as unknown as { request: unknown }).request = null;
      // A namespace-level disconnect can leave the engine connection open: release on both.
      socket.once('disconnect', () => release(socket.id));
      armExpiry(socket);
      socket.on('subscribe', (...args: unknown[]) => guard(socket, 'subscribe', () => onChannelMessage(socket, 'subscribe', args)));
      socket.on('unsubscribe', (...args: unknown[]) => guard(socket, 'unsubscribe', () => onChannelMessage(socket, 'unsubscribe', args)));
      socket.on('auth', (...args: unknown[]) => guard(socket, 'auth', () => onAuth(socket, args)));
    });

    // The bridge every domain uses: app.publish(channel, event, payload) → the room of that name.
    // publish() checked the event and payload against the contract (schemas.ts REALTIME_EVENTS).
    const forwardStream = app.redisClient !== undefined;
    const onPublish = (msg: Published) => {
      const streamUser = userOfNotificationsChannel(msg.channel);
      if (streamUser !== undefined) {
        const event: RelayedStreamEvent = {
          userId: streamUser,
          seq: (msg.payload as { seq: number } | undefined)?.seq as number,
          event: msg.event,
          payload: msg.payload,
        };
        hub.receive(event);
        // Other instances get it through the adapter's Redis channel and put it in order there.
        if (forwardStream) io.serverSideEmit('stream:event', event);
        return;
      }
      try {
        (io.to(msg.channel) as unknown as { emit(event: string, payload: unknown): boolean }).emit(msg.event, msg.payload);
      } catch (err) {
        app.log.error({ err, channel: msg.channel, event: msg.event }, 'realtime publish failed');
      }
    };
    app.bus.on('publish', onPublish);
    io.on('stream:event', (event: RelayedStreamEvent) => hub.receive(event));

    // docs/decisions.md §10.6: an ended session's sockets on this instance are told and dropped
    // (every instance learns the ended ids through the auth plugin's revocation store).
    const stopRevocations = app.sessionRevocations.onRevoked((sids) => {
      const ended = new Set(sids);
      for (const socket of io.of('/').sockets.values()) {
        if (socket.data.sid === undefined || !ended.has(socket.data.sid)) continue;
        socket.emit(AUTH_REVOKED, { code: 'SESSION_REVOKED', message: 'The session of this connection has ended: sign in again' });
        socket.disconnect(true);
      }
    });

    app.addHook('preClose', async () => {
      closing = true;
      app.bus.off('publish', onPublish);
      stopRevocations();
      // Long-lived connections would keep server.close() waiting: drop them first.
      io.local.disconnectSockets(true);
      await registry.releaseAll();
    });
    app.addHook('onClose', async () => {
      registry.close();
      for (const t of expiryTimers.values()) clearTimeout(t);
      expiryTimers.clear();
      hub.close();
      window.close();
      await io.close();
      for (const c of extraClients) c.disconnect();
    });
  },
  { name: 'realtime', fastify: '5.x', dependencies: ['context', 'db', 'redis', 'signals', 'publish', 'auth', 'client-address'] },
);
