import type { DbOrTx } from '../../db/index.js';
import type { RelayedStreamEvent, StreamSocket, SubscribeOutcome, UserStreams, UserStreamsFactory } from '../realtime/streams.js';
import { readStreamEvents, readStreamHead, type StreamEvent } from './stream.js';

/**
 * Delivery of users' streams (`user:notifications`, docs/decisions.md §12.3)
 * to this instance's sockets: in `seq` order, once each, without gaps, even
 * when the events are produced on several instances and reach this one out
 * of order.
 *
 * Per user with sockets here, the hub keeps `head`, the highest seq it has
 * handled with every earlier one handled too. An event with seq head + 1 is
 * handed to every socket whose cursor is head (one encoding for all of them),
 * and head moves on; an event further ahead waits in `pending` for the ones
 * before it, for at most `gapWaitMs`, after which the missing ones are read
 * from the database (every seq below a published one is committed: seqs are
 * assigned under the head row lock, so a later one cannot commit first).
 *
 * Each socket has its own cursor, the last seq it was sent. A subscribe with
 * `lastSeq` replays the stored events after it, then catches up with what
 * the hub handled meanwhile from the database, and only then joins the live
 * hand-out (all in one turn of the event loop, so nothing falls between the
 * replay and the live events).
 */

export interface StreamHubDeps {
  /** The user's latest seq in the database. */
  readHead(userId: string): Promise<number>;
  /** Stored events with afterSeq < seq ≤ uptoSeq, in order, at most `limit`. */
  readEvents(userId: string, afterSeq: number, uptoSeq: number, limit: number): Promise<StreamEvent[]>;
  /** Sends one event to several of this instance's sockets at once. */
  broadcast(socketIds: string[], event: string, payload: unknown): void;
  log: { warn(obj: object, msg: string): void };
  /** Told of every event received (from this instance or another one), before it is handed out: per-instance caches of the user's notifications drop. */
  changed?(userId: string): void;
  /** How long an event that arrived ahead of its predecessors waits for them before they are read from the database. */
  gapWaitMs: number;
  /** Events per database read while replaying. */
  pageSize: number;
}

interface Cursor {
  socket: StreamSocket;
  /** The last seq this socket was sent (or, after a plain subscribe or a reset, the seq it starts after). */
  seq: number;
  /** Replaying or catching up: the live hand-out skips it. */
  catchingUp: boolean;
}

interface UserStream {
  userId: string;
  /** undefined until the first subscriber has read the database head; events wait in `pending` until then. */
  head: number | undefined;
  pending: Map<number, StreamEvent>;
  gapTimer: NodeJS.Timeout | undefined;
  filling: boolean;
  sockets: Map<string, Cursor>;
}

export interface StreamHub extends UserStreams {
  /** Users with sockets here (for tests and metrics). */
  size(): number;
}

export function createStreamHub(deps: StreamHubDeps): StreamHub {
  const users = new Map<string, UserStream>();
  const userOf = new Map<string, string>();

  const current = (u: UserStream, c: Cursor) => users.get(u.userId) === u && u.sockets.get(c.socket.id) === c && c.socket.connected;

  function remove(socketId: string) {
    const userId = userOf.get(socketId);
    if (userId === undefined) return;
    userOf.delete(socketId);
    const u = users.get(userId);
    if (!u) return;
    u.sockets.delete(socketId);
    if (u.sockets.size === 0) {
      if (u.gapTimer) clearTimeout(u.gapTimer);
      users.delete(userId);
    }
  }

  /** Hands event head + 1 to the sockets at head; a socket found behind catches up from the database. */
  function deliver(u: UserStream, e: StreamEvent) {
    u.head = e.seq;
    const ids: string[] = [];
    for (const c of u.sockets.values()) {
      if (c.catchingUp) continue;
      if (c.seq === e.seq - 1) {
        c.seq = e.seq;
        ids.push(c.socket.id);
      } else if (c.seq < e.seq - 1) {
        void catchUpLive(u, c);
      }
    }
    if (ids.length > 0) deps.broadcast(ids, e.event, e.payload);
  }

  function drain(u: UserStream) {
    if (u.head === undefined) return;
    for (const seq of u.pending.keys()) if (seq <= u.head) u.pending.delete(seq);
    for (let e = u.pending.get(u.head + 1); e; e = u.pending.get(u.head + 1)) {
      u.pending.delete(e.seq);
      deliver(u, e);
    }
    if (u.pending.size === 0) {
      if (u.gapTimer) clearTimeout(u.gapTimer);
      u.gapTimer = undefined;
    } else if (!u.gapTimer && !u.filling) {
      u.gapTimer = setTimeout(() => void fillGap(u), deps.gapWaitMs);
      u.gapTimer.unref();
    }
  }

  /** The events between head and the first pending one did not arrive in time: read them. */
  async function fillGap(u: UserStream) {
    u.gapTimer = undefined;
    if (users.get(u.userId) !== u || u.head === undefined || u.pending.size === 0) return;
    const upto = Math.min(...u.pending.keys()) - 1;
    const from = u.head;
    if (upto <= from) return drain(u);
    u.filling = true;
    let found: StreamEvent[] | undefined;
    try {
      found = await deps.readEvents(u.userId, from, upto, upto - from);
    } catch (err) {
      deps.log.warn({ err, userId: u.userId }, 'reading missed stream events failed; retrying');
    } finally {
      u.filling = false;
    }
    if (users.get(u.userId) !== u) return;
    if (found) {
      for (const e of found) if (e.seq > u.head) u.pending.set(e.seq, e);
      drain(u);
      if (u.head < upto) {
        // No longer stored (pruned): the sockets at head cannot be given what follows in order.
        // Dropping them makes the client resubscribe with its lastSeq and get `reset: true`.
        deps.log.warn({ userId: u.userId, from: u.head, upto }, 'stream events no longer stored; dropping the sockets behind them');
        for (const c of [...u.sockets.values()]) if (c.seq < upto) c.socket.disconnect(true);
        u.head = upto;
      }
    }
    drain(u);
  }

  /**
   * Sends the stored events after the socket's cursor up to `upto`, page by
   * page. 'gap' when they are no longer all stored; 'gone' when the socket
   * left or subscribed again meanwhile.
   */
  async function replay(u: UserStream, c: Cursor, upto: number): Promise<'ok' | 'gap' | 'gone'> {
    while (c.seq < upto) {
      const page = await deps.readEvents(u.userId, c.seq, upto, deps.pageSize);
      if (!current(u, c)) return 'gone';
      if (page.length === 0 || page[0].seq !== c.seq + 1) return 'gap';
      for (const e of page) {
        if (e.seq !== c.seq + 1) return 'gap';
        c.socket.emit(e.event, e.payload);
        c.seq = e.seq;
      }
    }
    return 'ok';
  }

  /** Until the cursor reaches head (which may move while reading), then live. */
  async function catchUp(u: UserStream, c: Cursor): Promise<'ok' | 'gap' | 'gone'> {
    while (u.head !== undefined && c.seq < u.head) {
      const r = await replay(u, c, u.head);
      if (r !== 'ok') return r;
    }
    return 'ok';
  }

  async function catchUpLive(u: UserStream, c: Cursor) {
    c.catchingUp = true;
    try {
      const r = await catchUp(u, c);
      if (r === 'gap') c.socket.disconnect(true);
    } catch (err) {
      deps.log.warn({ err, userId: u.userId }, 'catching a socket up failed; dropping it so it resumes');
      c.socket.disconnect(true);
    } finally {
      c.catchingUp = false;
    }
  }

  async function subscribe(socket: StreamSocket, userId: string, lastSeq?: number): Promise<SubscribeOutcome> {
    remove(socket.id);
    let u = users.get(userId);
    if (!u) {
      u = { userId, head: undefined, pending: new Map(), gapTimer: undefined, filling: false, sockets: new Map() };
      users.set(userId, u);
    }
    const c: Cursor = { socket, seq: 0, catchingUp: true };
    u.sockets.set(socket.id, c);
    userOf.set(socket.id, userId);
    try {
      const dbHead = await deps.readHead(userId);
      if (!current(u, c)) return { ok: false };
      if (u.head === undefined) {
        u.head = dbHead;
        drain(u);
      }
      const latest = Math.max(dbHead, u.head);
      let reset = false;
      if (lastSeq === undefined) {
        c.seq = latest;
      } else if (lastSeq > latest) {
        reset = true;
        c.seq = latest;
      } else {
        c.seq = lastSeq;
        const r = await replay(u, c, latest);
        if (r === 'gone') return { ok: false };
        if (r === 'gap') {
          reset = true;
          c.seq = Math.max(latest, u.head);
        }
      }
      const r = await catchUp(u, c);
      if (r === 'gone') return { ok: false };
      if (r === 'gap') {
        reset = true;
        c.seq = Math.max(c.seq, u.head);
      }
      c.catchingUp = false;
      return reset ? { ok: true, seq: c.seq, reset: true } : { ok: true, seq: c.seq };
    } catch (err) {
      if (u.sockets.get(socket.id) === c) remove(socket.id);
      throw err;
    }
  }

  return {
    subscribe,
    unsubscribe: remove,
    receive(relayed: RelayedStreamEvent) {
      // Published by this domain (stream.ts) and checked against the contract there.
      const e = relayed as StreamEvent;
      deps.changed?.(e.userId);
      const u = users.get(e.userId);
      if (!u) return;
      if (!Number.isSafeInteger(e.seq) || e.seq < 1) {
        deps.log.warn({ userId: e.userId, event: e.event }, 'stream event without a valid seq ignored');
        return;
      }
      if (u.head !== undefined && e.seq <= u.head) return;
      u.pending.set(e.seq, e);
      drain(u);
    },
    size: () => users.size,
    close() {
      for (const u of users.values()) if (u.gapTimer) clearTimeout(u.gapTimer);
      users.clear();
      userOf.clear();
    },
  };
}

/** Stream timings (tests shrink them). */
export interface UserStreamOptions {
  /** How long an event that overtook others waits before the missing ones are read from the database. */
  streamGapWaitMs: number;
  /** Stored events per database read while replaying a resume. */
  streamPageSize: number;
}

export const USER_STREAM_DEFAULTS: UserStreamOptions = { streamGapWaitMs: 150, streamPageSize: 1000 };

/**
 * The users' streams the realtime layer serves on `user:notifications`, read
 * from `db`; `changed` hears of every event, local or from another instance.
 */
export function userStreams(
  deps: { db: DbOrTx; log: StreamHubDeps['log']; changed(userId: string): void },
  opts: Partial<UserStreamOptions> = {},
): UserStreamsFactory {
  return (broadcast) =>
    createStreamHub({
      readHead: (userId) => readStreamHead(deps.db, userId),
      readEvents: (userId, after, upto, limit) => readStreamEvents(deps.db, userId, after, upto, limit),
      broadcast,
      log: deps.log,
      changed: (userId) => deps.changed(userId),
      gapWaitMs: opts.streamGapWaitMs ?? USER_STREAM_DEFAULTS.streamGapWaitMs,
      pageSize: opts.streamPageSize ?? USER_STREAM_DEFAULTS.streamPageSize,
    });
}
