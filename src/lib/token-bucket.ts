import { setTimeout as sleep } from 'node:timers/promises';
import type { RateLimiter } from './http.js';

/**
 * A token bucket (rate r/s, capacity c) as a GCRA reservation: each
 * `acquire()` books the next free slot at once and waits for it, so callers
 * are served in arrival order and no timer runs while nobody waits. In any
 * window of w seconds it grants at most c + r × w requests; with c ≤ r that
 * is docs/venues.md's budget "≤ r req/s: at most r × w + r in any window".
 *
 * Written here rather than taken from npm (`limiter`, `bottleneck`): tests
 * drive it with an injected clock and sleep, which those do not take, and
 * the whole algorithm is the ten lines of `acquire`.
 */
export interface TokenBucketOptions {
  /** Sustained rate, requests per second. */
  ratePerSec: number;
  /** Burst size (tokens when idle); defaults to the rate. */
  capacity?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<unknown>;
}

export interface TokenBucket extends RateLimiter {
  /** Requests granted so far. */
  granted(): number;
  /** Callers waiting for their slot now. */
  waiting(): number;
}

export function createTokenBucket(opts: TokenBucketOptions): TokenBucket {
  if (!(opts.ratePerSec > 0)) throw new Error('ratePerSec must be positive');
  const interval = 1000 / opts.ratePerSec;
  const capacity = Math.max(1, opts.capacity ?? opts.ratePerSec);
  const tolerance = (capacity - 1) * interval;
  const now = opts.now ?? (() => performance.now());
  const wait = opts.sleep ?? ((ms: number) => sleep(ms));
  // Theoretical arrival time of the next request (GCRA); a full bucket when in the past.
  let tat = -Infinity;
  let granted = 0;
  let waiting = 0;
  return {
    async acquire() {
      const t = now();
      const start = Math.max(tat, t);
      const allowAt = start - tolerance;
      tat = start + interval;
      if (allowAt > t) {
        waiting++;
        try {
          await wait(allowAt - t);
        } finally {
          waiting--;
        }
      }
      granted++;
    },
    granted: () => granted,
    waiting: () => waiting,
  };
}
