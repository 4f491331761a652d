import { z } from 'zod';

export const MAX_ACTIVE_ALERTS = 100;

const TargetPrice = z
  .number()
  .gt(0)
  .lt(1)
  .meta({ description: 'Probability, 0 < targetPrice < 1. Required for `above`/`below`; null or absent for `moves` and `big_trade`' });
const Condition = z.enum(['above', 'below', 'moves', 'big_trade']).meta({
  description:
    "`above`: fires when the side's price is ≥ targetPrice; `below`: ≤ targetPrice; `moves`: when it differs by at least `change` from any reading of the last `windowMinutes` (docs/decisions.md §14.3); `big_trade`: when a single trade of at least `minUsd` USD (price × size) happens on the market, either side (§18.4)",
});
const Side = z
  .enum(['yes', 'no'])
  .meta({ description: 'The `no` price is 1 − yesPrice. Required for `above`/`below`/`moves`; null or absent for `big_trade`' });
const MinUsd = z.number().min(1_000).max(10_000_000).meta({
  description: '`big_trade` only (required there): the smallest single trade that fires it, USD (price × size), 1,000–10,000,000',
});
const Change = z
  .number()
  .min(0.01)
  .max(0.5)
  .meta({ description: '`moves` only (required there): the move, in probability points, 0.01–0.5' });
const WindowMinutes = z
  .number()
  .int()
  .min(5)
  .max(1440)
  .meta({ description: '`moves` only (required there): how far back a reading counts, 5–1440 minutes' });
const Repeat = z.boolean().meta({
  description:
    'false (default): the alert fires once and becomes inactive. true: it stays active and fires again after `cooldownMinutes` — a crossing alert once a reading went back across the target by at least 0.02, a move alert on a new move measured from readings after its last firing, a big-trade alert for the largest trade since its last firing',
});
const CooldownMinutes = z
  .number()
  .int()
  .min(1)
  .max(10_080)
  .meta({ description: 'Minimum time between two firings of a repeating alert, 1–10080 minutes (default 60)' });

export const PriceAlertSchema = z
  .object({
    id: z.string(),
    marketId: z.string(),
    marketTitle: z.string(),
    targetPrice: z.number().nullable().meta({ description: 'null on `moves` and `big_trade` alerts' }),
    condition: Condition,
    side: Side.nullable().meta({ description: 'null on `big_trade` alerts' }),
    change: z.number().nullable().meta({ description: '`moves` alerts; null otherwise' }),
    windowMinutes: z.number().int().nullable().meta({ description: '`moves` alerts; null otherwise' }),
    minUsd: z.number().nullable().meta({ description: '`big_trade` alerts; null otherwise' }),
    repeat: z.boolean(),
    cooldownMinutes: z.number().int(),
    triggerCount: z.number().int().meta({ description: 'How many times it fired' }),
    active: z.boolean(),
    triggeredAt: z.string().nullable().meta({ description: 'ISO 8601; when it last fired' }),
    triggeredPrice: z
      .number()
      .nullable()
      .meta({ description: "The side's price that last fired it; on `big_trade`, the price of the trade that last fired it" }),
    createdAt: z.string(),
  })
  .meta({
    id: 'PriceAlert',
    examples: [
      {
        id: '0b9d6a8e-2f4c-4d51-9a37-6c1e2d3f4a5b',
        marketId: 'pm-516710',
        marketTitle: 'Will the Fed cut rates in December?',
        targetPrice: null,
        condition: 'big_trade',
        side: null,
        change: null,
        windowMinutes: null,
        minUsd: 25000,
        repeat: true,
        cooldownMinutes: 60,
        triggerCount: 1,
        active: true,
        triggeredAt: '2026-11-20T14:03:00.000Z',
        triggeredPrice: 0.62,
        createdAt: '2026-11-19T09:00:00.000Z',
      },
    ],
  });
export type PriceAlertJson = z.infer<typeof PriceAlertSchema>;

export type AlertCondition = z.infer<typeof Condition>;

interface Shape {
  condition?: AlertCondition;
  targetPrice?: number | null;
  side?: 'yes' | 'no' | null;
  change?: number | null;
  windowMinutes?: number | null;
  minUsd?: number | null;
}

export type ShapeField = 'targetPrice' | 'side' | 'change' | 'windowMinutes' | 'minUsd';

/** The fields each condition requires; every other field of ShapeField must be null or absent. */
export const REQUIRED: Record<AlertCondition, readonly ShapeField[]> = {
  above: ['targetPrice', 'side'],
  below: ['targetPrice', 'side'],
  moves: ['side', 'change', 'windowMinutes'],
  big_trade: ['minUsd'],
};
export const FIELDS: readonly ShapeField[] = ['targetPrice', 'side', 'change', 'windowMinutes', 'minUsd'];

/**
 * docs/decisions.md §14.3, §18.4: `above`/`below` take targetPrice and side; `moves` takes side,
 * change and windowMinutes; `big_trade` takes minUsd; no condition takes another's fields.
 * `partial`: a PUT, whose missing fields come from the stored alert (checked again in the service,
 * against it).
 */
export function shapeIssues(b: Shape, partial: boolean): Array<{ path: string; message: string }> {
  const issues: Array<{ path: string; message: string }> = [];
  if (b.condition === undefined) return issues;
  const given = (v: unknown) => v !== undefined && v !== null;
  const required = REQUIRED[b.condition];
  const article = b.condition === 'above' ? 'an' : 'a';
  for (const k of FIELDS) {
    if (required.includes(k)) {
      if (!partial && !given(b[k])) issues.push({ path: k, message: `is required on ${article} \`${b.condition}\` alert` });
    } else if (given(b[k])) {
      issues.push({ path: k, message: `must be null or absent on ${article} \`${b.condition}\` alert` });
    }
  }
  return issues;
}

export const CreateAlertBodySchema = z
  .strictObject({
    marketId: z.string().min(1).max(200),
    targetPrice: TargetPrice.nullable().optional(),
    condition: Condition,
    side: Side.nullable().optional(),
    change: Change.nullable().optional(),
    windowMinutes: WindowMinutes.nullable().optional(),
    minUsd: MinUsd.nullable().optional(),
    repeat: Repeat.optional(),
    cooldownMinutes: CooldownMinutes.optional(),
  })
  .superRefine((b, ctx) => {
    for (const i of shapeIssues(b, false)) ctx.addIssue({ code: 'custom', path: [i.path], message: i.message });
  })
  .meta({
    examples: [
      { marketId: 'pm-516710', condition: 'above', targetPrice: 0.65, side: 'yes' },
      { marketId: 'pm-516710', condition: 'moves', side: 'yes', change: 0.05, windowMinutes: 60, repeat: true, cooldownMinutes: 120 },
      { marketId: 'ks-KXFEDDECISION-26DEC-C25', condition: 'big_trade', minUsd: 25000, repeat: true, cooldownMinutes: 60 },
    ],
  });
export type CreateAlertInput = z.infer<typeof CreateAlertBodySchema>;

export const UpdateAlertBodySchema = z
  .strictObject({
    targetPrice: TargetPrice.nullable().optional(),
    condition: Condition.optional(),
    side: Side.nullable().optional(),
    change: Change.nullable().optional(),
    windowMinutes: WindowMinutes.nullable().optional(),
    minUsd: MinUsd.nullable().optional(),
    repeat: Repeat.optional(),
    cooldownMinutes: CooldownMinutes.optional(),
    active: z.boolean().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'Give at least one of targetPrice, condition, side, change, windowMinutes, minUsd, repeat, cooldownMinutes, active',
  })
  .superRefine((b, ctx) => {
    for (const i of shapeIssues(b, true)) ctx.addIssue({ code: 'custom', path: [i.path], message: i.message });
  });
export type UpdateAlertInput = z.infer<typeof UpdateAlertBodySchema>;

export const AlertIdParamsSchema = z.object({ id: z.string().max(100) });
