import type { FakeRequest, FakeServer } from '../server.js';
import type { GeneratedKalshi } from './generate.js';
import { serveKalshiTrades } from './kalshi-trades.js';

/**
 * A fake Kalshi Trade API v2 enforcing docs/venues.md §5–§6:
 * - `GET /events`: `limit` 1..200 (default 200; more → 400), opaque `cursor`,
 *   `""` on the last page; `status=open|closed|settled` filters **events**
 *   (open = at least one `active` market) while nested markets keep every
 *   status; `with_nested_markets`; `min_updated_ts` (event `last_updated_ts`
 *   after it); `series_ticker`; `tickers` (event tickers).
 * - `GET /events/{event_ticker}`: `{ event, markets }` (`event.markets` only
 *   with `with_nested_markets=true`; the top-level `markets` always), 404.
 * - `GET /markets`: `limit` 0..1000, **default 100** (so 150 `tickers`
 *   without `limit` come back truncated to 100, with a cursor), `tickers`,
 *   `event_ticker`, `series_ticker`, `status` (`open` = `active`), `cursor`,
 *   `min_created_ts` (markets created since, the new-market increment; only
 *   with `status` unopened, open or none).
 * - `GET /series` (one un-paged answer; `category` filter) and `/series/{t}`.
 * - candlesticks: `start_ts`, `end_ts`, `period_interval` ∈ {1, 60, 1440} required.
 * Events come from `state.events` (raw wire rows) then `state.generated`;
 * `state.overlap = k` makes each page repeat the previous page's last k.
 * `/series` lists `state.series` when given, else one series per series
 * ticker of `state.events` (category taken from the event's deprecated
 * field, as a convenience for old fixtures), then the generated series.
 * Over a budget (budget.ts) it answers 429 `{"error":"too many requests"}`
 * without `Retry-After`.
 */
export interface KalshiState {
  events: any[];
  candles?: Record<string, any[]>;
  generated?: GeneratedKalshi;
  series?: any[];
  /** Repeats the last k events of a page at the start of the next (a listing by a moving order does). */
  overlap?: number;
  /** Wire trades for `GET /markets/trades` (kalshi-trades.ts). */
  trades?: any[];
  /** `orderbook_fp` per market ticker, as the venue sends it (default: levels around the market's yes bid and ask). */
  orderbooks?: Record<string, unknown>;
}

const bad = (message: string) => ({ status: 400, body: { error: { code: 'bad_request', message } } });
const notFound = (message: string) => ({ status: 404, body: { error: { code: 'not_found', message } } });

interface View {
  count: number;
  row(k: number): any;
  /** Cheap pre-filter for generated rows (min_updated_ts) before building them. */
  updatedSec(k: number): number | undefined;
}

function view(state: KalshiState): View {
  const explicit = state.events;
  const g = state.generated;
  const n = explicit.length;
  return {
    count: n + (g?.count ?? 0),
    row: (k) => (k < n ? explicit[k] : g!.event(k - n)),
    updatedSec: (k) => (k < n ? undefined : g!.updatedSec(k - n)),
  };
}

const isOpen = (e: any) => Array.isArray(e?.markets) && e.markets.some((m: any) => m?.status === 'active');
const SETTLED = new Set(['determined', 'finalized', 'amended', 'settled']);
function eventStatus(e: any): 'open' | 'closed' | 'settled' {
  if (isOpen(e)) return 'open';
  const ms = Array.isArray(e?.markets) ? e.markets : [];
  return ms.length > 0 && ms.every((m: any) => SETTLED.has(m?.status)) ? 'settled' : 'closed';
}

const encode = (p: number) => Buffer.from(`o:${p}`).toString('base64url');
const decode = (c: string) => {
  const m = /^o:(\d+)$/.exec(Buffer.from(c, 'base64url').toString());
  return m ? Number(m[1]) : undefined;
};

function intParam(q: URLSearchParams, name: string, def: number, min: number, max: number): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return def;
  const n = Number(v);
  return Number.isInteger(n) && n >= min && n <= max ? n : undefined;
}

function listEvents(state: KalshiState, req: FakeRequest) {
  const q = req.query;
  const limit = intParam(q, 'limit', 200, 1, 200);
  if (limit === undefined) return bad('limit must be between 1 and 200');
  const cursor = q.get('cursor');
  const at = cursor ? decode(cursor) : 0;
  if (at === undefined) return bad('invalid cursor');
  const start = cursor ? Math.max(0, at - (state.overlap ?? 0)) : at;
  const status = q.get('status');
  if (status && !['open', 'closed', 'settled', 'unopened'].includes(status)) return bad('invalid status');
  const minUpdatedRaw = q.get('min_updated_ts');
  const minUpdated = minUpdatedRaw === null ? undefined : Number(minUpdatedRaw);
  if (minUpdated !== undefined && !Number.isInteger(minUpdated)) return bad('min_updated_ts must be a unix timestamp');
  const series = q.get('series_ticker');
  const tickers = q.get('tickers')?.split(',').filter(Boolean);
  const nested = q.get('with_nested_markets') === 'true';
  const v = view(state);
  const events: any[] = [];
  let k = start;
  for (; k < v.count && events.length < limit; k++) {
    const pre = v.updatedSec(k);
    if (minUpdated !== undefined && pre !== undefined && pre <= minUpdated) continue;
    const e = v.row(k);
    if (!e || typeof e !== 'object') {
      events.push(e);
      continue;
    }
    if (status && Array.isArray(e.markets) && eventStatus(e) !== status) continue;
    if (series && e.series_ticker !== series) continue;
    if (tickers && !tickers.includes(e.event_ticker)) continue;
    if (minUpdated !== undefined && pre === undefined && !(Date.parse(e.last_updated_ts ?? '') / 1000 > minUpdated)) continue;
    events.push(nested ? e : { ...e, markets: undefined });
  }
  // The venue hands out a cursor while rows may remain; an exhausted scan ends the listing.
  return { body: { events, cursor: k < v.count ? encode(k) : '' } };
}

function findEvent(state: KalshiState, ticker: string): any {
  const i = state.generated?.indexOf(ticker);
  if (i !== undefined) return state.generated!.event(i);
  return state.events.find((e) => e?.event_ticker === ticker);
}

function findMarket(state: KalshiState, ticker: string): any {
  const g = state.generated?.market(ticker);
  if (g) return g;
  for (const e of state.events) for (const m of e?.markets ?? []) if (m?.ticker === ticker) return m;
  return undefined;
}

function listMarkets(state: KalshiState, req: FakeRequest) {
  const q = req.query;
  const limit = intParam(q, 'limit', 100, 0, 1000);
  if (limit === undefined) return bad('limit must be between 0 and 1000');
  const cursor = q.get('cursor');
  const start = cursor ? decode(cursor) : 0;
  if (start === undefined) return bad('invalid cursor');
  const minCreatedRaw = q.get('min_created_ts');
  const minCreated = minCreatedRaw === null ? undefined : Number(minCreatedRaw);
  if (minCreated !== undefined && !Number.isInteger(minCreated)) return bad('min_created_ts must be a unix timestamp');
  const statusQ = q.get('status');
  if (minCreated !== undefined && statusQ && !['unopened', 'open'].includes(statusQ))
    return bad('min_created_ts pairs only with status unopened or open');
  const wanted = statusQ === 'open' ? 'active' : statusQ === 'settled' ? 'finalized' : statusQ;
  let pool: any[];
  const tickers = q.get('tickers')?.split(',').filter(Boolean);
  if (tickers) pool = tickers.map((t) => findMarket(state, t)).filter(Boolean);
  else if (q.get('event_ticker')) pool = findEvent(state, q.get('event_ticker')!)?.markets ?? [];
  else pool = state.events.flatMap((e) => (Array.isArray(e?.markets) ? e.markets : []));
  if (q.get('series_ticker')) pool = pool.filter((m) => findEvent(state, m.event_ticker)?.series_ticker === q.get('series_ticker'));
  if (wanted) pool = pool.filter((m) => m?.status === wanted);
  // Markets created at or after the instant (generated markets were all created 60 days ago; explicit rows say when).
  if (minCreated !== undefined) pool = pool.filter((m) => Date.parse(m?.created_time ?? '') / 1000 >= minCreated);
  const markets = pool.slice(start, start + limit);
  return { body: { markets, cursor: start + limit < pool.length ? encode(start + limit) : '' } };
}

function seriesList(state: KalshiState): any[] {
  const out: any[] = [];
  if (state.series) out.push(...state.series);
  else {
    const seen = new Set<string>();
    for (const e of state.events) {
      if (!e?.series_ticker || seen.has(e.series_ticker)) continue;
      seen.add(e.series_ticker);
      out.push(seriesRow(e.series_ticker, typeof e.category === 'string' ? e.category : 'Exotics'));
    }
  }
  const g = state.generated;
  if (g) for (let s = 0; s < g.seriesCount; s++) out.push(g.series(s));
  return out;
}

export function serveKalshi(server: FakeServer, state: KalshiState): void {
  server.on('GET', '/events', (req) => listEvents(state, req));
  server.on('GET', '/events/:ticker', (req) => {
    const e = findEvent(state, req.params.ticker);
    if (!e) return notFound('event not found');
    const markets = Array.isArray(e.markets) ? e.markets : [];
    const event = req.query.get('with_nested_markets') === 'true' ? e : { ...e, markets: undefined };
    return { body: { event, markets } };
  });
  server.on('GET', '/markets', (req) => listMarkets(state, req));
  server.on('GET', '/markets/:ticker', (req) => {
    const m = findMarket(state, req.params.ticker);
    return m ? { body: { market: m } } : notFound('market not found');
  });
  // docs/venues.md §8 E1: YES and NO bids as [price, count] string pairs, ascending; an empty side is left out.
  server.on('GET', '/markets/:ticker/orderbook', (req) => {
    const depthRaw = req.query.get('depth');
    if (depthRaw !== null && !(/^\d+$/.test(depthRaw) && Number(depthRaw) <= 100)) return bad('depth must be between 0 and 100');
    const m = findMarket(state, req.params.ticker);
    if (!m) return notFound('market not found');
    const depth = depthRaw === null ? 0 : Number(depthRaw);
    const given = state.orderbooks?.[req.params.ticker];
    if (given !== undefined) return { body: { orderbook_fp: given } };
    const bid = Number(m.yes_bid_dollars);
    const ask = Number(m.yes_ask_dollars);
    const ob: Record<string, Array<[string, string]>> = {};
    const side = (best: number, sizes: number[]) =>
      sizes
        .map((sz, k): [string, string] => [(best - 0.01 * (sizes.length - 1 - k)).toFixed(4), sz.toFixed(2)])
        .filter(([p]) => Number(p) > 0)
        .slice(depth > 0 ? -depth : 0);
    if (m.status === 'active' && bid > 0) ob.yes_dollars = side(bid, [300, 200, 100]);
    if (m.status === 'active' && ask < 1 && ask > 0) ob.no_dollars = side(1 - ask, [30, 20, 10]);
    return { body: { orderbook_fp: ob } };
  });
  server.on('GET', '/series', (req) => {
    const cat = req.query.get('category');
    const all = seriesList(state);
    return { body: { series: cat ? all.filter((s) => (s.categories ?? [s.category]).includes(cat)) : all } };
  });
  server.on('GET', '/series/:series', (req) => {
    const s = seriesList(state).find((x) => x.ticker === req.params.series);
    return s ? { body: { series: s } } : notFound('series not found');
  });
  server.on('GET', '/series/:series/markets/:ticker/candlesticks', (req) => {
    const start = Number(req.query.get('start_ts'));
    const end = Number(req.query.get('end_ts'));
    const period = req.query.get('period_interval');
    if (!Number.isInteger(start) || !Number.isInteger(end) || !['1', '60', '1440'].includes(period ?? '')) {
      return bad('start_ts, end_ts and period_interval are required');
    }
    const market = findMarket(state, req.params.ticker);
    if (!market) return notFound('market not found');
    const all =
      state.candles?.[req.params.ticker] ??
      synthCandles(req.params.ticker, Number(market.last_price_dollars ?? 0.5), end, Number(period) * 60);
    return { body: { ticker: req.params.ticker, candlesticks: all.filter((c) => c.end_period_ts >= start && c.end_period_ts <= end) } };
  });
  // After `/markets/:ticker`: the fake server tries the routes registered last first.
  serveKalshiTrades(server, {
    get trades() {
      return state.trades ?? [];
    },
  });
}

/** Wire-format Kalshi series (the fields the official client's `Series` model requires). */
export function seriesRow(ticker: string, category: string, extra: Record<string, unknown> = {}) {
  return {
    ticker,
    frequency: 'custom',
    title: `${ticker} series`,
    category,
    categories: [category],
    tags: [],
    settlement_sources: [],
    contract_url: 'https://kalshi.com/contract.pdf',
    contract_terms_url: 'https://kalshi.com/terms.pdf',
    fee_type: 'quadratic',
    fee_multiplier: 1,
    additional_prohibitions: [],
    last_updated_ts: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

const d4 = (n: number) => Math.min(1, Math.max(0, n)).toFixed(4);

function synthCandles(ticker: string, last: number, end: number, stepSec: number): any[] {
  let seed = [...ticker].reduce((s, c) => (s * 31 + c.charCodeAt(0)) % 2147483647, 7);
  const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const out = [];
  let p = last;
  const endAligned = Math.floor(end / stepSec) * stepSec;
  for (let i = 0; i < 48; i++) {
    const ts = endAligned - i * stepSec;
    out.unshift({
      end_period_ts: ts,
      open_interest_fp: '1000.00',
      volume_fp: '10.00',
      price: {
        open_dollars: d4(p),
        low_dollars: d4(p),
        high_dollars: d4(p),
        close_dollars: d4(p),
        mean_dollars: d4(p),
        previous_dollars: d4(p),
      },
      yes_bid: { open_dollars: d4(p - 0.01), low_dollars: d4(p - 0.01), high_dollars: d4(p - 0.01), close_dollars: d4(p - 0.01) },
      yes_ask: { open_dollars: d4(p + 0.01), low_dollars: d4(p + 0.01), high_dollars: d4(p + 0.01), close_dollars: d4(p + 0.01) },
    });
    p = Math.min(0.98, Math.max(0.02, p + (rnd() - 0.5) * 0.04));
  }
  return out;
}

/** Wire-format Kalshi market (post-2026 `*_dollars` / `*_fp` strings only). */
export function kalshiMarket(
  ticker: string,
  eventTicker: string,
  title: string,
  bid: number,
  ask: number,
  last: number,
  volume: number,
  extra: Record<string, unknown> = {},
) {
  return {
    ticker,
    event_ticker: eventTicker,
    market_type: 'binary',
    title,
    yes_sub_title: title,
    no_sub_title: title,
    status: 'active',
    created_time: '2025-01-02T15:00:00Z',
    updated_time: '2025-01-03T15:00:00Z',
    open_time: '2025-01-03T15:00:00Z',
    close_time: '2029-07-01T14:00:00Z',
    latest_expiration_time: '2029-07-08T14:00:00Z',
    settlement_timer_seconds: 1800,
    yes_bid_dollars: d4(bid),
    yes_bid_size_fp: '100.00',
    yes_ask_dollars: d4(ask),
    yes_ask_size_fp: '100.00',
    no_bid_dollars: d4(1 - ask),
    no_ask_dollars: d4(1 - bid),
    last_price_dollars: d4(last),
    previous_yes_bid_dollars: d4(bid),
    previous_yes_ask_dollars: d4(ask),
    previous_price_dollars: d4(last),
    volume_fp: volume.toFixed(2),
    volume_24h_fp: '28.00',
    open_interest_fp: '16268.00',
    notional_value_dollars: '1.0000',
    liquidity_dollars: '0.0000',
    result: '',
    can_close_early: true,
    expiration_value: '',
    rules_primary: `If ${title}, resolves to Yes.`,
    rules_secondary: '',
    price_level_structure: 'linear_cent',
    price_ranges: [{ start: '0.0000', end: '1.0000', step: '0.0100' }],
    fractional_trading_enabled: false,
    ...extra,
  };
}

export function kalshiEvent(
  eventTicker: string,
  seriesTicker: string,
  title: string,
  category: string,
  markets: any[],
  extra: Record<string, unknown> = {},
) {
  return {
    event_ticker: eventTicker,
    series_ticker: seriesTicker,
    title,
    sub_title: `${title} (sub title)`,
    collateral_return_type: '',
    mutually_exclusive: false,
    category,
    settlement_sources: [],
    last_updated_ts: '2026-01-01T00:00:00Z',
    markets,
    ...extra,
  };
}
