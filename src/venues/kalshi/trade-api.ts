import { buildUrl, requestJson, UpstreamError, type RequestOptions } from '../../lib/http.js';
import type { Listing, VenueGroup } from '../groups.js';
import { KalshiEventsPageSchema, mapKalshiCandles, mapKalshiEvent } from './map.js';

/**
 * Kalshi Trade API v2, exactly the calls of docs/venues.md "What we call":
 * GET /events?status=open&with_nested_markets=true&limit=200&cursor=C until
 * cursor is "", and GET /series/{series}/markets/{ticker}/candlesticks for
 * the chart backfill. Market data needs no authentication.
 */
export const KALSHI_PAGE = 200;
const MAX_PAGES = 500;

export interface KalshiOptions {
  baseUrl: string;
  http?: RequestOptions;
}

export async function listOpenKalshiEvents(opts: KalshiOptions): Promise<Listing & { truncated: boolean }> {
  const groups: VenueGroup[] = [];
  const malformedGroupIds: string[] = [];
  let skipped = 0;
  let cursor: string | undefined;
  const seenCursors = new Set<string>();
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = buildUrl(opts.baseUrl, '/events', { status: 'open', with_nested_markets: true, limit: KALSHI_PAGE, cursor });
    const body = await requestJson<unknown>(url, opts.http);
    const parsed = KalshiEventsPageSchema.safeParse(body);
    if (!parsed.success) throw new UpstreamError('Kalshi /events did not answer { events, cursor }', 200, url);
    for (const raw of parsed.data.events) {
      const r = mapKalshiEvent(raw);
      skipped += r.skipped;
      if (r.value) groups.push(r.value);
      else if (r.malformedId) malformedGroupIds.push(r.malformedId);
    }
    const next = parsed.data.cursor ?? '';
    if (next === '') return { groups, skipped, malformedGroupIds, truncated: false };
    // A cursor we already followed would loop forever: treat it as a broken listing.
    if (seenCursors.has(next)) throw new UpstreamError('Kalshi /events repeated a cursor', 200, url);
    seenCursors.add(next);
    cursor = next;
  }
  return { groups, skipped, malformedGroupIds, truncated: true };
}

/** Hourly candlesticks of one market between two instants (unix seconds on the wire). */
export async function getKalshiCandles(
  opts: KalshiOptions,
  seriesTicker: string,
  marketTicker: string,
  from: Date,
  to: Date,
): Promise<{ points: Array<{ ts: Date; price: number }>; skipped: number }> {
  const url = buildUrl(
    opts.baseUrl,
    `/series/${encodeURIComponent(seriesTicker)}/markets/${encodeURIComponent(marketTicker)}/candlesticks`,
    { start_ts: Math.floor(from.getTime() / 1000), end_ts: Math.floor(to.getTime() / 1000), period_interval: 60 },
  );
  return mapKalshiCandles(await requestJson<unknown>(url, opts.http));
}
