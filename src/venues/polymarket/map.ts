import { z } from 'zod';
import { normalizeCategory, roundPrice, type GroupStatus, type MarketStatus, type VenueGroup, type VenueMarket } from '../groups.js';

/**
 * Pure mapping of Polymarket Gamma events (docs/venues.md §3) to our groups. No
 * I/O here: gamma.ts fetches, this file parses strictly and maps, so it can
 * be unit-tested on fixtures shaped like the real responses.
 */

const DECIMAL = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** Gamma encodes some arrays as JSON inside a string (`"[\"Yes\", \"No\"]"`): decode the second layer. */
export function decodeJsonStringArray(value: string): string[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) return undefined;
  return parsed;
}

const jsonStringArray = z.string().transform((s, ctx) => {
  const arr = decodeJsonStringArray(s);
  if (!arr) {
    ctx.addIssue({ code: 'custom', message: 'not a JSON-encoded array of strings' });
    return z.NEVER;
  }
  return arr;
});

const jsonPriceArray = jsonStringArray.transform((arr, ctx) => {
  const out: number[] = [];
  for (const v of arr) {
    const n = DECIMAL.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isFinite(n) || n < 0 || n > 1) {
      ctx.addIssue({ code: 'custom', message: `outcome price ${v.slice(0, 20)} is not in [0, 1]` });
      return z.NEVER;
    }
    out.push(n);
  }
  return out;
});

const numericId = z.string().regex(/^\d{1,20}$/);

export const GammaMarketSchema = z.object({
  id: numericId,
  question: z.string().trim().min(1).max(1000),
  outcomes: jsonStringArray,
  outcomePrices: jsonPriceArray,
  clobTokenIds: jsonStringArray.nullish(),
  positionIds: z.array(z.string()).nullish(),
  version: z.string().nullish(),
  volume: z.string().regex(DECIMAL).nullish(),
  volumeNum: z.number().finite().nonnegative().nullish(),
  active: z.boolean().nullish(),
  closed: z.boolean().nullish(),
  umaResolutionStatus: z.string().nullish(),
});
export type GammaMarket = z.infer<typeof GammaMarketSchema>;

export const GammaEventSchema = z.object({
  id: numericId,
  slug: z.string().max(300).nullish(),
  title: z.string().trim().min(1).max(1000),
  description: z.string().nullish(),
  image: z.string().nullish(),
  icon: z.string().nullish(),
  active: z.boolean().nullish(),
  closed: z.boolean().nullish(),
  archived: z.boolean().nullish(),
  volume: z.number().nullish(),
  category: z.string().nullish(),
  // Tags and markets are parsed leniently here and strictly row by row below.
  tags: z.array(z.unknown()).nullish(),
  markets: z.array(z.unknown()).nullish(),
});

export interface MapResult<T> {
  value?: T;
  /** Rows left out (the event itself, or some of its markets). */
  skipped: number;
  /** The group id when the event row itself was malformed but named an id. */
  malformedId?: string;
}

function isHttpUrl(s: string | null | undefined): s is string {
  return typeof s === 'string' && /^https?:\/\/\S+$/.test(s) && s.length <= 2000;
}

function marketStatus(m: GammaMarket): MarketStatus {
  if (m.closed) {
    const settled = m.outcomePrices.length > 0 && m.outcomePrices.every((p) => p === 0 || p === 1);
    return m.umaResolutionStatus === 'resolved' || settled ? 'resolved' : 'closed';
  }
  return m.active === false ? 'closed' : 'active';
}

/** One Gamma market → ours, or undefined when it fails strict parsing. */
export function mapGammaMarket(raw: unknown): VenueMarket | undefined {
  const parsed = GammaMarketSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const m = parsed.data;
  if (m.outcomePrices.length === 0) return undefined;
  // docs/venues.md "Our ids": the price of the "Yes" outcome, else the first outcome.
  const yesIdx = Math.max(
    0,
    m.outcomes.findIndex((o) => o.trim().toLowerCase() === 'yes'),
  );
  const priceIdx = yesIdx < m.outcomePrices.length ? yesIdx : 0;
  // Protocol V2 markets carry real arrays in positionIds; pick by version, not by presence.
  const tokens = m.version === 'v2' ? (m.positionIds ?? []) : (m.clobTokenIds ?? []);
  const volume = m.volumeNum ?? (m.volume != null ? Number(m.volume) : 0);
  return {
    id: `pm-${m.id}`,
    venue: 'polymarket',
    venueMarketId: m.id,
    title: m.question,
    yesPrice: roundPrice(m.outcomePrices[priceIdx]),
    volume: Number.isFinite(volume) && volume >= 0 ? volume : 0,
    status: marketStatus(m),
    yesTokenId: tokens[yesIdx] ?? tokens[0] ?? null,
  };
}

function firstTagLabel(tags: unknown[] | null | undefined): string | undefined {
  for (const t of tags ?? []) {
    const label = (t as { label?: unknown } | null)?.label;
    if (typeof label === 'string' && label.trim()) return label;
  }
  return undefined;
}

/** One Gamma event (with its nested markets) → our group. */
export function mapGammaEvent(raw: unknown): MapResult<VenueGroup> {
  const parsed = GammaEventSchema.safeParse(raw);
  if (!parsed.success) {
    const id = (raw as { id?: unknown } | null)?.id;
    return { skipped: 1, malformedId: typeof id === 'string' && /^\d{1,20}$/.test(id) ? `pm-${id}` : undefined };
  }
  const e = parsed.data;
  const markets: VenueMarket[] = [];
  let skipped = 0;
  for (const rm of e.markets ?? []) {
    const m = mapGammaMarket(rm);
    if (m) markets.push(m);
    else skipped++;
  }
  let status: GroupStatus = 'active';
  if (e.closed) status = markets.length > 0 && markets.every((m) => m.status === 'resolved') ? 'resolved' : 'closed';
  else if (e.active === false || e.archived === true) status = 'closed';
  const slug = (e.slug ?? '').trim().toLowerCase();
  return {
    skipped,
    value: {
      id: `pm-${e.id}`,
      venue: 'polymarket',
      venueEventId: e.id,
      slug: /^[a-z0-9][a-z0-9-]*$/.test(slug) ? slug : `pm-${e.id}`,
      title: e.title,
      description: e.description ?? '',
      // The event's category when Gamma sets it, else its first tag (e.g. "Crypto").
      category: normalizeCategory(e.category ?? firstTagLabel(e.tags)),
      status,
      imageUrl: isHttpUrl(e.image) ? e.image : isHttpUrl(e.icon) ? e.icon : null,
      seriesTicker: null,
      markets,
    },
  };
}

export const ClobHistorySchema = z.object({
  history: z.array(z.unknown()),
});
const ClobPointSchema = z.object({ t: z.number().int().positive(), p: z.number().finite().min(0).max(1) });

/** CLOB `/prices-history` body → points (unix seconds → Date); malformed points are skipped. */
export function mapClobHistory(raw: unknown): { points: Array<{ ts: Date; price: number }>; skipped: number } {
  const parsed = ClobHistorySchema.safeParse(raw);
  if (!parsed.success) throw new Error('prices-history answer is not { history: [...] }');
  const points: Array<{ ts: Date; price: number }> = [];
  let skipped = 0;
  for (const row of parsed.data.history) {
    const p = ClobPointSchema.safeParse(row);
    if (p.success) points.push({ ts: new Date(p.data.t * 1000), price: roundPrice(p.data.p) });
    else skipped++;
  }
  return { points, skipped };
}
