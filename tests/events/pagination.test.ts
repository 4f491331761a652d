import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { generateGammaEvents } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket } from '../fakes/venues/kalshi.js';
import { compactHistory } from '../../src/domains/events/history.js';

let venues: FakeVenues;
let t: TestApp;
const GAMMA_EVENTS = 230; // 3 pages of 100
const KALSHI_EVENTS = 450; // 3 pages of 200

beforeAll(async () => {
  // Odd events in a Sports series, even ones in an Economics series (categories come from GET /series).
  const kalshi = Array.from({ length: KALSHI_EVENTS }, (_, i) =>
    kalshiEvent(`KXGEN${i % 2}-${i}`, `KXGEN${i % 2}`, `Generated Kalshi event ${i}`, i % 2 ? 'Sports' : 'Economics', [
      kalshiMarket(`KXGEN${i % 2}-${i}-A`, `KXGEN${i % 2}-${i}`, `Outcome ${i}`, 0.4, 0.42, 0.41, 100 + i),
    ]),
  );
  // Every fourth Gamma event (g % 4 === 1) carries a sports tag among others.
  const gamma = generateGammaEvents(GAMMA_EVENTS, 2).map((e, g) =>
    g % 4 === 1
      ? {
          ...e,
          tags: [
            { id: '1', label: 'Featured', slug: 'featured' },
            { id: '2', label: 'Sports', slug: 'sports' },
          ],
        }
      : e,
  );
  venues = await startFakeVenues({ gamma, kalshi });
  t = await buildTestApp(venues.env);
  const outcome = await t.app.jobs.run('events-sync');
  expect(outcome.ok).toBe(true);
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

describe('venue pagination', () => {
  it('pages Gamma by keyset (after_cursor) until a page without next_cursor, never by offset', () => {
    const calls = venues.gamma.requests.filter((r) => r.path.startsWith('/events'));
    expect(calls.map((c) => c.path)).toEqual(['/events/keyset', '/events/keyset', '/events/keyset']);
    expect(calls[0].query.has('after_cursor')).toBe(false);
    expect(calls[1].query.get('after_cursor')).toBeTruthy();
    expect(calls[2].query.get('after_cursor')).not.toBe(calls[1].query.get('after_cursor'));
    for (const c of calls) expect(c.query.has('offset')).toBe(false);
  });

  it('pages Kalshi by cursor until the cursor is empty', () => {
    const calls = venues.kalshi.requests.filter((r) => r.path === '/events');
    expect(calls).toHaveLength(3);
    expect(calls[0].query.has('cursor')).toBe(false);
    expect(calls[0].query.get('status')).toBe('open');
    expect(calls[1].query.get('cursor')).toBeTruthy();
    expect(calls[2].query.get('cursor')).not.toBe(calls[1].query.get('cursor'));
  });

  it('ingests every group of every page', async () => {
    const body = (await t.app.inject({ method: 'GET', url: '/api/v1/events?limit=1' })).json();
    expect(body.total).toBe(GAMMA_EVENTS + KALSHI_EVENTS);
    const [m] = await t.db.rows<{ n: number }>(sql`select count(*)::int as n from markets`);
    expect(Number(m.n)).toBe(GAMMA_EVENTS * 2 + KALSHI_EVENTS);
  });

  it('API paging with limit 100 covers every group once, in a stable order', async () => {
    const ids: string[] = [];
    let total: number;
    for (let offset = 0; ; offset += 100) {
      const body = (await t.app.inject({ method: 'GET', url: `/api/v1/events?limit=100&offset=${offset}` })).json();
      total = body.total;
      if (body.events.length === 0) break;
      ids.push(...body.events.map((e: any) => e.id));
    }
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
    const sports = (await t.app.inject({ method: 'GET', url: '/api/v1/events?category=sports&limit=100' })).json();
    // Odd Kalshi events and every fourth generated Gamma event (g % 4 === 1) are SPORTS.
    expect(sports.total).toBe(KALSHI_EVENTS / 2 + 58);
  });
});

describe('history compaction', () => {
  it('keeps minute points for 48 h and the last point per hour after that, for at least a year', async () => {
    const now = new Date('2030-01-10T12:00:30Z');
    const base = Date.parse('2030-01-10T12:00:00Z');
    const rows: Array<{ t: string; p: number }> = [];
    // 3 hours of minute points ending 60 h ago, 10 minute points in the last hour, 3 days of hourly points ~100 days ago.
    for (let i = 0; i < 180; i++) rows.push({ t: new Date(base - 60 * 3_600_000 - i * 60_000).toISOString(), p: i / 1000 });
    for (let i = 0; i < 10; i++) rows.push({ t: new Date(base - i * 60_000).toISOString(), p: 0.5 });
    for (let i = 0; i < 72; i++) rows.push({ t: new Date(base - 100 * 86_400_000 - i * 3_600_000).toISOString(), p: 0.2 });
    await t.db.rows(
      sql`insert into price_history (market_id, ts, price)
          select 'ks-KXGEN0-0-A', t, p from json_to_recordset(${JSON.stringify(rows)}::json) as x(t timestamptz, p float8)`,
    );
    const deps = { dbh: t.app.dbh, clock: () => now };
    // A watermark a minute ago scans only buckets that aged in that minute: nothing here.
    expect(await compactHistory(deps, new Date(now.getTime() - 60_000))).toBe(0);
    const removed = await compactHistory(deps);
    expect(removed).toBeGreaterThan(0);
    const count = async (from: number, to: number) => {
      const [r] = await t.db.rows<{ n: number }>(
        sql`select count(*)::int as n from price_history where market_id = 'ks-KXGEN0-0-A'
            and ts >= ${new Date(from).toISOString()}::timestamptz and ts < ${new Date(to).toISOString()}::timestamptz`,
      );
      return Number(r.n);
    };
    expect(await count(base - 3_600_000, base + 60_000)).toBe(10); // last 48 h: untouched
    // 180 minutes ending 60 h ago span 4 clock hours → one point each.
    expect(await count(base - 64 * 3_600_000, base - 59 * 3_600_000)).toBe(4);
    // Hourly points ~100 days ago are kept as they are (docs/decisions.md §11.5: at least a year).
    expect(await count(base - 104 * 86_400_000, base - 99 * 86_400_000)).toBe(72);
    // The kept point of an hour is its last one.
    const [last] = await t.db.rows<{ price: number }>(
      sql`select price from price_history where market_id = 'ks-KXGEN0-0-A' and ts < ${new Date(base - 59 * 3_600_000).toISOString()}::timestamptz
          and ts >= ${new Date(base - 61 * 3_600_000).toISOString()}::timestamptz order by ts desc limit 1`,
    );
    expect(Number(last.price)).toBe(0);
    // Idempotent.
    expect(await compactHistory(deps)).toBe(0);
  });

  it('price-sync passes its last successful run as the watermark', async () => {
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const minutes = (hoursAgo: number) =>
      Array.from({ length: 3 }, (_, i) => ({ t: new Date(hour - hoursAgo * 3_600_000 + i * 60_000).toISOString(), p: 0.3 }));
    const insert = (rows: Array<{ t: string; p: number }>) =>
      t.db.rows(
        sql`insert into price_history (market_id, ts, price)
            select 'ks-KXGEN1-1-A', t, p from json_to_recordset(${JSON.stringify(rows)}::json) as x(t timestamptz, p float8)`,
      );
    const inHour = async (hoursAgo: number) => {
      const [r] = await t.db.rows<{ n: number }>(
        sql`select count(*)::int as n from price_history where market_id = 'ks-KXGEN1-1-A'
            and ts >= ${new Date(hour - hoursAgo * 3_600_000).toISOString()}::timestamptz
            and ts < ${new Date(hour - (hoursAgo - 1) * 3_600_000).toISOString()}::timestamptz`,
      );
      return Number(r.n);
    };
    // No successful run yet: the first one compacts everything.
    await t.db.rows(sql`delete from job_runs where name = 'price-sync'`);
    await insert(minutes(60));
    expect((await t.app.jobs.run('price-sync')).ok).toBe(true);
    expect(await inHour(60)).toBe(1);
    // The next run starts from that run's watermark: an hour that aged long before it is not scanned again.
    await insert(minutes(70));
    expect((await t.app.jobs.run('price-sync')).ok).toBe(true);
    expect(await inHour(70)).toBe(3);
  });
});
