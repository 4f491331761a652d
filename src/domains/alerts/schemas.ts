import { z } from 'zod';

export const MAX_ACTIVE_ALERTS = 100;

const TargetPrice = z.number().gt(0).lt(1).meta({ description: 'Probability, 0 < targetPrice < 1' });
const Condition = z.enum(['above', 'below']).meta({ description: '`above`: fires when the price is ≥ target; `below`: ≤ target' });
const Side = z.enum(['yes', 'no']).meta({ description: 'The `no` price is 1 − yesPrice' });

export const PriceAlertSchema = z
  .object({
    id: z.string(),
    marketId: z.string(),
    marketTitle: z.string(),
    targetPrice: z.number(),
    condition: Condition,
    side: Side,
    active: z.boolean(),
    triggeredAt: z.string().nullable().meta({ description: 'ISO 8601; when it last fired' }),
    triggeredPrice: z.number().nullable().meta({ description: "The side's price that fired it" }),
    createdAt: z.string(),
  })
  .meta({ id: 'PriceAlert' });
export type PriceAlertJson = z.infer<typeof PriceAlertSchema>;

export const CreateAlertBodySchema = z.strictObject({
  marketId: z.string().min(1).max(200),
  targetPrice: TargetPrice,
  condition: Condition,
  side: Side,
});
export type CreateAlertInput = z.infer<typeof CreateAlertBodySchema>;

export const UpdateAlertBodySchema = z
  .strictObject({
    targetPrice: TargetPrice.optional(),
    condition: Condition.optional(),
    side: Side.optional(),
    active: z.boolean().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'Give at least one of targetPrice, condition, side, active' });
export type UpdateAlertInput = z.infer<typeof UpdateAlertBodySchema>;

export const AlertIdParamsSchema = z.object({ id: z.string().max(100) });
