import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket, generateGammaEvents } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';
import { REREAD_PER_RUN, syncCatalogue } from '../../src/domains/events/catalogue.js';

/**
 * The catalogue against fakes that behave as the venues do (docs/venues.md
 * "What we call", docs/decisions.md §11.1): keyset and cursor listings that
 * repeat events across pages, increments, series categories, re-reads of
 * groups that left the listing.
 */
let venues: FakeVenues;
let t: TestApp;
const GAMMA_EVENTS = 250;
const KALSHI_EVENTS = 450;

beforeAll(async () => {
  const kalshi = Array.from({ length: KALSHI_EVENTS }, (_, i) =>
    kalshiEvent(`KXC${i % 2}-${i}`, `KXC${i % 2}`, `Kalshi event ${i}`, 'Sports', [
      kalshiMarket(`KXC${i % 2}-${i}-A`, `KXC${i % 2}-${i}`, `Outcome ${i}`, 0.4, 0.42, 0.41, 100 + i),
    ]),
  );
  venues = await startFakeVenues({ gamma: generateGammaEvents(GAMMA_EVENTS, 1), kalshi });
  // The deprecated event `category` says Sports for all; the series decide (docs/venues.md "Categories").
  venues.kalshi.state.series = [seriesRow('KXC0', 'Climate and Weather'), seriesRow('KXC1', 'Financials')];
  // Paging by a moving order repeats the last events of a page at the start of the next.
  venues.gamma.state.overlap = 3;
  venues.kalshi.state.overlap = 2;
  t = await buildTestApp(venues.env);
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

const get = (url: string) => t.app.inject({ method: 'GET', url });
const count = async (q: ReturnType<typeof sql>) => Number((await t.db.rows<{ n: number }>(q))[0].n);

describe('full listing', () => {
  it('writes every event once although pages repeat events (dedupe by id before the write)', async () => {
    expect((await get('/api/v1/events?limit=1')).json().total).toBe(GAMMA_EVENTS + KALSHI_EVENTS);
    expect(await count(sql`select count(*)::int as n from markets`)).toBe(GAMMA_EVENTS + KALSHI_EVENTS);
    // The overlap made the venues send more rows than there are events.
    expect(venues.gamma.requests.filter((r) => r.path === '/events/keyset').length).toBeGreaterThanOrEqual(3);
  });

  it('takes Kalshi categories from GET /series, never from the event', async () => {
    expect((await get('/api/v1/events?category=weather&limit=1')).json().total).toBe(KALSHI_EVENTS / 2);
    expect((await get('/api/v1/events?category=economics&limit=1')).json().total).toBe(KALSHI_EVENTS / 2);
    expect((await get('/api/v1/events?category=sports&limit=1')).json().total).toBe(0);
    expect(venues.kalshi.requests.filter((r) => r.path === '/series')).toHaveLength(1);
  });
});

describe('increments (every events-sync run between full reconciles)', () => {
  it('reads Gamma newest first and stops at the first page that holds only known ids', async () => {
    venues.gamma.state.overlap = 0;
    for (let i = 0; i < 3; i++) {
      venues.gamma.state.events.push(
        gammaEvent(String(300000 + i), `new-event-${i}`, `New event ${i}`, [gammaMarket(String(9000000 + i), `New ${i}?`, 0.5, 10)]),
      );
    }
    venues.gamma.reset();
    venues.kalshi.reset();
    const out = await syncCatalogue(t.app.jobs.deps());
    expect(out.failures).toEqual([]);
    const pages = venues.gamma.requests.filter((r) => r.path === '/events/keyset');
    // Page 1: the 3 new events and 97 known ones; page 2: only known ids → stop.
    expect(pages).toHaveLength(2);
    for (let i = 0; i < 3; i++) expect((await get(`/api/v1/events/new-event-${i}`)).statusCode).toBe(200);
  });

  it('reads Kalshi events updated since the stored watermark (min_updated_ts), without status', async () => {
    const [state] = await t.db.rows<{ watermark: Date | string }>(sql`select watermark from venue_sync_state where venue = 'kalshi'`);
    const watermark = new Date(state.watermark).getTime();
    const e = venues.kalshi.state.events[0];
    e.last_updated_ts = new Date().toISOString();
    Object.assign(e.markets[0], { status: 'finalized', result: 'yes' });
    venues.kalshi.reset();
    const out = await syncCatalogue(t.app.jobs.deps());
    expect(out.failures).toEqual([]);
    const calls = venues.kalshi.requests.filter((r) => r.path === '/events');
    expect(calls).toHaveLength(1);
    expect(calls[0].query.has('status')).toBe(false);
    // 5 minutes of overlap before the watermark, so an event updated during a pass is not missed.
    expect(Number(calls[0].query.get('min_updated_ts'))).toBe(Math.floor((watermark - 300_000) / 1000));
    const detail = (await get(`/api/v1/events/${e.event_ticker.toLowerCase()}`)).json();
    expect(detail.status).toBe('resolved');
    expect(detail.markets[0]).toMatchObject({ status: 'resolved', yesPrice: 1 });
  });
});

describe('groups that left the listing', () => {
  it('are re-read by id in a full reconcile, at most REREAD_PER_RUN per venue and run; a 404 closes them', async () => {
    // 150 generated events vanish from Gamma altogether.
    const removed = venues.gamma.state.events.splice(0, 150);
    venues.gamma.reset();
    try {
      expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
      const rereads = venues.gamma.requests.filter((r) => /^\/events\/\d+$/.test(r.path));
      expect(rereads).toHaveLength(REREAD_PER_RUN);
      expect((await get('/api/v1/events?status=closed&limit=1')).json().total).toBe(REREAD_PER_RUN);
      expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
      expect((await get('/api/v1/events?status=closed&limit=1')).json().total).toBe(150);
    } finally {
      venues.gamma.state.events.unshift(...removed);
    }
    // Listed again: active again.
    expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
    expect((await get('/api/v1/events?status=closed&limit=1')).json().total).toBe(0);
  });
});
