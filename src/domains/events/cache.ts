/**
 * A small per-instance cache of serialised read responses. Event data
 * changes only when a sync job writes (every 60 s at most), so the public
 * reads are served from memory: entries live `ttlMs` at most (the bound on
 * staleness when another instance ran the job) and are dropped at once when
 * a job in this process reports a write. Concurrent misses on one key share
 * one database read. Failed reads (404s included) are not kept.
 */
export interface ResponseCache {
  get(key: string, produce: () => Promise<string>): Promise<string>;
  /** The fresh, already-produced value of key, synchronously (the hot path: no promise, no microtask). */
  peek(key: string): string | undefined;
  clear(): void;
  readonly size: number;
}

export function createResponseCache(opts: { ttlMs: number; maxEntries: number; now?: () => number }): ResponseCache {
  const now = opts.now ?? Date.now;
  const entries = new Map<string, { at: number; value: Promise<string>; done?: string }>();
  let generation = 0;
  return {
    get(key, produce) {
      const hit = entries.get(key);
      if (hit && now() - hit.at < opts.ttlMs) return hit.value;
      const gen = generation;
      const value = produce();
      const entry: { at: number; value: Promise<string>; done?: string } = { at: now(), value };
      entries.delete(key);
      if (entries.size >= opts.maxEntries) {
        // Maps iterate in insertion order: the first key is the oldest.
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      entries.set(key, entry);
      value.then(
        (v) => {
          entry.done = v;
          // A write landed while this read was in flight: do not serve its result again.
          if (gen !== generation && entries.get(key) === entry) entries.delete(key);
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
    },
    get size() {
      return entries.size;
    },
  };
}
