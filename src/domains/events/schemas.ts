import { z } from 'zod';

/** Event-group shapes of docs/api-contract.md §2 and query rules of docs/decisions.md §5. */

export const GroupStatusSchema = z.enum(['active', 'closed', 'resolved']);

/** docs/decisions.md §11.4: first in every venue-backed body (`syncedAt` is also sent as `Last-Modified`). */
const freshness = {
  syncedAt: z.string().nullable().meta({
    format: 'date-time',
    description: 'When the data was last read from the venue (see the operation); null before the first successful read',
  }),
  stale: z
    .boolean()
    .meta({ description: 'True when the data is older than its bound or the venue’s latest run failed: the last good data, marked stale' }),
};

export const VenueSchema = z.enum(['polymarket', 'kalshi']).meta({ description: 'The venue the group trades on' });

const change24h = (description: string) =>
  z
    .number()
    .nullable()
    .meta({
      description: `${description}. Ours (the price minus our reading 23–25 h old) when the market is tracked and we hold one, else the venue’s own (Gamma \`oneDayPriceChange\`, Kalshi last − previous price); a market whose \`yesPrice\` is null has none`,
    });

export const EventSummarySchema = z
  .object({
    id: z.string(),
    slug: z.string().meta({ description: 'URL-friendly identifier (not the id)' }),
    title: z.string(),
    category: z
      .string()
      .meta({ description: 'One of POLITICS, SPORTS, CRYPTO, ECONOMICS, TECH, CULTURE, WEATHER, OTHER (docs/venues.md "Categories")' }),
    marketCount: z.number().int(),
    totalVolume: z.number().meta({ description: 'USD, sum of the markets’ volumes' }),
    status: GroupStatusSchema,
    imageUrl: z.string().meta({
      format: 'uri',
      description:
        'The venue’s event image; a neutral placeholder (a `data:image/svg+xml` URL) when the venue has none (Kalshi events never do).',
    }),
    venue: VenueSchema,
    volume24h: z
      .number()
      .meta({ description: 'USD over the last 24 h: the sum of its active markets’ 24 h volume as the venue reports it' }),
    endDate: z.string().nullable().meta({
      format: 'date-time',
      description:
        'The earliest scheduled close still in the future among its active markets (Gamma market `endDate`, Kalshi `close_time`); null when none',
    }),
    createdAt: z.string().nullable().meta({
      format: 'date-time',
      description:
        'When the venue created the group (Gamma event `createdAt`; Kalshi: its markets’ earliest `open_time`); null when the venue does not say',
    }),
    change24h: change24h(
      'The signed 24 h change of `yesPrice` of its active market that moved most in absolute terms; null when none of them has one',
    ),
  })
  .meta({ id: 'EventSummary' });

/** The orderings of `GET /events` (docs/decisions.md §16.1). */
export const EVENT_SORTS = ['volume', 'volume24h', 'newest', 'closing', 'movers', 'relevance'] as const;
export type EventSort = (typeof EVENT_SORTS)[number];

export const EventSortSchema = z.enum(EVENT_SORTS).meta({
  description:
    '`volume`: total volume, descending (the default without `q`). `volume24h`: 24 h volume, descending. `newest`: when the venue created the group, newest first (unknown last). ' +
    '`closing`: `endDate` ascending among groups whose `endDate` is in the future, the others after them. `movers`: `|change24h|` descending, null last. ' +
    '`relevance` (the default with `q`): groups whose own title matches every word first, then those matching only through a market; then `volume24h` descending (without `q`: as `volume`). ' +
    'Every ordering breaks ties by `id` in byte order, so `offset` paging never repeats or skips a group while the data does not change.',
});

/** docs/decisions.md §16.1: 1–100 characters (code points) after trimming. */
const MAX_Q = 100;

export const EventListQuerySchema = z.object({
  q: z
    .string()
    .trim()
    .min(1, 'q must not be empty')
    // UTF-16 units: 100 code points are at most 200; the code points are counted next.
    .max(2 * MAX_Q, `q must be at most ${MAX_Q} characters`)
    .refine((s) => [...s].length <= MAX_Q, `q must be at most ${MAX_Q} characters`)
    .optional()
    .meta({
      // JSON Schema counts code points, as §16.1 does.
      maxLength: MAX_Q,
      description:
        'Search, 1–100 characters (code points) after trimming. Words are split on anything that is not a letter or digit; a group matches when every word is a prefix of some word of its title, or of one of its markets’ titles or outcome labels (both sides), ' +
        'case- and accent-insensitively (`elec` matches "Élection"). Words may match in different texts of one group. A `q` with no letter or digit matches nothing.',
      example: 'fed rate',
    }),
  venue: VenueSchema.optional().meta({ description: 'Only this venue’s groups' }),
  sort: EventSortSchema.optional(),
  category: z.string().trim().min(1).max(64).optional().meta({ description: 'Case-insensitive, e.g. `politics`' }),
  status: GroupStatusSchema.optional().meta({ description: 'Default: every status' }),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const EventListSchema = z
  .object({
    ...freshness,
    events: z.array(EventSummarySchema),
    total: z
      .number()
      .int()
      .meta({
        description:
          'How many groups match. Exact without `q`, and with `q` when the search matches few enough to count cheaply (at least 1,000). ' +
          'A search matching more is not counted to the end: `total` is then a lower bound, at least 1,000 and one more than `offset` + `limit` when the page is full, ' +
          'so a next page exists while `offset + limit < total` (show it as "1,000+").',
      }),
  })
  .meta({ id: 'EventList' });

export const SlugParamsSchema = z.object({ slug: z.string().min(1).max(300) });

export const EventDetailSchema = z
  .object({
    ...freshness,
    id: z.string(),
    slug: z.string(),
    title: z.string(),
    category: z.string(),
    totalVolume: z.number(),
    status: GroupStatusSchema,
    description: z.string(),
    markets: z.array(
      z.object({
        id: z.string(),
        title: z.string().meta({ description: 'Names the outcome the market prices (docs/venues.md "Titles and outcome labels")' }),
        outcome: z.string().meta({ description: 'The label of the side `yesPrice` prices: "Yes", or e.g. "Up", "Ravens"' }),
        yesPrice: z.number().nullable().meta({
          description:
            'Probability in [0, 1]: the midpoint when the spread is at most 0.10, else the last trade; null when the venue has no quote and no trade. A resolved market: its settlement (1 or 0)',
        }),
        volume: z.number().meta({ description: 'USD' }),
        volume24h: z.number().meta({ description: 'USD over the last 24 h, as the venue reports it' }),
        change24h: change24h('The signed change of `yesPrice` over the last 24 h'),
        status: GroupStatusSchema,
        endDate: z.string().nullable().meta({
          format: 'date-time',
          description:
            'The venue’s scheduled close of this market, past or future (Gamma `endDate`, Kalshi `close_time`); null when the venue gives none',
        }),
        priceUpdatedAt: z.string().nullable().meta({
          format: 'date-time',
          description: 'When the price, or its absence, was last read from the venue; null only if never read',
        }),
      }),
    ),
  })
  .meta({ id: 'EventDetail' });

export const ChartRangeSchema = z.enum(['1D', '1W', '1M', 'ALL']);

export const ChartQuerySchema = z.object({
  range: ChartRangeSchema.default('1W'),
  markets: z.coerce.number().int().min(1).max(10).default(5).meta({ description: 'Lines to draw: the group’s top markets by volume' }),
});

export const ChartSchema = z
  .object({
    ...freshness,
    outcomes: z.array(
      z.object({
        marketId: z.string(),
        title: z.string(),
        dataPoints: z.array(z.object({ timestamp: z.string().meta({ format: 'date-time' }), price: z.number() })),
      }),
    ),
  })
  .meta({ id: 'EventChart' });

export type EventListQuery = z.infer<typeof EventListQuerySchema>;
export type ChartQuery = z.infer<typeof ChartQuerySchema>;
export type EventSummary = z.infer<typeof EventSummarySchema>;
export type EventList = z.infer<typeof EventListSchema>;
export type EventDetail = z.infer<typeof EventDetailSchema>;
export type Chart = z.infer<typeof ChartSchema>;

// ------------------------------------------------------------ one market and its book (docs/decisions.md §16.3, §16.4)

export const MarketParamsSchema = z.object({
  id: z
    .string()
    .min(1)
    .max(300)
    .meta({ description: 'Our market id: `pm-<gamma market id>` or `ks-<market ticker>`', example: 'pm-516711' }),
});

export const MarketSchema = z
  .object({
    ...freshness,
    id: z.string(),
    title: z.string().meta({ description: 'Names the outcome the market prices (docs/venues.md "Titles and outcome labels")' }),
    outcome: z.string().meta({ description: 'The label of the side `yesPrice` prices: "Yes", or e.g. "Up", "Ravens"' }),
    yesPrice: z.number().nullable().meta({
      description:
        'Probability in [0, 1]: the midpoint when the spread is at most 0.10, else the last trade; null when the venue has no quote and no trade. A resolved market: its settlement (1 or 0)',
    }),
    volume: z.number().meta({ description: 'USD' }),
    volume24h: z.number().meta({ description: 'USD over the last 24 h, as the venue reports it' }),
    change24h: change24h('The signed change of `yesPrice` over the last 24 h'),
    status: GroupStatusSchema,
    endDate: z.string().nullable().meta({
      format: 'date-time',
      description:
        'The venue’s scheduled close of this market, past or future (Gamma `endDate`, Kalshi `close_time`); null when the venue gives none',
    }),
    priceUpdatedAt: z.string().nullable().meta({
      format: 'date-time',
      description: 'When the price, or its absence, was last read from the venue; null only if never read',
    }),
    event: z
      .object({ id: z.string(), slug: z.string(), title: z.string(), category: z.string(), venue: VenueSchema })
      .meta({ description: 'The group the market belongs to (its detail: `GET /events/{slug}`)' }),
  })
  .meta({ id: 'Market' });

export const BookQuerySchema = z.object({
  depth: z.coerce.number().int().min(1).max(50).default(10).meta({ description: 'Levels per side, 1–50 (default 10)' }),
});

const BookLevelSchema = z
  .object({
    price: z.number().meta({ description: 'Probability in [0, 1] of the YES side (the side `outcome` names)' }),
    size: z.number().meta({ description: 'Contracts (Kalshi) or shares (Polymarket) at this price' }),
  })
  .meta({ id: 'BookLevel' });

export const MarketBookSchema = z
  .object({
    marketId: z.string(),
    outcome: z.string().meta({ description: 'The side whose book this is: the side `yesPrice` prices' }),
    bids: z.array(BookLevelSchema).meta({ description: 'Best (highest) first' }),
    asks: z.array(BookLevelSchema).meta({ description: 'Best (lowest) first. On Kalshi, a NO bid at p is a YES ask at 1 − p' }),
    midpoint: z.number().nullable().meta({ description: 'Of the best bid and ask; null when a side is empty' }),
    spread: z.number().nullable().meta({ description: 'Best ask − best bid; null when a side is empty' }),
    fetchedAt: z.string().meta({ format: 'date-time', description: 'When the venue was read (one read serves every request for 5 s)' }),
    stale: z.boolean().meta({ description: 'True when the venue failed and this is the last book read in the last 60 s' }),
  })
  .meta({ id: 'MarketBook' });

export type Market = z.infer<typeof MarketSchema>;
export type MarketBook = z.infer<typeof MarketBookSchema>;
