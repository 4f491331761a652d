import type { CachedBody } from './serializer.js';

/**
 * The one per-instance cache of serialised responses (issue #29): the events
 * reads, the leaderboard's pages and users' first notification pages.
 *
 * - Entries live `ttlMs` at most from when their read began: the bound on
 *   staleness should a change never be signalled (another instance's job).
 * - A budget of bytes held, not only a count: anonymous requests choose the
 *   keys, and a count of large pages could pin hundreds of megabytes. The
 *   least recently filled group leaves first, its oldest entries first.
 * - Entries belong to a group (a user, or `''`): `maxGroupBytes` is one
 *   group's share of the budget, so one user cannot evict everyone else's
 *   pages (issue #34); past its share, the group's own oldest entries leave.
 * - A generation guard: a read begun before an invalidation of its group
 *   (or a clear) does not keep what it read, so a body older than a change
 *   it raced with is never kept.
 * - Concurrent misses on one key share one read (load); failed reads are
 *   not kept.
 * - `usable()` false (invalidations from other instances cannot be trusted to
 *   arrive): the cache is emptied and bypassed until it is true again.
 *
 * A body is kept as its UTF-8 bytes with its `Last-Modified`, both worked out
 * once: a hit sends them as they are (src/lib/serializer.ts).
 */
export interface CachedResponse {
  readonly body: CachedBody;
  /** docs/decisions.md §11.4: the HTTP date sent as `Last-Modified`; undefined for none. */
  readonly lastModified: string | undefined;
  /** false: sent to every request that shared the read, but not kept (load). */
  readonly keep?: false;
}

export interface BodyCacheOptions {
  ttlMs: number;
  /** Bytes held by every entry together. */
  maxBytes: number;
  /** Entries held at most (default: unbounded but for the bytes). */
  maxEntries?: number;
  /** Bytes one group may hold (default: the whole budget). */
  maxGroupBytes?: number;
  /** false while invalidations cannot be trusted to arrive (default: always usable). */
  usable?: () => boolean;
  now?: () => number;
}

/** What begin() hands to store(): the group and its generation when the read began. */
export interface CacheTicket {
  readonly group: Group;
  readonly gen: number;
  readonly at: number;
}

interface Entry {
  /** When the read that produced it began. */
  at: number;
  response: CachedResponse;
}

interface Group {
  name: string;
  gen: number;
  bytes: number;
  entries: Map<string, Entry>;
  flights?: Map<string, Promise<CachedResponse>>;
}

export interface BodyCache {
  /** The fresh response of (group, key), synchronously (the hot path: no promise, no microtask), or undefined. */
  peek(group: string, key: string): CachedResponse | undefined;
  /** Call before reading; pass the ticket to store(). Undefined while the cache is not usable. */
  begin(group: string): CacheTicket | undefined;
  /** Keeps `response` under (ticket's group, key) unless the group was invalidated since begin(); true when kept. */
  store(ticket: CacheTicket | undefined, key: string, response: CachedResponse): boolean;
  /** peek, else one shared produce() per (group, key) whose result is stored (unless marked `keep: false`). */
  load(group: string, key: string, produce: () => Promise<CachedResponse>): Promise<CachedResponse>;
  /** Drops every entry of the group; reads in flight on it will not store. */
  invalidate(group: string): void;
  /** Drops everything; no read in flight will store. */
  clear(): void;
  /** Entries held. */
  readonly size: number;
  /** Bytes held (the budget's measure). */
  readonly bytes: number;
}

export function createBodyCache(opts: BodyCacheOptions): BodyCache {
  const now = opts.now ?? Date.now;
  const maxEntries = opts.maxEntries ?? Infinity;
  const maxGroupBytes = Math.min(opts.maxGroupBytes ?? opts.maxBytes, opts.maxBytes);
  const usable = opts.usable;
  // Insertion order is eviction order: a group moves to the end when it stores.
  const groups = new Map<string, Group>();
  let bytes = 0;
  let size = 0;

  const dropGroup = (g: Group) => {
    if (groups.get(g.name) === g) groups.delete(g.name);
    bytes -= g.bytes;
    size -= g.entries.size;
    g.bytes = 0;
    g.entries = new Map();
    g.flights = undefined;
    // A read that began on this group must not store into it any more.
    g.gen++;
  };
  const dropEntry = (g: Group, key: string) => {
    const e = g.entries.get(key);
    if (e === undefined) return;
    g.entries.delete(key);
    g.bytes -= e.response.body.length;
    bytes -= e.response.body.length;
    size--;
  };
  const clear = () => {
    for (const g of [...groups.values()]) dropGroup(g);
    bytes = 0;
    size = 0;
  };
  const ready = (): boolean => {
    if (usable === undefined || usable()) return true;
    if (groups.size > 0) clear();
    return false;
  };
  /** Evicts, oldest group first and its oldest entries first, until within the budget; never `keep`. */
  const evict = (keepGroup: Group, keepKey: string) => {
    // The group's share first: its own oldest entries leave.
    for (const k of keepGroup.entries.keys()) {
      if (keepGroup.bytes <= maxGroupBytes) break;
      if (k !== keepKey) dropEntry(keepGroup, k);
    }
    for (const g of groups.values()) {
      if (bytes <= opts.maxBytes && size <= maxEntries) return;
      for (const k of g.entries.keys()) {
        if (bytes <= opts.maxBytes && size <= maxEntries) break;
        if (g !== keepGroup || k !== keepKey) dropEntry(g, k);
      }
      if (g !== keepGroup && g.entries.size === 0 && g.flights === undefined) dropGroup(g);
    }
  };

  const cache: BodyCache = {
    peek(name, key) {
      if (!ready()) return undefined;
      const g = groups.get(name);
      const e = g?.entries.get(key);
      if (e === undefined) return undefined;
      if (now() - e.at < opts.ttlMs) return e.response;
      dropEntry(g!, key);
      return undefined;
    },
    begin(name) {
      if (!ready()) return undefined;
      let g = groups.get(name);
      if (g === undefined) {
        g = { name, gen: 0, bytes: 0, entries: new Map() };
        groups.set(name, g);
      }
      return { group: g, gen: g.gen, at: now() };
    },
    store(ticket, key, response) {
      if (ticket === undefined || ticket.group.gen !== ticket.gen || !ready()) return false;
      const g = ticket.group;
      const n = response.body.length;
      if (n > maxGroupBytes) return false;
      dropEntry(g, key);
      g.entries.set(key, { at: ticket.at, response });
      g.bytes += n;
      bytes += n;
      size++;
      // The group filled most recently leaves last.
      groups.delete(g.name);
      groups.set(g.name, g);
      evict(g, key);
      return true;
    },
    load(name, key, produce) {
      const hit = cache.peek(name, key);
      if (hit !== undefined) return Promise.resolve(hit);
      const ticket = cache.begin(name);
      if (ticket === undefined) return produce();
      const g = ticket.group;
      const flying = g.flights?.get(key);
      if (flying !== undefined) return flying;
      const flight = produce().then((response) => {
        if (response.keep !== false) cache.store(ticket, key, response);
        return response;
      });
      (g.flights ??= new Map()).set(key, flight);
      const land = () => {
        if (g.flights?.get(key) !== flight) return;
        g.flights.delete(key);
        if (g.flights.size === 0) g.flights = undefined;
        // A group that kept nothing (a failed read) does not linger.
        if (g.entries.size === 0 && g.flights === undefined && ticket.gen === g.gen) dropGroup(g);
      };
      flight.then(land, land);
      return flight;
    },
    invalidate(name) {
      const g = groups.get(name);
      if (g !== undefined) dropGroup(g);
    },
    clear,
    get size() {
      return size;
    },
    get bytes() {
      return bytes;
    },
  };
  return cache;
}
