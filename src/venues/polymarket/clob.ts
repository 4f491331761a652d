import { buildUrl, requestJson, type RequestOptions } from '../../lib/http.js';
import { mapClobHistory } from './map.js';

/**
 * Polymarket CLOB, one call (docs/venues.md "What we call", chart backfill):
 * GET /prices-history?market=<yes token id>&interval=max&fidelity=60 → hourly points.
 */
export async function getClobPriceHistory(
  opts: { baseUrl: string; http?: RequestOptions },
  yesTokenId: string,
): Promise<{ points: Array<{ ts: Date; price: number }>; skipped: number }> {
  const url = buildUrl(opts.baseUrl, '/prices-history', { market: yesTokenId, interval: 'max', fidelity: 60 });
  return mapClobHistory(await requestJson<unknown>(url, opts.http));
}
