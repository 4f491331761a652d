import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClobClient, PriceHistoryInterval, Side } from '@polymarket/clob-client';
import * as kalshiSdk from 'kalshi-typescript';
import { Configuration, EventsApi, MarketApi } from 'kalshi-typescript';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket, seriesRow } from '../fakes/venues/kalshi.js';

/**
 * docs/venues.md "Official clients as the judge of our fakes": Polymarket's
 * own CLOB client and Kalshi's client generated from its OpenAPI spec call
 * the fakes. A fake the official client cannot read, or reads differently,
 * is wrong. Kalshi's answers are also checked field by field against the
 * client's model definitions (required fields present, types and enum
 * values as declared), read from the installed package itself.
 */
let venues: FakeVenues;
const NOW = Math.floor(Date.now() / 1000);

beforeAll(async () => {
  const explicitPm = [
    gammaEvent('700', 'ravens-falcons', 'Ravens vs Falcons', [
      gammaMarket('7001', 'Ravens vs Falcons', 0.58, 5000, { outcomes: '["Ravens", "Falcons"]', clobTokenIds: '["70011", "70012"]' }),
    ]),
    gammaEvent('701', 'untraded', 'Untraded', [
      gammaMarket('7011', 'Untraded?', 0.5, 0, {
        clobTokenIds: '["70111", "70112"]',
        bestBid: undefined,
        bestAsk: undefined,
        lastTradePrice: undefined,
      }),
    ]),
  ];
  const explicitKs = [
    kalshiEvent(
      'KXEPL-26',
      'KXEPL',
      'Brentford vs Chelsea',
      'Politics',
      ['Home', 'Draw', 'Away'].map((sub, i) =>
        kalshiMarket(`KXEPL-26-${sub[0]}`, 'KXEPL-26', 'Brentford vs Chelsea', 0.3 + i * 0.01, 0.32 + i * 0.01, 0.31, 100, {
          yes_sub_title: sub,
          no_sub_title: sub,
        }),
      ),
    ),
  ];
  venues = await startFakeVenues(
    { gamma: explicitPm, kalshi: explicitKs },
    {
      generate: {
        polymarket: { events: 300, markets: 900, seed: 5, nowSec: NOW },
        kalshi: { events: 250, markets: 1500, series: 30, seed: 5, nowSec: NOW },
      },
    },
  );
  venues.kalshi.state.series = [seriesRow('KXEPL', 'Sports')];
});
afterAll(async () => venues?.close());

// ------------------------------------------------------------ Kalshi model judge

const require = createRequire(import.meta.url);
const modelsDir = join(dirname(require.resolve('kalshi-typescript/package.json')), 'models');
const kebab = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
const enums = kalshiSdk as unknown as Record<string, unknown>;

/** The fields of one model interface of the installed client: name → { type text, required }. */
function modelFields(name: string): Map<string, { type: string; required: boolean }> {
  const src = readFileSync(join(modelsDir, `${kebab(name)}.ts`), 'utf8');
  const body = new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(src)?.[1];
  if (!body) throw new Error(`model ${name} not found in the client`);
  const out = new Map<string, { type: string; required: boolean }>();
  for (const m of body.matchAll(/^\s+'(\w+)'(\?)?: (.+);$/gm)) out.set(m[1], { type: m[3], required: m[2] !== '?' });
  return out;
}

/** Problems of `value` against a type of the client's models ("string | null", "Array<Market>", "MarketStatusEnum", …). */
function judge(value: unknown, type: string, path: string, problems: string[]): void {
  const alts = type.split(' | ').map((t) => t.trim());
  if (value === null) {
    if (!alts.includes('null')) problems.push(`${path}: null where ${type}`);
    return;
  }
  const t = alts.filter((a) => a !== 'null');
  if (t.length !== 1) {
    problems.push(`${path}: cannot judge type ${type}`);
    return;
  }
  const ty = t[0];
  const arr = /^Array<(.+)>$/.exec(ty);
  if (arr) {
    if (!Array.isArray(value)) problems.push(`${path}: not an array`);
    else value.forEach((v, i) => judge(v, arr[1], `${path}[${i}]`, problems));
    return;
  }
  if (['string', 'number', 'boolean', 'object'].includes(ty)) {
    if (typeof value !== ty) problems.push(`${path}: ${typeof value} where ${ty}`);
    return;
  }
  const e = enums[ty];
  if (e && typeof e === 'object') {
    if (!Object.values(e).includes(value)) problems.push(`${path}: ${JSON.stringify(value)} is not a ${ty}`);
    return;
  }
  judgeModel(value, ty, path, problems);
}

function judgeModel(value: unknown, model: string, path: string, problems: string[]): void {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    problems.push(`${path}: not a ${model} object`);
    return;
  }
  for (const [field, { type, required }] of modelFields(model)) {
    const v = (value as Record<string, unknown>)[field];
    if (v === undefined) {
      if (required) problems.push(`${path}.${field}: missing (required by ${model})`);
      continue;
    }
    judge(v, type, `${path}.${field}`, problems);
  }
}

function expectModel(value: unknown, model: string): void {
  const problems: string[] = [];
  judgeModel(value, model, model, problems);
  expect(problems.slice(0, 20)).toEqual([]);
}

describe('kalshi-typescript (generated from Kalshi’s OpenAPI spec) reads the Kalshi fake', () => {
  const config = () => new Configuration({ basePath: venues.kalshi.url });

  it('getEvents: open events with nested markets, paged by cursor until ""', async () => {
    const api = new EventsApi(config());
    let cursor: string | undefined;
    let events = 0;
    for (let page = 0; page < 10; page++) {
      const res = await api.getEvents(200, cursor, true, undefined, 'open');
      expectModel(res.data, 'GetEventsResponse');
      events += res.data.events.length;
      if (res.data.cursor === '') break;
      cursor = res.data.cursor;
    }
    expect(events).toBe(251);
    const [call] = venues.kalshi.requests.filter((r) => r.path === '/events');
    expect(Object.fromEntries(call.query)).toEqual({ limit: '200', with_nested_markets: 'true', status: 'open' });
  });

  it('getEvents with min_updated_ts, and getEvent', async () => {
    const api = new EventsApi(config());
    const res = await api.getEvents(200, undefined, true, undefined, undefined, undefined, undefined, undefined, NOW + 3600);
    expect(res.data.events).toEqual([]);
    const one = await api.getEvent('KXEPL-26', true);
    expectModel(one.data, 'GetEventResponse');
    expect(one.data.event.markets!.map((m) => m.yes_sub_title)).toEqual(['Home', 'Draw', 'Away']);
    expect(new Set(one.data.event.markets!.map((m) => m.title))).toEqual(new Set(['Brentford vs Chelsea']));
  });

  it('getMarkets by tickers, getSeriesList, getMarketCandlesticks', async () => {
    const api = new MarketApi(config());
    const gen = venues.kalshi.state.generated!;
    const tickers = [...gen.event(0).markets, ...gen.event(1).markets].map((m: any) => m.ticker);
    const res = await api.getMarkets(
      tickers.length,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      tickers.join(','),
    );
    expectModel(res.data, 'GetMarketsResponse');
    expect(res.data.markets.map((m) => m.ticker)).toEqual(tickers);
    const series = await api.getSeriesList();
    expectModel(series.data, 'GetSeriesListResponse');
    expect(series.data.series.length).toBe(31);
    const t = gen.event(2).markets[0];
    const candles = await api.getMarketCandlesticks(gen.event(2).series_ticker, t.ticker, NOW - 86_400, NOW, 60);
    expectModel(candles.data, 'GetMarketCandlesticksResponse');
    expect(candles.data.candlesticks.length).toBeGreaterThan(20);
  });
});

describe('@polymarket/clob-client reads the CLOB fake', () => {
  const client = () => new ClobClient(venues.clob.url, 137);
  const gen = () => venues.gamma.state.generated!;

  it('getMidpoints / getSpreads / getLastTradesPrices: decimal strings, tokens without a book left out', async () => {
    const tokens = ['70011', '70111', ...Array.from({ length: 20 }, (_, j) => gen().yesToken(j))];
    const params = tokens.map((token_id) => ({ token_id, side: Side.BUY }));
    const mids = await client().getMidpoints(params);
    const spreads = await client().getSpreads(params);
    const lasts = await client().getLastTradesPrices(params);
    expect(mids['70011']).toBe('0.58');
    expect(mids).not.toHaveProperty('70111');
    expect(spreads).not.toHaveProperty('70111');
    for (const v of [...Object.values(mids), ...Object.values(spreads)]) expect(v).toMatch(/^\d+(\.\d+)?$/);
    expect(Array.isArray(lasts)).toBe(true);
    for (const l of lasts) expect(l).toEqual({ token_id: expect.any(String), price: expect.stringMatching(/^\d+(\.\d+)?$/), side: 'BUY' });
    expect(lasts.map((l: { token_id: string }) => l.token_id)).not.toContain('70111');
  });

  it('a batch of 501 tokens gets the venue’s 400 "Payload exceeds the limit"', async () => {
    const params = Array.from({ length: 501 }, (_, j) => ({ token_id: gen().yesToken(j), side: Side.BUY }));
    const out = await client().getMidpoints(params);
    expect(out).toMatchObject({ error: 'Payload exceeds the limit', status: 400 });
  });

  it('getPricesHistory: { history: [{ t, p }] } (an object, whatever the client’s type says)', async () => {
    const h = (await client().getPricesHistory({ market: '70011', interval: PriceHistoryInterval.MAX, fidelity: 60 })) as unknown as {
      history: Array<{ t: number; p: number }>;
    };
    expect(h.history.length).toBeGreaterThan(0);
    for (const pt of h.history) {
      expect(Number.isInteger(pt.t)).toBe(true);
      expect(pt.p).toBeGreaterThanOrEqual(0);
      expect(pt.p).toBeLessThanOrEqual(1);
    }
    const call = venues.clob.requests.find((r) => r.path === '/prices-history')!;
    expect(call.query.get('interval')).toBe('max');
  });
});
