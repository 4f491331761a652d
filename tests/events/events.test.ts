import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { loadSampleData, startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

let venues: FakeVenues;
let t: TestApp;
const published: Array<{ channel: string; event: string; payload: any }> = [];

beforeAll(async () => {
  venues = await startFakeVenues(loadSampleData());
  t = await buildTestApp({ ...venues.env, INTERNAL_API_TOKEN: 'internal-token-0123456789' });
  t.app.bus.on('publish', (m) => published.push(m));
  const outcome = await t.app.jobs.run('events-sync');
  expect(outcome).toMatchObject({ name: 'events-sync', ok: true });
  // Every sample group is among the PRICE_TRACK_TOP: the first price cycle tracks and backfills them.
  expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

const get = (url: string) => t.app.inject({ method: 'GET', url });
const gammaEvent = (id: string) => venues.gamma.state.events.find((e) => e.id === id);
const kalshiEvent = (ticker: string) => venues.kalshi.state.events.find((e) => e.event_ticker === ticker);

describe('events-sync ingestion', () => {
  it('lists every group of both venues, by total volume then id, with summary fields only', async () => {
    const res = await get('/api/v1/events?limit=100');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.total).toBe(11);
    expect(body.events).toHaveLength(11);
    for (const e of body.events) {
      expect(Object.keys(e).sort()).toEqual([
        'category',
        'change24h',
        'createdAt',
        'endDate',
        'id',
        'imageUrl',
        'marketCount',
        'slug',
        'status',
        'title',
        'totalVolume',
        'venue',
        'volume24h',
      ]);
      expect(e.imageUrl).toMatch(/^(https:\/\/|data:image\/svg\+xml,)/);
      expect(e.category).toBe(e.category.toUpperCase());
    }
    const vols = body.events.map((e: any) => e.totalVolume);
    expect(vols).toEqual([...vols].sort((a, b) => b - a));
  });

  it('maps a Polymarket group and its markets field by field', async () => {
    const list = (await get('/api/v1/events?limit=100')).json().events;
    const summary = list.find((e: any) => e.slug === 'fed-decision-in-december');
    expect(summary).toEqual({
      id: 'pm-16085',
      slug: 'fed-decision-in-december',
      title: 'Fed decision in December?',
      category: 'ECONOMICS',
      marketCount: 3,
      totalVolume: 1834211.55 + 4102334.1 + 2990871.4,
      status: 'active',
      imageUrl: 'https://polymarket-upload.s3.us-east-2.amazonaws.com/fed-decision-in-december.png',
      venue: 'polymarket',
      volume24h: expect.closeTo(91710.58 + 205116.71 + 149543.57, 6),
      // docs/decisions.md §16.2: the earliest future market `endDate`; the event's `createdAt`.
      endDate: '2026-12-31T23:59:59.000Z',
      createdAt: '2025-09-20T12:00:00.000Z',
      // Tracked (top 500) with a backfilled history: ours or the venue's, the largest |change| (tests/events/finding.test.ts).
      change24h: expect.any(Number),
    });
    const detail = (await get('/api/v1/events/fed-decision-in-december')).json();
    const fresh = {
      outcome: 'Yes',
      status: 'active',
      priceUpdatedAt: expect.any(String),
      endDate: '2026-12-31T23:59:59.000Z',
      change24h: expect.any(Number),
    };
    expect(detail).toEqual({
      syncedAt: expect.any(String),
      stale: false,
      id: 'pm-16085',
      slug: 'fed-decision-in-december',
      title: 'Fed decision in December?',
      category: 'ECONOMICS',
      totalVolume: summary.totalVolume,
      status: 'active',
      description: gammaEvent('16085').description,
      markets: [
        // docs/venues.md "Titles": groupItemTitle in a multi-market event; the midpoint of a tight book.
        { id: 'pm-516711', title: '25 bps decrease', yesPrice: 0.615, volume: 4102334.1, volume24h: 205116.71, ...fresh },
        { id: 'pm-516712', title: 'No change', yesPrice: 0.335, volume: 2990871.4, volume24h: 149543.57, ...fresh },
        { id: 'pm-516710', title: '50+ bps decrease', yesPrice: 0.045, volume: 1834211.55, volume24h: 91710.58, ...fresh },
      ],
    });
    expect(detail).not.toHaveProperty('marketCount');
    expect(detail).not.toHaveProperty('imageUrl');
  });

  it('maps a Kalshi group: yes_sub_title titles, midpoint rule, -kalshi suffix on a slug collision', async () => {
    const pm = (await get('/api/v1/events/kxfedchair-27')).json();
    expect(pm.id).toBe('pm-60777');
    const ks = (await get('/api/v1/events/kxfedchair-27-kalshi')).json();
    const fresh = {
      outcome: 'Yes',
      status: 'active',
      priceUpdatedAt: expect.any(String),
      endDate: '2029-07-01T14:00:00.000Z',
      change24h: expect.any(Number),
      volume24h: 28,
    };
    expect(ks).toEqual({
      syncedAt: expect.any(String),
      stale: false,
      id: 'ks-KXFEDCHAIR-27',
      slug: 'kxfedchair-27-kalshi',
      title: 'Who will be the next Fed chair?',
      category: 'POLITICS',
      totalVolume: 151200 + 120450 + 30010,
      status: 'active',
      description: 'Nominee confirmed by 2027',
      markets: [
        { id: 'ks-KXFEDCHAIR-27-KH', title: 'Kevin Hassett', yesPrice: 0.415, volume: 151200, ...fresh },
        { id: 'ks-KXFEDCHAIR-27-KW', title: 'Kevin Warsh', yesPrice: 0.345, volume: 120450, ...fresh },
        // bid "0.0000" / ask "1.0000" is no quote: the last trade.
        { id: 'ks-KXFEDCHAIR-27-CW', title: 'Christopher Waller', yesPrice: 0.08, volume: 30010, ...fresh },
      ],
    });
    const noCollision = (await get('/api/v1/events/kxbalance-29')).json();
    expect(noCollision.id).toBe('ks-KXBALANCE-29');
  });

  it('gives groups without a venue image the documented placeholder URL', async () => {
    const list = (await get('/api/v1/events?limit=100')).json().events;
    const ks = list.find((e: any) => e.id === 'ks-KXBALANCE-29');
    const noImage = list.find((e: any) => e.id === 'pm-41200');
    expect(ks.imageUrl).toMatch(/^data:image\/svg\+xml,/);
    expect(noImage.imageUrl).toBe(ks.imageUrl);
    // Kalshi categories come from GET /series (docs/venues.md "Categories").
    expect(ks.category).toBe('POLITICS');
    expect(list.find((e: any) => e.id === 'ks-KXHIGHNY-26DEC31').category).toBe('WEATHER');
  });

  it('backfills the price history of newly tracked markets from the CLOB (20 tokens per batch) and Kalshi candlesticks', async () => {
    // docs/venues.md "What we call": POST /batch-prices-history, ≤ 20 tokens, in place of one GET per market.
    const batches = venues.clob.requests.filter((r) => r.path === '/batch-prices-history');
    expect(batches.length).toBeGreaterThan(0);
    for (const c of batches) {
      expect(c.method).toBe('POST');
      expect(c.body).toMatchObject({ interval: 'max', fidelity: 60 });
      expect((c.body as { markets: string[] }).markets.length).toBeLessThanOrEqual(20);
    }
    const asked = batches.flatMap((c) => (c.body as { markets: string[] }).markets);
    expect(asked).toContain('5167117798525993704530879381657991663859057218');
    expect(venues.clob.requests.filter((r) => r.path === '/prices-history').length).toBeLessThanOrEqual(1);
    const candleCalls = venues.kalshi.requests.filter((r) => r.path.endsWith('/candlesticks'));
    expect(candleCalls.map((c) => c.path)).toContain('/series/KXFEDCHAIR/markets/KXFEDCHAIR-27-KH/candlesticks');
    for (const c of candleCalls) {
      expect(c.query.get('period_interval')).toBe('60');
      expect(Number(c.query.get('end_ts'))).toBeGreaterThan(Number(c.query.get('start_ts')));
    }
    const [row] = await t.db.rows<{ n: number }>(sql`select count(*)::int as n from markets where history_backfilled_at is null`);
    expect(Number(row.n)).toBe(0);
    const chart = (await get('/api/v1/events/kxfedchair-27-kalshi/chart?range=1W&markets=1')).json();
    expect(chart.outcomes[0].dataPoints.length).toBeGreaterThan(24);
  });

  it('calls the listing endpoints with exactly the parameters of docs/venues.md', () => {
    expect(venues.gamma.requests.some((r) => r.path === '/events')).toBe(false);
    const g = venues.gamma.requests.find((r) => r.path === '/events/keyset')!;
    expect(Object.fromEntries(g.query)).toEqual({ closed: 'false', order: 'id', ascending: 'false', limit: '100' });
    const k = venues.kalshi.requests.find((r) => r.path === '/events')!;
    expect(Object.fromEntries(k.query)).toEqual({ status: 'open', with_nested_markets: 'true', limit: '200' });
    expect(venues.kalshi.requests.filter((r) => r.path === '/series')).toHaveLength(1);
  });
});

describe('GET /api/v1/events filters and paging', () => {
  it('filters by category in any case, and by status', async () => {
    for (const c of ['politics', 'POLITICS', 'PoLiTiCs']) {
      const body = (await get(`/api/v1/events?category=${c}`)).json();
      expect(body.total).toBe(4);
      expect(body.events.every((e: any) => e.category === 'POLITICS')).toBe(true);
    }
    expect((await get('/api/v1/events?category=weather')).json().total).toBe(1);
    expect((await get('/api/v1/events?status=active')).json().total).toBe(11);
    expect((await get('/api/v1/events?status=resolved')).json()).toMatchObject({ events: [], total: 0 });
    expect((await get('/api/v1/events?category=nothing-here')).json()).toMatchObject({ events: [], total: 0 });
  });

  it('pages cover every group exactly once', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 20; offset += 3) {
      const body = (await get(`/api/v1/events?limit=3&offset=${offset}`)).json();
      expect(body.total).toBe(11);
      seen.push(...body.events.map((e: any) => e.id));
    }
    expect(seen).toHaveLength(11);
    expect(new Set(seen).size).toBe(11);
  });

  it('rejects bad query values with 400 VALIDATION_ERROR', async () => {
    for (const q of ['limit=101', 'limit=0', 'limit=abc', 'offset=-1', 'status=open', 'category=' + 'x'.repeat(65)]) {
      expectProblem(await get(`/api/v1/events?${q}`), 400, 'VALIDATION_ERROR');
    }
    expect((await get('/api/v1/events?limit=100')).statusCode).toBe(200);
  });

  it('answers 404 NOT_FOUND problem+json for an unknown slug, on detail and chart', async () => {
    expectProblem(await get('/api/v1/events/no-such-event'), 404, 'NOT_FOUND');
    expectProblem(await get('/api/v1/events/no-such-event/chart'), 404, 'NOT_FOUND');
  });

  it('needs no token', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/events', headers: { authorization: 'Bearer nonsense' } });
    expect(res.statusCode).toBe(200);
  });
});

describe('GET /api/v1/events/:slug/chart', () => {
  it('draws the top markets by volume, ≤ 300 points each, in time order within the range', async () => {
    for (const range of ['1D', '1W', '1M', 'ALL']) {
      const res = await get(`/api/v1/events/nba-champion-2027/chart?range=${range}&markets=3`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.outcomes.map((o: any) => o.marketId)).toEqual(['pm-702101', 'pm-702102', 'pm-702103']);
      for (const o of body.outcomes) {
        expect(Object.keys(o).sort()).toEqual(['dataPoints', 'marketId', 'title']);
        expect(o.dataPoints.length).toBeGreaterThan(0);
        expect(o.dataPoints.length).toBeLessThanOrEqual(300);
        const ts = o.dataPoints.map((p: any) => Date.parse(p.timestamp));
        expect(ts.every((x: number) => Number.isFinite(x))).toBe(true);
        expect(ts).toEqual([...ts].sort((a, b) => a - b));
        for (const p of o.dataPoints) expect(p.price).toBeGreaterThanOrEqual(0);
        if (range === '1D') expect(ts[0]).toBeGreaterThanOrEqual(Date.now() - 86_400_000 - 60_000);
      }
    }
  });

  it('defaults to 1W and 5 lines; bounds markets to 1..10 and range to its enum', async () => {
    const body = (await get('/api/v1/events/nba-champion-2027/chart')).json();
    expect(body.outcomes).toHaveLength(4);
    expect((await get('/api/v1/events/nba-champion-2027/chart?markets=1')).json().outcomes).toHaveLength(1);
    for (const q of ['markets=0', 'markets=11', 'range=2D', 'range=1w']) {
      expectProblem(await get(`/api/v1/events/nba-champion-2027/chart?${q}`), 400, 'VALIDATION_ERROR');
    }
  });

  it('downsamples a dense history to at most 300 points', async () => {
    const now = Date.now();
    const rows = Array.from({ length: 1440 }, (_, i) => ({ t: new Date(now - i * 60_000).toISOString(), p: (i % 100) / 100 }));
    await t.db.rows(
      sql`insert into price_history (market_id, ts, price)
          select 'pm-905001', t, p from json_to_recordset(${JSON.stringify(rows)}::json) as x(t timestamptz, p float8)
          on conflict do nothing`,
    );
    const body = (await get('/api/v1/events/which-party-wins-the-house-2026/chart?range=1D&markets=1')).json();
    const pts = body.outcomes[0].dataPoints;
    expect(pts.length).toBeGreaterThan(250);
    expect(pts.length).toBeLessThanOrEqual(300);
  });
});

describe('price-sync', () => {
  it('makes a venue price change visible, publishes market:update and runs the alert check on the changes', async () => {
    const user = await createUser(t.app);
    const alert = (marketId: string, targetPrice: number, condition: 'above' | 'below') =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/alerts',
        headers: user.auth,
        payload: { marketId, targetPrice, condition, side: 'yes' },
      });
    // Two the new prices cross, one whose condition already holds on a market that does not move.
    for (const [m, p, c] of [
      ['pm-702101', 0.3, 'above'],
      ['ks-KXBALANCE-29', 0.25, 'below'],
      ['pm-601001', 0.01, 'above'],
    ] as const)
      expect((await alert(m, p, c)).statusCode).toBe(201);
    // The CLOB fake's book follows the Gamma market's bestBid/bestAsk: the midpoint moves to 0.31.
    const e = gammaEvent('30112');
    Object.assign(e.markets[0], { bestBid: 0.305, bestAsk: 0.315 });
    const k = kalshiEvent('KXBALANCE-29');
    k.markets[0].yes_bid_dollars = '0.2000';
    k.markets[0].yes_ask_dollars = '0.2200';
    published.length = 0;
    const outcome = await t.app.jobs.run('price-sync');
    // Every tracked market was read (16 Polymarket, 8 Kalshi).
    expect(outcome).toMatchObject({ ok: true, items: 24 });

    const detail = (await get('/api/v1/events/nba-champion-2027')).json();
    expect(detail.markets.find((m: any) => m.id === 'pm-702101').yesPrice).toBe(0.31);
    expect((await get('/api/v1/events/kxbalance-29')).json().markets[0].yesPrice).toBe(0.21);

    const updates = published.filter((p) => p.event === 'market:update');
    expect(updates.map((u) => u.channel).sort()).toEqual(['market:ks-KXBALANCE-29', 'market:pm-702101']);
    const u = updates.find((x) => x.channel === 'market:pm-702101')!;
    expect(u.payload).toEqual({ marketId: 'pm-702101', yesPrice: 0.31, volume: 5123000, timestamp: expect.any(String) });
    expect(new Date(u.payload.timestamp).toISOString()).toBe(u.payload.timestamp);
    const alerts = (await t.app.inject({ method: 'GET', url: '/api/v1/alerts', headers: user.auth })).json().alerts;
    const fired = alerts.filter((a: any) => a.triggeredAt !== null).map((a: any) => [a.marketId, a.triggeredPrice]);
    expect(fired.sort()).toEqual([
      ['ks-KXBALANCE-29', 0.21],
      ['pm-702101', 0.31],
    ]);
    expect(published.filter((p) => p.event === 'notification')).toHaveLength(2);

    const [h] = await t.db.rows<{ price: number }>(
      sql`select price from price_history where market_id = 'pm-702101' order by ts desc limit 1`,
    );
    expect(Number(h.price)).toBe(0.31);
  });

  it('publishes nothing when no price changed', async () => {
    published.length = 0;
    const outcome = await t.app.jobs.run('price-sync');
    expect(outcome).toMatchObject({ ok: true, items: 24 });
    expect(published.filter((p) => p.event === 'market:update')).toHaveLength(0);
  });

  it('the catalogue refreshes volumes and the group total', async () => {
    const e = gammaEvent('45501');
    e.markets[0].volumeNum = 100000;
    await t.app.jobs.run('events-sync');
    const s = (await get('/api/v1/events?category=crypto')).json().events.find((x: any) => x.id === 'pm-45501');
    expect(s.totalVolume).toBe(100000);
  });

  it('signals the events read cache after it writes, and the cache drops at once', async () => {
    const topics: string[] = [];
    const onSignal = (topic: string) => topics.push(topic);
    t.app.signals.on('dataChanged', onSignal);
    try {
      expect((await t.app.jobs.run('price-sync')).ok).toBe(true);
    } finally {
      t.app.signals.off('dataChanged', onSignal);
    }
    expect(topics.length).toBeGreaterThan(0);
    expect(new Set(topics)).toEqual(new Set(['events']));
    // The listening side: a cached body is gone as soon as the signal comes (the TTL is 5 s).
    const url = '/api/v1/events/nba-champion-2027';
    const title = (await get(url)).json().title;
    const rename = async (to: string) => {
      await t.db.rows(sql`update event_groups set title = ${to} where slug = 'nba-champion-2027'`);
      t.app.signals.emit('dataChanged', 'events');
    };
    await rename('Renamed in place');
    expect((await get(url)).json().title).toBe('Renamed in place');
    await rename(title);
    expect((await get(url)).json().title).toBe(title);
  });
});

describe('venue outages and malformed rows', () => {
  it('a venue answering 500 fails the run, records it, and keeps serving the last good data', async () => {
    const before = (await get('/api/v1/events?limit=100')).json();
    expect(before.stale).toBe(false);
    Object.assign(gammaEvent('30112').markets[0], { bestBid: 0.495, bestAsk: 0.505 });
    venues.gamma.down(true, 500);
    venues.clob.down(true, 500);
    venues.kalshi.down(true, 502);
    try {
      const outcome = await t.app.jobs.run('price-sync');
      expect(outcome.ok).toBe(false);
      expect(outcome.error).toMatch(/polymarket.*kalshi/);
      const events = await t.app.jobs.run('events-sync');
      expect(events.ok).toBe(false);
    } finally {
      venues.gamma.down(false);
      venues.clob.down(false);
      venues.kalshi.down(false);
    }
    // docs/decisions.md §11.4: the last good data, marked stale, with its own syncedAt.
    const after = (await get('/api/v1/events?limit=100')).json();
    expect(after).toEqual({ ...before, stale: true });
    const res = await get('/api/v1/events/nba-champion-2027');
    expect(res.json().markets[0].yesPrice).toBe(0.31);
    expect(res.json().stale).toBe(true);
    expect(res.headers['last-modified']).toBe(new Date(Math.floor(Date.parse(res.json().syncedAt) / 1000) * 1000).toUTCString());
    const runs = await t.app.inject({
      method: 'GET',
      url: '/api/v1/internal/jobs',
      headers: { authorization: 'Bearer internal-token-0123456789' },
    });
    const last = runs.json().jobs.find((j: any) => j.name === 'events-sync');
    expect(last).toMatchObject({ ok: false, error: expect.stringMatching(/venue catalogue failed/) });
    Object.assign(gammaEvent('30112').markets[0], { bestBid: 0.305, bestAsk: 0.315 });
    expect((await t.app.jobs.run('events-sync')).ok).toBe(true);
    expect((await t.app.jobs.run('price-sync')).ok).toBe(true);
    expect((await get('/api/v1/events?limit=100')).json().stale).toBe(false);
  });

  it('one venue down does not stop the other from updating', async () => {
    kalshiEvent('KXBALANCE-29').markets[0].yes_ask_dollars = '0.2400';
    venues.clob.down(true, 503);
    try {
      const outcome = await t.app.jobs.run('price-sync');
      expect(outcome.ok).toBe(false);
    } finally {
      venues.clob.down(false);
    }
    expect((await get('/api/v1/events/kxbalance-29')).json().markets[0].yesPrice).toBe(0.22);
    expect((await get('/api/v1/events?limit=100')).json().total).toBe(11);
  });

  it('malformed rows are skipped and counted: the job succeeds and their previous data stays', async () => {
    const e = gammaEvent('23246');
    const good = e.markets[0];
    e.markets[0] = { ...good, outcomePrices: 'not json' };
    const k = kalshiEvent('KXBTCY-26');
    const savedTitle = k.title;
    k.title = 12345; // malformed event row: its ticker is still on the open list
    venues.gamma.state.events.push({ id: 'oops', title: null });
    try {
      const outcome = await t.app.jobs.run('events-sync');
      expect(outcome.ok).toBe(true);
      const p = await t.app.jobs.run('price-sync');
      expect(p.ok).toBe(true);
    } finally {
      e.markets[0] = good;
      k.title = savedTitle;
      venues.gamma.state.events.pop();
    }
    const detail = (await get('/api/v1/events/bitcoin-above-on-december-31')).json();
    expect(detail.markets.find((m: any) => m.id === 'pm-601001').yesPrice).toBe(0.72);
    const btc = (await get('/api/v1/events/kxbtcy-26')).json();
    expect(btc.status).toBe('active');
    expect(btc.markets).toHaveLength(2);
  });
});

describe('groups that leave the open list', () => {
  it('re-reads a Polymarket group by id and takes its resolved status; a 404 closes it', async () => {
    const fed = gammaEvent('16085');
    fed.closed = true;
    for (const m of fed.markets) {
      m.closed = true;
      m.umaResolutionStatus = 'resolved';
    }
    fed.markets[1].outcomePrices = '["1", "0"]';
    fed.markets[0].outcomePrices = '["0", "1"]';
    fed.markets[2].outcomePrices = '["0", "1"]';
    const idx = venues.gamma.state.events.findIndex((x) => x.id === '45501');
    const [eth] = venues.gamma.state.events.splice(idx, 1);
    venues.gamma.reset();
    try {
      const outcome = await t.app.jobs.run('events-sync');
      expect(outcome.ok).toBe(true);
      expect(venues.gamma.requests.map((r) => r.path)).toEqual(expect.arrayContaining(['/events/16085', '/events/45501']));
      const detail = (await get('/api/v1/events/fed-decision-in-december')).json();
      expect(detail.status).toBe('resolved');
      expect(detail.markets.find((m: any) => m.id === 'pm-516711').yesPrice).toBe(1);
      expect((await get('/api/v1/events/ethereum-up-or-down-this-week')).json().status).toBe('closed');
      expect((await get('/api/v1/events?status=resolved')).json().events.map((x: any) => x.id)).toEqual(['pm-16085']);
    } finally {
      venues.gamma.state.events.splice(idx, 0, eth);
    }
  });

  it('closes a Kalshi group that left the open list, and reopens it when it comes back', async () => {
    const highny = kalshiEvent('KXHIGHNY-26DEC31');
    for (const m of highny.markets) m.status = 'closed';
    await t.app.jobs.run('events-sync');
    expect((await get('/api/v1/events/kxhighny-26dec31')).json().status).toBe('closed');
    expect((await get('/api/v1/events?status=closed')).json().events.map((x: any) => x.id)).toContain('ks-KXHIGHNY-26DEC31');
    for (const m of highny.markets) m.status = 'active';
    await t.app.jobs.run('events-sync');
    expect((await get('/api/v1/events/kxhighny-26dec31')).json().status).toBe('active');
  });
});

describe('concurrent jobs', () => {
  it('events-sync and price-sync running at once both succeed and agree', async () => {
    const e = gammaEvent('52010');
    Object.assign(e.markets[0], { bestBid: 0.695, bestAsk: 0.705 });
    // A second run of events-sync on this instance while the first runs is 409 JOB_RUNNING (docs/decisions.md §9).
    const [events, prices, again] = await Promise.allSettled([
      t.app.jobs.run('events-sync'),
      t.app.jobs.run('price-sync'),
      t.app.jobs.run('events-sync'),
    ]);
    for (const r of [events, prices]) expect(r.status === 'fulfilled' && r.value.ok).toBe(true);
    expect(again.status === 'rejected' && (again.reason as { code?: string }).code).toBe('JOB_RUNNING');
    const detail = (await get('/api/v1/events/which-party-wins-the-house-2026')).json();
    expect(detail.markets.find((m: any) => m.id === 'pm-905001').yesPrice).toBe(0.7);
  });
});

describe('venue image URLs (issue #34)', () => {
  it('stores only well-formed https images, normalised; anything else is none (the placeholder)', async () => {
    // An open group: a closed one is not read again by the catalogue (earlier tests close some).
    const a = venues.gamma.state.events.find((e) => e.closed !== true && e.active !== false)!;
    const saved = { image: a.image, icon: a.icon };
    // What GET /events answers comes from here (read directly: list responses are cached for a while).
    const stored = async () =>
      (await t.db.rows<{ image_url: string | null }>(sql`select image_url from event_groups where id = ${`pm-${a.id}`}`))[0].image_url;
    try {
      const cases: Array<[string, string, string | null]> = [
        ['https://x" onerror=alert(1)', 'javascript:alert(1)', null],
        ['https://img.example/a.png" onerror="alert(1)', '', 'https://img.example/a.png%22%20onerror=%22alert(1)'],
        ['http://img.example/a.png', 'https://IMG.example/icon.png', 'https://img.example/icon.png'],
      ];
      for (const [image, icon, expected] of cases) {
        Object.assign(a, { image, icon });
        expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
        expect(await stored()).toBe(expected);
      }
    } finally {
      Object.assign(a, saved);
      await t.app.jobs.run('events-sync');
    }
  });
});
