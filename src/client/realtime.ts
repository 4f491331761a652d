import { io, type Socket } from 'socket.io-client';
import type { components } from './schema.js';
import type { Session } from './session.js';

export type Ack = { ok: true } | { ok: false; error: { code: string; message: string } };

type Schemas = components['schemas'];

/**
 * What the server sends, event → payload: the channel events of the OpenAPI
 * document's `x-realtime` section (payload types generated from the server's
 * Zod schemas), `auth:expired` and `auth:revoked`. Channels: `market:<marketId>` →
 * `market:update`; `monitor:leaderboard` → `monitor:update`;
 * `user:notifications` → `notification`.
 */
export interface RealtimeEvents {
  'market:update': Schemas['MarketUpdate'];
  'monitor:update': Schemas['MonitorUpdate'];
  notification: Schemas['Notification'];
  'auth:expired': Schemas['AuthExpired'];
  'auth:revoked': Schemas['AuthRevoked'];
}

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
 */
export class Realtime {
  readonly socket: Socket;
  private readonly channels = new Set<string>();
  private readonly ackTimeoutMs: number;
  private closed = false;
  private revoked = false;

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
    this.socket.on('connect', () => {
      for (const channel of this.channels) void this.emit('subscribe', channel);
    });
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
      if (ack.ok) for (const channel of this.channels) void this.emit('subscribe', channel);
    });
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

  /** Subscribes (and re-subscribes after reconnects) to a channel such as `market:<id>` or `user:notifications`. */
  async subscribe(channel: string): Promise<Ack> {
    const ack = await this.emit('subscribe', channel);
    if (ack.ok) this.channels.add(channel);
    return ack;
  }

  async unsubscribe(channel: string): Promise<Ack> {
    this.channels.delete(channel);
    return this.emit('unsubscribe', channel);
  }

  /** Listens to a server event with its typed payload (`socket.on` stays available for anything else). */
  on<E extends keyof RealtimeEvents>(event: E, listener: (payload: RealtimeEvents[E]) => void): this {
    const name: string = event; // the socket itself is untyped: any other event stays reachable through it
    this.socket.on(name, listener as (...args: unknown[]) => void);
    return this;
  }

  off<E extends keyof RealtimeEvents>(event: E, listener?: (payload: RealtimeEvents[E]) => void): this {
    const name: string = event;
    this.socket.off(name, listener as ((...args: unknown[]) => void) | undefined);
    return this;
  }

  close() {
    this.closed = true;
    this.channels.clear();
    this.socket.close();
  }
}
