import { cachedBody, type CachedBody } from '../../lib/serializer.js';
import { lastModifiedOf } from './freshness.js';

/**
 * A small per-instance cache of serialised read responses. Event data
 * changes only when a sync job writes (every 60 s at most), so the public
 * reads are served from memory: entries live `ttlMs` at most (the bound on
 * staleness when another instance ran the job) and are dropped at once when
 * a job in this process reports a write. Concurrent misses on one key share
 * one database read. Failed reads (404s included) are not kept.
 *
 * The bound is a budget of bytes held, not only a count: anonymous requests
 * choose the keys, and a count of large pages could pin hundreds of
 * megabytes. The oldest entries leave first.
 *
 * A produced body is kept as its UTF-8 bytes with its `Last-Modified`, both
 * worked out once: a hit sends them as they are (src/lib/serializer.ts).
 */
export interface ResponseCache {
  get(key: string, produce: () => Promise<string>): Promise<string>;
  /** The fresh, already-produced response of key, synchronously (the hot path: no promise, no microtask). */
  peek(key: string): ReadyResponse | undefined;
  clear(): void;
  readonly size: number;
  /** Bytes held by produced entries (the budget's measure). */
  readonly bytes: number;
}

export interface ReadyResponse {
  body: CachedBody;
  /** docs/decisions.md §11.4: the body's `syncedAt` as an HTTP date; undefined while it is null. */
  lastModified: string | undefined;
}

export function createResponseCache(opts: { ttlMs: number; maxEntries: number; maxBytes: number; now?: () => number }): ResponseCache {
  const now = opts.now ?? Date.now;
  type Entry = { at: number; value: Promise<string>; done?: ReadyResponse };
  const entries = new Map<string, Entry>();
  let bytes = 0;
  let generation = 0;
  const drop = (key: string) => {
    const e = entries.get(key);
    if (!e) return;
    entries.delete(key);
    if (e.done !== undefined) bytes -= e.done.body.length;
  };
  return {
    get(key, produce) {
      const hit = entries.get(key);
      if (hit && now() - hit.at < opts.ttlMs) return hit.value;
      const gen = generation;
      const value = produce();
      const entry: Entry = { at: now(), value };
      drop(key);
      if (entries.size >= opts.maxEntries) {
        // Maps iterate in insertion order: the first key is the oldest.
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) drop(oldest);
      }
      entries.set(key, entry);
      value.then(
        (v) => {
          if (entries.get(key) !== entry) return;
          // A write landed while this read was in flight, or the body alone is over budget: do not keep it.
          const body = cachedBody(v);
          if (gen !== generation || body.length > opts.maxBytes) return void entries.delete(key);
          entry.done = { body, lastModified: lastModifiedOf(v) };
          bytes += body.length;
          for (const oldest of entries.keys()) {
            if (bytes <= opts.maxBytes) break;
            if (oldest !== key && entries.get(oldest)?.done !== undefined) drop(oldest);
          }
        },
        () => {
          if (entries.get(key) === entry) entries.delete(key);
        },
      );
      return value;
    },
    peek(key) {
      const hit = entries.get(key);
      return hit && hit.done !== undefined && now() - hit.at < opts.ttlMs ? hit.done : undefined;
    },
    clear() {
      generation++;
      entries.clear();
      bytes = 0;
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
