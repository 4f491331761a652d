import { and, count, desc, eq, sql } from 'drizzle-orm';
import { markets, priceAlerts } from '../../../drizzle/index.js';
import { lockKey, rows, type Db, type DbOrTx } from '../../db/index.js';
import { AppError, notFound, validationError } from '../../errors.js';
import type { Clock } from '../../lib/deps.js';
import {
  FIELDS,
  MAX_ACTIVE_ALERTS,
  REQUIRED,
  shapeIssues,
  type CreateAlertInput,
  type PriceAlertJson,
  type UpdateAlertInput,
} from './schemas.js';
import { isUuid } from '../../lib/uuid.js';

type AlertRow = typeof priceAlerts.$inferSelect;

function toAlertJson(a: AlertRow, marketTitle: string): PriceAlertJson {
  return {
    id: a.id,
    marketId: a.marketId,
    marketTitle,
    targetPrice: a.targetPrice ?? null,
    condition: a.condition as PriceAlertJson['condition'],
    side: (a.side ?? null) as PriceAlertJson['side'],
    change: a.change ?? null,
    windowMinutes: a.windowMinutes ?? null,
    minUsd: a.minUsd ?? null,
    repeat: a.repeat,
    cooldownMinutes: a.cooldownMinutes,
    triggerCount: a.triggerCount,
    active: a.active,
    triggeredAt: a.triggeredAt ? a.triggeredAt.toISOString() : null,
    triggeredPrice: a.triggeredPrice ?? null,
    createdAt: a.createdAt.toISOString(),
  };
}

/** Serialises one user's alert writes, so the 100-active limit holds under concurrent requests. */
async function lockUserAlerts(tx: DbOrTx, userId: string) {
  await rows(tx, sql`select pg_advisory_xact_lock(${lockKey(`alerts:${userId}`).toString()}::bigint)`);
}

async function assertBelowLimit(tx: DbOrTx, userId: string) {
  const [{ n }] = await tx
    .select({ n: count() })
    .from(priceAlerts)
    .where(and(eq(priceAlerts.userId, userId), eq(priceAlerts.active, true)));
  if (Number(n) >= MAX_ACTIVE_ALERTS) {
    throw new AppError(409, 'ALERT_LIMIT', `At most ${MAX_ACTIVE_ALERTS} active alerts per user; delete or deactivate one first`);
  }
}

export async function listAlerts(deps: { db: DbOrTx }, userId: string): Promise<PriceAlertJson[]> {
  const rows = await deps.db
    .select({ alert: priceAlerts, marketTitle: markets.title })
    .from(priceAlerts)
    .innerJoin(markets, eq(markets.id, priceAlerts.marketId))
    .where(eq(priceAlerts.userId, userId))
    .orderBy(desc(priceAlerts.createdAt), desc(priceAlerts.id));
  return rows.map((r) => toAlertJson(r.alert, r.marketTitle));
}

/** Market must exist (404); at most 100 active alerts per user (409 ALERT_LIMIT), race-safe. */
export async function createAlert(deps: { db: Db; clock: Clock }, userId: string, input: CreateAlertInput): Promise<PriceAlertJson> {
  return deps.db.transaction(async (tx) => {
    const [market] = await tx.select({ title: markets.title }).from(markets).where(eq(markets.id, input.marketId)).limit(1);
    if (!market) throw notFound('Market');
    await lockUserAlerts(tx, userId);
    await assertBelowLimit(tx, userId);
    const now = deps.clock();
    const [row] = await tx
      .insert(priceAlerts)
      .values({
        userId,
        marketId: input.marketId,
        // The schema refused another condition's fields (shapeIssues); what is left is this condition's.
        targetPrice: input.targetPrice ?? null,
        condition: input.condition,
        side: input.side ?? null,
        change: input.change ?? null,
        windowMinutes: input.windowMinutes ?? null,
        minUsd: input.minUsd ?? null,
        repeat: input.repeat ?? false,
        cooldownMinutes: input.cooldownMinutes ?? 60,
        active: true,
        readingsFrom: now,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return toAlertJson(row, market.title);
  });
}

/**
 * The alert a PUT leaves, validated as a whole (docs/decisions.md §14.3, §18.4): a field the body
 * leaves out keeps its stored value when the (possibly new) condition takes it, and is dropped when
 * it does not (switching from `above` to `moves` drops `targetPrice` and keeps `side`). 400
 * VALIDATION_ERROR when the result is not a valid alert.
 */
function mergeDefinition(current: AlertRow, input: UpdateAlertInput) {
  const condition = input.condition ?? (current.condition as NonNullable<UpdateAlertInput['condition']>);
  const stored = { ...current, side: current.side as 'yes' | 'no' | null };
  const merged = { condition } as Record<(typeof FIELDS)[number], number | string | null> & { condition: typeof condition };
  for (const k of FIELDS) merged[k] = input[k] !== undefined ? input[k] : REQUIRED[condition].includes(k) ? stored[k] : null;
  const issues = shapeIssues(merged as Parameters<typeof shapeIssues>[0], false);
  if (issues.length > 0) throw validationError(issues, `Not a valid \`${condition}\` alert`);
  return {
    condition,
    targetPrice: merged.targetPrice as number | null,
    side: merged.side as 'yes' | 'no' | null,
    change: merged.change as number | null,
    windowMinutes: merged.windowMinutes as number | null,
    minUsd: merged.minUsd as number | null,
  };
}

/**
 * Partial update. Reactivating an inactive alert counts toward the limit and
 * clears its last trigger, so it can fire again. A reactivated or redefined
 * alert (target, condition, side, change, window) starts afresh: armed, and a
 * move alert measures from readings after the change. The cooldown still
 * counts from the last firing.
 */
export async function updateAlert(
  deps: { db: Db; clock: Clock },
  userId: string,
  id: string,
  input: UpdateAlertInput,
): Promise<PriceAlertJson> {
  if (!isUuid(id)) throw notFound('Alert');
  return deps.db.transaction(async (tx) => {
    await lockUserAlerts(tx, userId);
    const [current] = await tx
      .select()
      .from(priceAlerts)
      .where(and(eq(priceAlerts.id, id), eq(priceAlerts.userId, userId)))
      .limit(1)
      .for('update');
    if (!current) throw notFound('Alert');
    const definition = mergeDefinition(current, input);
    const reactivating = input.active === true && !current.active;
    if (reactivating) await assertBelowLimit(tx, userId);
    const redefined =
      reactivating ||
      (['targetPrice', 'condition', 'side', 'change', 'windowMinutes', 'minUsd'] as const).some((k) => input[k] !== undefined);
    const now = deps.clock();
    const active = input.active ?? current.active;
    const repeat = input.repeat ?? current.repeat;
    const cooldownMinutes = input.cooldownMinutes ?? current.cooldownMinutes;
    const triggeredAt = reactivating ? null : current.triggeredAt;
    // A cooldown still running ends with one look at the current price (trigger.ts checkPriceAlerts); a
    // big-trade alert's market is read on every price-sync anyway (checkBigTrades).
    const cooldownEnd = triggeredAt ? new Date(triggeredAt.getTime() + cooldownMinutes * 60_000) : null;
    const dueAt = active && repeat && cooldownEnd && cooldownEnd > now && definition.condition !== 'big_trade' ? cooldownEnd : null;
    const [row] = await tx
      .update(priceAlerts)
      .set({
        ...definition,
        active,
        repeat,
        cooldownMinutes,
        ...(reactivating ? { triggeredAt: null, triggeredPrice: null } : {}),
        // A redefined big-trade alert counts trades from now; the one it kept from before is dropped.
        ...(redefined ? { armed: true, readingsFrom: now, pendingTrade: null } : {}),
        dueAt,
        updatedAt: now,
      })
      .where(eq(priceAlerts.id, id))
      .returning();
    const [market] = await tx.select({ title: markets.title }).from(markets).where(eq(markets.id, row.marketId)).limit(1);
    return toAlertJson(row, market?.title ?? '');
  });
}

export async function deleteAlert(deps: { db: DbOrTx }, userId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Alert');
  const rows = await deps.db
    .delete(priceAlerts)
    .where(and(eq(priceAlerts.id, id), eq(priceAlerts.userId, userId)))
    .returning({ id: priceAlerts.id });
  if (rows.length === 0) throw notFound('Alert');
}
