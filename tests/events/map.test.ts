import { describe, expect, it } from 'vitest';
import { decodeJsonStringArray, mapClobHistory, mapGammaEvent, mapGammaMarket } from '../../src/venues/polymarket/map.js';
import { kalshiYesPrice, mapKalshiCandles, mapKalshiEvent, mapKalshiMarket } from '../../src/venues/kalshi/map.js';
import { normalizeCategory } from '../../src/venues/groups.js';

// Fixtures shaped like the real responses quoted in docs/venues.md §3, §4a, §5, §6.
const gammaEvent = () => ({
  id: '90177',
  slug: 'btc-updown-15m-1767200400',
  title: 'Bitcoin Up or Down - December 31, 12:00PM-12:15PM ET',
  startDate: '2025-12-30T17:10:15.861305Z',
  endDate: '2025-12-31T17:15:00Z',
  image: 'https://polymarket-upload.s3.us-east-2.amazonaws.com/BTC.png',
  icon: 'https://polymarket-upload.s3.us-east-2.amazonaws.com/BTC-icon.png',
  active: true,
  closed: false,
  archived: false,
  liquidity: 20579.7452,
  volume: 92509.470055,
  openInterest: 0,
  volume24hr: 815.115,
  negRisk: false,
  commentCount: 0,
  markets: [
    {
      id: '1066851',
      question: 'Bitcoin Up or Down - December 31, 12:00PM-12:15PM ET',
      conditionId: '0x2e6af11e4b853b05ba7135239b21d77e808889b6ce1e735de856c94c4e5b5fce',
      slug: 'btc-updown-15m-1767200400',
      endDate: '2025-12-31T17:15:00Z',
      liquidity: '20579.7452',
      outcomes: '["Up", "Down"]',
      outcomePrices: '["0.585", "0.415"]',
      volume: '92509.470055',
      active: true,
      closed: false,
      volumeNum: 92509.470055,
      liquidityNum: 20579.7452,
      volume24hr: 815.115,
      clobTokenIds:
        '["8851848546962572193739008211889046036776198486765606333032192644001246174440", "10181859819235412241349111952383458602720"]',
      acceptingOrders: true,
      enableOrderBook: true,
      spread: 0.01,
      lastTradePrice: 0.58,
      bestBid: 0.58,
      bestAsk: 0.59,
    },
  ],
  tags: [{ id: '21', label: 'Crypto', slug: 'crypto' }],
});

const kalshiEvent = () => ({
  event_ticker: 'KXBALANCE-29',
  series_ticker: 'KXBALANCE',
  title: 'Will Trump balance the budget?',
  sub_title: "During Trump's term",
  collateral_return_type: '',
  mutually_exclusive: false,
  category: 'Politics',
  markets: [
    {
      ticker: 'KXBALANCE-29',
      event_ticker: 'KXBALANCE-29',
      market_type: 'binary',
      title: 'Will Trump balance the budget?',
      yes_sub_title: "During Trump's term",
      no_sub_title: "During Trump's term",
      status: 'active',
      open_time: '2025-01-03T15:00:00Z',
      close_time: '2029-07-01T14:00:00Z',
      settlement_timer_seconds: 1800,
      yes_bid_dollars: '0.1000',
      yes_ask_dollars: '0.1100',
      no_bid_dollars: '0.8900',
      no_ask_dollars: '0.9000',
      last_price_dollars: '0.1000',
      volume_fp: '40111.00',
      volume_24h_fp: '28.00',
      open_interest_fp: '16268.00',
      notional_value_dollars: '1.0000',
      result: '',
      can_close_early: true,
      rules_primary: 'If there is not a budget deficit … resolves to Yes.',
      price_level_structure: 'linear_cent',
      price_ranges: [{ start: '0.0000', end: '1.0000', step: '0.0100' }],
      fractional_trading_enabled: false,
    },
  ],
});

describe('Polymarket Gamma mapping', () => {
  it('maps every field of an event and its markets', () => {
    const r = mapGammaEvent(gammaEvent());
    expect(r.skipped).toBe(0);
    expect(r.value).toEqual({
      id: 'pm-90177',
      venue: 'polymarket',
      venueEventId: '90177',
      slug: 'btc-updown-15m-1767200400',
      title: 'Bitcoin Up or Down - December 31, 12:00PM-12:15PM ET',
      description: '',
      category: 'CRYPTO',
      status: 'active',
      imageUrl: 'https://polymarket-upload.s3.us-east-2.amazonaws.com/BTC.png',
      seriesTicker: null,
      markets: [
        {
          id: 'pm-1066851',
          venue: 'polymarket',
          venueMarketId: '1066851',
          title: 'Bitcoin Up or Down - December 31, 12:00PM-12:15PM ET',
          // No "Yes" outcome: the first outcome's price.
          yesPrice: 0.585,
          volume: 92509.470055,
          status: 'active',
          yesTokenId: '8851848546962572193739008211889046036776198486765606333032192644001246174440',
        },
      ],
    });
  });

  it('takes the "Yes" price wherever it sits, the token of that outcome, and the string volume when volumeNum is absent', () => {
    const m = mapGammaMarket({
      ...gammaEvent().markets[0],
      outcomes: '["No", "Yes"]',
      outcomePrices: '["0.3", "0.7"]',
      clobTokenIds: '["111", "222"]',
      volumeNum: undefined,
      volume: '1234.5',
    });
    expect(m).toMatchObject({ yesPrice: 0.7, yesTokenId: '222', volume: 1234.5 });
  });

  it('reads Protocol V2 token ids from positionIds by version', () => {
    const m = mapGammaMarket({ ...gammaEvent().markets[0], version: 'v2', positionIds: ['999', '888'] });
    expect(m?.yesTokenId).toBe('999');
  });

  it('decodes JSON-encoded arrays and rejects anything else', () => {
    expect(decodeJsonStringArray('["Yes", "No"]')).toEqual(['Yes', 'No']);
    expect(decodeJsonStringArray('[1, 2]')).toBeUndefined();
    expect(decodeJsonStringArray('not json')).toBeUndefined();
  });

  it('skips and counts malformed markets, keeping the event', () => {
    const e = gammaEvent();
    e.markets.push({ ...e.markets[0], id: '2', outcomePrices: '["1.7", "0.1"]' });
    e.markets.push({ ...e.markets[0], id: '3', outcomes: ['Yes', 'No'] } as never);
    const r = mapGammaEvent(e);
    expect(r.skipped).toBe(2);
    expect(r.value?.markets.map((m) => m.id)).toEqual(['pm-1066851']);
  });

  it('reports the id of a malformed event row so it is not taken as gone', () => {
    expect(mapGammaEvent({ id: '77', title: 42 })).toEqual({ skipped: 1, malformedId: 'pm-77' });
    expect(mapGammaEvent(null)).toEqual({ skipped: 1, malformedId: undefined });
  });

  it('derives closed and resolved statuses', () => {
    const e = gammaEvent();
    e.closed = true;
    e.markets[0].closed = true;
    e.markets[0].outcomePrices = '["1", "0"]';
    expect(mapGammaEvent(e).value).toMatchObject({ status: 'resolved', markets: [{ status: 'resolved', yesPrice: 1 }] });
    e.markets[0].outcomePrices = '["0.6", "0.4"]';
    expect(mapGammaEvent(e).value).toMatchObject({ status: 'closed', markets: [{ status: 'closed' }] });
  });

  it('falls back to the icon, then to no image; to the pm id when the slug is unusable', () => {
    expect(mapGammaEvent({ ...gammaEvent(), image: '' }).value?.imageUrl).toBe(
      'https://polymarket-upload.s3.us-east-2.amazonaws.com/BTC-icon.png',
    );
    expect(mapGammaEvent({ ...gammaEvent(), image: null, icon: null }).value?.imageUrl).toBeNull();
    expect(mapGammaEvent({ ...gammaEvent(), slug: null }).value?.slug).toBe('pm-90177');
  });

  it('maps CLOB price history (unix seconds) and skips bad points', () => {
    const r = mapClobHistory({
      history: [
        { t: 1697875200, p: 0.575 },
        { t: 1697878800, p: 0.58 },
        { t: 'x', p: 0.5 },
      ],
    });
    expect(r.points).toEqual([
      { ts: new Date('2023-10-21T08:00:00Z'), price: 0.575 },
      { ts: new Date('2023-10-21T09:00:00Z'), price: 0.58 },
    ]);
    expect(r.skipped).toBe(1);
    expect(() => mapClobHistory([])).toThrow();
  });
});

describe('Kalshi mapping', () => {
  it('maps every field of an event and its markets (*_dollars / *_fp strings)', () => {
    const r = mapKalshiEvent(kalshiEvent());
    expect(r).toEqual({
      skipped: 0,
      value: {
        id: 'ks-KXBALANCE-29',
        venue: 'kalshi',
        venueEventId: 'KXBALANCE-29',
        slug: 'kxbalance-29',
        title: 'Will Trump balance the budget?',
        description: "During Trump's term",
        category: 'POLITICS',
        status: 'active',
        imageUrl: null,
        seriesTicker: 'KXBALANCE',
        markets: [
          {
            id: 'ks-KXBALANCE-29',
            venue: 'kalshi',
            venueMarketId: 'KXBALANCE-29',
            title: 'Will Trump balance the budget?',
            yesPrice: 0.105,
            volume: 40111,
            status: 'active',
            yesTokenId: null,
          },
        ],
      },
    });
  });

  it('yesPrice: midpoint when both quotes are set and the spread is below 0.5, else the last price', () => {
    expect(kalshiYesPrice({ yes_bid_dollars: '0.1000', yes_ask_dollars: '0.1100', last_price_dollars: '0.5' })).toBe(0.105);
    expect(kalshiYesPrice({ yes_bid_dollars: '0.0000', yes_ask_dollars: '1.0000', last_price_dollars: '0.5600' })).toBe(0.56);
    expect(kalshiYesPrice({ yes_bid_dollars: '', yes_ask_dollars: '0.3000', last_price_dollars: '0.2500' })).toBe(0.25);
    expect(kalshiYesPrice({ yes_bid_dollars: null, yes_ask_dollars: null, last_price_dollars: null })).toBeUndefined();
  });

  it('titles from yes_sub_title when title is empty; statuses; skips malformed markets', () => {
    const e = kalshiEvent();
    const base = e.markets[0];
    e.markets = [
      { ...base, ticker: 'A', title: '', yes_sub_title: 'Kevin Hassett' },
      { ...base, ticker: 'B', status: 'finalized', result: 'yes' },
      { ...base, ticker: 'C', status: 'closed' },
      { ...base, ticker: 'D', yes_bid_dollars: 10 as never },
      { ...base, ticker: 'E', title: '', yes_sub_title: '' },
    ];
    const r = mapKalshiEvent(e);
    expect(r.skipped).toBe(2);
    expect(r.value?.markets.map((m) => [m.id, m.title, m.status])).toEqual([
      ['ks-A', 'Kevin Hassett', 'active'],
      ['ks-B', 'Will Trump balance the budget?', 'resolved'],
      ['ks-C', 'Will Trump balance the budget?', 'closed'],
    ]);
  });

  it('treats empty book strings as unset and reports malformed event tickers', () => {
    expect(mapKalshiMarket({ ...kalshiEvent().markets[0], yes_bid_dollars: '', volume_fp: '' })).toMatchObject({
      yesPrice: 0.1,
      volume: 0,
    });
    expect(mapKalshiEvent({ event_ticker: 'KXBAD-1', title: 'no series' })).toEqual({ skipped: 1, malformedId: 'ks-KXBAD-1' });
  });

  it('maps candlesticks, using the previous price for a no-trade period', () => {
    const r = mapKalshiCandles({
      ticker: 'KXBALANCE-29',
      candlesticks: [
        {
          end_period_ts: 1776109260,
          open_interest_fp: '10869.00',
          volume_fp: '0.00',
          price: {
            open_dollars: '0.5600',
            low_dollars: '0.5600',
            high_dollars: '0.5600',
            close_dollars: '0.5600',
            mean_dollars: '0.5600',
            previous_dollars: '0.5600',
          },
          yes_ask: { open_dollars: '0.1630', low_dollars: '0.1500', high_dollars: '0.1630', close_dollars: '0.1630' },
          yes_bid: { open_dollars: '0.0800', low_dollars: '0.0800', high_dollars: '0.0800', close_dollars: '0.0800' },
        },
        {
          end_period_ts: 1776112860,
          open_interest_fp: '10869.00',
          volume_fp: '0.00',
          price: { previous_dollars: '0.5600' },
          yes_ask: { open_dollars: '0.6630', low_dollars: '0.6630', high_dollars: '0.6630', close_dollars: '0.9630' },
          yes_bid: { open_dollars: '0.0800', low_dollars: '0.0800', high_dollars: '0.0800', close_dollars: '0.0800' },
        },
        { end_period_ts: 'bad' },
      ],
    });
    // First candle: quotes 0.08/0.163 are tight → midpoint; second: spread ≥ 0.5 → previous trade price.
    expect(r.points).toEqual([
      { ts: new Date(1776109260 * 1000), price: 0.1215 },
      { ts: new Date(1776112860 * 1000), price: 0.56 },
    ]);
    expect(r.skipped).toBe(1);
  });
});

describe('categories', () => {
  it('are upper-case and _-separated, OTHER when absent', () => {
    expect(normalizeCategory('Climate and Weather')).toBe('CLIMATE_AND_WEATHER');
    expect(normalizeCategory(' crypto ')).toBe('CRYPTO');
    expect(normalizeCategory(null)).toBe('OTHER');
  });
});
