import { z } from 'zod';
import { buildUrl, requestJson, UpstreamError, type RequestOptions } from '../../lib/http.js';
import { mapListedPage, type CatalogueGroup, type ListedPage } from '../catalogue.js';
import { isGammaPlaceholder, mapGammaCatalogueEvent } from './gamma-map.js';

/** Polymarket Gamma API (docs/venues.md §3): the keyset listing and single-event reads. */
export interface GammaOptions {
  baseUrl: string;
  http?: RequestOptions;
}

// ------------------------------------------------------------- keyset listing

/**
 * docs/venues.md "What we call" and §3: the catalogue is listed with
 * `GET /events/keyset?closed=false&order=id&ascending=false&limit=100[&after_cursor=C]`
 * (the offset listing `GET /events?offset=N` answers 422 past offset 2000 and is sunset).
 * `next_cursor` is present only on a full page, so the last page may be
 * empty; passing `cursor=` instead of `after_cursor=` would return page 1
 * forever, hence the repeated-cursor guard.
 */
export const GAMMA_KEYSET_LIMIT = 100;
/** 100,000 events at 100 a page: far above today's ≈ 22,000; a pass that reaches it ends unfinished. */
const KEYSET_MAX_PAGES = 1000;

/**
 * `{ events, next_cursor }`. As the SDKs read it: `events: null` is an empty
 * page, and an empty `next_cursor` (`""`) ends the listing like an absent one.
 */
export const GammaKeysetEnvelopeSchema = z.object({
  events: z
    .array(z.unknown())
    .nullish()
    .transform((v) => v ?? []),
  next_cursor: z
    .string()
    .nullish()
    .transform((v) => v || undefined),
});

export interface GammaKeysetOptions {
  /** Resume after this cursor (a previous page's `nextCursor`). */
  afterCursor?: string;
  /** `order` field (camelCase): `id` (default) lists newest first with `ascending=false`. */
  order?: string;
  ascending?: boolean;
  /** `closed=false` (default) lists open events. */
  closed?: boolean;
  maxPages?: number;
}

export type GammaKeysetPage = ListedPage;

/**
 * Yields the keyset listing one mapped page at a time, so memory does not
 * grow with the catalogue. Events already yielded in this pass are left out
 * (and counted in `duplicates`), so a page never holds an id twice and no
 * id is written twice in one pass.
 */
export async function* listGammaEventsKeyset(client: GammaOptions, opts: GammaKeysetOptions = {}): AsyncGenerator<GammaKeysetPage> {
  const pass = { seen: new Set<string>(), cursors: new Set<string>() };
  let cursor = opts.afterCursor;
  const maxPages = opts.maxPages ?? KEYSET_MAX_PAGES;
  for (let page = 0; page < maxPages; page++) {
    const url = buildUrl(client.baseUrl, '/events/keyset', {
      closed: opts.closed ?? false,
      order: opts.order ?? 'id',
      ascending: opts.ascending ?? false,
      limit: GAMMA_KEYSET_LIMIT,
      after_cursor: cursor,
    });
    const body = await requestJson<unknown>(url, client.http);
    const env = GammaKeysetEnvelopeSchema.safeParse(body);
    // The envelope itself being wrong is an outage, not a bad row: fail the pass.
    if (!env.success) throw new UpstreamError('Gamma /events/keyset did not answer { events, next_cursor }', 200, url);
    const out = mapListedPage(
      env.data.events,
      mapGammaCatalogueEvent,
      pass,
      env.data.next_cursor,
      () => new UpstreamError('Gamma /events/keyset repeated a cursor', 200, url),
    );
    yield out;
    if (out.final) return;
    cursor = out.nextCursor;
  }
}

/**
 * `GET /events/{id}` mapped as the catalogue maps it: a group that left the
 * listing is re-read to learn whether it closed or resolved. `undefined` on
 * 404 (gone), `null` when the row is malformed (leave ours as it is).
 */
export async function getGammaCatalogueEvent(client: GammaOptions, eventId: string): Promise<CatalogueGroup | null | undefined> {
  const url = buildUrl(client.baseUrl, `/events/${encodeURIComponent(eventId)}`);
  try {
    return mapGammaCatalogueEvent(await requestJson<unknown>(url, client.http)).value ?? null;
  } catch (err) {
    if (err instanceof UpstreamError && err.status === 404) return undefined;
    throw err;
  }
}

// ------------------------------------------------------- new markets (keyset)

/** docs/venues.md §8 C3: a keyset market names its parent event in `events[0].id`. */
const GammaKeysetMarketSchema = z.object({
  id: z.string().regex(/^\d{1,20}$/),
  active: z.boolean().nullish(),
  closed: z.boolean().nullish(),
  events: z.array(z.object({ id: z.string().regex(/^\d{1,20}$/) })).min(1),
});

export const GammaMarketsKeysetEnvelopeSchema = z.object({
  markets: z
    .array(z.unknown())
    .nullish()
    .transform((v) => v ?? []),
  next_cursor: z
    .string()
    .nullish()
    .transform((v) => v || undefined),
});

/** Pages of `/markets/keyset` one increment reads at most (100 markets each). */
const NEW_MARKETS_MAX_PAGES = 20;

export interface GammaNewMarkets {
  /** Markets newer than `aboveId` that have opened (placeholders left out), with their event's Gamma id. */
  markets: Array<{ id: string; eventId: string }>;
  skipped: number;
  /** False when the page cap stopped the read before it reached `aboveId`. */
  complete: boolean;
}

/**
 * docs/venues.md "What we call", new markets inside known groups:
 * `GET /markets/keyset?closed=false&order=id&ascending=false&limit=100[&after_cursor=C]`,
 * newest first, until a page reaches a market id at or below `aboveId` (the
 * highest one we hold) or the listing ends.
 */
export async function listGammaNewMarkets(client: GammaOptions, aboveId: bigint): Promise<GammaNewMarkets> {
  const out: GammaNewMarkets = { markets: [], skipped: 0, complete: false };
  let cursor: string | undefined;
  const cursors = new Set<string>();
  for (let page = 0; page < NEW_MARKETS_MAX_PAGES; page++) {
    const url = buildUrl(client.baseUrl, '/markets/keyset', {
      closed: false,
      order: 'id',
      ascending: false,
      limit: GAMMA_KEYSET_LIMIT,
      after_cursor: cursor,
    });
    const env = GammaMarketsKeysetEnvelopeSchema.safeParse(await requestJson<unknown>(url, client.http));
    if (!env.success) throw new UpstreamError('Gamma /markets/keyset did not answer { markets, next_cursor }', 200, url);
    let reached = false;
    for (const raw of env.data.markets) {
      const m = GammaKeysetMarketSchema.safeParse(raw);
      if (!m.success) {
        out.skipped++;
        continue;
      }
      if (BigInt(m.data.id) <= aboveId) {
        reached = true;
        continue;
      }
      if (isGammaPlaceholder(m.data)) continue;
      out.markets.push({ id: m.data.id, eventId: m.data.events[0].id });
    }
    cursor = env.data.next_cursor;
    if (reached || cursor === undefined) {
      out.complete = true;
      return out;
    }
    if (cursors.has(cursor)) throw new UpstreamError('Gamma /markets/keyset repeated a cursor', 200, url);
    cursors.add(cursor);
  }
  return out;
}
