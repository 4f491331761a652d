import { and, count, desc, eq, sql, type SQL } from 'drizzle-orm';
import { markets, priceAlerts } from '../../../drizzle/index.js';
import { lockKey, rows, type Db, type DbOrTx } from '../../db/index.js';
import { AppError, notFound } from '../../errors.js';
import type { Clock } from '../../lib/deps.js';
import type { PriceChange } from '../events/ingest.js';
import { announceNotifications, storeNotifications, type NotifyDeps } from '../notifications/service.js';
import { MAX_ACTIVE_ALERTS, type CreateAlertInput, type PriceAlertJson, type UpdateAlertInput } from './schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type AlertRow = typeof priceAlerts.$inferSelect;

function toAlertJson(a: AlertRow, marketTitle: string): PriceAlertJson {
  return {
    id: a.id,
    marketId: a.marketId,
    marketTitle,
    targetPrice: a.targetPrice,
    condition: a.condition as PriceAlertJson['condition'],
    side: a.side as PriceAlertJson['side'],
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
        targetPrice: input.targetPrice,
        condition: input.condition,
        side: input.side,
        active: true,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    return toAlertJson(row, market.title);
  });
}

/**
 * Partial update. Reactivating an inactive alert counts toward the limit and
 * clears its last trigger, so it can fire again.
 */
export async function updateAlert(
  deps: { db: Db; clock: Clock },
  userId: string,
  id: string,
  input: UpdateAlertInput,
): Promise<PriceAlertJson> {
  if (!UUID.test(id)) throw notFound('Alert');
  return deps.db.transaction(async (tx) => {
    await lockUserAlerts(tx, userId);
    const [current] = await tx
      .select()
      .from(priceAlerts)
      .where(and(eq(priceAlerts.id, id), eq(priceAlerts.userId, userId)))
      .limit(1)
      .for('update');
    if (!current) throw notFound('Alert');
    const reactivating = input.active === true && !current.active;
    if (reactivating) await assertBelowLimit(tx, userId);
    const [row] = await tx
      .update(priceAlerts)
      .set({
        ...(input.targetPrice !== undefined ? { targetPrice: input.targetPrice } : {}),
        ...(input.condition !== undefined ? { condition: input.condition } : {}),
        ...(input.side !== undefined ? { side: input.side } : {}),
        ...(input.active !== undefined ? { active: input.active } : {}),
        ...(reactivating ? { triggeredAt: null, triggeredPrice: null } : {}),
        updatedAt: deps.clock(),
      })
      .where(eq(priceAlerts.id, id))
      .returning();
    const [market] = await tx.select({ title: markets.title }).from(markets).where(eq(markets.id, row.marketId)).limit(1);
    return toAlertJson(row, market?.title ?? '');
  });
}

export async function deleteAlert(deps: { db: DbOrTx }, userId: string, id: string): Promise<void> {
  if (!UUID.test(id)) throw notFound('Alert');
  const rows = await deps.db
    .delete(priceAlerts)
    .where(and(eq(priceAlerts.id, id), eq(priceAlerts.userId, userId)))
    .returning({ id: priceAlerts.id });
  if (rows.length === 0) throw notFound('Alert');
}

interface FiredRow {
  id: string;
  user_id: string;
  market_id: string;
  target_price: number;
  condition: 'above' | 'below';
  side: 'yes' | 'no';
  price: number;
  market_title: string;
}

/**
 * The trigger statement (exported for EXPLAIN in the benchmark). `payload` is
 * JSON `[{ m: marketId, p: yesPrice }]`, one entry per market.
 */
export function alertTriggerSql(payload: string, now: Date): SQL {
  return sql`
      with c as (
        select x.m as market_id, x.p, mk.title from jsonb_to_recordset(${payload}::jsonb) as x(m text, p double precision)
        join markets mk on mk.id = x.m
      ),
      hit as (
        select a.id, c.p as price from c join price_alerts a
          on a.market_id = c.market_id and a.side = 'yes' and a.condition = 'above' and a.target_price <= c.p and a.active
        union all
        select a.id, c.p from c join price_alerts a
          on a.market_id = c.market_id and a.side = 'yes' and a.condition = 'below' and a.target_price >= c.p and a.active
        union all
        select a.id, 1 - c.p from c join price_alerts a
          on a.market_id = c.market_id and a.side = 'no' and a.condition = 'above' and a.target_price <= 1 - c.p and a.active
        union all
        select a.id, 1 - c.p from c join price_alerts a
          on a.market_id = c.market_id and a.side = 'no' and a.condition = 'below' and a.target_price >= 1 - c.p and a.active
      ),
      locked as (
        select a.id, h.price from price_alerts a join hit h on h.id = a.id
        where a.active
        for update of a skip locked
      )
      update price_alerts a
      set active = false, triggered_at = ${now.toISOString()}::timestamptz, triggered_price = l.price, updated_at = ${now.toISOString()}::timestamptz
      from locked l, c
      where a.id = l.id and c.market_id = a.market_id and a.active
      returning a.id, a.user_id, a.market_id, a.target_price, a.condition, a.side, l.price, c.title as market_title`;
}

const cents = (p: number) => `${Math.round(p * 1000) / 10}¢`;

function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows?: T[] }).rows ?? []);
}

/** What the alert check needs: the notify path's dependencies (it stores and announces notifications). */
export type AlertCheckDeps = NotifyDeps;

/**
 * The price-alert trigger, run by the price-sync and events-sync jobs with
 * each cycle's changed prices. One statement finds the active alerts each new price crosses and
 * deactivates them with triggeredAt/triggeredPrice:
 *  - four index range scans per moved market on (market_id, side, condition,
 *    target_price) WHERE active, one per (side, condition), each bounded by
 *    the price, so it reads only the alerts that fire, not all that exist;
 *  - FOR UPDATE SKIP LOCKED plus `WHERE active`: of several instances or
 *    overlapping cycles, exactly one deactivates a given alert, and only that
 *    one notifies.
 * The notifications are stored in the same transaction (the alert fires and
 * its notification exists, or neither), then announced after commit.
 */
export async function checkPriceAlerts(deps: AlertCheckDeps, changes: PriceChange[]): Promise<number> {
  const latest = new Map<string, number>();
  for (const c of changes) {
    if (typeof c.marketId === 'string' && Number.isFinite(c.yesPrice) && c.yesPrice >= 0 && c.yesPrice <= 1)
      latest.set(c.marketId, c.yesPrice);
  }
  if (latest.size === 0) return 0;
  const payload = JSON.stringify([...latest].map(([m, p]) => ({ m, p })));
  const now = deps.clock();

  const stored = await deps.db.transaction(async (tx) => {
    const res = await tx.execute(alertTriggerSql(payload, now));
    const fired = rowsOf<FiredRow>(res);
    return storeNotifications(
      deps,
      tx,
      now,
      fired.map((f) => ({
        userId: f.user_id,
        type: 'price_alert_triggered' as const,
        title: `Price alert: ${f.market_title}`.slice(0, 200),
        message: `${f.side.toUpperCase()} is ${cents(Number(f.price))}, ${f.condition} your ${cents(Number(f.target_price))} target`,
        data: { marketId: f.market_id, alertId: f.id },
      })),
    );
  });
  announceNotifications(deps, stored);
  if (stored.length > 0) deps.log.info({ fired: stored.length, markets: latest.size }, 'price alerts fired');
  return stored.length;
}
