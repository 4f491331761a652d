import type { FakeAnswer, FakeRequest, FakeServer } from '../server.js';

/**
 * The fake Kalshi `GET /markets/trades` (docs/venues.md §8 E2): `ticker` (one), `min_ts`/`max_ts`
 * (unix seconds, inclusive here), `limit` 0..1000 (default 100; more → 400), `cursor` (opaque,
 * keeps no filters), `is_block_trade`. `{ trades, cursor }`, `cursor` `""` on the last page,
 * newest first; counts and prices are decimal strings. Registered after `/markets/:ticker`
 * (the fake server tries the latest route first), which would otherwise take the path.
 */
export interface KalshiTradesState {
  /** Wire rows (`kalshiTrade` builds one); malformed ones are served as given. */
  trades: any[];
}

const bad = (message: string): FakeAnswer => ({ status: 400, body: { error: { code: 'bad_request', message } } });
const encode = (p: number) => Buffer.from(`t:${p}`).toString('base64url');
const decode = (c: string) => {
  const m = /^t:(\d+)$/.exec(Buffer.from(c, 'base64url').toString());
  return m ? Number(m[1]) : undefined;
};

function listTrades(state: KalshiTradesState, req: FakeRequest): FakeAnswer {
  const q = req.query;
  const limitRaw = q.get('limit');
  const limit = limitRaw === null || limitRaw === '' ? 100 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 0 || limit > 1000) return bad('limit must be between 0 and 1000');
  const ts = (name: string) => {
    const v = q.get(name);
    if (v === null || v === '') return null;
    return /^\d+$/.test(v) ? Number(v) : undefined;
  };
  const minTs = ts('min_ts');
  const maxTs = ts('max_ts');
  if (minTs === undefined || maxTs === undefined) return bad('min_ts and max_ts must be unix timestamps in seconds');
  const cursor = q.get('cursor');
  const start = cursor ? decode(cursor) : 0;
  if (start === undefined) return bad('invalid cursor');
  const block = q.get('is_block_trade');
  const ticker = q.get('ticker');
  const rows = state.trades.filter((t) => {
    if (!t || typeof t !== 'object') return true;
    const sec = Date.parse(t.created_time) / 1000;
    if (ticker && t.ticker !== ticker) return false;
    if (minTs !== null && sec < minTs) return false;
    if (maxTs !== null && sec > maxTs) return false;
    if (block === 'true' && t.is_block_trade !== true) return false;
    if (block === 'false' && t.is_block_trade === true) return false;
    return true;
  });
  const sorted = [...rows].sort((x, y) => (Date.parse(y?.created_time) || 0) - (Date.parse(x?.created_time) || 0));
  const page = sorted.slice(start, start + limit);
  return { body: { trades: page, cursor: start + limit < sorted.length ? encode(start + limit) : '' } };
}

export function serveKalshiTrades(server: FakeServer, state: KalshiTradesState): void {
  server.on('GET', '/markets/trades', (req) => listTrades(state, req));
}

/** A Kalshi trade as the venue sends it (§8 E2): `count_fp` and prices as decimal strings, microsecond ISO time. */
export function kalshiTrade(p: {
  ticker: string;
  count: number;
  yesPrice: number;
  takerSide: 'yes' | 'no';
  at: Date;
  id?: string;
  block?: boolean;
}) {
  return {
    trade_id: p.id ?? `${p.ticker}-${p.at.getTime()}-${p.count}`,
    ticker: p.ticker,
    count_fp: p.count.toFixed(2),
    yes_price_dollars: p.yesPrice.toFixed(4),
    no_price_dollars: (1 - p.yesPrice).toFixed(4),
    taker_outcome_side: p.takerSide,
    taker_book_side: p.takerSide === 'yes' ? 'bid' : 'ask',
    created_time: p.at.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'),
    is_block_trade: p.block ?? false,
  };
}
