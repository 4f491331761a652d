import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson, UpstreamError } from '../../src/lib/http.js';
import { createVenueClients, type VenueClients } from '../../src/venues/clients.js';
import type { Category } from '../../src/venues/catalogue.js';
import { getGammaCatalogueEvent, listGammaEventsKeyset, type GammaKeysetPage } from '../../src/venues/polymarket/gamma.js';
import { getClobPriceHistory, readClobPrices } from '../../src/venues/polymarket/clob.js';
import { mapGammaCatalogueEvent } from '../../src/venues/polymarket/gamma-map.js';
import {
  getKalshiCatalogueEvent,
  getKalshiMarketsByTickers,
  getKalshiSeriesCategories,
  listKalshiEventPages,
  type KalshiEventsPage,
} from '../../src/venues/kalshi/trade-api.js';
import { fetchClosedPositionsNewestFirst, fetchPositions } from '../../src/venues/polymarket/data-api.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';
import { arrivalTimes, budgetViolations, enforceBudget } from '../fakes/venues/budget.js';
import { generateKalshi, generatePolymarket } from '../fakes/venues/generate.js';

/**
 * The adapters of src/venues/ against the fakes, which behave as
 * docs/venues.md says the venues do (limits, failure modes, wire shapes).
 */
let venues: FakeVenues;
let data: FakeDataApi;
let clients: VenueClients;
const NOW = Math.floor(Date.now() / 1000);
const PM_EVENTS = 2350;
const KS_EVENTS = 450;

beforeAll(async () => {
  venues = await startFakeVenues(
    {},
    {
      generate: {
        polymarket: { events: PM_EVENTS, markets: 4000, seed: 7, nowSec: NOW },
        kalshi: { events: KS_EVENTS, markets: 2000, series: 40, seed: 7, nowSec: NOW },
      },
    },
  );
  data = await startFakeDataApi();
  // Budgets raised so the suite runs fast; the budget tests below use the fakes' enforcement.
  clients = createVenueClients({ ...venues.env, POLYMARKET_DATA_API_URL: data.url } as never, {
    budgets: { gamma: 500, clob: 500, kalshi: 500, data: 500 },
    backoffMs: 5,
    maxBackoffMs: 50,
  });
});
afterAll(async () => {
  await venues?.close();
  await data?.close();
});

async function collect<T>(gen: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const p of gen) out.push(p);
  return out;
}

describe('Gamma keyset listing', () => {
  it('lists every open event past the legacy offset ceiling, 100 a page, following after_cursor', async () => {
    venues.gamma.reset();
    const pages = await collect(listGammaEventsKeyset(clients.gamma));
    expect(pages).toHaveLength(24);
    expect(pages.map((p) => p.received)).toEqual([...Array(23).fill(100), 50]);
    expect(pages.at(-1)!.final).toBe(true);
    const ids = pages.flatMap((p) => p.groups.map((g) => g.id));
    expect(ids).toHaveLength(PM_EVENTS);
    expect(new Set(ids).size).toBe(PM_EVENTS);
    // Newest first: ids descending.
    expect(ids[0]).toBe(`pm-${2_000_000 + PM_EVENTS - 1}`);
    const calls = venues.gamma.requests;
    expect(calls.every((r) => r.path === '/events/keyset' && !r.query.has('offset'))).toBe(true);
    expect(Object.fromEntries(calls[0].query)).toEqual({ closed: 'false', order: 'id', ascending: 'false', limit: '100' });
    for (let i = 1; i < calls.length; i++) expect(calls[i].query.get('after_cursor')).toBe(pages[i - 1].nextCursor);
  });

  it('the legacy offset listing fails at page 21 (422 past offset 2000), which is why it is not used', async () => {
    const url = `${clients.gamma.baseUrl}/events?closed=false&limit=100&offset=2100`;
    const err = (await requestJson(url, { ...clients.gamma.http, attempts: 1 }).catch((e: unknown) => e)) as UpstreamError;
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.status).toBe(422);
    expect(err.body).toEqual({ type: 'validation error', error: 'offset too large, use /events/keyset for deeper pagination' });
  });

  it('a catalogue that fills its last page ends on an empty page without next_cursor', async () => {
    const small = await startFakeVenues({}, { generate: { polymarket: { events: 200, markets: 300 } } });
    try {
      const c = createVenueClients({ ...small.env, POLYMARKET_DATA_API_URL: data.url } as never, { budgets: { gamma: 500 } });
      const pages = await collect(listGammaEventsKeyset(c.gamma));
      expect(pages.map((p) => [p.received, p.final])).toEqual([
        [100, false],
        [100, false],
        [0, true],
      ]);
    } finally {
      await small.close();
    }
  });

  it('events repeated across pages are yielded once and counted', async () => {
    venues.gamma.state.overlap = 3;
    try {
      const pages: GammaKeysetPage[] = await collect(listGammaEventsKeyset(clients.gamma));
      const ids = pages.flatMap((p) => p.groups.map((g) => g.id));
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(PM_EVENTS);
      expect(pages.reduce((s, p) => s + p.duplicates, 0)).toBe(3 * (pages.length - 1));
    } finally {
      venues.gamma.state.overlap = 0;
    }
  });

  it('enforces the venue’s keyset rules: offset and snake_case order 422, limit clamped to 100, cursor= ignored', async () => {
    const get = (q: string) => fetch(`${venues.gamma.url}/events/keyset?${q}`);
    expect((await get('offset=100')).status).toBe(422);
    expect((await get('order=volume_24hr')).status).toBe(422);
    const big = await (await get('limit=500&order=id&ascending=false')).json();
    expect(big.events).toHaveLength(100);
    const first = await (await get('limit=5&order=id&ascending=false')).json();
    const again = await (await get(`limit=5&order=id&ascending=false&cursor=${first.next_cursor}`)).json();
    expect(again.events.map((e: any) => e.id)).toEqual(first.events.map((e: any) => e.id));
    const legacy = await fetch(`${venues.gamma.url}/events?limit=100&offset=2100`);
    expect(legacy.status).toBe(422);
  });

  it('a group that left the listing is re-read: closed and resolved, or gone (404)', async () => {
    const gen = venues.gamma.state.generated!;
    const id = gen.idOf(5);
    gen.patch(id, (e) => {
      e.closed = true;
      for (const m of e.markets) Object.assign(m, { closed: true, umaResolutionStatus: 'resolved', outcomePrices: '["1", "0"]' });
    });
    const ids = (await collect(listGammaEventsKeyset(clients.gamma))).flatMap((p) => p.ids);
    expect(ids).not.toContain(`pm-${id}`);
    const g = await getGammaCatalogueEvent(clients.gamma, id);
    expect(g).toMatchObject({ id: `pm-${id}`, status: 'resolved' });
    expect(g!.markets.every((m) => m.status === 'resolved' && m.yesPrice === 1)).toBe(true);
    expect(await getGammaCatalogueEvent(clients.gamma, '1')).toBeUndefined();
  });
});

describe('Kalshi catalogue', () => {
  let categories: Map<string, Category>;
  beforeAll(async () => {
    categories = (await getKalshiSeriesCategories(clients.kalshi)).categories;
  });

  it('reads GET /series once, un-paged, into a category map', () => {
    expect(venues.kalshi.requests.filter((r) => r.path === '/series')).toHaveLength(1);
    expect(categories.size).toBe(40);
  });

  it('pages GET /events?status=open by cursor until "", 200 a page, categories from the series', async () => {
    venues.kalshi.reset();
    const pages: KalshiEventsPage[] = await collect(listKalshiEventPages(clients.kalshi, categories, { status: 'open' }));
    expect(pages.map((p) => p.received)).toEqual([200, 200, 50]);
    expect(pages.at(-1)!.final).toBe(true);
    const calls = venues.kalshi.requests;
    expect(Object.fromEntries(calls[0].query)).toEqual({ status: 'open', with_nested_markets: 'true', limit: '200' });
    expect(calls[1].query.get('cursor')).toBe(pages[0].nextCursor);
    const groups = pages.flatMap((p) => p.groups);
    expect(groups).toHaveLength(KS_EVENTS);
    // Every generated event says "Politics" in its deprecated field; the series say otherwise.
    const cats = new Set(groups.map((g) => g.category));
    expect(cats.size).toBeGreaterThan(3);
    // Events of a series missing from /series → OTHER.
    expect(groups.filter((g) => g.seriesTicker === 'KXORPHAN').every((g) => g.category === 'OTHER')).toBe(true);
    // Shared titles: grouped markets are titled by their yes_sub_title.
    const multi = groups.find((g) => g.markets.length > 2)!;
    expect(new Set(multi.markets.map((m) => m.title)).size).toBe(multi.markets.length);
    // Untraded strikes have no price, never 0.
    const all = groups.flatMap((g) => g.markets);
    expect(all.some((m) => m.yesPrice === null)).toBe(true);
  });

  it('events repeated across pages are yielded once and counted', async () => {
    venues.kalshi.state.overlap = 5;
    try {
      const pages = await collect(listKalshiEventPages(clients.kalshi, categories, { status: 'open' }));
      const ids = pages.flatMap((p) => p.groups.map((g) => g.id));
      expect(ids).toHaveLength(KS_EVENTS);
      expect(new Set(ids).size).toBe(KS_EVENTS);
      expect(pages.reduce((s, p) => s + p.duplicates, 0)).toBe(5 * (pages.length - 1));
    } finally {
      venues.kalshi.state.overlap = 0;
    }
  });

  it('an increment with min_updated_ts lists only events changed since the watermark', async () => {
    const gen = venues.kalshi.state.generated!;
    gen.touch(gen.tickerOf(3), NOW + 5);
    gen.touch(gen.tickerOf(400), NOW + 6);
    venues.kalshi.reset();
    const pages = await collect(listKalshiEventPages(clients.kalshi, categories, { minUpdated: new Date(NOW * 1000) }));
    expect(pages.flatMap((p) => p.groups.map((g) => g.venueEventId))).toEqual([gen.tickerOf(3), gen.tickerOf(400)]);
    expect(venues.kalshi.requests[0].query.get('min_updated_ts')).toBe(String(NOW));
    expect(venues.kalshi.requests[0].query.has('status')).toBe(false);
  });

  it('a group that left the listing is re-read with GET /events/{ticker}; 404 → undefined', async () => {
    const gen = venues.kalshi.state.generated!;
    const t = gen.tickerOf(9);
    gen.patch(t, (e) => {
      for (const m of e.markets) Object.assign(m, { status: 'finalized', result: 'no' });
    });
    const g = await getKalshiCatalogueEvent(clients.kalshi, t, categories);
    expect(g).toMatchObject({ id: `ks-${t}`, status: 'resolved' });
    expect(g!.markets.every((m) => m.yesPrice === 0)).toBe(true);
    expect(await getKalshiCatalogueEvent(clients.kalshi, 'KXNOPE-1', categories)).toBeUndefined();
  });

  it('prices tracked markets with GET /markets?tickers=…&limit=n, 100 a call; the venue truncates without limit', async () => {
    const gen = venues.kalshi.state.generated!;
    const tickers: string[] = [];
    for (let i = 0; tickers.length < 150; i++) tickers.push(...gen.event(i).markets.map((m: any) => m.ticker));
    tickers.length = 150;
    venues.kalshi.reset();
    const r = await getKalshiMarketsByTickers(clients.kalshi, [...tickers, 'KXS1-E999999-M0']);
    expect(r.quotes.size).toBe(150);
    expect(r.missing).toEqual(['KXS1-E999999-M0']);
    expect(venues.kalshi.requests.map((q) => q.query.get('limit'))).toEqual(['100', '51']);
    const truncated = await (await fetch(`${venues.kalshi.url}/markets?tickers=${tickers.join(',')}`)).json();
    expect(truncated.markets).toHaveLength(100);
    expect(truncated.cursor).not.toBe('');
  });
});

describe('CLOB batch prices', () => {
  it('reads ≤ 500 tokens a request, asks last trades only for wide or missing books, and agrees with the catalogue', async () => {
    const gen = venues.gamma.state.generated!;
    const markets = [];
    for (let i = 0; markets.length < 1100; i++) markets.push(...mapGammaCatalogueEvent(gen.event(i)).value!.markets);
    const tokens = markets.map((m) => m.tokenId!);
    venues.clob.reset();
    const { quotes } = await readClobPrices(clients.clob, tokens);
    const byPath = (p: string) => venues.clob.requests.filter((r) => r.path === p);
    expect(byPath('/midpoints').map((r) => (r.body as unknown[]).length)).toEqual([500, 500, tokens.length - 1000]);
    for (const r of venues.clob.requests) expect((r.body as unknown[]).length).toBeLessThanOrEqual(500);
    const lastAsked = new Set(byPath('/last-trades-prices').flatMap((r) => (r.body as Array<{ token_id: string }>).map((b) => b.token_id)));
    expect(lastAsked.size).toBeGreaterThan(0);
    expect(lastAsked.size).toBeLessThan(tokens.length);
    for (const m of markets) {
      const q = quotes.get(m.tokenId!)!;
      if (m.status !== 'active') {
        // Resolved and closed tokens have no book: left out of /midpoints.
        expect(q.midpoint).toBeUndefined();
        continue;
      }
      expect(lastAsked.has(m.tokenId!)).toBe(q.midpoint === undefined || q.spread! > 0.1000001);
      // The tracked rule and the catalogue rule give the same price from the same book.
      expect(q.price ?? null).toBe(m.yesPrice);
    }
  });

  it('answers 400 past 500 tokens and to the GET forms', async () => {
    const body = JSON.stringify(Array.from({ length: 501 }, (_, i) => ({ token_id: String(i) })));
    const res = await fetch(`${venues.clob.url}/midpoints`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'Payload exceeds the limit' });
    expect((await fetch(`${venues.clob.url}/midpoints?token_id=1`)).status).toBe(400);
  });

  it('serves about 31 days of history, and none for a resolved market', async () => {
    const token = '12345';
    venues.clob.state.history = { [token]: Array.from({ length: 60 * 24 }, (_, i) => ({ t: NOW - i * 3600, p: 0.5 })) };
    const { points } = await getClobPriceHistory(clients.clob, token);
    expect(points.length).toBeGreaterThan(30 * 24);
    expect(points.length).toBeLessThanOrEqual(31 * 24 + 1);
    venues.clob.state.books = { [token]: { closed: true } };
    expect((await getClobPriceHistory(clients.clob, token)).points).toEqual([]);
    venues.clob.state.history = undefined;
    venues.clob.state.books = undefined;
  });
});

describe('Data API', () => {
  const user = '0x' + 'ab'.repeat(20);

  it('retries the 200 {"error":"Too Many Requests"} throttle body with backoff', async () => {
    data.setUser(user, { positions: [] });
    data.server.reset();
    data.throttleNext(2);
    const r = await fetchPositions(clients.data, user);
    expect(r.rows).toEqual([]);
    expect(data.server.requests).toHaveLength(3);
  });

  it('reads closed positions newest first back to the period start, skipping malformed rows', async () => {
    const closed = Array.from({ length: 130 }, (_, i) => ({
      proxyWallet: user,
      asset: String(1000 + i),
      conditionId: '0x' + String(i).padStart(64, '0'),
      avgPrice: 0.5,
      totalBought: 100,
      // Big wins are old: the default REALIZEDPNL order would read them first.
      realizedPnl: i % 3 === 0 ? -40 : 5 + i,
      curPrice: i % 3 === 0 ? 0 : 1,
      timestamp: NOW - i * 86_400,
      title: `M${i}`,
    }));
    closed[4].realizedPnl = 'abc' as never;
    data.setUser(user, { closed });
    data.server.reset();
    const since = new Date((NOW - 70 * 86_400 - 60) * 1000);
    const r = await fetchClosedPositionsNewestFirst(clients.data, user, { since });
    expect(r.complete).toBe(true);
    expect(r.skipped).toBe(1);
    expect(r.rows).toHaveLength(70);
    expect(r.rows.some((x) => x.realizedPnl < 0)).toBe(true);
    expect(r.rows.every((x) => x.timestamp * 1000 >= since.getTime())).toBe(true);
    const calls = data.server.requests.map((q) => Object.fromEntries(q.query));
    expect(calls).toHaveLength(2);
    expect(calls[1]).toMatchObject({ sortBy: 'TIMESTAMP', sortDirection: 'DESC', limit: '50', offset: '50' });
  });
});

describe('budgets, throttles and User-Agent', () => {
  it('Kalshi answers 429 without Retry-After past its budget; our limiter keeps every request within r × w + r', async () => {
    const k = await startFakeVenues({}, { generate: { kalshi: { events: 10, markets: 20 } }, budgets: { kalshi: 20 } });
    try {
      const raw = await Promise.all(Array.from({ length: 60 }, () => fetch(`${k.kalshi.url}/series`)));
      const throttled = raw.filter((r) => r.status === 429);
      expect(throttled.length).toBeGreaterThan(0);
      expect(throttled[0].headers.get('retry-after')).toBeNull();
      expect(await throttled[0].json()).toEqual({ error: 'too many requests' });
      // A fresh budget for the second half: the raw burst above is forgotten.
      k.kalshi.reset();
      enforceBudget(k.kalshi, 20, 'kalshi-429');
      const c = createVenueClients({ ...k.env, POLYMARKET_DATA_API_URL: data.url } as never, { budgets: { kalshi: 20 }, attempts: 1 });
      const res = await Promise.all(Array.from({ length: 60 }, () => getKalshiSeriesCategories(c.kalshi)));
      expect(res).toHaveLength(60);
      expect(budgetViolations(arrivalTimes(k.kalshi), 20)).toEqual([]);
    } finally {
      await k.close();
    }
  });

  it('the Data API throttles past its budget with a 200 body; the shared client stays within it and every read succeeds', async () => {
    data.setBudget(10);
    try {
      data.server.reset();
      const c = createVenueClients({ ...venues.env, POLYMARKET_DATA_API_URL: data.url } as never, { budgets: { data: 10 }, backoffMs: 50 });
      const user = '0x' + 'cd'.repeat(20);
      const all = await Promise.all(Array.from({ length: 30 }, () => fetchPositions(c.data, user)));
      expect(all.every((r) => Array.isArray(r.rows))).toBe(true);
      expect(budgetViolations(arrivalTimes(data.server), 10)).toEqual([]);
      // Without the limiter the same burst meets the throttle body.
      data.server.reset();
      await new Promise((r) => setTimeout(r, 1000));
      const bodies = await Promise.all(
        Array.from({ length: 30 }, () => requestJson(`${data.url}/positions?user=${user}`, { attempts: 1 })),
      );
      expect(bodies.filter((b) => !Array.isArray(b))).toContainEqual({ error: 'Too Many Requests' });
    } finally {
      data.setBudget(undefined);
    }
  });

  it('the Data API budget is 4 req/s in all: one limiter, its grants within 4 × w + 4 and no slower', async () => {
    // A virtual clock: the limiter's waits advance it, so the grant times are exact.
    let now = 0;
    const c = createVenueClients({ ...venues.env, POLYMARKET_DATA_API_URL: data.url } as never, {
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    });
    const times: number[] = [];
    for (let i = 0; i < 200; i++) {
      await c.data.limiter.acquire();
      times.push(now);
    }
    expect(budgetViolations(times, 4)).toEqual([]);
    // 200 grants take 50 s at 4 req/s (25 s more at 8, 100 s at 2).
    expect(Math.round(times.at(-1)! / 1000)).toBe(50);
    expect(c.data.http.limiter).toBe(c.data.limiter);
  });

  it('every venue request names us in User-Agent', async () => {
    for (const f of [venues.gamma, venues.kalshi, venues.clob, data.server]) f.reset();
    await getGammaCatalogueEvent(clients.gamma, venues.gamma.state.generated!.idOf(1));
    await getKalshiSeriesCategories(clients.kalshi);
    await readClobPrices(clients.clob, ['123']);
    await fetchPositions(clients.data, '0x' + 'ef'.repeat(20));
    const all = [...venues.gamma.requests, ...venues.kalshi.requests, ...venues.clob.requests, ...data.server.requests];
    expect(all.length).toBeGreaterThanOrEqual(5);
    for (const r of all) expect(r.headers['user-agent']).toMatch(/^predict-backend\/\d+\.\d+\.\d+/);
  });
});

describe('the real sizes on demand', () => {
  it('generates 22,000 / 80,000 Polymarket and 12,000 / 110,000 Kalshi, exactly and deterministically', () => {
    const pm = generatePolymarket({ events: 22_000, markets: 80_000, seed: 3, nowSec: NOW });
    const ks = generateKalshi({ events: 12_000, markets: 110_000, series: 9_000, seed: 3, nowSec: NOW });
    let pmMarkets = 0;
    for (let i = 0; i < pm.count; i++) pmMarkets += pm.event(i).markets.length;
    expect(pmMarkets).toBe(80_000);
    let ksMarkets = 0;
    for (let i = 0; i < ks.count; i++) ksMarkets += ks.event(i).markets.length;
    expect(ksMarkets).toBe(110_000);
    expect(JSON.stringify(pm.event(12_345))).toBe(
      JSON.stringify(generatePolymarket({ events: 22_000, markets: 80_000, seed: 3, nowSec: NOW }).event(12_345)),
    );
    const last = pm.event(pm.count - 1).markets.at(-1);
    expect(pm.tokenOwner(JSON.parse(last.clobTokenIds)[0])).toMatchObject({ event: pm.count - 1, market: 79_999, side: 0 });
  });
});
