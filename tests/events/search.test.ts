import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';

/**
 * Search and sorts on GET /api/v1/events (docs/decisions.md §16.1, §16.5):
 * every word a prefix of a word of the group's title or of a market's title
 * or outcome label, case- and accent-insensitive, on both databases; the six
 * orderings with ties by id in byte order, so offset paging never repeats or
 * skips; `venue`; and the 400s.
 */
const DAY = 86_400_000;
const NOW = Date.parse('2026-06-01T12:00:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();

let venues: FakeVenues;
let t: TestApp;

/** A Polymarket group of one Yes/No market. */
function pm(id: string, slug: string, title: string, market: Record<string, unknown> = {}, event: Record<string, unknown> = {}) {
  return gammaEvent(id, slug, title, [gammaMarket(`${id}01`, title, 0.5, 1000, market)], event);
}

beforeAll(async () => {
  const gamma = [
    pm('1001', 'election-fr', 'Élection présidentielle française', { volume24hr: 10, endDate: at(NOW + 9 * DAY) }),
    pm('1002', 'trump-2028', 'Will Trump win in 2028?', { volume24hr: 500, oneDayPriceChange: -0.2 }, { createdAt: at(NOW - 5 * DAY) }),
    // Matches "fed rate" only through a market title, with the largest 24 h volume.
    gammaEvent(
      '1003',
      'economy-2026',
      'US economy in 2026',
      [
        gammaMarket('100301', 'Fed rate hike in June?', 0.2, 1000, { groupItemTitle: 'Fed rate hike in June', volume24hr: 9000 }),
        gammaMarket('100302', 'Recession?', 0.2, 1000, { groupItemTitle: 'Recession', volume24hr: 1 }),
      ],
      { createdAt: at(NOW - 1 * DAY) },
    ),
    // Matches "fed rate" in its own title, with a small 24 h volume.
    pm('1004', 'fed-rate-cut', 'Fed rate cut in July?', { volume24hr: 3, oneDayPriceChange: 0.05, endDate: at(NOW + 2 * DAY) }),
    // Matches "falcons" only through the outcome label the market does not price.
    gammaEvent('1005', 'nfl-week-1', 'NFL Week 1', [
      gammaMarket('100501', 'Ravens vs. Falcons', 0.55, 1000, { outcomes: '["Ravens", "Falcons"]', volume24hr: 20 }),
    ]),
  ];
  // Five Kalshi groups tied on every key but the id: ties break by id in byte order.
  const kalshi = ['KXTIE-B', 'KXTIE-a', 'KXTIE-A', 'KXTIE-1', 'KXTIE-_'].map((ticker) =>
    kalshiEvent(ticker, 'KXTIE', `Tied group ${ticker}`, 'Economics', [
      kalshiMarket(`${ticker}-M`, ticker, 'Tied market', 0.4, 0.42, 0.41, 100, {
        volume_24h_fp: '50.00',
        open_time: '2025-05-01T00:00:00Z',
        close_time: at(NOW + 30 * DAY),
        previous_price_dollars: '0.4100',
      }),
    ]),
  );
  kalshi.push(
    kalshiEvent('KXFEDCHAIR-27', 'KXFED', 'Who will be the next Fed chair?', 'Economics', [
      kalshiMarket('KXFEDCHAIR-27-KH', 'KXFEDCHAIR-27', 'Who will be the next Fed chair?', 0.4, 0.42, 0.41, 100, {
        yes_sub_title: 'Kevin Hassett',
        close_time: at(NOW + 1 * DAY),
        open_time: '2025-01-01T00:00:00Z',
      }),
      kalshiMarket('KXFEDCHAIR-27-KW', 'KXFEDCHAIR-27', 'Who will be the next Fed chair?', 0.3, 0.32, 0.31, 100, {
        yes_sub_title: 'Kevin Warsh',
        close_time: at(NOW + 1 * DAY),
        open_time: '2025-01-01T00:00:00Z',
      }),
    ]),
  );
  venues = await startFakeVenues({ gamma, kalshi });
  venues.kalshi.state.series = [seriesRow('KXTIE', 'Economics'), seriesRow('KXFED', 'Economics')];
  t = await buildTestApp({ ...venues.env, PRICE_TRACK_TOP: '0' }, { clock: () => new Date(NOW) });
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

const get = (query: string) => t.app.inject({ method: 'GET', url: `/api/v1/events?${query}` });
const ids = async (query: string) => {
  const res = await get(query);
  expect(res.statusCode, res.body).toBe(200);
  return (res.json().events as any[]).map((e) => e.id);
};
const search = (q: string, extra = '') => ids(`q=${encodeURIComponent(q)}${extra}`);
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const ALL = 11;

describe('q', () => {
  it('matches word prefixes case- and accent-insensitively', async () => {
    expect(await search('elec')).toEqual(['pm-1001']);
    expect(await search('ÉLECTION Présid')).toEqual(['pm-1001']);
    expect(await search('francaise')).toEqual(['pm-1001']);
    expect(await search('trump 2028')).toEqual(['pm-1002']);
    expect(await search('Trump, 20')).toEqual(['pm-1002']);
    // Every word must match: "2027" is nobody's prefix here.
    expect(await search('trump 2027')).toEqual([]);
    // A prefix of a word, not a substring inside one.
    expect(await search('rump')).toEqual([]);
  });

  it('matches through markets’ titles and both outcome labels, words in different texts of one group', async () => {
    expect(await search('hassett')).toEqual(['ks-KXFEDCHAIR-27']);
    expect(await search('falcons')).toEqual(['pm-1005']);
    expect(await search('ravens')).toEqual(['pm-1005']);
    // "nfl" in the title, "falc" in an outcome label.
    expect(await search('nfl falc')).toEqual(['pm-1005']);
    expect(await search('kevin warsh chair')).toEqual(['ks-KXFEDCHAIR-27']);
  });

  it('relevance (the default with q): own-title matches first, then by 24 h volume, then id', async () => {
    const res = (await get('q=fed%20rate')).json();
    expect(res.total).toBe(2);
    // The own-title match first although the market-only match has far more 24 h volume.
    expect(res.events.map((e: any) => e.id)).toEqual(['pm-1004', 'pm-1003']);
    // Two own-title matches by 24 h volume (Kalshi's two markets 28 + 28, Polymarket's 3), then the market-only one.
    expect(await search('fed')).toEqual(['ks-KXFEDCHAIR-27', 'pm-1004', 'pm-1003']);
    // Another sort applies to the matches.
    expect(await search('fed', '&sort=volume24h')).toEqual(['pm-1003', 'ks-KXFEDCHAIR-27', 'pm-1004']);
  });

  it('a q with no letter or digit matches nothing; empty, blank or over 100 characters is 400', async () => {
    const none = await get('q=%21%3F%20-');
    expect(none.statusCode).toBe(200);
    expect(none.json()).toMatchObject({ total: 0, events: [] });
    for (const q of ['', '%20%20', encodeURIComponent('a'.repeat(101)), encodeURIComponent('😀'.repeat(101))]) {
      const res = await get(`q=${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
    // 100 characters are code points: 100 emoji (200 UTF-16 units) are allowed, and match nothing.
    expect((await get(`q=${encodeURIComponent('😀'.repeat(100))}`)).statusCode).toBe(200);
    expect((await get(`q=${encodeURIComponent(' ' + 'a'.repeat(100) + ' ')}`)).statusCode).toBe(200);
  });

  it('combines with venue, category, status and paging', async () => {
    expect(await search('fed', '&venue=kalshi')).toEqual(['ks-KXFEDCHAIR-27']);
    expect(await search('fed', '&venue=polymarket')).toEqual(['pm-1004', 'pm-1003']);
    expect(await search('fed', '&status=closed')).toEqual([]);
    expect(await search('fed', '&limit=1&offset=1')).toEqual(['pm-1004']);
    expect((await get('q=fed&limit=1')).json().total).toBe(3);
  });
});

describe('sort', () => {
  it('unknown sort or venue → 400 VALIDATION_ERROR', async () => {
    for (const q of ['sort=hot', 'sort=VOLUME', 'venue=manifold', 'venue=']) {
      const res = await get(q);
      expect(res.statusCode, q).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    }
  });

  it('venue keeps one venue’s groups; every group says its venue', async () => {
    const res = (await get('venue=kalshi&limit=100')).json();
    expect(res.total).toBe(6);
    expect(res.events.every((e: any) => e.venue === 'kalshi')).toBe(true);
  });

  it('ties break by id in byte order', async () => {
    const tied = (await ids('venue=kalshi&sort=volume24h&limit=100')).filter((id) => id.startsWith('ks-KXTIE'));
    expect(tied).toEqual([...tied].sort(byteOrder));
    expect(tied).toEqual(['ks-KXTIE-1', 'ks-KXTIE-A', 'ks-KXTIE-B', 'ks-KXTIE-_', 'ks-KXTIE-a']);
  });

  it('each ordering, as §16.1 defines it', async () => {
    const all = async (sort: string) => (await get(`sort=${sort}&limit=100`)).json().events as any[];
    const check = (list: any[], key: (e: any) => number | null, dir: 1 | -1) => {
      for (let i = 1; i < list.length; i++) {
        const [a, b] = [key(list[i - 1]), key(list[i])];
        if (a === null) expect(b, list[i].id).toBeNull();
        if (a === null || b === null || a === b) {
          if (a === b) expect(byteOrder(list[i - 1].id, list[i].id)).toBeLessThan(0);
          continue;
        }
        expect(dir * (b - a), `${list[i - 1].id} then ${list[i].id}`).toBeGreaterThan(0);
      }
    };
    const volume = await all('volume');
    expect(volume).toHaveLength(ALL);
    check(volume, (e) => e.totalVolume, -1);
    expect((await all('volume24h'))[0].id).toBe('pm-1003');
    check(await all('volume24h'), (e) => e.volume24h, -1);
    const newest = await all('newest');
    check(newest, (e) => (e.createdAt === null ? null : Date.parse(e.createdAt)), -1);
    expect(newest.slice(0, 2).map((e) => e.id)).toEqual(['pm-1003', 'pm-1002']);
    const closing = await all('closing');
    check(closing, (e) => (e.endDate === null ? null : Date.parse(e.endDate)), 1);
    expect(closing.slice(0, 2).map((e) => e.id)).toEqual(['ks-KXFEDCHAIR-27', 'pm-1004']);
    const movers = await all('movers');
    check(movers, (e) => (e.change24h === null ? null : Math.abs(e.change24h)), -1);
    expect(movers[0]).toMatchObject({ id: 'pm-1002', change24h: -0.2 });
    // relevance without q orders like volume.
    expect((await all('relevance')).map((e) => e.id)).toEqual(volume.map((e) => e.id));
  });

  it('offset paging never repeats or skips a group, in every ordering', async () => {
    for (const sort of ['volume', 'volume24h', 'newest', 'closing', 'movers', 'relevance']) {
      const whole = await ids(`sort=${sort}&limit=100`);
      const paged: string[] = [];
      for (let offset = 0; offset < ALL + 3; offset += 3) paged.push(...(await ids(`sort=${sort}&limit=3&offset=${offset}`)));
      expect(paged, sort).toEqual(whole);
      expect(new Set(paged).size).toBe(ALL);
    }
  });
});
