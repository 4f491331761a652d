import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';
import { arrivalTimes, budgetViolations } from '../fakes/venues/budget.js';

/**
 * docs/venues.md "What we call": leaderboard-sync, enrichment and on-demand
 * profiles share the process's one Data API client, so together they stay
 * within its budget. The budget is scaled to 20 req/s (the real one is 4) so
 * the run is short; the fake answers the venue's own throttle (HTTP 200
 * `{"error":"Too Many Requests"}`) to any request past it.
 */
const RATE = 20;
const addr = (s: string) => `0x${createHash('sha1').update(`budget-${s}`).digest('hex')}`;

let fake: FakeDataApi;
let t: TestApp;

beforeAll(async () => {
  fake = await startFakeDataApi();
  for (const c of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'])
    for (const p of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
      const rows = [0, 1, 2].map((i) => ({ proxyWallet: addr(`${c}-${p}-${i}`), userName: `${c}-${p}-${i}`, vol: 10 - i, pnl: 5 - i }));
      fake.setBoard(c, p, 'PNL', rows);
      fake.setBoard(c, p, 'VOL', rows);
    }
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: fake.url }, { venueClients: { budgets: { data: RATE }, backoffMs: 50, attempts: 8 } });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('one Data API budget per process', () => {
  it('sync, enrichment and on-demand profiles at once stay within it, and none meets the throttle', async () => {
    fake.setBudget(RATE);
    try {
      expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
      fake.server.reset();
      const strangers = Array.from({ length: 6 }, (_, i) => addr(`stranger-${i}`));
      const [sync, enrich, ...profiles] = await Promise.all([
        t.app.jobs.run('leaderboard-sync'),
        t.app.jobs.run('leaderboard-enrich'),
        ...strangers.map((a) => t.app.inject({ method: 'GET', url: `/api/v1/leaderboard/${a}?period=ALL` })),
      ]);
      expect(sync.ok, sync.error).toBe(true);
      expect(enrich.ok, enrich.error).toBe(true);
      expect(enrich.items).toBe(48);
      expect(profiles.map((r) => r.statusCode)).toEqual(strangers.map(() => 200));
      const paths = new Set(fake.server.requests.map((r) => r.path));
      expect([...paths].sort()).toEqual(['/closed-positions', '/positions', '/trades', '/v1/leaderboard']);
      // 32 board pages + 3 per enriched trader + 3 per profile.
      expect(fake.server.requests.length).toBe(32 + 48 * 3 + 6 * 3);
      expect(budgetViolations(arrivalTimes(fake.server), RATE)).toEqual([]);
    } finally {
      fake.setBudget(undefined);
    }
  });
});
