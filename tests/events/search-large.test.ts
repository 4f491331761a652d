import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { prefixQuery } from '../../src/domains/events/search-text.js';
import { SEARCH_COUNT_CAP, selectGroups, type GroupFilter } from '../../src/domains/events/queries.js';
import type { EventSort } from '../../src/domains/events/schemas.js';

/**
 * A search past the count cap (docs/decisions.md §16.6, queries.ts
 * searchGroups) is paged segment by segment, each by walking the sort's
 * index or by sorting its matches: every page must be the very page the
 * exact path (all matches sorted) gives, for every sort, offset, filter and
 * both tiers of `relevance`, on both databases. The cap is lowered here so a
 * catalogue of a few dozen groups crosses it; the route's `total` past the
 * cap is checked through HTTP with the real cap.
 */
let venues: FakeVenues;
let t: TestApp;

beforeAll(async () => {
  venues = await startFakeVenues(
    {},
    { generate: { polymarket: { events: 40, markets: 120 }, kalshi: { events: 30, markets: 150, series: 6 } } },
  );
  t = await buildTestApp({ ...venues.env, PRICE_TRACK_TOP: '0' });
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
}, 120_000);
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

const SORTS: EventSort[] = ['relevance', 'volume', 'volume24h', 'newest', 'closing', 'movers'];

async function page(q: string, sort: EventSort, offset: number, limit: number, extra: Partial<GroupFilter> = {}) {
  const r = await selectGroups(t.app.dbh, { query: prefixQuery(q), sort, offset, limit, now: new Date(), ...extra });
  return { ids: r.rows.map((g) => g.id), total: r.total, capped: r.capped };
}

describe('a search past the count cap', () => {
  it('pages exactly as the sorted path does, walking or sorting, in every ordering and filter', async () => {
    // `generated` matches every group in its title; `alice` only through markets (the second tier);
    // `event 1` a few groups.
    const queries = ['generated', 'alice', 'event 1'];
    const filters: Array<Partial<GroupFilter>> = [{}, { venue: 'kalshi' }];
    let compared = 0;
    let large = 0;
    for (const q of queries) {
      for (const filter of filters) {
        for (const sort of SORTS) {
          const whole = await page(q, sort, 0, 100, filter);
          expect(whole.capped).toBe(false);
          for (const [offset, limit] of [
            [0, 5],
            [3, 7],
            [12, 5],
            [whole.total - 2, 5],
            [whole.total + 4, 5],
          ]) {
            if (offset < 0) continue;
            const expected = whole.ids.slice(offset, offset + limit);
            for (const walk of [true, false]) {
              const got = await page(q, sort, offset, limit, { ...filter, tuning: { countCap: 4, walk } });
              expect(got.ids, `${q} ${JSON.stringify(filter)} ${sort} ${offset}+${limit} walk=${walk}`).toEqual(expected);
              expect(got.capped).toBe(whole.total > 4);
              if (got.capped) large++;
              compared++;
            }
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(300);
    expect(large).toBeGreaterThan(150);
  }, 180_000);

  it('relevance: the title tier first, wherever the tier ends against the page and the offset', async () => {
    for (const q of ['yes', 'kalshi', 'generated event', 'no alice']) {
      const whole = await page(q, 'relevance', 0, 100);
      for (let offset = 0; offset <= whole.total; offset += 4) {
        for (const walk of [true, false]) {
          const got = await page(q, 'relevance', offset, 5, { tuning: { countCap: 2, walk } });
          expect(got.ids, `${q} ${offset} walk=${walk}`).toEqual(whole.ids.slice(offset, offset + 5));
        }
      }
    }
  }, 120_000);

  it('total is exact under the cap, through the route', async () => {
    const get = async (query: string) => {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/events?${query}` });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<{ total: number; events: Array<{ id: string }> }>();
    };
    // 70 groups: under the real cap, so exact.
    expect(SEARCH_COUNT_CAP).toBeGreaterThan(70);
    expect((await get('q=generated&limit=5')).total).toBe(70);
    expect((await get('q=generated&limit=5&offset=68')).events).toHaveLength(2);
  });
});
