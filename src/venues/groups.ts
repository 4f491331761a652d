/**
 * Our shape of a venue event group and its markets, produced by the pure
 * mappers in polymarket/map.ts and kalshi/map.ts (docs/decisions.md §5,
 * docs/venues.md "Our ids"). The ingestion in src/domains/events/ writes these.
 */
export type Venue = 'polymarket' | 'kalshi';
export type GroupStatus = 'active' | 'closed' | 'resolved';
export type MarketStatus = 'active' | 'closed' | 'resolved';

export interface VenueMarket {
  /** `pm-<gamma market id>` or `ks-<market ticker>`. */
  id: string;
  venue: Venue;
  venueMarketId: string;
  title: string;
  /** Probability in [0, 1]. */
  yesPrice: number;
  /** USD. */
  volume: number;
  status: MarketStatus;
  /** Polymarket: the CLOB token id of the "Yes" outcome (price-history backfill). */
  yesTokenId: string | null;
}

export interface VenueGroup {
  /** `pm-<gamma event id>` or `ks-<event ticker>`. */
  id: string;
  venue: Venue;
  venueEventId: string;
  /** The venue's slug before cross-venue collision handling (Kalshi: lower-cased event ticker). */
  slug: string;
  title: string;
  description: string;
  category: string;
  status: GroupStatus;
  imageUrl: string | null;
  seriesTicker: string | null;
  markets: VenueMarket[];
}

/** A price observation from a listing call (price-sync). */
export interface PriceQuote {
  marketId: string;
  yesPrice: number;
  volume: number;
}

/** The result of reading a whole listing: mapped rows plus what had to be skipped. */
export interface Listing {
  groups: VenueGroup[];
  /** Rows (events or markets) that failed strict parsing and were left out. */
  skipped: number;
  /**
   * Ids of groups the listing named but whose row was malformed: they are
   * still on the venue's open list, so they must not be closed.
   */
  malformedGroupIds: string[];
}

/** Upper-case, `_`-separated category (docs/decisions.md §5); filters apply the same function. */
export function normalizeCategory(raw: string | null | undefined): string {
  const c = (raw ?? '')
    .trim()
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return c.length > 0 ? c.slice(0, 64) : 'OTHER';
}

/** Prices arrive as decimal text or floats; keep 6 decimals so equal quotes compare equal. */
export function roundPrice(p: number): number {
  return Math.round(p * 1e6) / 1e6;
}
