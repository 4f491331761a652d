import type { FakeAnswer, FakeRequest, FakeServer } from '../server.js';

/**
 * Request budgets as docs/venues.md states them: "≤ r req/s" means in any
 * window of w seconds (1 ≤ w ≤ 10) at most r × w + r requests. The fakes use
 * it twice: tests assert it over a fake's recorded arrival times, and a fake
 * given a budget answers the venue's own throttle to a request that would
 * break it (Kalshi 429, the Data API's 200 `{"error":…}`, Cloudflare's delay).
 */

/** The most timestamps (ms) that fall in any half-open window of `windowMs`. */
export function maxInWindow(times: number[], windowMs: number): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < t.length; hi++) {
    while (t[hi] - t[lo] >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

export interface BudgetViolation {
  windowSec: number;
  count: number;
  allowed: number;
}

/** Every window length w = 1…10 s in which `times` hold more than r × w + r requests. */
export function budgetViolations(times: number[], ratePerSec: number): BudgetViolation[] {
  const out: BudgetViolation[] = [];
  for (let w = 1; w <= 10; w++) {
    const count = maxInWindow(times, w * 1000);
    const allowed = ratePerSec * w + ratePerSec;
    if (count > allowed) out.push({ windowSec: w, count, allowed });
  }
  return out;
}

/** A gate that admits a request only if the admitted ones, it included, stay within the budget. */
export function createBudgetGate(ratePerSec: number) {
  const admitted: number[] = [];
  return {
    admit(now: number): boolean {
      while (admitted.length > 0 && now - admitted[0] >= 10_000) admitted.shift();
      for (let w = 1; w <= 10; w++) {
        let n = 1;
        for (let i = admitted.length - 1; i >= 0 && now - admitted[i] < w * 1000; i--) n++;
        if (n > ratePerSec * w + ratePerSec) return false;
      }
      admitted.push(now);
      return true;
    },
  };
}

export type OverBudget = 'kalshi-429' | 'data-200-error' | 'delay';

/**
 * Makes `server` answer like its venue when a request would break `ratePerSec`:
 * Kalshi 429 `{"error":"too many requests"}` without `Retry-After`; the Data
 * API 200 `{"error":"Too Many Requests"}`; Polymarket's Cloudflare delays the
 * request instead of refusing it (docs/venues.md §0). `undefined` lifts it.
 * Throttled requests stay in `server.requests` but do not use up the budget.
 */
export function enforceBudget(server: FakeServer, ratePerSec: number | undefined, mode: OverBudget): void {
  if (ratePerSec === undefined) {
    server.intercept(undefined);
    return;
  }
  const gate = createBudgetGate(ratePerSec);
  server.intercept(async (req: FakeRequest): Promise<FakeAnswer | undefined> => {
    if (mode === 'delay') {
      while (!gate.admit(performance.now())) await new Promise((r) => setTimeout(r, 100));
      return undefined;
    }
    if (gate.admit(req.at)) return undefined;
    return mode === 'kalshi-429'
      ? { status: 429, body: { error: 'too many requests' } }
      : { status: 200, body: { error: 'Too Many Requests' } };
  });
}

/** Arrival times of the requests `server` recorded whose path passes `filter`. */
export function arrivalTimes(server: FakeServer, filter: (r: FakeRequest) => boolean = () => true): number[] {
  return server.requests.filter(filter).map((r) => r.at);
}
