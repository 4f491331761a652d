import { freePort } from '../support/net.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket, generateGammaEvents, sdkShapes } from '../fakes/venues/gamma.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';
import { kalshiEvent, kalshiMarket } from '../fakes/venues/kalshi.js';

/**
 * Parsing like the venues' SDKs (docs/venues.md "What we call"): numbers as
 * JSON numbers or decimal strings, Gamma `positionIds` read only for
 * `version: "v2"` markets (an array or a JSON-encoded string), keyset
 * `next_cursor: ""` as the end and `events: null` as an empty page; a row that
 * still fails is skipped, counted, and the count is the run's `skipped`
 * (docs/decisions.md §9): a degraded run in the job views and in metrics.
 */
const TOKEN = 'internal-token-internal-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const V2_YES = '5'.repeat(76) + '1';
const V2_NO = '5'.repeat(76) + '2';
const V2B_YES = '6'.repeat(76) + '1';
const wallet = (n: number) => `0x${String(n).padStart(40, 'a')}`;

/** One sample of a Prometheus exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

let venues: FakeVenues;
let data: FakeDataApi;
let t: TestApp;
let metricsPort: number;

beforeAll(async () => {
  venues = await startFakeVenues({
    gamma: [
      // 195 plain events and the 5 below fill exactly two keyset pages: the third is empty.
      ...generateGammaEvents(195, 1),
      gammaEvent('700001', 'sdk-strings', 'Numbers as strings', [sdkShapes(gammaMarket('7000011', 'Strings?', 0.42, 1234))]),
      gammaEvent('700002', 'v2-json-string', 'Protocol V2, JSON string', [
        gammaMarket('7000021', 'V2 string?', 0.3, 50, {
          version: 'v2',
          positionIds: JSON.stringify([V2_YES, V2_NO]),
          clobTokenIds: '["1111", "2222"]',
        }),
      ]),
      gammaEvent('700003', 'v2-array', 'Protocol V2, array', [
        gammaMarket('7000031', 'V2 array?', 0.6, 50, { version: 'v2', positionIds: [V2B_YES, '62'], clobTokenIds: 'not json' }),
      ]),
      gammaEvent('700004', 'one-bad-market', 'One market of two is malformed', [
        gammaMarket('7000041', 'Good', 0.5, 10, { groupItemTitle: 'Good' }),
        gammaMarket('7000042', 'Bad', 0.5, 10, { groupItemTitle: 'Bad', bestBid: 'abc' }),
      ]),
      { ...gammaEvent('700005', 'bad-event', 'x', []), title: 42 },
    ],
    kalshi: [
      kalshiEvent('KXGRP-1', 'KXGRP', 'A Kalshi group', 'Sports', [kalshiMarket('KXGRP-1-A', 'KXGRP-1', 'A', 0.4, 0.42, 0.41, 100)]),
    ],
  });
  // The shapes of some SDK fixtures: an empty cursor ends the listing, an empty page is `null`.
  venues.gamma.state.emptyCursorAtEnd = true;
  venues.gamma.state.nullWhenEmpty = true;
  data = await startFakeDataApi();
  metricsPort = await freePort();
  t = await buildTestApp(
    { ...venues.env, POLYMARKET_DATA_API_URL: data.url, INTERNAL_API_TOKEN: TOKEN, METRICS_PORT: String(metricsPort) },
    { venueClients: FAST_VENUES },
  );
  // The metrics listener opens with the app's own.
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  await t.app.metrics!.listening();
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
  await data?.close();
});

const get = (url: string) => t.app.inject({ method: 'GET', url });
const runNow = async (name: string) => (await t.app.inject({ method: 'POST', url: `/api/v1/internal/jobs/${name}`, headers: auth })).json();
const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

describe('Gamma catalogue parsed like the SDKs', () => {
  let outcome: any;
  beforeAll(async () => {
    outcome = await runNow('events-sync');
  });

  it('an empty next_cursor ends the keyset listing and events: null is an empty page; the pass succeeds', async () => {
    expect(outcome).toMatchObject({ name: 'events-sync', ok: true });
    const keyset = venues.gamma.requests.filter((r) => r.path === '/events/keyset');
    expect(keyset).toHaveLength(3);
    // Every event but the malformed one is listed (and the one Kalshi group).
    expect((await get('/api/v1/events?limit=1')).json().total).toBe(200);
  });

  it('reads bestBid/bestAsk/lastTradePrice/volumeNum sent as decimal strings, and ignores positionIds on a V1 market', async () => {
    const detail = (await get('/api/v1/events/sdk-strings')).json();
    expect(detail.markets).toHaveLength(1);
    expect(detail.markets[0]).toMatchObject({ yesPrice: 0.42, volume: 1234, status: 'active' });
  });

  it('takes a V2 market’s tokens from positionIds, as a JSON-encoded string or an array, never from clobTokenIds', async () => {
    for (const slug of ['v2-json-string', 'v2-array']) expect((await get(`/api/v1/events/${slug}`)).json().markets).toHaveLength(1);
    // Reading the details tracked them: the next price cycle asks the CLOB for their positionIds tokens.
    venues.clob.reset();
    expect(await runNow('price-sync')).toMatchObject({ ok: true });
    const asked = venues.clob.requests.filter((r) => r.path === '/midpoints').flatMap((r) => (r.body as any[]).map((b) => b.token_id));
    expect(asked).toEqual(expect.arrayContaining([V2_YES, V2B_YES]));
    expect(asked).not.toContain('1111');
    const [a, b] = await Promise.all(['v2-json-string', 'v2-array'].map(async (s) => (await get(`/api/v1/events/${s}`)).json()));
    expect(a.markets[0].yesPrice).toBe(0.3);
    expect(b.markets[0].yesPrice).toBe(0.6);
  });

  it('a market or event that still fails is skipped and counted: the run is ok with skipped, degraded in the job views and metrics', async () => {
    // One malformed market (bestBid "abc") and one malformed event (a numeric title).
    expect(outcome.skipped).toBe(2);
    const detail = (await get('/api/v1/events/one-bad-market')).json();
    expect(detail.markets.map((m: any) => m.title)).toEqual(['Good']);
    const jobs = (await t.app.inject({ method: 'GET', url: '/api/v1/internal/jobs', headers: auth })).json().jobs;
    expect(jobs.find((j: any) => j.name === 'events-sync')).toMatchObject({ ok: true, skipped: 2 });
    const runs = (await t.app.inject({ method: 'GET', url: '/api/v1/internal/jobs/events-sync/runs', headers: auth })).json().runs;
    expect(runs[0]).toMatchObject({ state: 'succeeded', skipped: 2 });
    const text = await scrape();
    expect(sample(text, 'predict_job_runs_total', { job: 'events-sync', outcome: 'degraded' })).toBe(1);
    expect(sample(text, 'predict_job_skipped_rows_total', { job: 'events-sync' })).toBe(2);
    // A clean run says nothing of skipped rows.
    expect(jobs.find((j: any) => j.name === 'price-sync')).toMatchObject({ ok: true });
    expect(jobs.find((j: any) => j.name === 'price-sync').skipped).toBeUndefined();
  });
});

describe('Data leaderboard parsed like the SDKs', () => {
  it('reads vol and pnl sent as decimal strings; a row that still fails is skipped and counted in the run', async () => {
    const rows = [
      { proxyWallet: wallet(1), userName: 'strings', vol: '1523456.78', pnl: '98234.12' },
      { proxyWallet: wallet(2), userName: 'numbers', vol: 500000, pnl: 75000 },
      { proxyWallet: 'not-an-address', userName: 'broken', vol: 1, pnl: 1 },
    ];
    for (const c of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'])
      for (const p of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
        data.setBoard(c, p, 'PNL', c === 'OVERALL' && p === 'ALL' ? rows : rows.slice(0, 2));
        data.setBoard(c, p, 'VOL', rows.slice(0, 2));
      }
    const outcome = await runNow('leaderboard-sync');
    expect(outcome).toMatchObject({ ok: true, skipped: 1 });
    const board = (await get('/api/v1/leaderboard?category=OVERALL&period=ALL&sort=pnl')).json();
    const strings = board.traders.find((x: any) => x.walletAddress === wallet(1));
    expect(strings).toMatchObject({ pnl: 98234.12, volume: 1523456.78 });
  });
});

describe('new markets inside known groups (docs/venues.md "What we call")', () => {
  it('events-sync?mode=increment finds a market added to a known Gamma event and a known Kalshi event, and re-reads their groups', async () => {
    // The groups are known and their own listings do not change: only the market listings say something is new.
    // The Gamma group sits on the second page of the events listing, which the increment no longer reaches
    // (the first page names only known groups once the malformed event is gone).
    venues.gamma.state.events = venues.gamma.state.events.filter((e) => e.id !== '700005');
    const gammaGroup = venues.gamma.state.events.find((e) => e.id === '100000');
    gammaGroup.markets.push(gammaMarket('7000099', 'Added later?', 0.7, 10, { groupItemTitle: 'Later' }));
    gammaGroup.markets[0].groupItemTitle = 'First';
    const kalshiGroup = venues.kalshi.state.events[0];
    kalshiGroup.markets.push(kalshiMarket('KXGRP-1-B', 'KXGRP-1', 'B', 0.6, 0.62, 0.61, 5, { created_time: new Date().toISOString() }));
    venues.gamma.reset();
    venues.kalshi.reset();
    const outcome = await t.app
      .inject({ method: 'POST', url: '/api/v1/internal/jobs/events-sync?mode=increment', headers: auth })
      .then((r) => r.json());
    expect(outcome).toMatchObject({ ok: true });
    // An increment, not a full reconcile: Kalshi read by min_updated_ts, not status=open.
    const kEvents = venues.kalshi.requests.filter((r) => r.path === '/events');
    expect(kEvents.every((r) => r.query.has('min_updated_ts') && !r.query.has('status'))).toBe(true);
    const kMarkets = venues.kalshi.requests.filter((r) => r.path === '/markets');
    expect(kMarkets).toHaveLength(1);
    expect(Number(kMarkets[0].query.get('min_created_ts'))).toBeGreaterThan(0);
    expect(venues.kalshi.requests.some((r) => r.path === '/events/KXGRP-1')).toBe(true);
    const gMarkets = venues.gamma.requests.filter((r) => r.path === '/markets/keyset');
    expect(Object.fromEntries(gMarkets[0].query)).toMatchObject({ closed: 'false', order: 'id', ascending: 'false', limit: '100' });
    expect(venues.gamma.requests.filter((r) => r.path === '/events/keyset')).toHaveLength(1);
    expect(venues.gamma.requests.some((r) => r.path === '/events/100000')).toBe(true);
    const pm = (await get('/api/v1/events/generated-event-0')).json();
    expect(pm.markets.map((m: any) => m.title).sort()).toEqual(['First', 'Later']);
    const ks = (await get('/api/v1/events/kxgrp-1')).json();
    expect(ks.markets).toHaveLength(2);
  });

  it('a run-now without mode is the full reconcile; a mode it does not know is a 400', async () => {
    venues.kalshi.reset();
    expect(await runNow('events-sync')).toMatchObject({ ok: true });
    expect(venues.kalshi.requests.some((r) => r.path === '/events' && r.query.get('status') === 'open')).toBe(true);
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/events-sync?mode=sometimes', headers: auth });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toMatch(/application\/problem\+json/);
  });
});
