import fp from 'fastify-plugin';
import { Server } from 'socket.io';
import { AUTH_REVOKED, marketOfRoom, userOfNotificationsChannel, type Published } from './channels.js';
import type { RelayedStreamEvent, UserStreamsFactory } from './streams.js';
import { createMemoryRegistry, createRedisRegistry, type ConnectionRegistry } from './connection-limits.js';
import type { ClientToServerEvents, InterServerEvents, ServerToClientEvents, SocketData } from './schemas.js';
import { createProtocol } from './protocol.js';
import { attachRedisAdapter } from './redis-adapter.js';
import { addressKey, clientAddress, networkKeys } from '../../lib/client-address.js';

export type RealtimeServer = Server<ClientToServerEvents, ServerToClientEvents, InterServerEvents, SocketData>;

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

/** Stream events per inter-instance message (`stream:events`): a few hundred KB at most. */
const RELAY_BATCH = 500;

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
 * Socket.IO on the Fastify server (style.md habit 10): our own small plugin
 * because fastify-socket.io still declares Fastify 4 only. This file is the
 * wiring: the server and its Engine.IO admission, the connection registry,
 * the market-room signals, the bridge from `app.publish` (the bus of
 * realtime/publish.ts) to rooms and user streams, session revocations and
 * shutdown. The client protocol of docs/decisions.md §8 (handshake,
 * subscribe/unsubscribe/auth, token expiry) is protocol.ts; with Redis,
 * `@socket.io/redis-adapter` (redis-adapter.ts) carries every publish to
 * every instance and the connection limits are shared (connection-limits.ts).
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

    let adapter: { close(): void } | undefined;
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
      adapter = await attachRedisAdapter(io, { redis, keyPrefix: app.keyPrefix, log: app.log });
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

    // docs/decisions.md §12.3: users' streams reach sockets through their owner's hub (in seq order,
    // gaps filled from the database), not through a room broadcast.
    const hub = userStreams((ids, event, payload) =>
      (io.local.to(ids) as unknown as { emit(event: string, payload: unknown): boolean }).emit(event, payload),
    );

    const protocol = createProtocol({
      options: o,
      log: app.log,
      registry,
      hub,
      verifyAccessToken: (token) => app.verifyAccessToken(token),
      isRevoked: (sid) => app.sessionRevocations.isRevoked(sid),
      trustedProxies: app.trustedProxies,
      admitted: (socket) => pending.remove(socket.conn),
    });
    io.use((socket, next) => {
      protocol.admit(socket).then(
        () => next(),
        (err: Error) => next(err),
      );
    });
    io.on('connection', (socket) => protocol.connected(socket));

    // The bridge every domain uses: app.publish(channel, event, payload) → the room of that name.
    // publish() checked the event and payload against the contract (schemas.ts REALTIME_EVENTS).
    const forwardStream = app.redisClient !== undefined;
    // Stream events for the other instances, sent together at the end of this turn of the event loop:
    // one Redis message per RELAY_BATCH events instead of one per event (a fan-out publishes thousands
    // in one turn, and every instance, this one included, decodes every message the adapter sends).
    let relay: RelayedStreamEvent[] = [];
    const flushRelay = () => {
      const batch = relay;
      relay = [];
      for (let i = 0; i < batch.length; i += RELAY_BATCH) {
        try {
          io.serverSideEmit('stream:events', batch.slice(i, i + RELAY_BATCH));
        } catch (err) {
          // The other instances' hubs read what they missed from the database (their gap wait).
          app.log.error({ err, events: batch.length }, 'relaying stream events failed');
        }
      }
    };
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
        if (forwardStream) {
          if (relay.length === 0) queueMicrotask(flushRelay);
          relay.push(event);
        }
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
    io.on('stream:events', (events: RelayedStreamEvent[]) => {
      if (!Array.isArray(events)) return;
      for (const event of events) hub.receive(event);
    });

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
      protocol.stopAdmitting();
      app.bus.off('publish', onPublish);
      stopRevocations();
      // Long-lived connections would keep server.close() waiting: drop them first.
      io.local.disconnectSockets(true);
      await registry.releaseAll();
    });
    app.addHook('onClose', async () => {
      registry.close();
      protocol.close();
      hub.close();
      await io.close();
      adapter?.close();
    });
  },
  { name: 'realtime', fastify: '5.x', dependencies: ['context', 'db', 'redis', 'signals', 'publish', 'auth', 'client-address'] },
);
