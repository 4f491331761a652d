import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';
import { activityTrade, serveDataV2Activity, type FakeActivity } from '../fakes/venues/data-v2-activity.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';
import { markets } from '../../drizzle/index.js';
import { createMarket } from '../notifications/fixtures.js';
import { eq } from 'drizzle-orm';

/** docs/decisions.md §18.2, §18.3, §18.5: follows and `trader_trade` notifications, black-box against the Data v2 fake. */
const addr = (s: string) => `0x${createHash('sha1').update(`follows-${s}`).digest('hex')}`;

const INTERNAL = 'internal-follows-test-token-0123456789';
let data: FakeDataApi;
let activity: FakeActivity;
let t: TestApp;
let now = Date.parse('2026-11-26T12:00:00Z');
const sec = () => Math.floor(now / 1000);
const advance = (ms: number) => {
  now += ms;
};

const follow = (auth: Record<string, string>, a: string) => t.app.inject({ method: 'PUT', url: `/api/v1/follows/${a}`, headers: auth });
const list = async (auth: Record<string, string>) => (await t.app.inject({ method: 'GET', url: '/api/v1/follows', headers: auth })).json();
async function notificationsOf(auth: Record<string, string>) {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/notifications?type=trader_trade&limit=100', headers: auth });
  expect(res.statusCode).toBe(200);
  return res.json().notifications as any[];
}
async function poll() {
  const outcome = await t.app.jobs.run('follows-poll');
  expect(outcome.ok, outcome.error).toBe(true);
  return outcome;
}

beforeAll(async () => {
  data = await startFakeDataApi();
  activity = serveDataV2Activity(data.server, { now: () => now });
  t = await buildTestApp(
    { POLYMARKET_DATA_API_URL: data.url, INTERNAL_API_TOKEN: INTERNAL },
    { venueClients: FAST_VENUES, clock: () => new Date(now) },
  );
});
afterAll(async () => {
  await t?.close();
  await data?.close();
});

describe('follows', () => {
  it('PUT → 201 then 200 with the stored followedAt; any case, stored lower-case; GET lists most recent first; DELETE → 204', async () => {
    const u = await createUser(t.app);
    const a = addr('case');
    const first = await follow(u.auth, a.toUpperCase().replace('0X', '0x'));
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ walletAddress: a, followedAt: new Date(now).toISOString() });
    advance(1000);
    const again = await follow(u.auth, a);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    const b = addr('second');
    expect((await follow(u.auth, b)).statusCode).toBe(201);
    const listed = await list(u.auth);
    expect(listed.traders.map((x: any) => x.walletAddress)).toEqual([b, a]);
    expect(listed.traders[1]).toEqual({
      walletAddress: a,
      displayName: a,
      avatarUrl: null,
      followedAt: first.json().followedAt,
      lastTradeAt: null,
    });
    expect(
      (await t.app.inject({ method: 'DELETE', url: `/api/v1/follows/${a.toUpperCase().replace('0X', '0x')}`, headers: u.auth })).statusCode,
    ).toBe(204);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/follows/${a}`, headers: u.auth })).statusCode).toBe(204);
    expect((await list(u.auth)).traders.map((x: any) => x.walletAddress)).toEqual([b]);
  });

  it('a malformed address → 400; no token → 401', async () => {
    const u = await createUser(t.app);
    for (const bad of ['0x123', 'not-an-address', `${addr('x')}00`, `0x${'g'.repeat(40)}`]) {
      expectProblem(await follow(u.auth, bad), 400, 'VALIDATION_ERROR');
      expectProblem(await t.app.inject({ method: 'DELETE', url: `/api/v1/follows/${bad}`, headers: u.auth }), 400, 'VALIDATION_ERROR');
    }
    expect((await t.app.inject({ method: 'PUT', url: `/api/v1/follows/${addr('x')}` })).statusCode).toBe(401);
  });

  it('at most 100 per user, even when the follows arrive at once: the rest → 409 FOLLOW_LIMIT', async () => {
    const u = await createUser(t.app);
    for (let i = 0; i < 95; i++) expect((await follow(u.auth, addr(`limit-${i}`))).statusCode).toBe(201);
    const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => follow(u.auth, addr(`burst-${i}`))));
    const codes = burst.map((r) => r.statusCode).sort();
    expect(codes.filter((c) => c === 201)).toHaveLength(5);
    expect(codes.filter((c) => c === 409)).toHaveLength(7);
    expectProblem(
      burst.find((r) => r.statusCode === 409)!,
      409,
      'FOLLOW_LIMIT',
    );
    expect((await list(u.auth)).traders).toHaveLength(100);
    // Re-following one already followed is still 200; after an unfollow there is room again.
    expect((await follow(u.auth, addr('limit-0'))).statusCode).toBe(200);
    await t.app.inject({ method: 'DELETE', url: `/api/v1/follows/${addr('limit-0')}`, headers: u.auth });
    expect((await follow(u.auth, addr('another'))).statusCode).toBe(201);
  });
});

describe('trader_trade notifications (follows-poll)', () => {
  it("groups a poll's new fills per (trader, market, side), never sends a fill from before the follow, and sends each fill once", async () => {
    const trader = addr('whale');
    const cond = `0x${'a'.repeat(64)}`;
    const market = await createMarket(t.app.db, { id: 'pm-follow-1', title: 'Will it rain in Paris?' });
    await t.app.db.update(markets).set({ yesTokenId: '7001', conditionId: cond }).where(eq(markets.id, market.id));
    // Before anyone follows: never sent.
    activity.add(trader, [activityTrade(trader, { timestamp: sec() - 60, token_id: '7001', condition_id: cond, name: 'Whale' })]);
    const early = await createUser(t.app);
    expect((await follow(early.auth, trader)).statusCode).toBe(201);
    advance(30_000);
    const late = await createUser(t.app);
    expect((await follow(late.auth, trader)).statusCode).toBe(201);
    const followedEarly = sec() - 30;
    activity.add(trader, [
      // Between the two follows: only `early` hears of it.
      activityTrade(trader, {
        timestamp: followedEarly + 10,
        token_id: '7001',
        condition_id: cond,
        size: 100,
        price: 0.4,
        transaction_hash: '0xaa01',
        name: 'Whale',
      }),
      // After both.
      activityTrade(trader, {
        timestamp: sec() + 5,
        token_id: '7001',
        condition_id: cond,
        size: 300,
        price: 0.6,
        transaction_hash: '0xaa02',
        name: 'Whale',
      }),
      // The NO token of the same market: named by its condition id.
      activityTrade(trader, {
        timestamp: sec() + 6,
        token_id: '7002',
        condition_id: cond,
        side: 'SELL',
        size: 50,
        price: 0.62,
        transaction_hash: '0xaa03',
        outcome: 'No',
        outcome_index: 1,
        name: 'Whale',
      }),
      // Another market, not in our catalogue.
      activityTrade(trader, {
        timestamp: sec() + 7,
        token_id: '9999',
        condition_id: `0x${'b'.repeat(64)}`,
        size: 10,
        price: 0.2,
        transaction_hash: '0xaa04',
        title: 'Venue-only market',
        outcome: 'No',
        event_slug: 'venue-only',
        name: 'Whale',
      }),
      // Not a trade: never read (one type per call).
      { ...activityTrade(trader, { timestamp: sec() + 8 }), type: 'REDEEM', transaction_hash: '0xaa05' },
    ]);
    advance(10_000);
    await poll();
    const req = activity.requests().findLast((r) => r.query.get('user') === trader)!;
    expect(req.query.get('type')).toBe('TRADE');
    expect(req.query.has('offset')).toBe(false);

    const e = await notificationsOf(early.auth);
    const l = await notificationsOf(late.auth);
    expect(e).toHaveLength(3);
    expect(l).toHaveLength(3);
    const buyEarly = e.find((n) => n.data.side === 'buy' && n.data.marketId === market.id)!;
    expect(buyEarly.title).toBe('Whale bought Yes on Will it rain in Paris?');
    expect(buyEarly.data).toEqual({
      walletAddress: trader,
      marketId: market.id,
      eventSlug: `pm-g-${market.id}`,
      side: 'buy',
      outcome: 'Yes',
      price: 0.55,
      size: 400,
      usd: 220,
      at: new Date((sec() - 10 + 5) * 1000).toISOString(),
      transactionHash: '0xaa02',
      fills: 2,
    });
    const buyLate = l.find((n) => n.data.side === 'buy' && n.data.marketId === market.id)!;
    expect(buyLate.data).toMatchObject({ size: 300, usd: 180, price: 0.6, fills: 1, transactionHash: '0xaa02' });
    const other = l.find((n) => n.data.marketId === null)!;
    expect(other.title).toBe('Whale bought No on Venue-only market');
    expect(other.data).toMatchObject({ eventSlug: null, outcome: 'No', side: 'buy', usd: 2 });
    expect(l.find((n) => n.data.side === 'sell')!.title).toBe('Whale sold No on Will it rain in Paris?');
    expect(l.find((n) => n.data.side === 'sell')!.data).toMatchObject({ marketId: market.id, outcome: 'No' });

    // Polled again later: the same fills are read again (start = newest seen) and sent to no one.
    advance(5 * 60_000);
    await poll();
    expect(await notificationsOf(early.auth)).toHaveLength(3);
    const listed = await list(late.auth);
    expect(listed.traders[0]).toMatchObject({
      walletAddress: trader,
      displayName: 'Whale',
      lastTradeAt: new Date((sec() - 310 + 7) * 1000).toISOString(),
    });

    // A new fill after that: sent once more, to both.
    activity.add(trader, [
      activityTrade(trader, { timestamp: sec(), token_id: '7001', condition_id: cond, transaction_hash: '0xaa06', name: 'Whale' }),
    ]);
    advance(5 * 60_000);
    await poll();
    expect(await notificationsOf(early.auth)).toHaveLength(4);
    expect(await notificationsOf(late.auth)).toHaveLength(4);
  });

  it('pages by next_cursor while the page held only unseen fills, skips malformed rows, and skips unfollowed traders', async () => {
    const trader = addr('busy');
    const u = await createUser(t.app);
    await follow(u.auth, trader);
    const rows = Array.from({ length: 150 }, (_, i) =>
      activityTrade(trader, {
        timestamp: sec() + 1 + i,
        token_id: `${8000 + (i % 3)}`,
        condition_id: `0x${String(i % 3).repeat(64)}`,
        transaction_hash: `0xbb${i}`,
      }),
    );
    activity.add(trader, [
      ...rows,
      { ...activityTrade(trader, { timestamp: sec() + 2 }), price: 'not a number', transaction_hash: '0xbad' },
    ]);
    advance(200_000);
    const before = activity.requests().length;
    await poll();
    const mine = activity
      .requests()
      .slice(before)
      .filter((r) => r.query.get('user') === trader);
    expect(mine).toHaveLength(2);
    expect(mine[1].query.get('cursor')).toBeTruthy();
    expect(mine[1].query.get('start')).toBe(mine[0].query.get('start'));
    const got = await notificationsOf(u.auth);
    expect(got).toHaveLength(3);
    expect(got.reduce((n, x) => n + x.data.fills, 0)).toBe(150);

    await t.app.inject({ method: 'DELETE', url: `/api/v1/follows/${trader}`, headers: u.auth });
    advance(60 * 60_000);
    const before2 = activity.requests().length;
    await poll();
    expect(
      activity
        .requests()
        .slice(before2)
        .filter((r) => r.query.get('user') === trader),
    ).toHaveLength(0);
  });

  it('respects push preferences like every type: trader_trade is on by default and can be turned off', async () => {
    const u = await createUser(t.app);
    const prefs = await t.app.inject({ method: 'GET', url: '/api/v1/push/preferences', headers: u.auth });
    expect(prefs.json().types.trader_trade).toBe(true);
    const off = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/push/preferences',
      headers: u.auth,
      payload: { types: { trader_trade: false } },
    });
    expect(off.statusCode).toBe(200);
    expect(off.json().types.trader_trade).toBe(false);
  });

  it('the internal notify route takes trader_trade like every type', async () => {
    const u = await createUser(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/notifications',
      headers: { authorization: `Bearer ${INTERNAL}` },
      payload: { userId: u.id, type: 'trader_trade', title: 'Whale bought Yes on X', message: 'm', data: { walletAddress: addr('w') } },
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ type: 'trader_trade' });
  });

  it('follows-poll runs now through the internal jobs route and is listed with its schedule', async () => {
    const run = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/jobs/follows-poll',
      headers: { authorization: `Bearer ${INTERNAL}` },
    });
    expect(run.statusCode).toBe(200);
    expect(run.json()).toMatchObject({ name: 'follows-poll', ok: true });
    expect(t.app.jobs.names()).toContain('follows-poll');
    const statuses = await t.app.jobs.statuses();
    expect(statuses.find((s) => s.name === 'follows-poll')).toMatchObject({ schedule: '* * * * *' });
    const [{ n }] = await t.db.rows<{ n: string | number }>(sql`select count(*) as n from job_runs where name = 'follows-poll'`);
    expect(Number(n)).toBeGreaterThan(0);
  });
});
