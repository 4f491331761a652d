import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';

/**
 * The fake Data API enforces what the venue does (docs/venues.md §1–2), and
 * leaderboard-sync lives with it: page caps, the offset ceiling, the 200
 * `{"error":…}` throttle, malformed rows.
 */
const addr = (s: string) => `0x${createHash('sha1').update(`data-fake-${s}`).digest('hex')}`;
const USER = addr('user');

let fake: FakeDataApi;
let t: TestApp;

const raw = async (path: string) => {
  const res = await fetch(`${fake.url}${path}`);
  return { status: res.status, body: await res.json() };
};

beforeAll(async () => {
  fake = await startFakeDataApi();
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: fake.url }, { venueClients: FAST_VENUES });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('the fake answers like the venue', () => {
  it('limits and offsets past the documented bounds are 400 {"error"}', async () => {
    for (const path of [
      '/v1/leaderboard?limit=51',
      '/v1/leaderboard?limit=0',
      '/v1/leaderboard?offset=1001',
      `/closed-positions?user=${USER}&limit=51`,
      `/closed-positions?user=${USER}&offset=100001`,
      `/closed-positions?user=${USER}&sortBy=PNL`,
      `/positions?user=${USER}&limit=501`,
      `/positions?user=${USER}&offset=10001`,
      `/trades?user=${USER}&limit=10001`,
      `/trades?user=${USER}&offset=10001`,
      '/positions',
    ]) {
      const res = await raw(path);
      expect(res.status, path).toBe(400);
      expect(typeof res.body.error, path).toBe('string');
    }
  });

  it('defaults: the leaderboard is DAY and 25 rows; positions under size 1 are hidden; a throttle is HTTP 200 {"error"}', async () => {
    fake.setBoard(
      'OVERALL',
      'DAY',
      'PNL',
      Array.from({ length: 30 }, (_, k) => ({ proxyWallet: addr(`d${k}`), vol: 1, pnl: 30 - k })),
    );
    const day = await raw('/v1/leaderboard');
    expect(day.body).toHaveLength(25);
    expect(day.body[0].rank).toBe('1');
    fake.setUser(USER, {
      positions: [
        { proxyWallet: USER, size: 0.5 },
        { proxyWallet: USER, size: 2 },
      ],
    });
    expect((await raw(`/positions?user=${USER}`)).body).toHaveLength(1);
    expect((await raw(`/positions?user=${USER}&sizeThreshold=0`)).body).toHaveLength(2);
    fake.throttleNext(1);
    expect(await raw('/v1/leaderboard')).toEqual({ status: 200, body: { error: 'Too Many Requests' } });
  });
});

describe('leaderboard-sync against it', () => {
  it('reads each ordering to the offset ceiling (1,050 rows), rides out throttles, skips malformed rows', async () => {
    const big = Array.from({ length: 1_200 }, (_, k) => ({
      proxyWallet: addr(`b${k}`),
      userName: `b${k}`,
      vol: 2_000 - k,
      pnl: 2_000 - k,
    }));
    big[3] = { ...big[3], pnl: 'many' as never };
    for (const c of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'])
      for (const p of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
        fake.setBoard(c, p, 'PNL', c === 'OVERALL' && p === 'ALL' ? big : big.slice(0, 2));
        fake.setBoard(c, p, 'VOL', big.slice(0, 2));
      }
    fake.server.reset();
    fake.throttleNext(3);
    const run = await t.app.jobs.run('leaderboard-sync');
    expect(run.ok, run.error).toBe(true);
    const reads = fake.server.requests.filter(
      (r) => r.query.get('category') === 'OVERALL' && r.query.get('timePeriod') === 'ALL' && r.query.get('orderBy') === 'PNL',
    );
    const offsets = reads.map((r) => Number(r.query.get('offset')));
    expect(Math.max(...offsets)).toBe(1000);
    expect(new Set(offsets).size).toBe(21);
    const count = await t.db.rows<{ n: string; skipped: number }>(
      sql`select s.row_count as n, s.skipped_rows as skipped from leaderboard_current c
        join leaderboard_snapshots s on s.id = c.snapshot_id where c.category = 'OVERALL' and c.period = 'ALL'`,
    );
    expect(Number(count[0].n)).toBe(1_049);
    expect(count[0].skipped).toBe(1);
  });
});
