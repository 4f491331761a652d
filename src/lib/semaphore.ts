/**
 * At most `size` holders at once; others wait in arrival order, each for at
 * most its own timeout (none: as long as it takes). `acquire` resolves to a
 * release function, or to undefined when the wait timed out (the caller
 * answers "busy").
 */
export interface Semaphore {
  acquire(timeoutMs?: number): Promise<(() => void) | undefined>;
  /** Runs `fn` holding a place, waiting for one as long as it takes. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  inFlight(): number;
  waiting(): number;
  /** The most holders seen at once (tests, metrics). */
  peak(): number;
}

export function createSemaphore(size: number): Semaphore {
  let held = 0;
  let peak = 0;
  const queue: Array<(release: () => void) => void> = [];
  const release = () => {
    const next = queue.shift();
    if (next) next(once());
    else held--;
  };
  const once = () => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      release();
    };
  };
  const acquire = (timeoutMs?: number): Promise<(() => void) | undefined> => {
    if (held < size) {
      held++;
      peak = Math.max(peak, held);
      return Promise.resolve(once());
    }
    return new Promise((resolve) => {
      const grant = (r: () => void) => {
        clearTimeout(timer);
        resolve(r);
      };
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              const i = queue.indexOf(grant);
              if (i >= 0) queue.splice(i, 1);
              resolve(undefined);
            }, timeoutMs);
      queue.push(grant);
    });
  };
  return {
    acquire,
    async run(fn) {
      // Without a timeout the wait always ends with a place.
      const done = (await acquire())!;
      try {
        return await fn();
      } finally {
        done();
      }
    },
    inFlight: () => held,
    waiting: () => queue.length,
    peak: () => peak,
  };
}
