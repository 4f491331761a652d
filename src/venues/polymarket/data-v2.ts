import { z } from 'zod';
import { UpstreamError } from '../../lib/http.js';
import { venueGet, type VenueClient } from '../clients.js';

/**
 * Polymarket Data API v2 (docs/venues.md §8 A): `{ data, pagination }`
 * envelopes, snake_case rows, cursor-only paging (sending `offset` is a 400),
 * filters resent identically on every page. Only what "What we call" lists:
 * a followed trader's fills, `GET /v2/activity?user=W&type=TRADE&start=S&limit=100`
 * (one `type` per call, §8 A8 and F.5).
 */

/** A JSON number or a decimal string (the SDKs' "Decimalish"), finite. */
const decimal = z
  .union([z.number(), z.string().regex(/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/)])
  .transform(Number)
  .pipe(z.number().finite());
const text = z
  .string()
  .nullish()
  .transform((v) => v ?? '');

/** A TRADE row of `/v2/activity` as we use it (the Go SDK's required fields for TRADE, §8 A8). */
export const ActivityTradeSchema = z.object({
  proxy_wallet: z.string().regex(/^0x[a-fA-F0-9]{40}$/),
  timestamp: z.number().int().nonnegative(),
  condition_id: z.string().min(1),
  type: z.literal('TRADE'),
  size: decimal.pipe(z.number().positive()),
  usdc_size: decimal,
  transaction_hash: z.string().min(1),
  price: decimal.pipe(z.number().min(0).max(1)),
  token_id: z.string().min(1),
  side: z.enum(['BUY', 'SELL']),
  title: text,
  slug: text,
  event_slug: text,
  outcome: text,
  name: text,
  pseudonym: text,
  profile_image: text,
});
export type ActivityTrade = z.infer<typeof ActivityTradeSchema>;

const EnvelopeSchema = z.object({
  data: z.array(z.unknown()).nullable(),
  pagination: z.object({ has_more: z.boolean().optional(), next_cursor: z.string().nullish() }).partial().nullish(),
});

export const ACTIVITY_PAGE = 100;

export interface ActivityRead {
  /** Parsed TRADE rows, newest first as served. */
  rows: ActivityTrade[];
  /** Rows that failed strict parsing (skipped and counted, never zeros). */
  skipped: number;
  requests: number;
  /** True when the page cap stopped the walk before the venue's last page. */
  truncated: boolean;
}

/**
 * A trader's fills since `start` (unix seconds), newest first: one page of
 * `limit` 100, then the next by `pagination.next_cursor` (same filters) while
 * `more(page)` says the page held only unseen fills, at most `maxPages`.
 */
export async function fetchActivityTrades(
  client: Pick<VenueClient, 'baseUrl' | 'http'>,
  user: string,
  opts: { start: number; maxPages?: number; more?: (page: ActivityTrade[]) => boolean },
): Promise<ActivityRead> {
  const maxPages = opts.maxPages ?? 5;
  const out: ActivityRead = { rows: [], skipped: 0, requests: 0, truncated: false };
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const path = '/v2/activity';
    const body = await venueGet(client, path, { user, type: 'TRADE', start: opts.start, limit: ACTIVITY_PAGE, cursor });
    out.requests++;
    const env = EnvelopeSchema.safeParse(body);
    if (!env.success) throw new UpstreamError('Data /v2/activity did not answer { data, pagination }', 200, client.baseUrl + path);
    const rows: ActivityTrade[] = [];
    for (const item of env.data.data ?? []) {
      const r = ActivityTradeSchema.safeParse(item);
      if (r.success) rows.push(r.data);
      else out.skipped++;
    }
    out.rows.push(...rows);
    const next = env.data.pagination?.next_cursor;
    // An empty or absent next_cursor ends the listing (docs/venues.md "What we call").
    if (!next || env.data.pagination?.has_more === false) return out;
    if (opts.more && !opts.more(rows)) return out;
    if (page === maxPages - 1) out.truncated = true;
    cursor = next;
  }
  return out;
}
