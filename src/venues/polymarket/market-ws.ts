import WebSocket from 'ws';
import type { FastifyBaseLogger } from 'fastify';
import { clobDisplayPrice } from './clob-map.js';
import { DEFAULT_USER_AGENT } from '../clients.js';

/**
 * Polymarket's public market WebSocket (docs/venues.md §4c), for the YES
 * tokens of hot markets (docs/decisions.md §11.2). The caller says which
 * tokens it wants (`setTokens`); the client spreads them over connections of
 * at most `maxTokensPerConnection`, subscribes and unsubscribes per token,
 * sends `PING` every `pingMs`, treats a connection that has said nothing
 * (not even `PONG`) for `silenceMs` as frozen, and one that still answers
 * `PONG` but has delivered no data for `dataSilenceMs` as stalled when its
 * tokens are busy (they sent updates since it opened) or it never sent their
 * `book` snapshots (docs/venues.md "What we call": such stalls were seen on
 * large sets); it reconnects dropped, frozen and stalled connections with
 * jittered exponential backoff, opening connections at least
 * `connectSpacingMs` apart. Each token's book, best bid/ask and last trade
 * are kept (the `book` snapshot's `last_trade_price` included, so a
 * wide-spread market has a price at once), and `onPrice` is called when the
 * displayed price (the REST path's rule, src/venues/polymarket/clob-map.ts)
 * changes.
 */

export interface MarketWsOptions {
  /** `POLYMARKET_MARKET_WS_URL`, used exactly as given. */
  url: string;
  log: FastifyBaseLogger;
  /** Called with a token's new display price (never for "no price": the REST cycle decides that). */
  onPrice(tokenId: string, price: number): void;
  maxTokensPerConnection?: number;
  pingMs?: number;
  silenceMs?: number;
  dataSilenceMs?: number;
  connectSpacingMs?: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  userAgent?: string;
}

export const MARKET_WS_DEFAULTS = {
  /** docs/venues.md "What we call": ≤ 200 tokens per connection (larger sets were seen to stall silently). */
  maxTokensPerConnection: 200,
  /** docs/venues.md §4c: text `PING` every 10 s. */
  pingMs: 10_000,
  /** Two missed PONGs: dead or frozen (§4c says 30 s; we act sooner so a resubscribe lands within 30 s). */
  silenceMs: 20_000,
  /**
   * PONG but no data this long on busy tokens (or no `book` snapshot after
   * subscribing): stalled, reconnect. Busy tokens move far more often; quiet
   * ones (a snapshot, then nothing) never trip it.
   */
  dataSilenceMs: 60_000,
  /** docs/venues.md "What we call": connections opened ≥ 1 s apart. */
  connectSpacingMs: 1_000,
  backoffMinMs: 500,
  backoffMaxMs: 30_000,
} as const;

/** One wire event of the market channel, reduced to what prices need. */
export type MarketWsEvent =
  | { type: 'book'; tokenId: string; bestBid?: number; bestAsk?: number; lastTrade?: number }
  | { type: 'best_bid_ask'; tokenId: string; bestBid?: number; bestAsk?: number }
  | { type: 'last_trade_price'; tokenId: string; price: number };

const TOKEN = /^\d{1,100}$/;
const DECIMAL = /^\d+(\.\d+)?$|^\.\d+$/;

function probability(v: unknown): number | undefined {
  const s = typeof v === 'number' ? String(v) : v;
  if (typeof s !== 'string' || !DECIMAL.test(s.trim())) return undefined;
  const n = Number(s);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : undefined;
}

/** Best level of a book side (`[{price, size}]`, any order): highest bid / lowest ask with a size > 0. */
function bestOf(levels: unknown, side: 'bid' | 'ask'): number | undefined {
  if (!Array.isArray(levels)) return undefined;
  let best: number | undefined;
  for (const l of levels) {
    if (l === null || typeof l !== 'object') continue;
    const p = probability((l as Record<string, unknown>).price);
    const size = Number((l as Record<string, unknown>).size);
    if (p === undefined || !(size > 0)) continue;
    if (best === undefined || (side === 'bid' ? p > best : p < best)) best = p;
  }
  return best;
}

/** A quote's side: `"0"` bid or `"1"` ask is no quote on that side (an empty book answers so). */
function side(v: unknown, kind: 'bid' | 'ask'): number | undefined {
  const p = probability(v);
  if (p === undefined) return undefined;
  if (kind === 'bid' && p === 0) return undefined;
  if (kind === 'ask' && p === 1) return undefined;
  return p;
}

/**
 * Parses one text frame of the market channel: a single event object or an
 * array of them (the initial dump). Unknown event types (`tick_size_change`,
 * `new_market`, `market_resolved`) and malformed entries are skipped.
 */
export function parseMarketMessage(text: string): MarketWsEvent[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return [];
  }
  const items = Array.isArray(body) ? body : [body];
  const out: MarketWsEvent[] = [];
  for (const raw of items) {
    if (raw === null || typeof raw !== 'object') continue;
    const m = raw as Record<string, unknown>;
    const tokenId = typeof m.asset_id === 'string' && TOKEN.test(m.asset_id) ? m.asset_id : undefined;
    switch (m.event_type) {
      case 'book':
        if (tokenId) {
          const e: MarketWsEvent = {
            type: 'book',
            tokenId,
            bestBid: bestOf(m.bids ?? m.buys, 'bid'),
            bestAsk: bestOf(m.asks ?? m.sells, 'ask'),
          };
          // docs/venues.md §8 D1: the snapshot carries `last_trade_price` (a string; the SDK allows it absent or null).
          const last = probability(m.last_trade_price);
          if (last !== undefined) e.lastTrade = last;
          out.push(e);
        }
        break;
      case 'best_bid_ask':
        if (tokenId) out.push({ type: 'best_bid_ask', tokenId, bestBid: side(m.best_bid, 'bid'), bestAsk: side(m.best_ask, 'ask') });
        break;
      case 'last_trade_price': {
        const price = probability(m.price);
        if (tokenId && price !== undefined) out.push({ type: 'last_trade_price', tokenId, price });
        break;
      }
      case 'price_change':
        // Since 2025-09 one message carries several assets' changes, each with the new best bid/ask.
        if (Array.isArray(m.price_changes)) {
          for (const c of m.price_changes as unknown[]) {
            if (c === null || typeof c !== 'object') continue;
            const pc = c as Record<string, unknown>;
            if (typeof pc.asset_id !== 'string' || !TOKEN.test(pc.asset_id)) continue;
            out.push({ type: 'best_bid_ask', tokenId: pc.asset_id, bestBid: side(pc.best_bid, 'bid'), bestAsk: side(pc.best_ask, 'ask') });
          }
        }
        break;
      default:
        break;
    }
  }
  return out;
}

interface TokenQuote {
  bestBid?: number;
  bestAsk?: number;
  lastTrade?: number;
  price?: number;
}

/** docs/venues.md "Prices": the REST path's display rule over the socket's best bid/ask and last trade. */
export function displayPrice(q: TokenQuote): number | undefined {
  const both = q.bestBid !== undefined && q.bestAsk !== undefined && q.bestAsk >= q.bestBid;
  return clobDisplayPrice({
    midpoint: both ? (q.bestBid! + q.bestAsk!) / 2 : undefined,
    spread: both ? q.bestAsk! - q.bestBid! : undefined,
    lastTrade: q.lastTrade,
  });
}

interface Conn {
  id: number;
  /** Tokens this connection carries (subscribed once it is open). */
  tokens: Set<string>;
  ws?: WebSocket;
  open: boolean;
  attempts: number;
  lastHeardAt: number;
  /** Last message with data (not `PONG`) for a token of ours; reset when the connection opens. */
  lastDataAt: number;
  /** A `book` snapshot arrived since the connection opened. */
  snapshot: boolean;
  /** Updates (not snapshots) arrived since the connection opened: its tokens are busy. */
  busy: boolean;
  pingTimer?: NodeJS.Timeout;
  retryTimer?: NodeJS.Timeout;
}

export interface MarketWsClient {
  /** The tokens to follow; the difference to the current set is subscribed and unsubscribed. */
  setTokens(tokens: Iterable<string>): void;
  /** Tokens and open connections, for logs and metrics. */
  stats(): { tokens: number; connections: number; open: number };
  close(): void;
}

export function createMarketWsClient(opts: MarketWsOptions): MarketWsClient {
  const o = { ...MARKET_WS_DEFAULTS, ...stripUndefined(opts) };
  const conns = new Set<Conn>();
  const connOf = new Map<string, Conn>();
  const quotes = new Map<string, TokenQuote>();
  let nextId = 1;
  let nextOpenAt = 0;
  let closed = false;

  function send(c: Conn, payload: unknown) {
    if (!c.open || !c.ws) return;
    c.ws.send(typeof payload === 'string' ? payload : JSON.stringify(payload));
  }

  function schedule(c: Conn, delay: number) {
    if (closed || c.retryTimer) return;
    // Connections open ≥ connectSpacingMs apart, across all of this client's connections.
    const at = Math.max(Date.now() + delay, nextOpenAt);
    nextOpenAt = at + o.connectSpacingMs;
    c.retryTimer = setTimeout(() => {
      c.retryTimer = undefined;
      connect(c);
    }, at - Date.now());
    c.retryTimer.unref();
  }

  function backoff(attempts: number): number {
    const cap = Math.min(o.backoffMaxMs, o.backoffMinMs * 2 ** Math.min(attempts, 16));
    return Math.round(cap / 2 + (Math.random() * cap) / 2);
  }

  function teardown(c: Conn) {
    if (c.pingTimer) clearInterval(c.pingTimer);
    c.pingTimer = undefined;
    c.open = false;
    const ws = c.ws;
    c.ws = undefined;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
    }
  }

  function lost(c: Conn, why: string) {
    teardown(c);
    if (closed || !conns.has(c)) return;
    if (c.tokens.size === 0) {
      conns.delete(c);
      return;
    }
    c.attempts++;
    const delay = backoff(c.attempts);
    opts.log.warn({ connection: c.id, why, tokens: c.tokens.size, retryInMs: delay }, 'Polymarket market WebSocket lost; reconnecting');
    schedule(c, delay);
  }

  function connect(c: Conn) {
    if (closed || !conns.has(c)) return;
    if (c.tokens.size === 0) {
      conns.delete(c);
      return;
    }
    const ws = new WebSocket(opts.url, { headers: { 'user-agent': o.userAgent ?? DEFAULT_USER_AGENT }, handshakeTimeout: 10_000 });
    c.ws = ws;
    c.lastHeardAt = Date.now();
    ws.on('open', () => {
      c.open = true;
      c.lastHeardAt = Date.now();
      c.lastDataAt = c.lastHeardAt;
      c.snapshot = false;
      c.busy = false;
      // docs/venues.md §4c: the first message names the channel and the tokens.
      send(c, { assets_ids: [...c.tokens], type: 'market', custom_feature_enabled: true });
      // One timer sends PING every pingMs and checks for silence a few times per silenceMs.
      const tick = Math.max(25, Math.min(o.pingMs, Math.floor(o.silenceMs / 4)));
      let lastPingAt = Date.now();
      c.pingTimer = setInterval(() => {
        const now = Date.now();
        if (now - c.lastHeardAt > o.silenceMs) return lost(c, 'silent');
        if (now - c.lastDataAt > o.dataSilenceMs && (c.busy || !c.snapshot) && c.tokens.size > 0)
          return lost(c, c.busy ? 'PONG but no data on busy tokens' : 'PONG but no book snapshot');
        if (now - lastPingAt >= o.pingMs - tick / 2) {
          lastPingAt = now;
          send(c, 'PING');
        }
      }, tick);
      c.pingTimer.unref();
    });
    ws.on('message', (data, isBinary) => {
      c.lastHeardAt = Date.now();
      if (c.attempts > 0) c.attempts = 0;
      if (isBinary) return;
      const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)).toString('utf8');
      if (text === 'PONG') return;
      for (const e of parseMarketMessage(text)) {
        if (!c.tokens.has(e.tokenId)) continue;
        c.lastDataAt = c.lastHeardAt;
        if (e.type === 'book') c.snapshot = true;
        else c.busy = true;
        apply(e);
      }
    });
    ws.on('close', (code) => lost(c, `closed (${code})`));
    ws.on('error', (err) => lost(c, err.message));
  }

  function apply(e: MarketWsEvent) {
    const q = quotes.get(e.tokenId);
    if (!q) return; // a token we let go of
    if (e.type === 'last_trade_price') q.lastTrade = e.price;
    else {
      q.bestBid = e.bestBid;
      q.bestAsk = e.bestAsk;
      if (e.type === 'book' && e.lastTrade !== undefined) q.lastTrade = e.lastTrade;
    }
    const price = displayPrice(q);
    if (price === undefined || price === q.price) return;
    q.price = price;
    opts.onPrice(e.tokenId, price);
  }

  function add(tokens: string[]) {
    let i = 0;
    // Fill connections that have room first, then open new ones.
    for (const c of conns) {
      if (i >= tokens.length) break;
      const room = o.maxTokensPerConnection - c.tokens.size;
      if (room <= 0 || (!c.ws && !c.retryTimer)) continue;
      const part = tokens.slice(i, i + room);
      i += part.length;
      for (const t of part) {
        c.tokens.add(t);
        connOf.set(t, c);
      }
      send(c, { assets_ids: part, operation: 'subscribe', custom_feature_enabled: true });
    }
    while (i < tokens.length) {
      const part = tokens.slice(i, i + o.maxTokensPerConnection);
      i += part.length;
      const now = Date.now();
      const c: Conn = {
        id: nextId++,
        tokens: new Set(part),
        open: false,
        attempts: 0,
        lastHeardAt: now,
        lastDataAt: now,
        snapshot: false,
        busy: false,
      };
      for (const t of part) connOf.set(t, c);
      conns.add(c);
      schedule(c, 0);
    }
  }

  function remove(tokens: string[]) {
    const byConn = new Map<Conn, string[]>();
    for (const t of tokens) {
      const c = connOf.get(t);
      connOf.delete(t);
      quotes.delete(t);
      if (!c) continue;
      c.tokens.delete(t);
      byConn.set(c, [...(byConn.get(c) ?? []), t]);
    }
    for (const [c, part] of byConn) {
      if (c.tokens.size === 0) {
        if (c.retryTimer) clearTimeout(c.retryTimer);
        c.retryTimer = undefined;
        teardown(c);
        conns.delete(c);
      } else {
        send(c, { assets_ids: part, operation: 'unsubscribe' });
      }
    }
  }

  return {
    setTokens(wanted) {
      if (closed) return;
      const next = new Set(wanted);
      const gone = [...connOf.keys()].filter((t) => !next.has(t));
      const fresh = [...next].filter((t) => !connOf.has(t));
      if (gone.length > 0) remove(gone);
      for (const t of fresh) quotes.set(t, {});
      if (fresh.length > 0) add(fresh);
    },
    stats() {
      let open = 0;
      for (const c of conns) if (c.open) open++;
      return { tokens: connOf.size, connections: conns.size, open };
    },
    close() {
      closed = true;
      for (const c of conns) {
        if (c.retryTimer) clearTimeout(c.retryTimer);
        teardown(c);
      }
      conns.clear();
      connOf.clear();
      quotes.clear();
    },
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
