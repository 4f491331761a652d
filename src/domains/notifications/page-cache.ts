import { cachedBody, type CachedBody } from '../../lib/serializer.js';

/**
 * The first pages of users' notification lists, serialised, per instance
 * (issue #21: a bearer read that does no work must not cost a database round
 * trip, which on this path cost more than a whole bare request).
 *
 * Correctness rests on one fact: every change to a user's notifications
 * (new, read, all read, deleted) is stored with a stream event and published
 * after commit (docs/decisions.md §12), on this instance through the bus and
 * to every other one through the realtime layer. Each such event drops the
 * user's pages here before the writer answers; on other instances as soon as
 * the event arrives (the same path the live stream takes, milliseconds).
 *
 * - A read in flight when an invalidation lands does not keep what it read
 *   (a per-user generation is checked before storing), so a page older than
 *   a change it raced with is never cached.
 * - With Redis configured but not answering, events from other instances may
 *   be missed: the cache is then emptied and bypassed until Redis is back.
 * - Entries also expire after `ttlMs`, a bound on staleness should an event
 *   ever be lost; the budget is in bytes held, oldest user first. Pages are kept
 *   as their UTF-8 bytes, sent as they are (src/lib/serializer.ts).
 * Only pages without a cursor are kept (what a client reads on open and after
 * each event); deeper pages go to the database every time.
 */
export interface NotificationPageCache {
  /** The fresh page for (user, key), synchronously, as its bytes, or undefined. */
  peek(userId: string, key: string): CachedBody | undefined;
  /** Call before reading the database; pass the result to store(). */
  begin(userId: string): PageToken | undefined;
  /** Keeps `body` unless the user's pages were invalidated since begin(). */
  store(token: PageToken | undefined, key: string, body: string): void;
  invalidate(userId: string): void;
  clear(): void;
  readonly bytes: number;
}

interface UserPages {
  gen: number;
  at: number;
  pages: Map<string, CachedBody>;
  bytes: number;
}

export interface PageToken {
  readonly entry: UserPages;
  readonly gen: number;
}

export interface PageCacheOptions {
  ttlMs: number;
  maxBytes: number;
  /** false while invalidations from other instances cannot be trusted to arrive (Redis down). */
  usable: () => boolean;
  now?: () => number;
}

export function createNotificationPageCache(opts: PageCacheOptions): NotificationPageCache {
  const now = opts.now ?? Date.now;
  const users = new Map<string, UserPages>();
  let bytes = 0;

  const drop = (userId: string) => {
    const e = users.get(userId);
    if (!e) return;
    users.delete(userId);
    bytes -= e.bytes;
    // A read that began on this entry must not store into it any more.
    e.gen++;
  };
  const clear = () => {
    for (const e of users.values()) e.gen++;
    users.clear();
    bytes = 0;
  };
  const live = (e: UserPages | undefined): e is UserPages => e !== undefined && now() - e.at < opts.ttlMs;

  return {
    peek(userId, key) {
      if (!opts.usable()) {
        if (users.size > 0) clear();
        return undefined;
      }
      const e = users.get(userId);
      return live(e) ? e.pages.get(key) : undefined;
    },
    begin(userId) {
      if (!opts.usable()) return undefined;
      let e = users.get(userId);
      if (e && !live(e)) {
        drop(userId);
        e = undefined;
      }
      if (!e) {
        e = { gen: 0, at: now(), pages: new Map(), bytes: 0 };
        users.set(userId, e);
      }
      return { entry: e, gen: e.gen };
    },
    store(token, key, text) {
      if (!token || token.entry.gen !== token.gen || !opts.usable()) return;
      const body = cachedBody(text);
      if (body.length > opts.maxBytes) return;
      const e = token.entry;
      const old = e.pages.get(key);
      if (old !== undefined) {
        e.bytes -= old.length;
        bytes -= old.length;
      }
      e.pages.set(key, body);
      e.bytes += body.length;
      bytes += body.length;
      for (const [userId, oldest] of users) {
        if (bytes <= opts.maxBytes) break;
        if (oldest !== e) drop(userId);
      }
    },
    invalidate(userId) {
      drop(userId);
    },
    clear,
    get bytes() {
      return bytes;
    },
  };
}
