import type { FakeRequest, FakeServer } from '../server.js';
import type { GammaState } from './gamma.js';

/**
 * A fake Polymarket CLOB enforcing docs/venues.md §4a–§4b:
 * - `POST /midpoints`, `/spreads`, `/last-trades-prices` (and `/prices`):
 *   a JSON array body of at most 500 `{token_id}` items (501 → 400
 *   `{"error":"Payload exceeds the limit"}`; not an array → 400
 *   `{"error":"Invalid payload"}`), answers in **decimal strings**; a token
 *   without a book (resolved, closed, unknown, empty book) is left out of
 *   `/midpoints` and `/spreads`, a never-traded token out of
 *   `/last-trades-prices`. The GET forms answer 400 `Invalid payload`.
 * - `GET /prices-history?market=<token>`: `{ history: [{ t, p }] }`, at most
 *   the last ≈ 31 days whatever `interval` asks, and `{"history":[]}` for a
 *   closed or resolved market below fidelity 720;
 * - `POST /batch-prices-history` `{"markets":[…]}`: at most 20 tokens (more →
 *   400), `{ history: { "<token>": [{ t, p }] } }` with the same points per
 *   token, tokens without points left out (§8 D2).
 * Books come from the Gamma fake's markets (`bestBid`/`bestAsk`/
 * `lastTradePrice` of the token's market, mirrored for the second token),
 * overridden per token by `state.books`; so the catalogue and the CLOB agree.
 */
export interface Book {
  bid?: number;
  ask?: number;
  last?: number;
  /** Every level of `GET /book` as [price, size], any order (default: a few levels around bid and ask). */
  levels?: { bids: Array<[number, number]>; asks: Array<[number, number]> };
  /** Closed or resolved market: no book, history empty. */
  closed?: boolean;
}

export interface ClobState {
  history?: Record<string, Array<{ t: number; p: number }>>;
  /** Price of a token for synthesised histories (default: its market's `outcomePrices`). */
  priceOf?: (tokenId: string) => number | undefined;
  /** Book of a token (default: from the Gamma state). */
  bookOf?: (tokenId: string) => Book | undefined;
  /** Per-token overrides of the book. */
  books?: Record<string, Book>;
  now?: () => number;
}

export const CLOB_BATCH_LIMIT = 500;
const HISTORY_DAYS = 31;
/** docs/venues.md §8 D2: tokens per `POST /batch-prices-history`. */
const HISTORY_BATCH_LIMIT = 20;

const str = (n: number) => String(Math.round(n * 10_000) / 10_000);

function batch(req: FakeRequest): { tokens: string[] } | { status: number; body: unknown } {
  const body = req.body;
  if (!Array.isArray(body)) return { status: 400, body: { error: 'Invalid payload' } };
  if (body.length > CLOB_BATCH_LIMIT) return { status: 400, body: { error: 'Payload exceeds the limit' } };
  const tokens: string[] = [];
  for (const item of body) {
    if (!item || typeof item !== 'object' || typeof item.token_id !== 'string') return { status: 400, body: { error: 'Invalid payload' } };
    tokens.push(item.token_id);
  }
  return { tokens };
}

export function serveClob(server: FakeServer, state: ClobState): void {
  const book = (t: string): Book | undefined => state.books?.[t] ?? state.bookOf?.(t);
  const hasBook = (b: Book | undefined): b is Book & { bid: number; ask: number } =>
    !!b && !b.closed && b.bid !== undefined && b.ask !== undefined;

  server.on('POST', '/midpoints', (req) => {
    const r = batch(req);
    if (!('tokens' in r)) return r;
    const out: Record<string, string> = {};
    for (const t of r.tokens) {
      const b = book(t);
      if (hasBook(b)) out[t] = str((b.bid + b.ask) / 2);
    }
    return { body: out };
  });
  server.on('POST', '/spreads', (req) => {
    const r = batch(req);
    if (!('tokens' in r)) return r;
    const out: Record<string, string> = {};
    for (const t of r.tokens) {
      const b = book(t);
      if (hasBook(b)) out[t] = str(b.ask - b.bid);
    }
    return { body: out };
  });
  server.on('POST', '/last-trades-prices', (req) => {
    const r = batch(req);
    if (!('tokens' in r)) return r;
    const out: Array<{ token_id: string; price: string; side: string }> = [];
    for (const t of r.tokens) {
      const b = book(t);
      if (b?.last !== undefined) out.push({ token_id: t, price: str(b.last), side: 'BUY' });
    }
    return { body: out };
  });
  server.on('POST', '/prices', (req) => {
    const r = batch(req);
    if (!('tokens' in r)) return r;
    const out: Record<string, Record<string, string>> = {};
    for (const t of r.tokens) {
      const b = book(t);
      if (hasBook(b)) out[t] = { BUY: str(b.bid), SELL: str(b.ask) };
    }
    return { body: out };
  });
  for (const path of ['/midpoints', '/spreads', '/last-trades-prices', '/prices']) {
    server.on('GET', path, () => ({ status: 400, body: { error: 'Invalid payload' } }));
  }

  // docs/venues.md §8 D1: one OrderBookSummary, prices and sizes as strings, bids ascending and asks
  // descending (the best level LAST); 404 for a token without a book, 400 for a missing or bad id.
  server.on('GET', '/book', (req) => {
    const token = req.query.get('token_id');
    if (!token || !/^\d{1,100}$/.test(token)) return { status: 400, body: { error: 'Invalid token id' } };
    const b = book(token);
    const noBook = { status: 404, body: { error: 'No orderbook exists for the requested token id' } };
    if (!b || b.closed || (b.bid === undefined && b.ask === undefined && !b.levels)) return noBook;
    const levels = b.levels ?? {
      bids: b.bid === undefined ? [] : [0.02, 0.01, 0].map((d, k): [number, number] => [b.bid! - d, 100 * (k + 1)]).filter(([p]) => p > 0),
      asks: b.ask === undefined ? [] : [0.02, 0.01, 0].map((d, k): [number, number] => [b.ask! + d, 50 * (k + 1)]).filter(([p]) => p < 1),
    };
    const wire = (ls: Array<[number, number]>, asc: boolean) =>
      [...ls].sort((x, y) => (asc ? x[0] - y[0] : y[0] - x[0])).map(([p, sz]) => ({ price: str(p), size: String(sz) }));
    return {
      body: {
        market: `0x${'0'.repeat(64)}`,
        asset_id: token,
        timestamp: String(state.now?.() ?? Date.now()),
        hash: '62f80ebfe02dc966260fb58f9400a5a92121d69f',
        bids: wire(levels.bids, true),
        asks: wire(levels.asks, false),
        min_order_size: '5',
        tick_size: '0.01',
        neg_risk: false,
        last_trade_price: b.last === undefined ? '' : str(b.last),
      },
    };
  });

  /** One token's history as the venue answers it (docs/venues.md §4a). */
  const historyOf = (market: string, fidelityMin: number): Array<{ t: number; p: number }> => {
    const b = book(market);
    // Resolved/closed markets answer an empty history below fidelity 720 (docs/venues.md §4a).
    if (b?.closed && fidelityMin < 720) return [];
    const now = Math.floor((state.now?.() ?? Date.now()) / 1000);
    const oldest = now - HISTORY_DAYS * 86_400;
    const given = state.history?.[market];
    if (given) return given.filter((pt) => pt.t >= oldest);
    const step = Math.max(1, fidelityMin) * 60;
    let seed = [...market].reduce((s, c) => (s * 31 + c.charCodeAt(0)) % 2147483647, 11);
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    let p = state.priceOf?.(market) ?? (b?.bid !== undefined && b.ask !== undefined ? (b.bid + b.ask) / 2 : 0.5);
    const history = [];
    // Two days of synthetic points: well inside the venue's ≈ 31-day horizon.
    for (let i = 0; i < 48; i++) {
      const t = Math.floor(now / step) * step - i * step;
      if (t < oldest) break;
      history.unshift({ t, p: Math.round(p * 1000) / 1000 });
      p = Math.min(0.98, Math.max(0.02, p + (rnd() - 0.5) * 0.04));
    }
    return history;
  };

  server.on('GET', '/prices-history', (req) => {
    const market = req.query.get('market');
    if (!market) return { status: 400, body: { error: 'market is required' } };
    const interval = req.query.get('interval');
    if (interval && (req.query.has('startTs') || req.query.has('endTs'))) {
      return { status: 400, body: { error: 'interval and startTs/endTs are mutually exclusive' } };
    }
    return { body: { history: historyOf(market, Number(req.query.get('fidelity') ?? 1)) } };
  });

  // docs/venues.md §8 D2: `{"markets":[≤ 20 tokens],"interval"?,"fidelity"?,"start_ts"?,"end_ts"?}` →
  // `{"history":{"<token>":[{t,p}]}}`; a token without points is left out (`{"history":{}}` when none has any).
  server.on('POST', '/batch-prices-history', (req) => {
    const body = req.body as Record<string, unknown> | undefined;
    const markets = body?.markets;
    if (!Array.isArray(markets) || markets.length === 0 || !markets.every((m) => typeof m === 'string' && /^\d{1,100}$/.test(m))) {
      return { status: 400, body: { error: 'markets is required: an array of token ids' } };
    }
    if (markets.length > HISTORY_BATCH_LIMIT) return { status: 400, body: { error: `markets: maximum ${HISTORY_BATCH_LIMIT}` } };
    const interval = body?.interval;
    if (interval !== undefined && (typeof interval !== 'string' || !['max', 'all', '1m', '1w', '1d', '6h', '1h'].includes(interval))) {
      return { status: 400, body: { error: 'invalid interval' } };
    }
    const fidelity = body?.fidelity === undefined ? 1 : Number(body.fidelity);
    if (!Number.isInteger(fidelity) || fidelity < 1) return { status: 400, body: { error: 'invalid fidelity' } };
    const history: Record<string, Array<{ t: number; p: number }>> = {};
    for (const m of markets as string[]) {
      const points = historyOf(m, fidelity);
      if (points.length > 0) history[m] = points;
    }
    return { body: { history } };
  });
}

/** Reads a Gamma JSON-string array (or a real array), or undefined. */
function arr(v: unknown): string[] | undefined {
  if (Array.isArray(v)) return v.map(String);
  if (typeof v !== 'string') return undefined;
  try {
    const a = JSON.parse(v);
    return Array.isArray(a) ? a.map(String) : undefined;
  } catch {
    return undefined;
  }
}

/** A Gamma market's outcome tokens: `positionIds` on Protocol V2 markets, `clobTokenIds` on the others (docs/venues.md §3). */
function tokensOf(m: any): string[] | undefined {
  return arr(m?.version === 'v2' ? m.positionIds : m?.clobTokenIds);
}

/** The market of the Gamma state (explicit or generated) holding a token, and the token's outcome index. */
function findToken(gamma: GammaState, tokenId: string): { market: any; side: number } | undefined {
  const owner = gamma.generated?.tokenOwner(tokenId);
  if (owner) {
    const e = gamma.generated!.event(owner.event);
    const market = e.markets.find((m: any) => tokensOf(m)?.[owner.side] === tokenId);
    return market ? { market, side: owner.side } : undefined;
  }
  for (const e of gamma.events) {
    for (const m of e?.markets ?? []) {
      const side = tokensOf(m)?.indexOf(tokenId) ?? -1;
      if (side >= 0) return { market: m, side };
    }
  }
  return undefined;
}

/** A Gamma number: a JSON number or a decimal string. */
const num = (v: unknown) => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : NaN;
  return Number.isFinite(n) ? n : undefined;
};

/** A book per token from the Gamma markets: `bestBid`/`bestAsk`/`lastTradePrice` price the first token; the second mirrors it. */
export function gammaBookOf(gamma: () => GammaState): (tokenId: string) => Book | undefined {
  return (tokenId) => {
    const found = findToken(gamma(), tokenId);
    if (!found) return undefined;
    const { market: m, side } = found;
    if (m.closed === true || m.active === false) return { closed: true };
    let bid = num(m.bestBid);
    let ask = num(m.bestAsk);
    let last = num(m.lastTradePrice);
    if (side === 1)
      [bid, ask, last] = [
        ask === undefined ? undefined : 1 - ask,
        bid === undefined ? undefined : 1 - bid,
        last === undefined ? undefined : 1 - last,
      ];
    return { bid, ask, last };
  };
}

/** A price lookup over Gamma markets: the token's `outcomePrices` entry (synthesised histories end there). */
export function gammaPriceOf(gamma: () => GammaState | any[]): (tokenId: string) => number | undefined {
  return (tokenId) => {
    const g = gamma();
    const found = findToken(Array.isArray(g) ? { events: g } : g, tokenId);
    const prices = found ? arr(found.market.outcomePrices) : undefined;
    const p = prices ? Number(prices[found!.side]) : NaN;
    return Number.isFinite(p) ? p : undefined;
  };
}
