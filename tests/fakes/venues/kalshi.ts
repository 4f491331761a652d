import type { FakeServer } from '../server.js';

/**
 * A fake Kalshi Trade API v2 speaking docs/venues.md §5–6: GET /events
 * (status=open, nested markets, opaque cursor, `""` on the last page) and
 * GET /series/:series/markets/:ticker/candlesticks (all three query params
 * required, `*_dollars` strings). Candles come from `state.candles` or are
 * synthesised deterministically, ending at the market's current price.
 */
export interface KalshiState {
  events: any[];
  candles?: Record<string, any[]>;
}

const OPEN = new Set(['active']);

export function serveKalshi(server: FakeServer, state: KalshiState): void {
  server.on('GET', '/events', (req) => {
    const q = req.query;
    const limit = Math.min(Math.max(Number(q.get('limit') ?? 200), 1), 200);
    const cursor = q.get('cursor');
    const offset = cursor ? Number(Buffer.from(cursor, 'base64url').toString().slice(2)) : 0;
    let rows = state.events;
    if (q.get('status') === 'open') {
      rows = rows.filter((e) => !Array.isArray(e?.markets) || e.markets.some((m: any) => OPEN.has(m?.status)));
    }
    const page = rows
      .slice(offset, offset + limit)
      .map((e) => (q.get('with_nested_markets') === 'true' ? e : { ...e, markets: undefined }));
    const next = offset + limit < rows.length ? Buffer.from(`o:${offset + limit}`).toString('base64url') : '';
    return { body: { events: page, cursor: next } };
  });
  server.on('GET', '/series/:series/markets/:ticker/candlesticks', (req) => {
    const start = Number(req.query.get('start_ts'));
    const end = Number(req.query.get('end_ts'));
    const period = req.query.get('period_interval');
    if (!Number.isInteger(start) || !Number.isInteger(end) || !['1', '60', '1440'].includes(period ?? '')) {
      return { status: 400, body: { error: { code: 'bad_request', message: 'start_ts, end_ts and period_interval are required' } } };
    }
    const market = state.events.flatMap((e) => e?.markets ?? []).find((m: any) => m?.ticker === req.params.ticker);
    if (!market) return { status: 404, body: { error: { code: 'not_found', message: 'market not found' } } };
    const all =
      state.candles?.[req.params.ticker] ??
      synthCandles(req.params.ticker, Number(market.last_price_dollars ?? 0.5), end, Number(period) * 60);
    return { body: { ticker: req.params.ticker, candlesticks: all.filter((c) => c.end_period_ts >= start && c.end_period_ts <= end) } };
  });
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
    open_time: '2025-01-03T15:00:00Z',
    close_time: '2029-07-01T14:00:00Z',
    settlement_timer_seconds: 1800,
    yes_bid_dollars: d4(bid),
    yes_ask_dollars: d4(ask),
    no_bid_dollars: d4(1 - ask),
    no_ask_dollars: d4(1 - bid),
    last_price_dollars: d4(last),
    volume_fp: volume.toFixed(2),
    volume_24h_fp: '28.00',
    open_interest_fp: '16268.00',
    notional_value_dollars: '1.0000',
    liquidity_dollars: '0.0000',
    result: '',
    can_close_early: true,
    rules_primary: `If ${title}, resolves to Yes.`,
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
    markets,
    ...extra,
  };
}
