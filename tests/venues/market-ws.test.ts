import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import pino from 'pino';
import { createMarketWsClient, displayPrice, parseMarketMessage, type MarketWsClient } from '../../src/venues/polymarket/market-ws.js';
import { DEFAULT_USER_AGENT } from '../../src/venues/clients.js';
import { startFakeMarketWs, type FakeMarketWs } from '../fakes/venues/market-ws.js';

/**
 * The market WebSocket client (docs/venues.md §4c) against the loopback fake,
 * which enforces the venue's wire format, token cap and PING expectation.
 */
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tokens = (n: number, from = 1) => Array.from({ length: n }, (_, i) => String(10_000 + from + i));

describe('parseMarketMessage', () => {
  it('reads book, price_change, best_bid_ask and last_trade_price as the venue sends them', () => {
    const events = parseMarketMessage(
      JSON.stringify([
        {
          event_type: 'book',
          asset_id: '11',
          market: '0x1',
          bids: [
            { price: '.48', size: '30' },
            { price: '.49', size: '20' },
          ],
          asks: [
            { price: '.53', size: '5' },
            { price: '.52', size: '10' },
          ],
        },
        {
          event_type: 'price_change',
          market: '0x1',
          price_changes: [{ asset_id: '11', price: '0.5', size: '1', side: 'BUY', best_bid: '0.5', best_ask: '0.52' }],
        },
        { event_type: 'best_bid_ask', asset_id: '12', best_bid: '0', best_ask: '1', spread: '1' },
        { event_type: 'last_trade_price', asset_id: '12', price: '0.456', side: 'BUY', size: '2' },
        { event_type: 'tick_size_change', asset_id: '12' },
        { event_type: 'last_trade_price', asset_id: '12', price: '1.5' },
        { event_type: 'book', asset_id: 'not-a-token' },
      ]),
    );
    expect(events).toEqual([
      { type: 'book', tokenId: '11', bestBid: 0.49, bestAsk: 0.52 },
      { type: 'best_bid_ask', tokenId: '11', bestBid: 0.5, bestAsk: 0.52 },
      { type: 'best_bid_ask', tokenId: '12', bestBid: undefined, bestAsk: undefined },
      { type: 'last_trade_price', tokenId: '12', price: 0.456 },
    ]);
    expect(parseMarketMessage('PONG')).toEqual([]);
  });

  it('displays as the REST path does: midpoint when the spread is ≤ 0.10, else the last trade, else nothing', () => {
    expect(displayPrice({ bestBid: 0.49, bestAsk: 0.52 })).toBe(0.505);
    expect(displayPrice({ bestBid: 0.3, bestAsk: 0.6, lastTrade: 0.41 })).toBe(0.41);
    expect(displayPrice({ bestBid: 0.3, bestAsk: 0.6 })).toBeUndefined();
    expect(displayPrice({ lastTrade: 0.2 })).toBe(0.2);
    expect(displayPrice({})).toBeUndefined();
  });
});

describe('market WebSocket client against the fake', () => {
  let fake: FakeMarketWs;
  let client: MarketWsClient | undefined;
  let prices: Array<[string, number]>;

  beforeEach(async () => {
    fake = await startFakeMarketWs({ pingDeadlineMs: 1_000 });
    prices = [];
  });
  afterEach(async () => {
    client?.close();
    client = undefined;
    await fake.close();
  });

  const start = (extra: { silenceMs?: number; dataSilenceMs?: number } = {}) =>
    (client = createMarketWsClient({
      url: fake.url,
      log,
      onPrice: (t, p) => prices.push([t, p]),
      pingMs: 200,
      silenceMs: extra.silenceMs ?? 1_000,
      dataSilenceMs: extra.dataSilenceMs,
      connectSpacingMs: 50,
      backoffMinMs: 50,
      backoffMaxMs: 200,
    }));

  it('spreads tokens over connections of at most 200 (larger sets stall at the venue), subscribes and unsubscribes per token, PINGs', async () => {
    const c = start();
    const wanted = tokens(260);
    c.setTokens(wanted);
    await eventually(() => fake.subscribed().size === 260, 8_000);
    expect(fake.connections().map((x) => x.tokens.length)).toEqual([200, 60]);
    expect(fake.connections().some((x) => x.muted)).toBe(false);
    expect(fake.connections().every((x) => x.userAgent === DEFAULT_USER_AGENT)).toBe(true);
    // One more token goes to the connection with room; letting tokens go unsubscribes them.
    c.setTokens([...wanted.slice(5), ...tokens(1, 900)]);
    await eventually(
      () => fake.subscribed().size === 256 && !fake.subscribed().has(wanted[0]) && fake.subscribed().has(tokens(1, 900)[0]),
      8_000,
    );
    expect(fake.accepted()).toBe(2);
    await eventually(() => fake.connections().every((x) => x.pings >= 2), 8_000);
    // Nothing left: the connections close.
    c.setTokens([]);
    await eventually(() => fake.connections().every((x) => !x.open), 8_000);
    expect(fake.violations).toEqual([]);
  });

  it('reports display price changes from the book and its updates', async () => {
    const [a] = tokens(1);
    fake.book(a, { bid: 0.4, ask: 0.44 });
    start().setTokens([a]);
    await eventually(() => prices.length === 1, 8_000);
    expect(prices).toEqual([[a, 0.42]]);
    fake.priceChange(a, { bid: 0.5, ask: 0.54 });
    await eventually(() => prices.length === 2, 8_000);
    fake.bestBidAsk(a, { bid: 0.1, ask: 0.9 }); // wide: no price until a trade
    fake.lastTrade(a, 0.33);
    await eventually(() => prices.length === 3, 8_000);
    expect(prices.slice(1)).toEqual([
      [a, 0.52],
      [a, 0.33],
    ]);
    expect(fake.violations).toEqual([]);
  });

  it('a wide-spread market takes the book snapshot’s last_trade_price at once', async () => {
    const [a, b] = tokens(2);
    fake.book(a, { bid: 0.1, ask: 0.9, last: 0.37 });
    fake.book(b, { bid: 0.2, ask: 0.8 });
    start().setTokens([a, b]);
    await eventually(() => prices.length === 1, 8_000);
    await sleep(200);
    expect(prices).toEqual([[a, 0.37]]);
    expect(fake.violations).toEqual([]);
  });

  it('reconnects a connection that answers PONG but delivers no data on busy tokens; quiet tokens keep theirs', async () => {
    const [busy, quiet] = tokens(2);
    fake.book(busy, { bid: 0.4, ask: 0.44 });
    fake.book(quiet, { bid: 0.6, ask: 0.62 });
    start({ dataSilenceMs: 800 }).setTokens([busy, quiet]);
    await eventually(() => prices.length === 2, 8_000);
    // Quiet tokens (a snapshot, then nothing) never count as a stall, however long.
    await sleep(1_500);
    expect(fake.accepted()).toBe(1);
    // Busy: updates flow, then the connection goes mute while the market keeps moving.
    fake.priceChange(busy, { bid: 0.45, ask: 0.47 });
    await eventually(() => prices.some(([, p]) => p === 0.46), 8_000);
    fake.mute();
    fake.priceChange(busy, { bid: 0.5, ask: 0.52 });
    expect(fake.connections()[0]).toMatchObject({ open: true, muted: true });
    await eventually(() => fake.accepted() === 2 && fake.subscribed().size === 2, 6_000);
    // The new connection's snapshot brings the price the mute one held back.
    await eventually(() => prices.some(([, p]) => p === 0.51), 8_000);
    expect(fake.violations).toEqual([]);
  });

  it('resubscribes after a drop and after a silent (frozen) connection', async () => {
    const wanted = tokens(3);
    start().setTokens(wanted);
    await eventually(() => fake.subscribed().size === 3, 8_000);
    fake.drop();
    await eventually(() => fake.accepted() === 2 && fake.subscribed().size === 3, 8_000);
    fake.freeze();
    expect(fake.subscribed().size).toBe(0);
    await eventually(() => fake.accepted() === 3 && fake.subscribed().size === 3, 8_000);
    expect(fake.violations).toEqual([]);
  });

  it('the fake enforces the venue limits: token cap, PING, first message', async () => {
    const { default: WebSocket } = await import('ws');
    const ws = new WebSocket(fake.url);
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ assets_ids: tokens(501), type: 'market' }));
    await new Promise((r) => ws.once('close', r));
    const silent = new WebSocket(fake.url);
    await new Promise((r) => silent.once('open', r));
    silent.send(JSON.stringify({ assets_ids: ['1'], operation: 'subscribe' }));
    await new Promise((r) => silent.once('close', r));
    const quiet = new WebSocket(fake.url);
    await new Promise((r) => quiet.once('open', r));
    quiet.send(JSON.stringify({ assets_ids: ['1'], type: 'market' }));
    await new Promise((r) => quiet.once('close', r));
    expect(fake.violations).toEqual([
      'more than 500 assets on one connection (501)',
      'the first message must be {"assets_ids":[…],"type":"market"}',
      'no PING for 1000 ms',
    ]);
    const wrongPath = new WebSocket(fake.url.replace('/ws/market', '/ws'));
    const refused = await new Promise<string>((r) => wrongPath.once('error', (e) => r(e.message)));
    expect(refused).toContain('404');
  });
});
