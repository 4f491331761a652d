import { io, type Socket } from 'socket.io-client';
import type { components } from './schema.js';
import type { Session } from './session.js';

/** A `subscribe` to `user:notifications` acks `seq` (the latest) and `reset: true` when it could not resume. */
export type Ack = { ok: true; seq?: number; reset?: true } | { ok: false; error: { code: string; message: string } };

type Schemas = components['schemas'];

/**
 * What the server sends, event → payload: the channel events of the OpenAPI
 * document's `x-realtime` section (payload types generated from the server's
 * Zod schemas), `auth:expired` and `auth:revoked`. Channels: `market:<marketId>` →
 * `market:update`; `monitor:leaderboard` → `monitor:update`;
 * `user:notifications` → `notification`, `notification:updated`, `notification:deleted`,
 * `notifications:read-all` (the user's stream, docs/decisions.md §12).
 */
export interface RealtimeEvents {
  'market:update': Schemas['MarketUpdate'];
  'monitor:update': Schemas['MonitorUpdate'];
  notification: Schemas['NotificationEvent'];
  'notification:updated': Schemas['NotificationUpdatedEvent'];
  'notification:deleted': Schemas['NotificationDeletedEvent'];
  'notifications:read-all': Schemas['NotificationsReadAllEvent'];
  'auth:expired': Schemas['AuthExpired'];
  'auth:revoked': Schemas['AuthRevoked'];
}

/** Raised by this client, not sent by the server. */
export interface ClientRaisedEvents {
  /**
   * The notifications stream could not be resumed (the missed events are no longer kept, or the
   * server knows fewer than the client saw): reload the list over REST. `seq` is the server's
   * latest; the stream continues after it.
   */
  'notifications:reset': { seq: number };
}

/**
 * The channels a client may name in `subscribe` (docs/decisions.md §8, the server's
 * `REALTIME_EVENTS`): a market's prices, the leaderboard monitor, the caller's own notification
 * stream, and the reserved `user:<userId>` channel (a UUID). A misspelt name does not compile.
 */
export type Channel =
  `market:${string}` | 'monitor:leaderboard' | 'user:notifications' | `user:${string}-${string}-${string}-${string}-${string}`;

/** The reserved `user:<userId>` channel of a user id as the API answers it (a UUID). */
export const userChannel = (userId: string) => `user:${userId}` as Channel;

const NOTIFICATIONS = 'user:notifications';
const STREAM_EVENTS = ['notification', 'notification:updated', 'notification:deleted', 'notifications:read-all'] as const;
type StreamEvent = (typeof STREAM_EVENTS)[number];
const isStreamEvent = (e: string): e is StreamEvent => (STREAM_EVENTS as readonly string[]).includes(e);
type Listener = (payload: never) => void;

export interface RealtimeOptions {
  /** Origin of the API (Socket.IO path /socket.io/). */
  url: string;
  /** Extra socket.io-client options (transports, …). WebSocket only by default: no sticky sessions needed. */
  socketOptions?: Parameters<typeof io>[1];
  ackTimeoutMs?: number;
}

/**
 * Live channels (docs/decisions.md §8) for the SPA, the mobile app and dashboards:
 * connects with the session's current access token, subscribes with acks,
 * re-authenticates on `auth:expired` (refreshing the session first) and
 * subscribes again to every channel after a reconnect or a re-auth.
 *
 * The notifications stream (docs/decisions.md §12) resumes by itself: the
 * client remembers the last `seq` it saw and subscribes again with it as
 * `lastSeq`, so the server replays what was missed, in order, once. When it
 * cannot (`reset: true`), `notifications:reset` tells the app to reload.
 * Stream events at or below the last seq seen are never passed on twice.
 */
export class Realtime {
  readonly socket: Socket;
  private readonly channels = new Set<string>();
  private readonly ackTimeoutMs: number;
  private closed = false;
  private revoked = false;
  private lastSeq: number | undefined;
  private readonly local = new Map<string, Set<Listener>>();

  constructor(
    private readonly session: Session,
    opts: RealtimeOptions,
  ) {
    this.ackTimeoutMs = opts.ackTimeoutMs ?? 5_000;
    this.socket = io(opts.url, {
      transports: ['websocket'],
      ...opts.socketOptions,
      // A function: every (re)connection sends the token current at that moment.
      auth: (cb) => cb(session.token ? { token: session.token } : {}),
    });
    // A server that shuts down (deploy, restart) disconnects its sockets on purpose, and
    // socket.io-client does not reconnect after that by itself: come back when it does.
    this.socket.on('disconnect', (reason) => {
      if (reason === 'io server disconnect' && !this.closed && !this.revoked) setTimeout(() => !this.closed && this.socket.connect(), 500);
    });
    // docs/decisions.md §10.6: the session was ended (elsewhere, or by reuse detection): the server
    // disconnects next; do not come back with the same token.
    this.socket.on('auth:revoked', () => {
      this.revoked = true;
    });
    this.socket.on('connect', () => this.resubscribe());
    for (const event of STREAM_EVENTS) {
      this.socket.on(event, (payload: { seq?: unknown }) => {
        const seq = payload?.seq;
        if (typeof seq === 'number' && this.lastSeq !== undefined && seq <= this.lastSeq) return; // seen already
        if (typeof seq === 'number') this.lastSeq = seq;
        this.raise(event, payload);
      });
    }
    this.socket.on('connect_error', async (err) => {
      // The server refused an expired token at the handshake: refresh, then let socket.io retry.
      if (err.message === 'UNAUTHORIZED' && session.signedIn) {
        await session.refresh();
        if (!this.socket.active) this.socket.connect();
      }
    });
    this.socket.on('auth:expired', async () => {
      const token = await session.refresh();
      if (!token) return;
      const ack = await this.request('auth', { token });
      if (ack.ok) this.resubscribe();
    });
  }

  /** The last `seq` of the notifications stream this client saw (undefined before the first subscribe). */
  get notificationsSeq(): number | undefined {
    return this.lastSeq;
  }

  private resubscribe() {
    for (const channel of this.channels) void this.subscribeOnce(channel, channel === NOTIFICATIONS ? this.lastSeq : undefined);
  }

  private raise(event: string, payload: unknown) {
    for (const listener of [...(this.local.get(event) ?? [])]) (listener as (p: unknown) => void)(payload);
  }

  private async subscribeOnce(channel: string, lastSeq: number | undefined): Promise<Ack> {
    const ack = await this.request('subscribe', lastSeq === undefined ? { channel } : { channel, lastSeq });
    if (ack.ok && channel === NOTIFICATIONS && typeof ack.seq === 'number') {
      if (ack.reset) {
        this.lastSeq = ack.seq;
        this.raise('notifications:reset', { seq: ack.seq });
      } else {
        this.lastSeq = Math.max(this.lastSeq ?? 0, ack.seq);
      }
    }
    return ack;
  }

  private request(event: string, payload: unknown): Promise<Ack> {
    return this.socket
      .timeout(this.ackTimeoutMs)
      .emitWithAck(event, payload)
      .then(
        (ack: Ack) => ack,
        () => ({ ok: false as const, error: { code: 'TIMEOUT', message: `no answer to ${event}` } }),
      );
  }

  private emit(event: 'subscribe' | 'unsubscribe', channel: string) {
    return this.request(event, { channel });
  }

  /**
   * Subscribes (and re-subscribes after reconnects) to a channel such as `market:<id>` or
   * `user:notifications`. For `user:notifications`, `lastSeq` (e.g. the `seq` of the list the app
   * just loaded) resumes after it; without it the client resumes from the last seq it saw, if any.
   */
  subscribe(channel: 'user:notifications', opts?: { lastSeq?: number }): Promise<Ack>;
  subscribe(channel: Channel): Promise<Ack>;
  async subscribe(channel: Channel, opts: { lastSeq?: number } = {}): Promise<Ack> {
    const lastSeq = channel === NOTIFICATIONS ? (opts.lastSeq ?? this.lastSeq) : undefined;
    if (channel === NOTIFICATIONS && opts.lastSeq !== undefined) this.lastSeq = opts.lastSeq;
    const ack = await this.subscribeOnce(channel, lastSeq);
    if (ack.ok) this.channels.add(channel);
    return ack;
  }

  async unsubscribe(channel: Channel): Promise<Ack> {
    this.channels.delete(channel);
    return this.emit('unsubscribe', channel);
  }

  /** Listens to a server event with its typed payload (`socket.on` stays available for anything else). */
  on<E extends keyof (RealtimeEvents & ClientRaisedEvents)>(
    event: E,
    listener: (payload: (RealtimeEvents & ClientRaisedEvents)[E]) => void,
  ): this {
    const name: string = event; // the socket itself is untyped: any other event stays reachable through it
    if (isStreamEvent(name) || name === 'notifications:reset') {
      const set = this.local.get(name) ?? new Set<Listener>();
      set.add(listener);
      this.local.set(name, set);
    } else {
      this.socket.on(name, listener as (...args: unknown[]) => void);
    }
    return this;
  }

  off<E extends keyof (RealtimeEvents & ClientRaisedEvents)>(
    event: E,
    listener?: (payload: (RealtimeEvents & ClientRaisedEvents)[E]) => void,
  ): this {
    const name: string = event;
    if (isStreamEvent(name) || name === 'notifications:reset') {
      if (listener) this.local.get(name)?.delete(listener);
      else this.local.delete(name);
    } else {
      this.socket.off(name, listener as ((...args: unknown[]) => void) | undefined);
    }
    return this;
  }

  close() {
    this.closed = true;
    this.channels.clear();
    this.socket.close();
  }
}
