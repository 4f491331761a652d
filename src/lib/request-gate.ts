/**
 * At most `limit` holders at once, shared by every caller of one instance
 * (docs/decisions.md §13.2: at most 6 Expo requests in flight per instance,
 * whether the kick or the sweep sends them). Waiters are served in order.
 */
export interface RequestGate {
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Holders right now (tests, metrics). */
  readonly active: number;
  /** The most holders seen at once. */
  readonly peak: number;
}

export function createRequestGate(limit: number): RequestGate {
  let active = 0;
  let peak = 0;
  const waiting: Array<() => void> = [];
  const acquire = async () => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    peak = Math.max(peak, active);
  };
  const release = () => {
    active--;
    waiting.shift()?.();
  };
  return {
    async run(fn) {
      await acquire();
      try {
        return await fn();
      } finally {
        release();
      }
    },
    get active() {
      return active;
    },
    get peak() {
      return peak;
    },
  };
}
