import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, createTestDb, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';
import { activityTrade, serveDataV2Activity, type FakeActivity } from '../fakes/venues/data-v2-activity.js';
import { createUser } from '../support/users.js';
import { pollFollowedTraders } from '../../src/domains/follows/poll.js';
import { withPriorityShare } from '../../src/venues/clients.js';

/**
 * docs/decisions.md §18.3, §18.5: a fill is sent exactly once across
 * instances. Two app instances on one PostgreSQL database poll the same
 * traders at the same moment (the service itself, not the job, so the job's
 * advisory lock does not serialise them): the fill key in trader_fills does.
 */
const addr = (s: string) => `0x${createHash('sha1').update(`once-${s}`).digest('hex')}`;

let data: FakeDataApi;
let activity: FakeActivity;
let db: DbHandle & { url: string };
let dbB: DbHandle;
let A: TestApp;
let B: TestApp;
let now = Date.parse('2026-11-26T12:00:00Z');

const pollOn = (t: TestApp) => {
  const deps = t.app.jobs.deps();
  return pollFollowedTraders({ ...deps, data: withPriorityShare(deps.venues.data, 'follows-poll', 0.5) });
};

beforeAll(async () => {
  data = await startFakeDataApi();
  activity = serveDataV2Activity(data.server, { now: () => now });
  db = await createTestDb();
  dbB = await createDb(db.url, { max: 5 });
  const env = { POLYMARKET_DATA_API_URL: data.url, JOBS: 'off' };
  A = await buildTestApp(env, { db, venueClients: FAST_VENUES, clock: () => new Date(now) });
  B = await buildTestApp(env, { db: dbB, venueClients: FAST_VENUES, clock: () => new Date(now) });
});
afterAll(async () => {
  await A?.close();
  await B?.close();
  await dbB?.close();
  await db?.close();
  await data?.close();
});

describe('follows-poll on two instances', () => {
  it('sends every fill once: one notification per (follower, trader, market, side), whichever instance claimed it', async () => {
    const traders = Array.from({ length: 12 }, (_, i) => addr(`trader-${i}`));
    const users = await Promise.all(Array.from({ length: 6 }, () => createUser(A.app)));
    for (const u of users)
      for (const w of traders) {
        const res = await (users.indexOf(u) % 2 ? A : B).app.inject({ method: 'PUT', url: `/api/v1/follows/${w}`, headers: u.auth });
        expect(res.statusCode).toBe(201);
      }
    now += 1000;
    const sec = Math.floor(now / 1000);
    for (const [i, w] of traders.entries()) {
      activity.add(
        w,
        Array.from({ length: 6 }, (_, k) =>
          activityTrade(w, {
            timestamp: sec + k,
            token_id: `${900 + (k % 2)}`,
            condition_id: `0x${String(k % 2).repeat(64)}`,
            side: k % 3 === 0 ? 'SELL' : 'BUY',
            transaction_hash: `0x${i.toString(16)}0${k}`,
          }),
        ),
      );
    }
    now += 10_000;
    // Groups per trader: market 0 (k 0, 2, 4) → SELL{0}, BUY{2,4}; market 1 (k 1, 3, 5) → BUY{1,5}, SELL{3}: 4 groups.
    const [a, b] = await Promise.all([pollOn(A), pollOn(B)]);
    expect([a.read, b.read]).toEqual([traders.length, traders.length]);
    expect(a.fills + b.fills).toBe(traders.length * 6);
    const counts = await db.rows<{ user_id: string; n: number | string; dup: number | string }>(sql`
      select user_id, count(*) as n,
             count(*) - count(distinct (data->>'walletAddress', data->>'transactionHash', data->>'side')) as dup
      from notifications where type = 'trader_trade' group by user_id`);
    expect(counts).toHaveLength(users.length);
    for (const c of counts) {
      expect(Number(c.n)).toBe(traders.length * 4);
      expect(Number(c.dup)).toBe(0);
    }
    // Again on both: nothing new.
    now += 5 * 60_000;
    const [a2, b2] = await Promise.all([pollOn(A), pollOn(B)]);
    expect(a2.notifications + b2.notifications).toBe(0);
    const [{ n }] = await db.rows<{ n: number | string }>(sql`select count(*) as n from notifications where type = 'trader_trade'`);
    expect(Number(n)).toBe(users.length * traders.length * 4);
  });
});
