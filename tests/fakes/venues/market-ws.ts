import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A loopback fake of Polymarket's public market WebSocket (docs/venues.md §4c),
 * speaking its wire format and enforcing its limits:
 * - served at `/ws/market` only (any other path: HTTP 404, so a client that
 *   does not use `POLYMARKET_MARKET_WS_URL` exactly fails);
 * - the first frame must be `{"assets_ids":[…],"type":"market"}` (optionally
 *   `custom_feature_enabled`), later ones `{"assets_ids":[…],"operation":
 *   "subscribe"|"unsubscribe"}`; anything else is a violation and closes the
 *   connection (1008);
 * - at most `maxTokens` assets per connection (more: violation, closed);
 * - text `PING` is answered `PONG`; a connection that sends no `PING` for
 *   `pingDeadlineMs` is a violation and is closed;
 * - a subscribed asset gets its `book` snapshot at once (the initial dump is
 *   an array); `book`, `price_change`, `last_trade_price` and `best_bid_ask`
 *   are pushed on demand in the venue's shapes (decimal strings);
 * - the `book` snapshot carries `last_trade_price` (a string) once the token
 *   has traded (docs/venues.md §8 D1);
 * - a connection carrying more than `stallAbove` (200) assets stalls as the
 *   venue's were seen to: it keeps answering `PONG` and delivers no data;
 * - `drop()` cuts every connection; `freeze()` makes the current connections
 *   silent (no PONG, no data) without closing them, as the venue sometimes
 *   does; `mute()` makes them answer `PONG` and deliver nothing.
 */
export interface FakeBook {
  bid?: number;
  ask?: number;
  /** The last trade, sent as the snapshot's `last_trade_price`. */
  last?: number;
}

export interface FakeMarketWsOptions {
  maxTokens?: number;
  pingDeadlineMs?: number;
  /** More assets than this on one connection: it stalls (PONG, no data). */
  stallAbove?: number;
}

interface Conn {
  ws: WebSocket;
  tokens: Set<string>;
  started: boolean;
  frozen: boolean;
  /** Answers PONG, delivers no data. */
  muted: boolean;
  lastPingAt: number;
  pings: number;
  userAgent: string | undefined;
  timer: NodeJS.Timeout;
}

export interface FakeMarketWs {
  url: string;
  /** Every connection ever accepted (open or not), with what it carries now. */
  connections(): Array<{ tokens: string[]; open: boolean; frozen: boolean; muted: boolean; pings: number; userAgent: string | undefined }>;
  /** Tokens subscribed on open connections that deliver data (not frozen, muted or stalled). */
  subscribed(): Set<string>;
  violations: string[];
  /** Connections accepted so far. */
  accepted(): number;
  /** Sets a token's book and pushes a `book` snapshot to its subscribers. */
  book(tokenId: string, book: FakeBook): void;
  /** A `price_change` for the token: the level changed and the new best bid/ask. */
  priceChange(tokenId: string, book: FakeBook): void;
  bestBidAsk(tokenId: string, book: FakeBook): void;
  lastTrade(tokenId: string, price: number): void;
  drop(): void;
  freeze(): void;
  /** The current connections keep answering PONG and deliver no data. */
  mute(): void;
  close(): Promise<void>;
}

export const FAKE_WS_MAX_TOKENS = 500;
/** docs/venues.md "What we call": larger sets were seen to stall silently. */
export const FAKE_WS_STALL_ABOVE = 200;
const CONDITION = `0x${'ab'.repeat(32)}`;
const dec = (n: number) => String(Math.round(n * 10_000) / 10_000);

export async function startFakeMarketWs(opts: FakeMarketWsOptions = {}): Promise<FakeMarketWs> {
  const maxTokens = opts.maxTokens ?? FAKE_WS_MAX_TOKENS;
  const pingDeadlineMs = opts.pingDeadlineMs ?? 20_000;
  const stallAbove = opts.stallAbove ?? FAKE_WS_STALL_ABOVE;
  const books = new Map<string, FakeBook>();
  const all: Conn[] = [];
  const violations: string[] = [];
  const http = createServer((_req, res) => {
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (req: IncomingMessage, socket, head) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/ws/market') {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, req));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;

  const timestamp = () => String(Date.now());
  const bookMessage = (tokenId: string) => {
    const b = books.get(tokenId) ?? {};
    return {
      event_type: 'book',
      asset_id: tokenId,
      market: CONDITION,
      // The venue lists bids and asks each in its own order; clients must not rely on it.
      bids:
        b.bid === undefined
          ? []
          : [
              { price: dec(Math.max(0.01, b.bid - 0.01)), size: '40' },
              { price: dec(b.bid), size: '25' },
            ],
      asks:
        b.ask === undefined
          ? []
          : [
              { price: dec(Math.min(0.99, b.ask + 0.01)), size: '40' },
              { price: dec(b.ask), size: '25' },
            ],
      timestamp: timestamp(),
      hash: 'fakehash',
      ...(b.last === undefined ? {} : { last_trade_price: dec(b.last) }),
    };
  };

  function violate(c: Conn, what: string) {
    violations.push(what);
    c.ws.close(1008, what.slice(0, 100));
  }

  function subscribe(c: Conn, tokens: string[]) {
    for (const t of tokens) c.tokens.add(t);
    if (c.tokens.size > maxTokens) return violate(c, `more than ${maxTokens} assets on one connection (${c.tokens.size})`);
    if (c.tokens.size > stallAbove) c.muted = true;
    if (!c.frozen && !c.muted && tokens.length > 0) c.ws.send(JSON.stringify(tokens.map(bookMessage)));
  }

  function accept(ws: WebSocket, req: IncomingMessage) {
    const c: Conn = {
      ws,
      tokens: new Set(),
      started: false,
      frozen: false,
      muted: false,
      lastPingAt: Date.now(),
      pings: 0,
      userAgent: req.headers['user-agent'],
      timer: setInterval(
        () => {
          if (!c.frozen && Date.now() - c.lastPingAt > pingDeadlineMs) violate(c, `no PING for ${pingDeadlineMs} ms`);
        },
        Math.max(20, Math.floor(pingDeadlineMs / 5)),
      ),
    };
    all.push(c);
    ws.on('close', () => clearInterval(c.timer));
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => {
      if (c.frozen) return;
      const text = isBinary ? '' : (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)).toString('utf8');
      if (text === 'PING') {
        c.lastPingAt = Date.now();
        c.pings++;
        ws.send('PONG');
        return;
      }
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return violate(c, `not JSON: ${text.slice(0, 40)}`);
      }
      const ids = msg.assets_ids;
      if (!Array.isArray(ids) || !ids.every((t) => typeof t === 'string' && /^\d+$/.test(t))) {
        return violate(c, 'assets_ids must be an array of token id strings');
      }
      if (!c.started) {
        if (msg.type !== 'market' || 'operation' in msg) return violate(c, 'the first message must be {"assets_ids":[…],"type":"market"}');
        c.started = true;
        return subscribe(c, ids as string[]);
      }
      if (msg.operation === 'subscribe') return subscribe(c, ids as string[]);
      if (msg.operation === 'unsubscribe') {
        for (const t of ids as string[]) c.tokens.delete(t);
        return;
      }
      violate(c, `unknown operation ${String(msg.operation)}`);
    });
  }

  const live = () => all.filter((c) => c.ws.readyState === c.ws.OPEN && !c.frozen && !c.muted);
  const pushTo = (tokenId: string, message: unknown) => {
    const text = JSON.stringify(message);
    for (const c of live()) if (c.tokens.has(tokenId)) c.ws.send(text);
  };

  return {
    url: `ws://127.0.0.1:${port}/ws/market`,
    violations,
    connections: () =>
      all.map((c) => ({
        tokens: [...c.tokens],
        open: c.ws.readyState === c.ws.OPEN,
        frozen: c.frozen,
        muted: c.muted,
        pings: c.pings,
        userAgent: c.userAgent,
      })),
    subscribed() {
      const out = new Set<string>();
      for (const c of live()) for (const t of c.tokens) out.add(t);
      return out;
    },
    accepted: () => all.length,
    book(tokenId, book) {
      books.set(tokenId, book);
      pushTo(tokenId, bookMessage(tokenId));
    },
    priceChange(tokenId, book) {
      books.set(tokenId, book);
      pushTo(tokenId, {
        market: CONDITION,
        price_changes: [
          {
            asset_id: tokenId,
            price: dec(book.bid ?? book.ask ?? 0.5),
            size: '10',
            side: book.bid !== undefined ? 'BUY' : 'SELL',
            hash: 'fakehash',
            best_bid: book.bid === undefined ? '0' : dec(book.bid),
            best_ask: book.ask === undefined ? '1' : dec(book.ask),
          },
        ],
        timestamp: timestamp(),
        event_type: 'price_change',
      });
    },
    bestBidAsk(tokenId, book) {
      books.set(tokenId, book);
      pushTo(tokenId, {
        event_type: 'best_bid_ask',
        market: CONDITION,
        asset_id: tokenId,
        best_bid: book.bid === undefined ? '0' : dec(book.bid),
        best_ask: book.ask === undefined ? '1' : dec(book.ask),
        spread: book.bid !== undefined && book.ask !== undefined ? dec(book.ask - book.bid) : '1',
        timestamp: timestamp(),
      });
    },
    lastTrade(tokenId, price) {
      books.set(tokenId, { ...books.get(tokenId), last: price });
      pushTo(tokenId, {
        asset_id: tokenId,
        event_type: 'last_trade_price',
        fee_rate_bps: '0',
        market: CONDITION,
        price: dec(price),
        side: 'BUY',
        size: '12.5',
        timestamp: timestamp(),
      });
    },
    drop() {
      for (const c of all) if (c.ws.readyState === c.ws.OPEN) c.ws.terminate();
    },
    freeze() {
      for (const c of all) c.frozen = true;
    },
    mute() {
      for (const c of all) c.muted = true;
    },
    async close() {
      for (const c of all) {
        clearInterval(c.timer);
        c.ws.terminate();
      }
      wss.close();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
