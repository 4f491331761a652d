import { z } from 'zod';

/** Event-group shapes of docs/api-contract.md §2 and query rules of docs/decisions.md §5. */

export const GroupStatusSchema = z.enum(['active', 'closed', 'resolved']);

export const EventSummarySchema = z
  .object({
    id: z.string(),
    slug: z.string().meta({ description: 'URL-friendly identifier (not the id)' }),
    title: z.string(),
    category: z.string().meta({ description: 'Upper case, e.g. POLITICS, SPORTS, CRYPTO, ECONOMICS' }),
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

export const EventListSchema = z.object({ events: z.array(EventSummarySchema), total: z.number().int() }).meta({ id: 'EventList' });

export const SlugParamsSchema = z.object({ slug: z.string().min(1).max(300) });

export const EventDetailSchema = z
  .object({
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
        title: z.string(),
        yesPrice: z.number().meta({ description: 'Probability in [0, 1]' }),
        volume: z.number().meta({ description: 'USD' }),
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
export type EventDetail = z.infer<typeof EventDetailSchema>;
export type Chart = z.infer<typeof ChartSchema>;
