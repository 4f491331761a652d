import { inArray, sql } from 'drizzle-orm';
import { notifications } from '../../../drizzle/index.js';
import { rows, type Db, type DbOrTx } from '../../db/index.js';
import type { ServiceDeps } from '../../lib/deps.js';
import type { NotificationChannel, NotificationType, StoredNotification } from './types.js';

/**
 * The delivery worker of the notify path: an outbox (notification_deliveries)
 * with one row per (notification, channel). Rows are claimed set-based with
 * FOR UPDATE SKIP LOCKED, so several workers and instances never deliver the
 * same row at once; a claim is a lease (a crashed worker's rows come due again
 * after LEASE_MS). A channel that throws is retried with exponential backoff,
 * at most MAX_ATTEMPTS times in all, then the row is 'failed'. The stored
 * notification itself is never touched by delivery.
 */
export const MAX_ATTEMPTS = 6;
export const LEASE_MS = 5 * 60_000;
const BASE_BACKOFF_MS = 30_000;
const MAX_BACKOFF_MS = 60 * 60_000;
const CLAIM_BATCH = 100;
const CONCURRENCY = 6;

/**
 * The notify path's delivery state, one per app (the notifications plugin
 * creates it from the channel list the composition root hands it; jobs get
 * the same object): the channels, the in-process kicks still running (the
 * app's close waits for them before its pool closes) and when this instance
 * last pruned the outbox.
 */
export interface DeliveryState {
  readonly channels: readonly NotificationChannel[];
  readonly inflight: Set<Promise<unknown>>;
  /** Epoch ms of this instance's last prune of settled rows; 0 = not yet. */
  prunedAt: number;
}

export function createDeliveryState(channels: readonly NotificationChannel[]): DeliveryState {
  const names = channels.map((c) => c.name);
  if (new Set(names).size !== names.length) throw new Error(`delivery channel names must be unique: ${names.join(', ')}`);
  return { channels, inflight: new Set(), prunedAt: 0 };
}

export interface DeliveryWorkerDeps extends ServiceDeps {
  delivery: Pick<DeliveryState, 'channels'>;
}

export interface DeliveryReport {
  claimed: number;
  sent: number;
  skipped: number;
  retrying: number;
  failed: number;
}

/** Delay before attempt n+1 after n failed attempts: 30 s, 1 min, 2 min, … capped at 1 h. */
export function backoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.max(0, attempts - 1));
}

interface ClaimedRow {
  id: string;
  notification_id: string;
  channel: string;
  attempts: number;
}

async function claimDue(db: DbOrTx, now: Date, limit: number, notificationIds?: string[]): Promise<ClaimedRow[]> {
  const only = notificationIds
    ? sql`and notification_id in (select (jsonb_array_elements_text(${JSON.stringify(notificationIds)}::jsonb))::uuid)`
    : sql``;
  const leaseUntil = new Date(now.getTime() + LEASE_MS).toISOString();
  const claimed = await rows<ClaimedRow>(
    db,
    sql`
    with due as (
      select id from notification_deliveries
      where status = 'pending' and next_attempt_at <= ${now.toISOString()}::timestamptz ${only}
      order by next_attempt_at
      limit ${limit}
      for update skip locked
    )
    update notification_deliveries d
    set attempts = d.attempts + 1, next_attempt_at = ${leaseUntil}::timestamptz, updated_at = ${now.toISOString()}::timestamptz
    from due
    where d.id = due.id
    returning d.id, d.notification_id, d.channel, d.attempts`,
  );
  return claimed.map((r) => ({ ...r, attempts: Number(r.attempts) }));
}

async function finish(db: Db, id: string, status: 'sent' | 'skipped' | 'failed', error: string | null, now: Date) {
  await rows(
    db,
    sql`
    update notification_deliveries set status = ${status}, last_error = ${error}, updated_at = ${now.toISOString()}::timestamptz
    where id = ${id}::uuid`,
  );
}

async function retryLater(db: Db, id: string, attempts: number, error: string, now: Date) {
  const next = new Date(now.getTime() + backoffMs(attempts)).toISOString();
  await rows(
    db,
    sql`
    update notification_deliveries set next_attempt_at = ${next}::timestamptz, last_error = ${error}, updated_at = ${now.toISOString()}::timestamptz
    where id = ${id}::uuid`,
  );
}

/**
 * Claims the due deliveries (optionally only those of some notifications) and
 * runs their channels. Returns what happened; never throws for a channel's
 * failure.
 */
export async function processDueDeliveries(
  deps: DeliveryWorkerDeps,
  opts: { notificationIds?: string[]; limit?: number } = {},
): Promise<DeliveryReport> {
  const { channels } = deps.delivery;
  const report: DeliveryReport = { claimed: 0, sent: 0, skipped: 0, retrying: 0, failed: 0 };
  const claimed = await claimDue(deps.db, deps.clock(), opts.limit ?? CLAIM_BATCH, opts.notificationIds);
  report.claimed = claimed.length;
  if (claimed.length === 0) return report;

  const ids = [...new Set(claimed.map((c) => c.notification_id))];
  const found = await deps.db.select().from(notifications).where(inArray(notifications.id, ids));
  const byId = new Map<string, StoredNotification>(
    found.map((r) => [r.id, { ...r, type: r.type as NotificationType, data: r.data ?? {} }]),
  );

  const work = async (row: ClaimedRow) => {
    const now = () => deps.clock();
    const channel = channels.find((c) => c.name === row.channel);
    const notification = byId.get(row.notification_id);
    if (!channel || !notification) {
      // A channel removed from the build, or a notification deleted meanwhile: nothing to deliver.
      await finish(deps.db, row.id, 'skipped', channel ? 'notification deleted' : `unknown channel ${row.channel}`, now());
      report.skipped++;
      return;
    }
    try {
      const outcome = await channel.deliver(deps, notification);
      await finish(deps.db, row.id, outcome, null, now());
      report[outcome]++;
    } catch (err) {
      const message = (err instanceof Error ? err.message : String(err)).slice(0, 500);
      if (row.attempts >= MAX_ATTEMPTS) {
        await finish(deps.db, row.id, 'failed', message, now());
        report.failed++;
        deps.log.warn(
          { deliveryId: row.id, channel: row.channel, attempts: row.attempts, err: message },
          'notification delivery failed for good',
        );
      } else {
        await retryLater(deps.db, row.id, row.attempts, message, now());
        report.retrying++;
        deps.log.info(
          { deliveryId: row.id, channel: row.channel, attempts: row.attempts, err: message },
          'notification delivery will be retried',
        );
      }
    }
  };

  for (let i = 0; i < claimed.length; i += CONCURRENCY) {
    await Promise.all(claimed.slice(i, i + CONCURRENCY).map(work));
  }
  return report;
}

/**
 * How long settled outbox rows are kept: long enough to answer "was it
 * delivered?" for a recent notification, short enough that the outbox does
 * not grow with every notification ever sent. Failed rows stay longer, for
 * diagnosis. Pending rows are never pruned.
 */
export const SETTLED_RETENTION_MS = 24 * 60 * 60_000;
export const FAILED_RETENTION_MS = 7 * 24 * 60 * 60_000;
const PRUNE_BATCH = 5_000;

/**
 * Deletes settled (sent, skipped, failed) outbox rows past their retention, in
 * batches of PRUNE_BATCH so no statement holds many row locks for long.
 * Returns how many rows went. Safe to run from several instances at once.
 */
export async function pruneSettledDeliveries(db: Db, now: Date, maxBatches = 20): Promise<number> {
  const settledBefore = new Date(now.getTime() - SETTLED_RETENTION_MS).toISOString();
  const failedBefore = new Date(now.getTime() - FAILED_RETENTION_MS).toISOString();
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const [row] = await rows<{ n: number | string }>(
      db,
      sql`
      with gone as (
        select id from notification_deliveries
        where status <> 'pending' and updated_at < ${settledBefore}::timestamptz
          and (status <> 'failed' or updated_at < ${failedBefore}::timestamptz)
        limit ${PRUNE_BATCH}
        for update skip locked
      ), d as (
        delete from notification_deliveries n using gone where n.id = gone.id returning 1
      )
      select count(*)::int as n from d`,
    );
    const n = Number(row?.n ?? 0);
    total += n;
    if (n < PRUNE_BATCH) break;
  }
  return total;
}

/** Drains everything due, a batch at a time (the periodic run). */
export async function processAllDueDeliveries(deps: DeliveryWorkerDeps, maxBatches = 20): Promise<DeliveryReport> {
  const total: DeliveryReport = { claimed: 0, sent: 0, skipped: 0, retrying: 0, failed: 0 };
  for (let i = 0; i < maxBatches; i++) {
    const r = await processDueDeliveries(deps);
    for (const k of Object.keys(total) as (keyof DeliveryReport)[]) total[k] += r[k];
    if (r.claimed < CLAIM_BATCH) break;
  }
  return total;
}

/** How often an instance prunes settled outbox rows (from its delivery-sweep runs). */
export const DELIVERY_PRUNE_MS = 60 * 60_000;

export interface SweepReport extends DeliveryReport {
  pruned: number;
}

/**
 * The periodic run (the delivery-sweep job, docs/decisions.md §9): delivers
 * everything due (retries, and rows a kick left behind) and, at most once per
 * DELIVERY_PRUNE_MS on this instance, prunes settled rows.
 */
export async function sweepDeliveries(deps: ServiceDeps & { delivery: DeliveryState }): Promise<SweepReport> {
  const report = await processAllDueDeliveries(deps);
  let pruned = 0;
  const now = deps.clock();
  if (now.getTime() - deps.delivery.prunedAt >= DELIVERY_PRUNE_MS) {
    deps.delivery.prunedAt = now.getTime();
    pruned = await pruneSettledDeliveries(deps.db, now);
    if (pruned > 0) deps.log.info({ pruned }, 'settled notification deliveries pruned');
  }
  return { ...report, pruned };
}

/**
 * The in-process kick right after notify(): delivers the new notifications'
 * rows without the caller waiting. Whatever it cannot deliver stays in the
 * outbox for the periodic run.
 */
export function kickDelivery(deps: ServiceDeps & { delivery: DeliveryState }, notificationIds: string[]): void {
  if (notificationIds.length === 0) return;
  const { inflight } = deps.delivery;
  const p: Promise<unknown> = new Promise((resolve) => setImmediate(resolve))
    .then(() => processDueDeliveries(deps, { notificationIds }))
    .catch((err) => deps.log.warn({ err }, 'notification delivery kick failed; the periodic run retries'));
  inflight.add(p);
  p.finally(() => inflight.delete(p)).catch(() => {});
}

/** Waits for the in-flight kicks (the notifications plugin's onClose, tests). */
export async function drainDeliveries(delivery: DeliveryState): Promise<void> {
  while (delivery.inflight.size > 0) await Promise.allSettled([...delivery.inflight]);
}
