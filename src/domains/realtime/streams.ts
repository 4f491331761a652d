/**
 * What the realtime layer needs of the users' ordered streams it serves on
 * `user:notifications` (docs/decisions.md §12.3). The streams belong to the
 * notifications domain (src/domains/notifications/stream-hub.ts); the
 * composition root (src/app.ts) builds them and hands them to the realtime
 * plugin, which only carries sockets and events between instances.
 */

/** The little of a Socket.IO socket a stream uses. */
export interface StreamSocket {
  id: string;
  readonly connected: boolean;
  emit(event: string, payload: unknown): unknown;
  disconnect(close?: boolean): unknown;
}

/** One event of a user's stream as it travels: from a publish on this instance or from another one. */
export interface RelayedStreamEvent {
  userId: string;
  seq: number;
  event: string;
  payload: unknown;
}

export type SubscribeOutcome =
  | { ok: true; seq: number; reset?: true }
  /** The socket left, or subscribed again, before this subscribe finished. */
  | { ok: false };

export interface UserStreams {
  /** Adds (or re-adds) a socket to its user's stream; resolves once the replay is sent, with the ack's `seq` and `reset`. */
  subscribe(socket: StreamSocket, userId: string, lastSeq?: number): Promise<SubscribeOutcome>;
  /** Removes a socket (unsubscribe, token expiry, disconnect). */
  unsubscribe(socketId: string): void;
  /** An event published on this instance or another one. */
  receive(event: RelayedStreamEvent): void;
  close(): void;
}

/** Builds the streams once the realtime layer can send to its sockets: `broadcast` sends one event to several of this instance's sockets. */
export type UserStreamsFactory = (broadcast: (socketIds: string[], event: string, payload: unknown) => void) => UserStreams;
