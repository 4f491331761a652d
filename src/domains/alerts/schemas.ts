import { z } from 'zod';

export const MAX_ACTIVE_ALERTS = 100;

const TargetPrice = z
  .number()
  .gt(0)
  .lt(1)
  .meta({ description: 'Probability, 0 < targetPrice < 1. Required for `above`/`below`; null or absent for `moves`' });
const Condition = z.enum(['above', 'below', 'moves']).meta({
  description:
    "`above`: fires when the side's price is ≥ targetPrice; `below`: ≤ targetPrice; `moves`: when it differs by at least `change` from any reading of the last `windowMinutes` (docs/decisions.md §14.3)",
});
const Side = z.enum(['yes', 'no']).meta({ description: 'The `no` price is 1 − yesPrice' });
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
    'false (default): the alert fires once and becomes inactive. true: it stays active and fires again after `cooldownMinutes` — a crossing alert once a reading went back across the target by at least 0.02, a move alert on a new move measured from readings after its last firing',
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
    targetPrice: z.number().nullable().meta({ description: 'null on `moves` alerts' }),
    condition: Condition,
    side: Side,
    change: z.number().nullable().meta({ description: '`moves` alerts; null otherwise' }),
    windowMinutes: z.number().int().nullable().meta({ description: '`moves` alerts; null otherwise' }),
    repeat: z.boolean(),
    cooldownMinutes: z.number().int(),
    triggerCount: z.number().int().meta({ description: 'How many times it fired' }),
    active: z.boolean(),
    triggeredAt: z.string().nullable().meta({ description: 'ISO 8601; when it last fired' }),
    triggeredPrice: z.number().nullable().meta({ description: "The side's price that last fired it" }),
    createdAt: z.string(),
  })
  .meta({ id: 'PriceAlert' });
export type PriceAlertJson = z.infer<typeof PriceAlertSchema>;

export type AlertCondition = z.infer<typeof Condition>;

interface Shape {
  condition?: AlertCondition;
  targetPrice?: number | null;
  change?: number | null;
  windowMinutes?: number | null;
}

/**
 * docs/decisions.md §14.3: `above`/`below` take targetPrice and no change/windowMinutes; `moves`
 * takes change and windowMinutes and no targetPrice. `partial`: a PUT, whose missing fields come
 * from the stored alert (checked again in the service, against it).
 */
export function shapeIssues(b: Shape, partial: boolean): Array<{ path: string; message: string }> {
  const issues: Array<{ path: string; message: string }> = [];
  const given = (v: unknown) => v !== undefined && v !== null;
  if (b.condition === 'moves') {
    if (given(b.targetPrice)) issues.push({ path: 'targetPrice', message: 'must be null or absent on a `moves` alert' });
    if (!partial && !given(b.change)) issues.push({ path: 'change', message: 'is required on a `moves` alert' });
    if (!partial && !given(b.windowMinutes)) issues.push({ path: 'windowMinutes', message: 'is required on a `moves` alert' });
  } else if (b.condition !== undefined) {
    if (!partial && !given(b.targetPrice)) issues.push({ path: 'targetPrice', message: `is required on an \`${b.condition}\` alert` });
    for (const k of ['change', 'windowMinutes'] as const)
      if (given(b[k])) issues.push({ path: k, message: `applies to \`moves\` alerts only, not \`${b.condition}\`` });
  }
  return issues;
}

export const CreateAlertBodySchema = z
  .strictObject({
    marketId: z.string().min(1).max(200),
    targetPrice: TargetPrice.nullable().optional(),
    condition: Condition,
    side: Side,
    change: Change.nullable().optional(),
    windowMinutes: WindowMinutes.nullable().optional(),
    repeat: Repeat.optional(),
    cooldownMinutes: CooldownMinutes.optional(),
  })
  .superRefine((b, ctx) => {
    for (const i of shapeIssues(b, false)) ctx.addIssue({ code: 'custom', path: [i.path], message: i.message });
  });
export type CreateAlertInput = z.infer<typeof CreateAlertBodySchema>;

export const UpdateAlertBodySchema = z
  .strictObject({
    targetPrice: TargetPrice.nullable().optional(),
    condition: Condition.optional(),
    side: Side.optional(),
    change: Change.nullable().optional(),
    windowMinutes: WindowMinutes.nullable().optional(),
    repeat: Repeat.optional(),
    cooldownMinutes: CooldownMinutes.optional(),
    active: z.boolean().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: 'Give at least one of targetPrice, condition, side, change, windowMinutes, repeat, cooldownMinutes, active',
  })
  .superRefine((b, ctx) => {
    for (const i of shapeIssues(b, true)) ctx.addIssue({ code: 'custom', path: [i.path], message: i.message });
  });
export type UpdateAlertInput = z.infer<typeof UpdateAlertBodySchema>;

export const AlertIdParamsSchema = z.object({ id: z.string().max(100) });
