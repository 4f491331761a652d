import { describe, expect, it } from 'vitest';
import { createLaneLimiter } from '../../src/lib/lane-limiter.js';
import { budgetViolations } from '../fakes/venues/budget.js';

/**
 * docs/venues.md "What we call": Data's 4 req/s is one limiter per process;
 * the follow poller's lane takes at most half of it and is served first, so
 * a burst of leaderboard requests queued ahead of it does not delay it.
 */
function virtualClock() {
  let now = 0;
  const timers: Array<{ at: number; resolve: () => void }> = [];
  return {
    now: () => now,
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        timers.push({ at: now + ms, resolve });
      }),
    /** Runs virtual time forward to `until`, waking sleepers in order. */
    async run(until: number) {
      for (;;) {
        await new Promise((r) => setImmediate(r));
        timers.sort((a, b) => a.at - b.at);
        const next = timers[0];
        if (!next || next.at > until) break;
        timers.shift();
        now = Math.max(now, next.at);
        next.resolve();
      }
      now = until;
    },
  };
}

describe('lane limiter', () => {
  it('keeps the whole budget, gives the priority lane at most its share, and serves it ahead of a queued burst', async () => {
    const clock = virtualClock();
    const limiter = createLaneLimiter({ ratePerSec: 4, capacity: 2, now: clock.now, sleep: clock.sleep });
    const lane = limiter.lane('follows-poll', 0.5);
    const all: number[] = [];
    const poller: number[] = [];
    const burst: number[] = [];
    // A leaderboard burst of 200 requests queued first, then the poller's 100.
    const done = [
      ...Array.from({ length: 200 }, () => limiter.acquire().then(() => (all.push(clock.now()), burst.push(clock.now())))),
      ...Array.from({ length: 100 }, () => lane.acquire().then(() => (all.push(clock.now()), poller.push(clock.now())))),
    ];
    await clock.run(120_000);
    await Promise.all(done);
    expect(all).toHaveLength(300);
    expect(budgetViolations(all, 4)).toEqual([]);
    expect(budgetViolations(poller, 2)).toEqual([]);
    // Served first: the poller's 100 take ~50 s at 2 req/s, not 50 s after the burst.
    expect(Math.max(...poller)).toBeLessThanOrEqual(51_000);
    // ...while the burst still gets the other half meanwhile, and all of it after.
    expect(burst.filter((t) => t <= 50_000).length).toBeGreaterThanOrEqual(95);
    expect(limiter.granted()).toBe(300);
    expect(lane.granted()).toBe(100);
  });

  it('gives the default lane the whole rate when the priority lane is idle', async () => {
    const clock = virtualClock();
    const limiter = createLaneLimiter({ ratePerSec: 4, capacity: 2, now: clock.now, sleep: clock.sleep });
    limiter.lane('follows-poll', 0.5);
    const times: number[] = [];
    const done = Array.from({ length: 40 }, () => limiter.acquire().then(() => times.push(clock.now())));
    await clock.run(20_000);
    await Promise.all(done);
    expect(Math.max(...times)).toBeLessThanOrEqual(10_000);
    expect(budgetViolations(times, 4)).toEqual([]);
  });
});
