import { z } from 'zod';

/** Event-group shapes of docs/api-contract.md §2 and query rules of docs/decisions.md §5. */

export const GroupStatusSchema = z.enum(['active', 'closed', 'resolved']);

/**
 * docs/decisions.md §11.4: first in every venue-backed body (the response
 * cache reads `syncedAt` from the start of the serialised body for
 * `Last-Modified`).
 */
const freshness = {
  syncedAt: z.string().nullable().meta({
    format: 'date-time',
    description: 'When the data was last read from the venue (see the operation); null before the first successful read',
  }),
  stale: z
    .boolean()
    .meta({ description: 'True when the data is older than its bound or the venue’s latest run failed: the last good data, marked stale' }),
};

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
  })
  .meta({ id: 'EventSummary' });

export const EventListQuerySchema = z.object({
  category: z.string().trim().min(1).max(64).optional().meta({ description: 'Case-insensitive, e.g. `politics`' }),
  status: GroupStatusSchema.optional().meta({ description: 'Default: every status' }),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const EventListSchema = z
  .object({ ...freshness, events: z.array(EventSummarySchema), total: z.number().int() })
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
        status: GroupStatusSchema,
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
