/**
 * Our shape of a venue event group as docs/venues.md "What we call" defines
 * it (titles, outcome labels, the one price rule, market status, markets of
 * a group, categories). The pure mappers of polymarket/gamma-map.ts and
 * kalshi/events-map.ts produce it; src/domains/events/catalogue.ts writes it.
 */
export type Venue = 'polymarket' | 'kalshi';
export type GroupStatus = 'active' | 'closed' | 'resolved';
export type MarketStatus = 'active' | 'closed' | 'resolved';

/** What a pure mapper gives for one venue row. */
export interface MapResult<T> {
  value?: T;
  /** Rows left out (the event itself, or some of its markets). */
  skipped: number;
  /** The group id when the event row itself was malformed but named an id. */
  malformedId?: string;
}

/** A price point of a chart backfill. */
export interface HistoryPoint {
  ts: Date;
  price: number;
}

/** docs/venues.md "Categories": one closed set for both venues. */
export const CATEGORIES = ['POLITICS', 'SPORTS', 'CRYPTO', 'ECONOMICS', 'TECH', 'CULTURE', 'WEATHER', 'OTHER'] as const;
export type Category = (typeof CATEGORIES)[number];

export interface CatalogueMarket {
  /** `pm-<gamma market id>` or `ks-<market ticker>`. */
  id: string;
  venue: Venue;
  venueMarketId: string;
  /** Names the outcome the market prices (docs/venues.md "Titles and outcome labels"). */
  title: string;
  /** The label of the side `yesPrice` prices: "Yes", or a Polymarket outcome such as "Up". */
  outcome: string;
  /** Every outcome label of the market, both sides (searched, docs/decisions.md §16.5). */
  outcomeLabels: string[];
  /** Probability in [0, 1]; null when the venue has no quote and no trade. Resolved: the settlement. */
  yesPrice: number | null;
  /** USD. */
  volume: number;
  /** USD over the last 24 h (ranks groups for PRICE_TRACK_TOP). */
  volume24h: number;
  status: MarketStatus;
  /** The venue's scheduled close, past or future (Gamma market `endDate`, Kalshi `close_time`); null when it gives none. */
  endDate: Date | null;
  /** The venue's own 24 h change of the priced side (Gamma `oneDayPriceChange`, Kalshi last − previous price); null when it gives none. */
  venueChange24h: number | null;
  /** Polymarket: the CLOB token id of the priced outcome (batch prices, history, WebSocket). */
  tokenId: string | null;
  /** Resolved only: the result for the side `yesPrice` prices (docs/decisions.md §17.2 `data.result`); else null. */
  result: 'yes' | 'no' | null;
  /** Resolved only: the winning outcome's label ("Yes"/"No", or e.g. "Down"); null when the venue names none. */
  resolvedOutcome: string | null;
  /** Polymarket: the condition id, lower-case (Data API trades name markets by it); null on Kalshi. */
  conditionId: string | null;
}

export interface CatalogueGroup {
  /** `pm-<gamma event id>` or `ks-<event ticker>`. */
  id: string;
  venue: Venue;
  venueEventId: string;
  /** The venue's slug (Kalshi: the lower-cased event ticker), before cross-venue collision handling. */
  slug: string;
  title: string;
  description: string;
  category: Category;
  status: GroupStatus;
  imageUrl: string | null;
  /** Kalshi: the series (candlesticks path, category). */
  seriesTicker: string | null;
  /** When the venue created the group (docs/decisions.md §16.5): Gamma event `createdAt`; Kalshi the earliest market `open_time`. */
  createdAt: Date | null;
  /** Only the markets of the group: placeholders that never opened are left out. */
  markets: CatalogueMarket[];
}

/** One page of a catalogue listing, mapped. */
export interface CataloguePage {
  groups: CatalogueGroup[];
  /** Rows of this page (events, or markets inside them) that failed strict parsing and were left out. */
  skipped: number;
  /** Groups named by a malformed event row: still listed, so they must not be closed. */
  malformedGroupIds: string[];
  /** Events already yielded earlier in this pass (or twice in this page), left out. */
  duplicates: number;
  /** Raw rows the venue sent in this page. */
  received: number;
}

/** One page of a venue's catalogue listing as the readers yield it. */
export interface ListedPage extends CataloguePage {
  /** Every group id the page named (well-formed, duplicate or malformed with an id): the "only known ids" stop test. */
  ids: string[];
  /** Cursor of the next page; undefined on the last one. */
  nextCursor: string | undefined;
  /** True on the page that ended the listing; a pass whose last page is not final was cut short (page cap). */
  final: boolean;
}

/**
 * Maps one page of raw events for a catalogue pass: events already yielded
 * in the pass (`seen`) are left out and counted, malformed rows are counted
 * and their ids kept, and a cursor the pass already followed (`cursors`)
 * is a broken listing that would loop forever.
 */
export function mapListedPage(
  rawEvents: readonly unknown[],
  map: (raw: unknown) => MapResult<CatalogueGroup>,
  pass: { seen: Set<string>; cursors: Set<string> },
  nextCursor: string | undefined,
  brokenListing: () => Error,
): ListedPage {
  const out: ListedPage = {
    groups: [],
    skipped: 0,
    malformedGroupIds: [],
    duplicates: 0,
    received: rawEvents.length,
    ids: [],
    nextCursor,
    final: nextCursor === undefined,
  };
  for (const raw of rawEvents) {
    const r = map(raw);
    out.skipped += r.skipped;
    const id = r.value?.id ?? r.malformedId;
    if (id !== undefined) out.ids.push(id);
    if (!r.value) {
      if (r.malformedId) out.malformedGroupIds.push(r.malformedId);
      continue;
    }
    if (pass.seen.has(r.value.id)) {
      out.duplicates++;
      continue;
    }
    pass.seen.add(r.value.id);
    out.groups.push(r.value);
  }
  if (nextCursor !== undefined) {
    if (pass.cursors.has(nextCursor)) throw brokenListing();
    pass.cursors.add(nextCursor);
  }
  return out;
}

/**
 * Upper-case, `_`-separated (docs/decisions.md §5): list filters go through
 * it, so `politics` matches POLITICS.
 */
export function normalizeCategory(raw: string | null | undefined): string {
  const c = (raw ?? '')
    .trim()
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return c.length > 0 ? c.slice(0, 64) : 'OTHER';
}

/** Rounds a probability to 6 decimals so equal quotes compare equal. */
export function roundProbability(p: number): number {
  return Math.round(p * 1e6) / 1e6;
}

/** The spread threshold of docs/venues.md "Prices": at most 0.10 shows the midpoint. */
export const MAX_MIDPOINT_SPREAD = 0.1;

/** True when `spread` is at most 0.10, compared in millionths so 0.55 − 0.45 counts as 0.10. */
export function isTightSpread(spread: number): boolean {
  return Math.round(spread * 1e6) <= Math.round(MAX_MIDPOINT_SPREAD * 1e6);
}

/**
 * docs/venues.md "Prices": the midpoint of the best bid and ask when both
 * exist and the spread is at most 0.10, else the last trade price when there
 * was a trade, else null (never 0, never a "0.5" placeholder). Inputs are
 * already "absent" when the venue means no quote or no trade.
 */
export function displayPrice(q: { bid?: number | null; ask?: number | null; last?: number | null }): number | null {
  const { bid, ask, last } = q;
  if (bid != null && ask != null && ask >= bid && isTightSpread(ask - bid)) return roundProbability((bid + ask) / 2);
  if (last != null) return roundProbability(last);
  return null;
}

/** Keeps the last row of each id, in first-seen order (a listing may return an event twice). */
export function dedupeById<T extends { id: string }>(rows: T[]): T[] {
  const byId = new Map<string, T>();
  for (const r of rows) byId.set(r.id, r);
  return [...byId.values()];
}

/** A probability from a venue: finite and within [0, 1]. */
export function isProbability(n: unknown): n is number {
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 && n <= 1;
}

/** An ISO 8601 instant from a venue, or null when absent or unreadable (a descriptive field never fails its row). */
export function venueInstant(v: unknown): Date | null {
  if (typeof v !== 'string' || v.trim() === '') return null;
  const t = Date.parse(v);
  return Number.isFinite(t) ? new Date(t) : null;
}

/** A signed change of a probability, rounded like prices; null unless finite and within [-1, 1]. */
export function priceChange(v: unknown): number | null {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < -1 || n > 1) return null;
  return roundProbability(n);
}
