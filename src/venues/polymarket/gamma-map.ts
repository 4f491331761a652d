import { z } from 'zod';
import { DECIMAL, wireNonNegative, wireProbability, wireStringArray } from '../wire.js';
import {
  displayPrice,
  isProbability,
  priceChange,
  venueInstant,
  roundProbability,
  type Category,
  type CatalogueGroup,
  type CatalogueMarket,
  type GroupStatus,
  type MapResult,
  type MarketStatus,
} from '../catalogue.js';
import { httpsUrl } from '../../lib/safe-url.js';

/**
 * Pure mapping of Gamma events (docs/venues.md §3, keyset listing and
 * `GET /events/{id}`) to CatalogueGroup, following "What we call" exactly:
 * titles, outcome labels, the one price rule, market status, which nested
 * markets belong to the group, and categories from tag slugs and `feeType`.
 * Each market is parsed strictly on its own: a malformed one is skipped and
 * counted, never turned into zeros.
 */

const numericId = z.string().regex(/^\d{1,20}$/);

/** `outcomePrices`: a JSON string of decimal strings (or an array of numbers or decimal strings), each a probability. */
const wireProbabilities = z.union([
  z.array(wireProbability),
  wireStringArray.transform((arr, ctx) => {
    const out: number[] = [];
    for (const v of arr) {
      const n = DECIMAL.test(v.trim()) ? Number(v) : NaN;
      if (!isProbability(n)) {
        ctx.addIssue({ code: 'custom', message: 'outcome price is not in [0, 1]' });
        return z.NEVER;
      }
      out.push(n);
    }
    return out;
  }),
]);

/** Only what decides whether a nested market belongs to the group: read before the strict parse. */
const MarketFlagsSchema = z.object({ active: z.boolean().nullish(), closed: z.boolean().nullish() });

export const GammaCatalogueMarketSchema = z.object({
  id: numericId,
  question: z.string().trim().min(1).max(1000),
  groupItemTitle: z.string().nullish(),
  outcomes: wireStringArray.refine((a) => a.length >= 2 && a.every((o) => o.trim().length > 0), 'at least two named outcomes'),
  outcomePrices: wireProbabilities.nullish(),
  // The outcome token ids: read by `version` in gammaTokenIds, so a field the market does not use cannot fail it.
  clobTokenIds: z.unknown().optional(),
  // Names the market in Data API trades (docs/venues.md "What we call", big trades); anything but a hex id says nothing.
  conditionId: z
    .string()
    .regex(/^0x[0-9a-fA-F]{1,64}$/)
    .nullish()
    .catch(null),
  positionIds: z.unknown().optional(),
  version: z.string().nullish(),
  // Numbers as the SDKs read them: a JSON number or a decimal string (docs/venues.md "What we call").
  bestBid: wireProbability.nullish(),
  bestAsk: wireProbability.nullish(),
  lastTradePrice: wireProbability.nullish(),
  volume: wireNonNegative.nullish(),
  volumeNum: wireNonNegative.nullish(),
  volume24hr: wireNonNegative.nullish(),
  active: z.boolean().nullish(),
  closed: z.boolean().nullish(),
  umaResolutionStatus: z.string().nullish(),
  // Descriptive (docs/decisions.md §16.2): unreadable values say nothing rather than failing the market.
  endDate: z.unknown().optional(),
  oneDayPriceChange: z.unknown().optional(),
  // Descriptive only (a category hint): a value of another type says nothing rather than failing the market.
  feeType: z.string().nullish().catch(null),
});
export type GammaCatalogueMarket = z.infer<typeof GammaCatalogueMarketSchema>;

export const GammaCatalogueEventSchema = z.object({
  id: numericId,
  slug: z.string().max(300).nullish(),
  title: z.string().trim().min(1).max(1000),
  description: z.string().nullish(),
  image: z.string().nullish(),
  icon: z.string().nullish(),
  active: z.boolean().nullish(),
  closed: z.boolean().nullish(),
  archived: z.boolean().nullish(),
  createdAt: z.unknown().optional(),
  tags: z.array(z.unknown()).nullish(),
  markets: z.array(z.unknown()).nullish(),
});

/**
 * docs/venues.md "Markets of a group": a placeholder that has never opened
 * (`active: false` and not `closed`) is left out.
 */
export function isGammaPlaceholder(flags: { active?: boolean | null; closed?: boolean | null }): boolean {
  return flags.active === false && flags.closed !== true;
}

export function gammaMarketStatus(m: Pick<GammaCatalogueMarket, 'closed' | 'umaResolutionStatus' | 'outcomePrices'>): MarketStatus {
  if (!m.closed) return 'active';
  const prices = m.outcomePrices ?? [];
  const settled = prices.length > 0 && prices.every((p) => p === 0 || p === 1) && prices.filter((p) => p === 1).length === 1;
  return m.umaResolutionStatus === 'resolved' || settled ? 'resolved' : 'closed';
}

/**
 * A resolved market's result (docs/decisions.md §17.2): the outcome whose
 * settlement price in `outcomePrices` is 1 won; `result` is `yes` when that
 * is the priced outcome. Without a single winner (a 50-50 settlement) the
 * side priced at least 0.5 counts as the result and no outcome is named.
 */
export function gammaResolution(
  m: Pick<GammaCatalogueMarket, 'outcomes' | 'outcomePrices'>,
  status: MarketStatus,
  pricedIndex: number,
): { result: 'yes' | 'no' | null; resolvedOutcome: string | null } {
  if (status !== 'resolved') return { result: null, resolvedOutcome: null };
  const prices = m.outcomePrices ?? [];
  const winners = prices.flatMap((p, i) => (p === 1 ? [i] : []));
  if (winners.length === 1) {
    return { result: winners[0] === pricedIndex ? 'yes' : 'no', resolvedOutcome: m.outcomes[winners[0]]?.trim().slice(0, 200) ?? null };
  }
  const p = prices[pricedIndex];
  return { result: p === undefined ? null : p >= 0.5 ? 'yes' : 'no', resolvedOutcome: null };
}

/**
 * docs/venues.md "Titles and outcome labels": the side `yesPrice` prices. A
 * Yes/No market prices "Yes" (whatever its position); any other pair
 * (`["Up","Down"]`, `["Ravens","Falcons"]`) prices its first outcome.
 */
export function gammaPricedOutcome(outcomes: string[]): { index: number; label: string } {
  const lower = outcomes.map((o) => o.trim().toLowerCase());
  if (lower.length === 2 && lower.includes('yes') && lower.includes('no')) return { index: lower.indexOf('yes'), label: 'Yes' };
  return { index: 0, label: outcomes[0].trim() };
}

/** docs/venues.md "Titles": `groupItemTitle` when the event has more than one market and it is non-empty, else `question`. */
export function gammaMarketTitle(m: Pick<GammaCatalogueMarket, 'question' | 'groupItemTitle'>, marketsInGroup: number): string {
  const item = m.groupItemTitle?.trim();
  return (marketsInGroup > 1 && item ? item : m.question).slice(0, 1000);
}

/**
 * docs/venues.md "Prices", Polymarket from the catalogue: `bestBid`/`bestAsk`/
 * `lastTradePrice` for an open market (absent = no quote / no trade; they
 * price the first outcome token, so a "Yes" in second place is mirrored);
 * `outcomePrices` only for a closed or resolved one, where it holds the
 * settlement. A bid of 0 or an ask of 1 is no order at all, and a last
 * price of 0 on a market without volume is no trade.
 */
export function gammaYesPrice(m: GammaCatalogueMarket, status: MarketStatus, pricedIndex: number): number | null {
  if (status !== 'active') {
    const p = m.outcomePrices?.[pricedIndex];
    return p === undefined ? null : roundProbability(p);
  }
  const volume = marketVolume(m);
  let bid = m.bestBid != null && m.bestBid > 0 ? m.bestBid : null;
  let ask = m.bestAsk != null && m.bestAsk < 1 ? m.bestAsk : null;
  let last = m.lastTradePrice != null && !(m.lastTradePrice === 0 && volume === 0) ? m.lastTradePrice : null;
  if (pricedIndex !== 0) {
    [bid, ask] = [ask === null ? null : 1 - ask, bid === null ? null : 1 - bid];
    last = last === null ? null : 1 - last;
  }
  return displayPrice({ bid, ask, last });
}

function mirrorChange(change: number | null, pricedIndex: number): number | null {
  return change === null || pricedIndex === 0 ? change : roundProbability(-change) + 0;
}

function marketVolume(m: Pick<GammaCatalogueMarket, 'volumeNum' | 'volume'>): number {
  return m.volumeNum ?? m.volume ?? 0;
}

/**
 * The market's outcome token ids, picked by `version` (docs/venues.md §3, "What
 * we call"): Protocol V2 markets (`"v2"`) use `positionIds`, every other market
 * `clobTokenIds`; either may be a real array or a JSON-encoded string.
 * Undefined when the field the market uses is malformed (the market is
 * skipped); an empty array when it is absent (a market without tokens).
 */
export function gammaTokenIds(m: Pick<GammaCatalogueMarket, 'version' | 'clobTokenIds' | 'positionIds'>): string[] | undefined {
  const raw = m.version === 'v2' ? m.positionIds : m.clobTokenIds;
  if (raw == null) return [];
  const r = wireStringArray.safeParse(raw);
  return r.success ? r.data : undefined;
}

/** docs/venues.md "Categories": tag slugs, in this order; the first rule whose slug the event carries wins. */
const TAG_RULES: ReadonlyArray<readonly [Category, readonly string[]]> = [
  ['POLITICS', ['politics', 'elections', 'geopolitics']],
  ['SPORTS', ['sports', 'esports']],
  ['CRYPTO', ['crypto']],
  ['ECONOMICS', ['finance', 'economy', 'economics']],
  ['TECH', ['tech']],
  ['CULTURE', ['culture', 'pop-culture', 'mentions']],
  ['WEATHER', ['weather', 'climate']],
];

/** `feeType` prefixes, in the same rule order (a tie goes to the earlier rule). */
const FEE_RULES: ReadonlyArray<readonly [Category, readonly string[]]> = [
  ['POLITICS', ['politics_']],
  ['SPORTS', ['sports_']],
  ['CRYPTO', ['crypto_']],
  ['ECONOMICS', ['finance_', 'economics_']],
  ['TECH', ['tech_']],
  ['CULTURE', ['culture_', 'mentions_']],
  ['WEATHER', ['weather_']],
];

function tagSlug(tag: unknown): string | undefined {
  if (!tag || typeof tag !== 'object') return undefined;
  const { slug, label } = tag as { slug?: unknown; label?: unknown };
  if (typeof slug === 'string' && slug.trim()) return slug.trim().toLowerCase();
  if (typeof label === 'string' && label.trim())
    return label
      .trim()
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-');
  return undefined;
}

/**
 * docs/venues.md "Categories", Polymarket: the first tag rule whose slug
 * appears among the event's tags; else the category of the most common
 * market `feeType` prefix (`general_fees`, `zero_fees` and null say
 * nothing); else OTHER. The event's own `category` is never used.
 */
export function polymarketCategory(tags: unknown[] | null | undefined, feeTypes: Array<string | null | undefined>): Category {
  const slugs = new Set((tags ?? []).map(tagSlug).filter((s): s is string => s !== undefined));
  for (const [category, wanted] of TAG_RULES) if (wanted.some((s) => slugs.has(s))) return category;
  const counts = new Map<Category, number>();
  for (const f of feeTypes) {
    if (typeof f !== 'string') continue;
    const rule = FEE_RULES.find(([, prefixes]) => prefixes.some((p) => f.startsWith(p)));
    if (rule) counts.set(rule[0], (counts.get(rule[0]) ?? 0) + 1);
  }
  let best: Category = 'OTHER';
  let bestCount = 0;
  for (const [category] of FEE_RULES) {
    const n = counts.get(category) ?? 0;
    if (n > bestCount) [best, bestCount] = [category, n];
  }
  return best;
}

/** One Gamma event with its nested markets → our group (docs/venues.md "What we call"). */
export function mapGammaCatalogueEvent(raw: unknown): MapResult<CatalogueGroup> {
  const parsed = GammaCatalogueEventSchema.safeParse(raw);
  if (!parsed.success) {
    const id = (raw as { id?: unknown } | null)?.id;
    return { skipped: 1, malformedId: typeof id === 'string' && /^\d{1,20}$/.test(id) ? `pm-${id}` : undefined };
  }
  const e = parsed.data;
  let skipped = 0;
  const feeTypes: Array<string | null | undefined> = [];
  const members: Array<{ m: GammaCatalogueMarket; tokens: string[] }> = [];
  for (const rm of e.markets ?? []) {
    const flags = MarketFlagsSchema.safeParse(rm);
    if (!flags.success) {
      skipped++;
      continue;
    }
    const m = GammaCatalogueMarketSchema.safeParse(rm);
    if (m.success) feeTypes.push(m.data.feeType);
    if (isGammaPlaceholder(flags.data)) continue;
    const tokens = m.success ? gammaTokenIds(m.data) : undefined;
    if (m.success && tokens) members.push({ m: m.data, tokens });
    else skipped++;
  }
  const markets: CatalogueMarket[] = members.map(({ m, tokens }) => {
    const status = gammaMarketStatus(m);
    const priced = gammaPricedOutcome(m.outcomes);
    return {
      id: `pm-${m.id}`,
      venue: 'polymarket',
      venueMarketId: m.id,
      title: gammaMarketTitle(m, members.length),
      outcome: priced.label.slice(0, 200),
      outcomeLabels: m.outcomes.map((o) => o.trim().slice(0, 200)),
      yesPrice: gammaYesPrice(m, status, priced.index),
      volume: marketVolume(m),
      volume24h: m.volume24hr ?? 0,
      status,
      endDate: venueInstant(m.endDate),
      // `oneDayPriceChange` prices the first outcome, like bestBid/bestAsk: a "Yes" in second place is mirrored.
      venueChange24h: mirrorChange(priceChange(m.oneDayPriceChange), priced.index),
      tokenId: tokens[priced.index] ?? null,
      ...gammaResolution(m, status, priced.index),
      conditionId: m.conditionId?.toLowerCase() ?? null,
    };
  });
  let status: GroupStatus = 'active';
  const allResolved = markets.length > 0 && markets.every((m) => m.status === 'resolved');
  if (e.closed) status = allResolved ? 'resolved' : 'closed';
  else if (e.archived) status = 'closed';
  else if (markets.length > 0 && !markets.some((m) => m.status === 'active')) status = allResolved ? 'resolved' : 'closed';
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
      category: polymarketCategory(e.tags, feeTypes),
      status,
      imageUrl: httpsUrl(e.image) ?? httpsUrl(e.icon),
      seriesTicker: null,
      createdAt: venueInstant(e.createdAt),
      markets,
    },
  };
}
