import { z } from 'zod';
import { EventSummarySchema } from '../events/schemas.js';

/** docs/decisions.md §17.1. */
export const MAX_WATCHED_GROUPS = 500;

export const WatchParamsSchema = z.object({ slug: z.string().min(1).max(300) });

const watchedAt = z.string().meta({ format: 'date-time', description: 'When the caller started watching the group (ISO 8601)' });

export const WatchSchema = z
  .object({ slug: z.string(), watchedAt })
  .meta({ id: 'Watch', example: { slug: 'fed-decision-in-december', watchedAt: '2026-11-26T21:40:00.000Z' } });
export type Watch = z.infer<typeof WatchSchema>;

export const WatchedEventSchema = EventSummarySchema.extend({ watchedAt }).meta({ id: 'WatchedEvent' });
export type WatchedEvent = z.infer<typeof WatchedEventSchema>;

export const WatchlistSchema = z.object({ events: z.array(WatchedEventSchema) }).meta({ id: 'Watchlist' });
export type Watchlist = z.infer<typeof WatchlistSchema>;
