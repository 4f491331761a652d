/**
 * At most `size` holders at once; others wait in arrival order, each for at
 * most its own timeout. `acquire` resolves to a release function, or to
 * undefined when the wait timed out (the caller answers "busy").
 */
export interface Semaphore {
  acquire(timeoutMs: number): Promise<(() => void) | undefined>;
  inFlight(): number;
  waiting(): number;
}

export function createSemaphore(size: number): Semaphore {
  let held = 0;
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
  return {
    acquire(timeoutMs) {
      if (held < size) {
        held++;
        return Promise.resolve(once());
      }
      return new Promise((resolve) => {
        const grant = (r: () => void) => {
          clearTimeout(timer);
          resolve(r);
        };
        const timer = setTimeout(() => {
          const i = queue.indexOf(grant);
          if (i >= 0) queue.splice(i, 1);
          resolve(undefined);
        }, timeoutMs);
        queue.push(grant);
      });
    },
    inFlight: () => held,
    waiting: () => queue.length,
  };
}
