import { describe, expect, it } from 'vitest';
import { dedupeById, displayPrice } from '../../src/venues/catalogue.js';
import { gammaPricedOutcome, mapGammaCatalogueEvent, polymarketCategory } from '../../src/venues/polymarket/gamma-map.js';
import { clobDisplayPrice, parseLastTrades, parseTokenDecimals } from '../../src/venues/polymarket/clob-map.js';
import {
  kalshiCategory,
  kalshiMarketStatus,
  kalshiYesPrice,
  mapKalshiCatalogueEvent,
  mapKalshiSeriesList,
} from '../../src/venues/kalshi/events-map.js';
import { isDataApiThrottle } from '../../src/venues/clients.js';
import { createTokenBucket } from '../../src/lib/token-bucket.js';
import { budgetViolations, maxInWindow } from '../fakes/venues/budget.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket } from '../fakes/venues/kalshi.js';

/**
 * Each rule of docs/venues.md "What we call", table-driven over the pure
 * mappers: the one price rule, titles and outcome labels, market status and
 * the markets of a group, categories, ids and slugs, dedupe, strict parsing.
 */

const pm = (markets: any[], extra: Record<string, unknown> = {}) =>
  mapGammaCatalogueEvent(gammaEvent('900', 'some-event', 'Some event', markets, extra));
const ks = (markets: any[], categories = new Map<string, any>([['KXS', 'SPORTS']])) =>
  mapKalshiCatalogueEvent(kalshiEvent('KXS-26', 'KXS', 'Brentford vs Chelsea', 'Politics', markets), categories);

describe('the one price rule (docs/venues.md "Prices")', () => {
  it.each([
    ['midpoint when both sides exist and the spread is ≤ 0.10', { bid: 0.4, ask: 0.44, last: 0.1 }, 0.42],
    ['a spread of exactly 0.10 still shows the midpoint', { bid: 0.45, ask: 0.55, last: 0.1 }, 0.5],
    ['a spread wider than 0.10 shows the last trade', { bid: 0.3, ask: 0.6, last: 0.52 }, 0.52],
    ['one side missing shows the last trade', { bid: 0.3, ask: null, last: 0.33 }, 0.33],
    ['no quote and a trade: the trade', { last: 0.07 }, 0.07],
    ['no quote and no trade: null, never 0 or 0.5', {}, null],
    ['wide spread and no trade: null', { bid: 0.1, ask: 0.9 }, null],
  ])('%s', (_name, q, want) => {
    expect(displayPrice(q)).toBe(want);
  });
});

describe('Polymarket markets from the catalogue', () => {
  it.each([
    ['bid/ask tight → midpoint', { bestBid: 0.6, bestAsk: 0.62, lastTradePrice: 0.5 }, 0.61],
    ['wide spread → last trade', { bestBid: 0.2, bestAsk: 0.8, lastTradePrice: 0.55 }, 0.55],
    [
      'absent fields → null (outcomePrices of an open market is not a price)',
      { bestBid: undefined, bestAsk: undefined, lastTradePrice: undefined },
      null,
    ],
    [
      'last 0 on a market without volume is no trade',
      { bestBid: undefined, bestAsk: undefined, lastTradePrice: 0, volumeNum: 0, volume: '0' },
      null,
    ],
    ['bid 0 / ask 1 is no quote', { bestBid: 0, bestAsk: 1, lastTradePrice: 0.4 }, 0.4],
  ])('%s', (_name, fields, want) => {
    const m = gammaMarket('1', 'Q?', 0.5, 1000, fields);
    for (const [k, v] of Object.entries(fields)) if (v === undefined) delete (m as any)[k];
    expect(pm([m]).value!.markets[0].yesPrice).toBe(want);
  });

  it.each([
    [
      'closed and resolved by UMA: the settlement',
      { closed: true, umaResolutionStatus: 'resolved', outcomePrices: '["1", "0"]' },
      'resolved',
      1,
    ],
    ['closed with prices 0/1: resolved', { closed: true, outcomePrices: '["0", "1"]' }, 'resolved', 0],
    ['closed, not settled yet: closed, outcomePrices', { closed: true, outcomePrices: '["0.97", "0.03"]' }, 'closed', 0.97],
    ['open: active', {}, 'active', 0.5],
  ])('status: %s', (_name, fields, status, price) => {
    const [m] = pm([gammaMarket('1', 'Q?', 0.5, 1000, fields)]).value!.markets;
    expect(m.status).toBe(status);
    expect(m.yesPrice).toBe(price);
  });

  it('leaves placeholders out of the group (active false, not closed) and keeps closed ones', () => {
    const g = pm([
      gammaMarket('1', 'A?', 0.5, 10, { groupItemTitle: 'A' }),
      gammaMarket('2', 'B?', 0.5, 10, { groupItemTitle: 'B', active: false, closed: false }),
      gammaMarket('3', 'C?', 0.5, 10, { groupItemTitle: 'C', closed: true, outcomePrices: '["0", "1"]' }),
    ]).value!;
    expect(g.markets.map((m) => m.id)).toEqual(['pm-1', 'pm-3']);
  });

  it.each([
    ['groupItemTitle when the event has more than one market', 2, 'Trump', 'Trump'],
    ['question when the event has one market', 1, 'Trump', 'Will Trump win?'],
    ['question when groupItemTitle is empty', 2, '  ', 'Will Trump win?'],
  ])('title: %s', (_name, n, item, want) => {
    const markets = Array.from({ length: n }, (_, i) => gammaMarket(String(i + 1), 'Will Trump win?', 0.5, 10, { groupItemTitle: item }));
    expect(pm(markets).value!.markets[0].title).toBe(want);
  });

  it.each([
    ['Yes/No prices "Yes"', ['Yes', 'No'], 0, 'Yes'],
    ['No/Yes still prices "Yes"', ['No', 'Yes'], 1, 'Yes'],
    ['Up/Down prices the first outcome', ['Up', 'Down'], 0, 'Up'],
    ['team names price the first team', ['Ravens', 'Falcons'], 0, 'Ravens'],
    ['Over/Under prices Over', ['Over', 'Under'], 0, 'Over'],
  ])('outcome: %s', (_name, outcomes, index, label) => {
    expect(gammaPricedOutcome(outcomes)).toEqual({ index, label });
  });

  it('a non-Yes/No market carries its first outcome label and token', () => {
    const m = gammaMarket('7', 'Ravens vs Falcons', 0.58, 10, { outcomes: '["Ravens", "Falcons"]', clobTokenIds: '["111", "222"]' });
    const [out] = pm([m]).value!.markets;
    expect(out).toMatchObject({ outcome: 'Ravens', tokenId: '111', yesPrice: 0.58 });
  });

  it('a ["No","Yes"] market prices Yes with its own token, mirroring the first token book', () => {
    const m = gammaMarket('8', 'Q?', 0.3, 10, {
      outcomes: '["No", "Yes"]',
      clobTokenIds: '["111", "222"]',
      bestBid: 0.69,
      bestAsk: 0.71,
      lastTradePrice: 0.7,
    });
    const [out] = pm([m]).value!.markets;
    expect(out).toMatchObject({ outcome: 'Yes', tokenId: '222', yesPrice: 0.3 });
  });

  it('ids are pm-<gamma id>, the slug is Gamma’s; protocol v2 markets take positionIds', () => {
    const g = pm([gammaMarket('55', 'Q?', 0.5, 10, { version: 'v2', positionIds: ['999', '998'] })]).value!;
    expect(g).toMatchObject({ id: 'pm-900', slug: 'some-event', venueEventId: '900' });
    expect(g.markets[0]).toMatchObject({ id: 'pm-55', venueMarketId: '55', tokenId: '999' });
  });

  it('a malformed market is skipped and counted, never read as zeros', () => {
    const r = pm([
      gammaMarket('1', 'A?', 0.5, 10),
      gammaMarket('2', 'B?', 0.5, 10, { bestBid: 'abc' }),
      gammaMarket('3', 'C?', 0.5, 10, { outcomes: 'nope' }),
    ]);
    expect(r.skipped).toBe(2);
    expect(r.value!.markets.map((m) => m.id)).toEqual(['pm-1']);
  });
});

describe('Polymarket categories (tag slugs in rule order, then feeType, else OTHER)', () => {
  const tags = (...slugs: string[]) => slugs.map((slug, i) => ({ id: String(i), label: slug.toUpperCase(), slug }));
  it.each([
    ['[Crypto, Politics] → POLITICS (rule order, not tag order)', tags('crypto', 'politics'), [], 'POLITICS'],
    ['noise tags then crypto → CRYPTO', tags('featured', 'solana', 'hide-from-new', 'crypto'), [], 'CRYPTO'],
    ['geopolitics → POLITICS', tags('geopolitics'), [], 'POLITICS'],
    ['esports → SPORTS', tags('esports'), [], 'SPORTS'],
    ['economy → ECONOMICS', tags('economy'), [], 'ECONOMICS'],
    ['tech → TECH', tags('tech'), [], 'TECH'],
    ['mentions → CULTURE', tags('mentions'), [], 'CULTURE'],
    ['pop-culture → CULTURE', tags('pop-culture'), [], 'CULTURE'],
    ['climate → WEATHER', tags('climate'), [], 'WEATHER'],
    ['no matching tag: feeType majority', tags('featured'), ['sports_fees_v2', 'sports_fees_v2', 'crypto_fees'], 'SPORTS'],
    ['feeType tie goes to the earlier rule', [], ['crypto_fees', 'politics_fees'], 'POLITICS'],
    ['general_fees, zero_fees and null say nothing', tags('featured'), ['general_fees', 'zero_fees', null], 'OTHER'],
    ['nothing at all → OTHER', [], [], 'OTHER'],
  ])('%s', (_name, t, fees, want) => {
    expect(polymarketCategory(t, fees)).toBe(want);
  });

  it('never uses the event’s own category; reads feeType from its markets', () => {
    const g = pm([gammaMarket('1', 'A?', 0.5, 10, { feeType: 'sports_fees_v2' })], {
      category: 'Politics',
      tags: [{ id: '1', label: 'Featured', slug: 'featured' }],
    });
    expect(g.value!.category).toBe('SPORTS');
  });
});

describe('Kalshi markets', () => {
  it.each([
    [
      'untraded strike: bid 0 / ask 1 / last 0 without volume → null',
      { yes_bid_dollars: '0.0000', yes_ask_dollars: '1.0000', last_price_dollars: '0.0000', volume_fp: '0.00' },
      null,
    ],
    [
      'tight book → midpoint',
      { yes_bid_dollars: '0.4000', yes_ask_dollars: '0.4200', last_price_dollars: '0.1000', volume_fp: '5.00' },
      0.41,
    ],
    [
      'wide book → last trade',
      { yes_bid_dollars: '0.1000', yes_ask_dollars: '0.9000', last_price_dollars: '0.3300', volume_fp: '5.00' },
      0.33,
    ],
    [
      'no quote, last 0 with volume → 0',
      { yes_bid_dollars: '0.0000', yes_ask_dollars: '1.0000', last_price_dollars: '0.0000', volume_fp: '12.00' },
      0,
    ],
    ['empty strings are absent', { yes_bid_dollars: '', yes_ask_dollars: '', last_price_dollars: '', volume_fp: '' }, null],
  ])('price: %s', (_name, fields, want) => {
    expect(kalshiYesPrice({ result: '', settlement_value_dollars: null, ...fields })).toBe(want);
  });

  it.each([
    ['finalized yes → 1', 'finalized', 'yes', 1],
    ['determined no → 0', 'determined', 'no', 0],
  ])('resolved price: %s', (_name, status, result, want) => {
    const g = ks([kalshiMarket('KXS-26-A', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10, { status, result })]).value!;
    expect(g.markets[0]).toMatchObject({ status: 'resolved', yesPrice: want });
  });

  it.each([
    ['active', 'active'],
    ['closed', 'closed'],
    ['inactive', 'closed'],
    ['disputed', 'closed'],
    ['determined', 'resolved'],
    ['amended', 'resolved'],
    ['finalized', 'resolved'],
  ])('status %s → %s', (venue, ours) => {
    expect(kalshiMarketStatus(venue)).toBe(ours);
  });

  it('leaves initialized and unopened markets out of the group', () => {
    const g = ks([
      kalshiMarket('KXS-26-A', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10),
      kalshiMarket('KXS-26-B', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10, { status: 'initialized' }),
      kalshiMarket('KXS-26-C', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10, { status: 'unopened' }),
    ]).value!;
    expect(g.markets.map((m) => m.id)).toEqual(['ks-KXS-26-A']);
  });

  it('outcome markets sharing one title take their yes_sub_title; a lone market keeps its title', () => {
    const shared = ['Home', 'Draw', 'Away'].map((sub, i) =>
      kalshiMarket(`KXS-26-${i}`, 'KXS-26', 'Brentford vs Chelsea', 0.3, 0.32, 0.31, 10, { yes_sub_title: sub }),
    );
    const g = ks(shared).value!;
    expect(g.markets.map((m) => m.title)).toEqual(['Home', 'Draw', 'Away']);
    expect(g.markets.every((m) => m.outcome === 'Yes')).toBe(true);
    const lone = ks([kalshiMarket('KXS-26-0', 'KXS-26', 'Will it rain?', 0.3, 0.32, 0.31, 10, { yes_sub_title: 'Rain' })]).value!;
    expect(lone.markets[0].title).toBe('Will it rain?');
    const empty = ks([
      ...shared.slice(0, 1),
      kalshiMarket('KXS-26-9', 'KXS-26', 'Brentford vs Chelsea', 0.3, 0.32, 0.31, 10, { yes_sub_title: '' }),
    ]).value!;
    expect(empty.markets[1].title).toBe('Brentford vs Chelsea');
  });

  it('ids are ks-<ticker>, the slug the lower-cased event ticker', () => {
    const g = ks([kalshiMarket('KXS-26-A', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10)]).value!;
    expect(g).toMatchObject({ id: 'ks-KXS-26', slug: 'kxs-26', seriesTicker: 'KXS' });
    expect(g.markets[0].id).toBe('ks-KXS-26-A');
  });

  it('a malformed market is skipped and counted, never zeros', () => {
    const r = ks([
      kalshiMarket('KXS-26-A', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10),
      kalshiMarket('KXS-26-B', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10, { yes_bid_dollars: 'x' }),
    ]);
    expect(r.skipped).toBe(1);
    expect(r.value!.markets).toHaveLength(1);
  });
});

describe('Kalshi categories (from the series, never the event)', () => {
  it.each([
    ['Politics', 'POLITICS'],
    ['Elections', 'POLITICS'],
    ['World', 'POLITICS'],
    ['Sports', 'SPORTS'],
    ['Crypto', 'CRYPTO'],
    ['Economics', 'ECONOMICS'],
    ['Financials', 'ECONOMICS'],
    ['Companies', 'ECONOMICS'],
    ['Commodities', 'ECONOMICS'],
    ['Energy', 'ECONOMICS'],
    ['Science and Technology', 'TECH'],
    ['Entertainment', 'CULTURE'],
    ['Social', 'CULTURE'],
    ['Mentions', 'CULTURE'],
    ['Climate and Weather', 'WEATHER'],
    ['Health', 'OTHER'],
    ['Exotics', 'OTHER'],
    [undefined, 'OTHER'],
  ])('%s → %s', (venue, ours) => {
    expect(kalshiCategory(venue)).toBe(ours);
  });

  it('maps GET /series, skips malformed rows, and a series missing from it gives OTHER', () => {
    const { categories, skipped } = mapKalshiSeriesList({
      series: [{ ticker: 'KXA', category: 'Sports' }, { ticker: 'KXB', category: 'Climate and Weather' }, { category: 'Sports' }],
    });
    expect(skipped).toBe(1);
    expect(Object.fromEntries(categories)).toEqual({ KXA: 'SPORTS', KXB: 'WEATHER' });
    // The event says "Politics" (deprecated); the series says Sports.
    expect(ks([kalshiMarket('KXS-26-A', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10)]).value!.category).toBe('SPORTS');
    expect(ks([kalshiMarket('KXS-26-A', 'KXS-26', 'T', 0.4, 0.42, 0.41, 10)], new Map()).value!.category).toBe('OTHER');
  });
});

describe('CLOB batch answers', () => {
  it('reads decimal strings, skips malformed entries, never reads them as 0', () => {
    const r = parseTokenDecimals({ '111': '0.45', '222': 'abc', '333': 0.5, x: '0.1', '444': '1.5' });
    expect(Object.fromEntries(r.values)).toEqual({ '111': 0.45 });
    expect(r.skipped).toBe(4);
    const l = parseLastTrades([{ token_id: '111', price: '0.52', side: 'BUY' }, { token_id: '222' }, { token_id: '333', price: '' }]);
    expect(Object.fromEntries(l.values)).toEqual({ '111': 0.52 });
    expect(l.skipped).toBe(2);
    expect(() => parseTokenDecimals([])).toThrow();
    expect(() => parseLastTrades({})).toThrow();
  });

  it.each([
    ['midpoint when the spread is ≤ 0.10', { midpoint: 0.5, spread: 0.02, lastTrade: 0.9 }, 0.5],
    ['last trade when the spread is wider', { midpoint: 0.5, spread: 0.3, lastTrade: 0.42 }, 0.42],
    ['last trade when the token is absent from /midpoints', { lastTrade: 0.42 }, 0.42],
    ['nothing when neither', { midpoint: 0.5, spread: 0.3 }, undefined],
  ])('%s', (_name, q, want) => {
    expect(clobDisplayPrice(q)).toBe(want);
  });
});

describe('dedupe, throttle body, budgets', () => {
  it('keeps one row per id, the last one, in first-seen order', () => {
    expect(
      dedupeById([
        { id: 'a', v: 1 },
        { id: 'b', v: 1 },
        { id: 'a', v: 2 },
      ]),
    ).toEqual([
      { id: 'a', v: 2 },
      { id: 'b', v: 1 },
    ]);
  });

  it.each([
    [{ error: 'Too Many Requests' }, true],
    [[], false],
    [[{ error: 'x' }], false],
    [null, false],
    [{ rank: '1' }, false],
  ])('Data API throttle body %j → %s', (body, want) => {
    expect(isDataApiThrottle(body)).toBe(want);
  });

  it.each([2, 5])('a token bucket at r = %i never grants more than r × w + r in any w-second window', async (r) => {
    let now = 0;
    const bucket = createTokenBucket({ ratePerSec: r, now: () => now, sleep: async (ms) => void (now += ms) });
    const grants: number[] = [];
    // Callers arrive in bursts with idle gaps; each records when it was let through.
    for (let burst = 0; burst < 6; burst++) {
      for (let i = 0; i < 4 * r; i++) {
        await bucket.acquire();
        grants.push(now);
      }
      now += 1500 * burst;
    }
    expect(grants).toHaveLength(24 * r);
    expect(budgetViolations(grants, r)).toEqual([]);
    // And it does use the budget: some second holds r grants or more while callers queue.
    expect(maxInWindow(grants, 1000)).toBeGreaterThanOrEqual(r);
    expect(bucket.granted()).toBe(24 * r);
  });
});
