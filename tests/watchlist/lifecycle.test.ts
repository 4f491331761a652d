import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { messengerBindings, notifications } from '../../drizzle/index.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { onPostgres } from '../helpers/env.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';
import { setGammaYes, setKalshiYes } from '../fakes/venues/prices.js';
import { startFakeExpo, type FakeExpo } from '../fakes/expo.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { ack, closeAll, connect, listen, record } from '../realtime/helpers.js';
import { createUser } from '../support/users.js';
import { eventually } from '../support/eventually.js';

/**
 * docs/decisions.md §17.2, end to end: a user watches a group over HTTP, a
 * venue fake changes (a price, a settlement, a new market), the jobs run as
 * scheduled (price-sync, events-sync, watchlist-check), and the
 * notification is stored, sent on the user's socket stream, pushed through
 * the Expo fake and sent through the Telegram fake — once, also with two
 * app instances running every detector at the same time on one database.
 */
const MINUTE = 60_000;
const T0 = Math.ceil(Date.now() / MINUTE) * MINUTE;
let now = new Date(T0);
const at = (ms: number) => (now = new Date(T0 + ms));

let venues: FakeVenues;
let expo: FakeExpo;
let tg: FakeTelegram;
let t: TestApp;
let second: TestApp;
let db2: DbHandle | undefined;
let url: string;

const pmYes = gammaMarket('771001', 'Will A happen?', 0.5, 5000, { groupItemTitle: 'A' });
const pmUpDown = gammaMarket('771002', 'B up or down?', 0.5, 4000, { groupItemTitle: 'B', outcomes: '["Up", "Down"]' });
const ks1 = kalshiMarket('KXLIFE-1-K1', 'KXLIFE-1', 'Life on Kalshi', 0.49, 0.51, 0.5, 1000, { yes_sub_title: 'K one' });
const ks2 = kalshiMarket('KXLIFE-1-K2', 'KXLIFE-1', 'Life on Kalshi', 0.29, 0.31, 0.3, 1000, { yes_sub_title: 'K two' });
const pmEvent = gammaEvent('7710', 'life-pm', 'Life on Polymarket', [pmYes, pmUpDown]);
const ksEvent = kalshiEvent('KXLIFE-1', 'KXLIFE', 'Life on Kalshi', 'Economics', [ks1, ks2]);

const INTERNAL = 'internal-token-internal-token';
beforeAll(async () => {
  venues = await startFakeVenues({ gamma: [pmEvent], kalshi: [ksEvent] });
  venues.kalshi.state.series = [seriesRow('KXLIFE', 'Economics')];
  expo = await startFakeExpo();
  tg = await startFakeTelegram();
  const env = {
    ...venues.env,
    PUSH_API_URL: expo.url,
    PUSH_ACCESS_TOKEN: 'expo-access-token-123',
    MESSENGER_API_URL: tg.url,
    MESSENGER_BOT_TOKEN: tg.token,
    INTERNAL_API_TOKEN: INTERNAL,
  };
  t = await buildTestApp(env, { clock: () => now });
  // A second instance on the same database (on PostgreSQL with its own pool), as in production.
  if (onPostgres) db2 = await createDb((t.db as DbHandle & { url: string }).url, { max: 10 });
  // One deployment: with Redis the instances share its key prefix, so a notification stored by
  // either reaches the socket on the first (the detector runs on whichever takes the job's lock).
  second = await buildTestApp(env, { db: db2 ?? t.db, clock: () => now, keyPrefix: t.keyPrefix });
  url = await listen(t.app);
  at(-10 * MINUTE);
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
  expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  closeAll();
  await second?.close();
  await db2?.close();
  await t?.close();
  await Promise.all([venues?.close(), expo?.close(), tg?.close()]);
});

interface Watcher {
  id: string;
  auth: Record<string, string>;
  token: string;
  chat: number;
  device: string;
  stream: any[];
}

let chats = 7_100_000_000;
/** A user with a push device, a Telegram chat and a socket on their notification stream. */
async function watcher(): Promise<Watcher> {
  const u = await createUser(t.app);
  const device = `ExponentPushToken[life-${u.id.slice(0, 8)}]`;
  const reg = await t.app.inject({
    method: 'POST',
    url: '/api/v1/push/register',
    headers: u.auth,
    payload: { token: device, platform: 'ios' },
  });
  expect(reg.statusCode).toBe(201);
  const chat = ++chats;
  await t.app.db
    .insert(messengerBindings)
    .values({ messengerId: BigInt(chat), userId: u.id, chatId: BigInt(chat), walletType: 'connected', connectedAt: new Date() });
  const socket = await connect(url, { token: u.token });
  const stream = record(socket, 'notification');
  expect(await ack(socket, 'subscribe', { channel: 'user:notifications' })).toMatchObject({ ok: true });
  return { id: u.id, auth: u.auth, token: u.token, chat, device, stream };
}

const watch = (u: Watcher, slug: string) => t.app.inject({ method: 'PUT', url: `/api/v1/watchlist/${slug}`, headers: u.auth });
const unwatch = (u: Watcher, slug: string) => t.app.inject({ method: 'DELETE', url: `/api/v1/watchlist/${slug}`, headers: u.auth });

const LIFECYCLE = ['market_resolved', 'market_closing_soon', 'market_moved', 'new_market'];
const stored = (userId: string, type?: string) =>
  t.app.db
    .select({
      id: notifications.id,
      type: notifications.type,
      title: notifications.title,
      message: notifications.message,
      data: notifications.data,
    })
    .from(notifications)
    .where(and(eq(notifications.userId, userId), type ? eq(notifications.type, type) : inArray(notifications.type, LIFECYCLE)))
    .orderBy(notifications.createdAt);

/** Runs a job on both instances at once (each detector races itself across instances). */
async function both(job: string) {
  const [a, b] = await Promise.all([t.app.jobs.run(job), second.app.jobs.run(job)]);
  expect(a.ok || b.ok).toBe(true);
}

/** The notification reached the socket stream, the Expo fake and the Telegram fake, once each. */
async function expectDelivered(u: Watcher, n: { id: string; title: string; message: string }) {
  await eventually(async () => u.stream.some((e) => e.id === n.id));
  expect(u.stream.filter((e) => e.id === n.id)).toHaveLength(1);
  await eventually(async () => expo.messages.some((m) => m.to === u.device && m.title === n.title));
  expect(expo.messages.filter((m) => m.to === u.device && m.title === n.title && m.body === n.message)).toHaveLength(1);
  await eventually(async () => tg.sent.some((m) => String(m.chat_id) === String(u.chat) && String(m.text).includes(n.message)));
  expect(tg.sent.filter((m) => String(m.chat_id) === String(u.chat) && String(m.text).includes(n.message))).toHaveLength(1);
}

describe('market_moved (§17.2)', () => {
  it('a 0.10 move against a reading since watching: stored, streamed, pushed and sent to Telegram once; nothing from before watchedAt; once per group per 6 h', async () => {
    const u = await watcher();
    const late = await watcher();
    const nobody = await watcher();
    at(0);
    expect((await watch(u, 'life-pm')).statusCode).toBe(201);
    at(10_000);
    await both('price-sync'); // A read at 0.50 after u started watching
    at(20_000);
    setGammaYes(pmYes, 0.61);
    await both('price-sync');
    const [moved] = await stored(u.id);
    expect(moved).toMatchObject({
      type: 'market_moved',
      title: 'Life on Polymarket — A',
      message: 'Yes moved from 50¢ to 61¢ within 60 min',
      data: { eventSlug: 'life-pm', marketId: 'pm-771001', from: 0.5, to: 0.61 },
    });
    await expectDelivered(u, moved);
    expect(await stored(nobody.id)).toEqual([]);

    // `late` starts watching after the 0.61 reading: a reading from before watchedAt never counts.
    at(30_000);
    expect((await watch(late, 'life-pm')).statusCode).toBe(201);
    at(40_000);
    setGammaYes(pmYes, 0.75); // u: 0.25 from 0.50, but the group already moved for u within 6 h
    await both('price-sync');
    expect(await stored(u.id)).toHaveLength(1);
    expect(await stored(late.id)).toEqual([]);

    // Six hours later both are told of the next move.
    at(6 * 60 * MINUTE + 30_000);
    await both('price-sync'); // 0.75 read again: a reading of the last hour for both
    at(6 * 60 * MINUTE + 40_000);
    setGammaYes(pmYes, 0.64);
    await both('price-sync');
    expect((await stored(u.id)).map((n) => n.message)).toEqual([
      'Yes moved from 50¢ to 61¢ within 60 min',
      'Yes moved from 75¢ to 64¢ within 60 min',
    ]);
    expect((await stored(late.id)).map((n) => n.data)).toEqual([{ eventSlug: 'life-pm', marketId: 'pm-771001', from: 0.75, to: 0.64 }]);
  });

  it('0.50 → 0.40 counts (prices rounded to 4 decimals); 0.09 does not; unwatching stops it', async () => {
    const u = await watcher();
    const gone = await watcher();
    at(7 * 60 * MINUTE);
    await watch(u, 'kxlife-1');
    await watch(gone, 'kxlife-1');
    setKalshiYes(ks1, 0.5);
    at(7 * 60 * MINUTE + 10_000);
    await both('price-sync');
    setKalshiYes(ks1, 0.41);
    at(7 * 60 * MINUTE + 20_000);
    await both('price-sync');
    expect(await stored(u.id)).toEqual([]); // 0.09
    expect((await unwatch(gone, 'kxlife-1')).statusCode).toBe(204);
    setKalshiYes(ks1, 0.4);
    at(7 * 60 * MINUTE + 30_000);
    await both('price-sync');
    expect((await stored(u.id)).map((n) => n.data)).toEqual([{ eventSlug: 'kxlife-1', marketId: 'ks-KXLIFE-1-K1', from: 0.5, to: 0.4 }]);
    expect(await stored(gone.id)).toEqual([]);
  });
});

describe('market_resolved (§17.2)', () => {
  it('a tracked Kalshi market settles: price-sync sees it, the next watchlist-check tells watchers once ("Resolved NO"), never also as a move', async () => {
    const u = await watcher();
    at(8 * 60 * MINUTE);
    await watch(u, 'kxlife-1');
    at(8 * 60 * MINUTE + 10_000);
    await both('price-sync');
    Object.assign(ks2, { status: 'finalized', result: 'no', settlement_value_dollars: '0.0000' });
    at(8 * 60 * MINUTE + 70_000);
    await both('price-sync');
    await both('watchlist-check');
    at(8 * 60 * MINUTE + 130_000);
    await both('watchlist-check');
    const got = await stored(u.id);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({
      type: 'market_resolved',
      title: 'Life on Kalshi — K two',
      message: 'Resolved NO',
      data: { eventSlug: 'kxlife-1', marketId: 'ks-KXLIFE-1-K2', result: 'no' },
    });
    await expectDelivered(u, got[0]);
  });

  it('a Polymarket Up/Down market resolves in the catalogue: "Resolved: Down", result no; a user who watched after it resolved hears nothing', async () => {
    const u = await watcher();
    at(9 * 60 * MINUTE);
    await watch(u, 'life-pm');
    Object.assign(pmUpDown, { closed: true, umaResolutionStatus: 'resolved', outcomePrices: '["0", "1"]' });
    delete (pmUpDown as any).bestBid;
    delete (pmUpDown as any).bestAsk;
    at(9 * 60 * MINUTE + 60_000);
    expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
    const after = await watcher();
    at(9 * 60 * MINUTE + 70_000);
    await watch(after, 'life-pm');
    at(9 * 60 * MINUTE + 120_000);
    await both('watchlist-check');
    expect((await stored(u.id, 'market_resolved')).map((n) => [n.message, n.data])).toEqual([
      ['Resolved: Down', { eventSlug: 'life-pm', marketId: 'pm-771002', result: 'no' }],
    ]);
    expect(await stored(after.id, 'market_resolved')).toEqual([]);
    expect(await stored(u.id, 'market_moved')).toEqual([]);
  });
});

describe('new_market (§17.2)', () => {
  it('a market added to a watched group reaches its watchers once, with data.title; not those who unwatched or never watched', async () => {
    const u = await watcher();
    const gone = await watcher();
    const nobody = await watcher();
    at(10 * 60 * MINUTE);
    await watch(u, 'life-pm');
    await watch(gone, 'life-pm');
    await unwatch(gone, 'life-pm');
    pmEvent.markets.push(gammaMarket('771003', 'Will C happen?', 0.2, 10, { groupItemTitle: 'C' }));
    at(10 * 60 * MINUTE + 60_000);
    expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
    at(10 * 60 * MINUTE + 120_000);
    await both('watchlist-check');
    at(10 * 60 * MINUTE + 180_000);
    await both('watchlist-check');
    const got = await stored(u.id, 'new_market');
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({
      title: 'New market in Life on Polymarket',
      message: 'C',
      data: { eventSlug: 'life-pm', marketId: 'pm-771003', title: 'C' },
    });
    await expectDelivered(u, got[0]);
    expect(await stored(gone.id)).toEqual([]);
    expect(await stored(nobody.id)).toEqual([]);
  });
});

describe('market_resolved of a tracked Polymarket market (§17.2: within 5 minutes)', () => {
  it('the CLOB stops quoting it; price-sync re-reads the watched group from Gamma and the next watchlist-check says "Resolved YES"', async () => {
    const u = await watcher();
    at(11 * 60 * MINUTE);
    await watch(u, 'life-pm');
    Object.assign(pmYes, { closed: true, umaResolutionStatus: 'resolved', outcomePrices: '["1", "0"]' });
    at(11 * 60 * MINUTE + 60_000);
    const rereads = () => venues.gamma.requests.filter((r) => r.path === '/events/7710').length;
    const before = rereads();
    await t.app.jobs.run('price-sync');
    expect(rereads()).toBe(before + 1);
    at(11 * 60 * MINUTE + 120_000);
    await both('watchlist-check');
    expect((await stored(u.id, 'market_resolved')).map((n) => [n.title, n.message, n.data])).toEqual([
      ['Life on Polymarket — A', 'Resolved YES', { eventSlug: 'life-pm', marketId: 'pm-771001', result: 'yes' }],
    ]);
    // No longer active: not tracked, not re-read again.
    await t.app.jobs.run('price-sync');
    expect(rereads()).toBe(before + 1);
  });
});

describe('market_closing_soon (§17.2)', () => {
  it('once per (user, market) when an active market’s endDate is within 24 h, also one already that close when the user starts watching', async () => {
    const H = 60 * MINUTE;
    const d = gammaMarket('772001', 'Will D happen?', 0.5, 100, {
      groupItemTitle: 'D',
      endDate: new Date(T0 + 12 * H + 20 * H).toISOString(),
    });
    const e = gammaMarket('772002', 'Will E happen?', 0.5, 100, {
      groupItemTitle: 'E',
      endDate: new Date(T0 + 12 * H + 30 * H).toISOString(),
    });
    venues.gamma.state.events.push(gammaEvent('7720', 'life-close', 'Closing group', [d, e]));
    at(12 * H);
    expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
    const u = await watcher();
    const nobody = await watcher();
    at(12 * H + 10_000);
    expect((await watch(u, 'life-close')).statusCode).toBe(201);
    at(12 * H + 60_000);
    await both('watchlist-check');
    at(12 * H + 120_000);
    await both('watchlist-check');
    const got = await stored(u.id, 'market_closing_soon');
    expect(got.map((n) => [n.title, n.data])).toEqual([
      ['Closing group — D', { eventSlug: 'life-close', marketId: 'pm-772001', endDate: new Date(T0 + 32 * H).toISOString() }],
    ]);
    expect(got[0].message).toBe(`Closes ${new Date(T0 + 32 * H).toISOString().slice(0, 16).replace('T', ' ')} UTC`);
    await expectDelivered(u, got[0]);

    // Seven hours on, E's close is within 24 h; D's endDate moving sends nothing more.
    (d as { endDate?: string }).endDate = new Date(T0 + 12 * H + 22 * H).toISOString();
    at(19 * H);
    expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
    at(19 * H + 60_000);
    await both('watchlist-check');
    expect((await stored(u.id, 'market_closing_soon')).map((n) => n.data.marketId)).toEqual(['pm-772001', 'pm-772002']);
    expect(await stored(nobody.id)).toEqual([]);
  });
});

describe('preferences and the notify route (§17.2, §6)', () => {
  it('push preferences list the four types, default on; turning one off skips its push but keeps the in-app notification', async () => {
    const u = await watcher();
    const prefs = await t.app.inject({ method: 'GET', url: '/api/v1/push/preferences', headers: u.auth });
    expect(prefs.json().types).toMatchObject({ market_resolved: true, market_closing_soon: true, market_moved: true, new_market: true });
    const off = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/push/preferences',
      headers: u.auth,
      payload: { types: { new_market: false } },
    });
    expect(off.json().types).toMatchObject({ new_market: false, market_moved: true });
    for (const type of LIFECYCLE) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/internal/notifications',
        headers: { authorization: `Bearer ${INTERNAL}` },
        payload: { userId: u.id, type, title: `T ${type}`, message: `M ${type}`, data: { eventSlug: 'x', marketId: 'y' } },
      });
      expect(res.statusCode).toBe(201);
    }
    await eventually(async () => expo.messages.filter((m) => m.to === u.device).length === 3);
    expect(expo.messages.filter((m) => m.to === u.device).map((m) => m.title)).not.toContain('T new_market');
    expect(await stored(u.id)).toHaveLength(4);
  });

  it('the jobs that raise them are listed with every job', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/internal/jobs', headers: { authorization: `Bearer ${INTERNAL}` } });
    const names = res.json().jobs.map((j: any) => j.name);
    expect(names).toEqual(expect.arrayContaining(['price-sync', 'events-sync', 'watchlist-check']));
  });
});

describe('exactly once across instances (§17.2)', () => {
  it('the watch_notices key holds when both instances detect the same change at once', async () => {
    const rows = await t.app.dbh.rows<{ n: number }>(
      sql`select count(*)::int as n from (select user_id, type, data->>'marketId' as m, count(*) as c
          from notifications where type in ('market_resolved', 'new_market') group by 1, 2, 3 having count(*) > 1) d`,
    );
    expect(Number(rows[0].n)).toBe(0);
  });
});
