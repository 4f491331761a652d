import { setTimeout as sleep } from 'node:timers/promises';
import type { RateLimiter } from './http.js';
import type { TokenBucket, TokenBucketOptions } from './token-bucket.js';

/**
 * One venue API's budget (rate r/s, burst c, as token-bucket.ts) shared by
 * callers of two kinds: the default lane, served in arrival order, and
 * priority lanes, each capped at its own share of r and served before the
 * default lane whenever its share allows (docs/venues.md "What we call": the
 * follow poller takes at most half of Data's budget while it has work, and a
 * burst of leaderboard pages must not delay it past its bounds).
 *
 * Unlike the GCRA reservation of token-bucket.ts (which books a slot at once,
 * so a burst books the next seconds ahead of anyone who comes later), callers
 * wait in queues and each slot is handed out when it comes, so a priority
 * caller that arrives behind a burst still takes the next slot. In any window
 * of w seconds the limiter grants at most c + r × w requests in all, and a
 * lane of share s at most max(1, ⌊s·r/2⌋) + s·r × w of them.
 */
export interface LaneLimiter extends TokenBucket {
  /**
   * The priority lane `name` (created on first use, then the same object):
   * at most `share` of the rate, served first.
   */
  lane(name: string, share: number): TokenBucket;
}

interface Gcra {
  interval: number;
  tolerance: number;
  tat: number;
}

const gcra = (ratePerSec: number, capacity: number): Gcra => ({
  interval: 1000 / ratePerSec,
  tolerance: (Math.max(1, capacity) - 1) * (1000 / ratePerSec),
  tat: -Infinity,
});
/** Earliest time a request may go under `g`. */
const allowedAt = (g: Gcra) => g.tat - g.tolerance;
const take = (g: Gcra, t: number) => {
  g.tat = Math.max(g.tat, t) + g.interval;
};

interface Lane {
  queue: Array<() => void>;
  gcra: Gcra | undefined;
  granted: number;
}

export function createLaneLimiter(opts: TokenBucketOptions): LaneLimiter {
  if (!(opts.ratePerSec > 0)) throw new Error('ratePerSec must be positive');
  const total = gcra(opts.ratePerSec, opts.capacity ?? opts.ratePerSec);
  const now = opts.now ?? (() => performance.now());
  const wait = opts.sleep ?? ((ms: number) => sleep(ms));
  const base: Lane = { queue: [], gcra: undefined, granted: 0 };
  const lanes = new Map<string, Lane>();
  let granted = 0;
  let pumping = false;

  const grant = (lane: Lane, t: number) => {
    take(total, t);
    if (lane.gcra) take(lane.gcra, t);
    lane.granted++;
    granted++;
    lane.queue.shift()!();
  };

  // One loop hands out slots while anyone waits; it sleeps until the next slot.
  async function pump(): Promise<void> {
    if (pumping) return;
    pumping = true;
    try {
      for (;;) {
        const t = now();
        const totalAt = allowedAt(total);
        let next = Infinity;
        let done = false;
        for (const lane of lanes.values()) {
          if (lane.queue.length === 0) continue;
          const at = Math.max(totalAt, allowedAt(lane.gcra!));
          if (at <= t) {
            grant(lane, t);
            done = true;
            break;
          }
          next = Math.min(next, at);
        }
        if (done) continue;
        if (base.queue.length > 0) {
          if (totalAt <= t) {
            grant(base, t);
            continue;
          }
          next = Math.min(next, totalAt);
        }
        if (next === Infinity) return;
        await wait(Math.max(1, next - t));
      }
    } finally {
      pumping = false;
    }
  }

  const acquireOn = (lane: Lane) => (): Promise<void> =>
    new Promise<void>((resolve) => {
      lane.queue.push(resolve);
      void pump();
    });

  const waiting = () => base.queue.length + [...lanes.values()].reduce((n, l) => n + l.queue.length, 0);

  return {
    acquire: acquireOn(base),
    granted: () => granted,
    waiting,
    lane(name, share) {
      let lane = lanes.get(name);
      if (!lane) {
        if (!(share > 0 && share <= 1)) throw new Error('share must be in (0, 1]');
        const rate = opts.ratePerSec * share;
        lane = { queue: [], gcra: gcra(rate, Math.max(1, Math.floor(rate / 2))), granted: 0 };
        lanes.set(name, lane);
      }
      const l = lane;
      return { acquire: acquireOn(l), granted: () => l.granted, waiting: () => l.queue.length } satisfies TokenBucket & RateLimiter;
    },
  };
}
