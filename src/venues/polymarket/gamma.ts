import { buildUrl, requestJson, UpstreamError, type RequestOptions } from '../../lib/http.js';
import type { Listing, VenueGroup } from '../groups.js';
import { mapGammaEvent } from './map.js';

/**
 * Polymarket Gamma API, exactly the calls of docs/venues.md "What we call":
 * GET /events?active=true&closed=false&order=volume24hr&ascending=false&limit=100&offset=N
 * until a short page, and GET /events/{id} for a known open group that left the list.
 */
export const GAMMA_PAGE = 100;
/** Third-party tools cap Gamma's offset at 10,000; stop there rather than loop forever. */
const MAX_PAGES = 100;

export interface GammaOptions {
  baseUrl: string;
  http?: RequestOptions;
}

export async function listOpenGammaEvents(opts: GammaOptions): Promise<Listing & { truncated: boolean }> {
  const groups: VenueGroup[] = [];
  const malformedGroupIds: string[] = [];
  let skipped = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const url = buildUrl(opts.baseUrl, '/events', {
      active: true,
      closed: false,
      order: 'volume24hr',
      ascending: false,
      limit: GAMMA_PAGE,
      offset: page * GAMMA_PAGE,
    });
    const body = await requestJson<unknown>(url, opts.http);
    // The envelope itself being wrong is an outage, not a bad row: fail the run.
    if (!Array.isArray(body)) throw new UpstreamError('Gamma /events did not answer a JSON array', 200, url);
    for (const raw of body) {
      const r = mapGammaEvent(raw);
      skipped += r.skipped;
      if (r.value) groups.push(r.value);
      else if (r.malformedId) malformedGroupIds.push(r.malformedId);
    }
    if (body.length < GAMMA_PAGE) return { groups, skipped, malformedGroupIds, truncated: false };
  }
  return { groups, skipped, malformedGroupIds, truncated: true };
}

/**
 * Re-reads one event by its Gamma id. `undefined` when Gamma answers 404
 * (the event is gone); `null` when the row is malformed (leave ours as is).
 */
export async function getGammaEvent(opts: GammaOptions, eventId: string): Promise<VenueGroup | null | undefined> {
  const url = buildUrl(opts.baseUrl, `/events/${encodeURIComponent(eventId)}`);
  try {
    const body = await requestJson<unknown>(url, opts.http);
    return mapGammaEvent(body).value ?? null;
  } catch (err) {
    if (err instanceof UpstreamError && err.status === 404) return undefined;
    throw err;
  }
}
