import { createHash } from 'node:crypto';
import { inArray, sql, type SQL } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import { notifications } from '../../../drizzle/index.js';
import { rows, type Db, type DbOrTx } from '../../db/index.js';
import type { Config } from '../../config.js';
import type { ServiceDeps } from '../../lib/deps.js';
import type {
  ClaimedDelivery,
  QuietDigest,
  DeliveryContext,
  DeliveryResult,
  NotificationChannel,
  NotificationType,
  StoredNotification,
} from './types.js';

/**
 * The delivery ledger of the notify path (docs/decisions.md §13.1): one row
 * per (notification, channel, device or chat), written with the
 * notification. Rows are claimed set-based with FOR UPDATE SKIP LOCKED, so
 * several workers and instances never work on the same row at once; a claim
 * is a lease (a dead instance's rows come due again after LEASE_MS, well
 * within the 5 minutes of §13.1). A retry only ever concerns its own row, so
 * it resends to nothing that already accepted the notification. Transient
 * failures back off with jitter (first retry within 30 s, capped at 10 min)
 * until the row's deadline (1 h after the notification), then the row is
 * `failed`: a dead letter, listed and re-queued by the internal API.
 */
export const LEASE_MS = 2 * 60_000;
export const DELIVERY_DEADLINE_MS = 60 * 60_000;
const FIRST_BACKOFF_MS = 30_000;
const MAX_BACKOFF_MS = 10 * 60_000;
export const CLAIM_BATCH = 500;

/**
 * The notify path's delivery state, one per app (the notifications plugin
 * creates it from the channel list the composition root hands it; jobs get
 * the same object): the channels, Redis for what channels share across
 * instances, the in-process kicks still running (the app's close waits for
 * them before its pool closes) and when this instance last pruned the ledger.
 */
export interface DeliveryState {
  readonly channels: readonly NotificationChannel[];
  readonly redis: Redis | undefined;
  readonly keyPrefix: string;
  readonly inflight: Set<Promise<unknown>>;
  /** Wake-ups for rows this instance deferred (pacing): each kicks its rows when their slot comes. */
  readonly timers: Set<NodeJS.Timeout>;
  /** Set at close: no new wake-ups. */
  closed: boolean;
  /** Epoch ms of this instance's last prune of settled rows; 0 = not yet. */
  prunedAt: number;
}

export function createDeliveryState(
  channels: readonly NotificationChannel[],
  opts: { redis?: Redis; keyPrefix?: string } = {},
): DeliveryState {
  const names = channels.map((c) => c.name);
  if (new Set(names).size !== names.length) throw new Error(`delivery channel names must be unique: ${names.join(', ')}`);
  return {
    channels,
    redis: opts.redis,
    keyPrefix: opts.keyPrefix ?? 'pb:',
    inflight: new Set(),
    timers: new Set(),
    closed: false,
    prunedAt: 0,
  };
}

export interface DeliveryWorkerDeps extends ServiceDeps {
  delivery: Pick<DeliveryState, 'channels' | 'redis' | 'keyPrefix'> & Partial<Pick<DeliveryState, 'inflight' | 'timers' | 'closed'>>;
}

/** A deferred row further out than this waits for delivery-sweep instead of a timer. */
const WAKE_MAX_MS = 60_000;

/**
 * docs/decisions.md §13.3: a row that pacing deferred is sent when its slot comes, by the
 * instance that deferred it, whatever JOBS says (delivery-sweep stays the safety net).
 */
function wakeDeferred(deps: DeliveryWorkerDeps, byTime: Map<number, string[]>, now: number): void {
  const { timers, inflight } = deps.delivery;
  if (!timers || !inflight || deps.delivery.closed) return;
  const delivery = { ...deps.delivery, timers, inflight } as DeliveryState;
  for (const [until, ids] of byTime) {
    const wait = until - now;
    if (wait > WAKE_MAX_MS) continue;
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        if (!delivery.closed) kickDeliveryRows({ ...deps, delivery }, ids);
      },
      Math.max(0, wait) + 25,
    );
    timer.unref();
    timers.add(timer);
  }
}

export interface DeliveryReport {
  claimed: number;
  sent: number;
  skipped: number;
  retrying: number;
  failed: number;
  deferred: number;
  /** Held for the users' quiet hours (docs/decisions.md §14.4). */
  held: number;
}

const emptyReport = (): DeliveryReport => ({ claimed: 0, sent: 0, skipped: 0, retrying: 0, failed: 0, deferred: 0, held: 0 });

/**
 * Delay before the next attempt after `attempts` failed ones: "equal jitter"
 * over 30 s, 1 min, 2 min, … capped at 10 min, so the first retry comes
 * within 30 s and a crowd of rows failed together does not come back together.
 */
export function backoffMs(attempts: number, random: () => number = Math.random): number {
  const cap = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(cap / 2 + random() * (cap / 2));
}

/**
 * The ledger rows of new notifications (docs/decisions.md §13.1), read from a
 * relation `n` (id, user_id) the caller's statement defines (a CTE, such as
 * the notifications it inserts), joined to every channel's targets (the user's
 * devices, the user's chat; a user with no device gets no push row): written
 * by the statement that stores the notifications, with nothing sent twice.
 * undefined: no channels.
 */
export function deliveriesFrom(channels: readonly NotificationChannel[], now: Date): SQL | undefined {
  if (channels.length === 0) return undefined;
  const at = now.toISOString();
  const deadline = new Date(now.getTime() + DELIVERY_DEADLINE_MS).toISOString();
  const parts = channels.map(
    (c) => sql`
      select n.id, n.user_id, ${c.name}::text, ${c.targetKind}::text, t.target
      from n join (${c.targets}) t on t.user_id = n.user_id`,
  );
  return sql`
    insert into notification_deliveries
      (notification_id, user_id, channel, target_kind, target, next_attempt_at, deadline_at, created_at, updated_at)
    select s.*, ${at}::timestamptz, ${deadline}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
    from (${sql.join(parts, sql` union all `)}) s`;
}

// ---- Channel pauses (docs/decisions.md §13.2) ----

export function fingerprint(secret: string | undefined): string {
  return createHash('sha256')
    .update(secret ?? '')
    .digest('hex')
    .slice(0, 16);
}

/** The paused channels and why. */
export async function pausedChannels(db: DbOrTx): Promise<Map<string, string>> {
  const found = await rows<{ channel: string; paused_reason: string }>(
    db,
    sql`select channel, paused_reason from delivery_channels where paused_reason is not null`,
  );
  return new Map(found.map((r) => [r.channel, r.paused_reason]));
}

export async function pauseChannel(db: DbOrTx, channel: string, reason: string, credentialHash: string | null, now: Date) {
  await rows(
    db,
    sql`
    insert into delivery_channels (channel, paused_reason, paused_at, credential_hash)
    values (${channel}, ${reason}, ${now.toISOString()}::timestamptz, ${credentialHash})
    on conflict (channel) do update set paused_reason = excluded.paused_reason, paused_at = excluded.paused_at,
      credential_hash = excluded.credential_hash`,
  );
}

/** Lifts a pause; true when the channel was paused. */
export async function resumeChannel(db: DbOrTx, channel: string): Promise<boolean> {
  const found = await rows(
    db,
    sql`update delivery_channels set paused_reason = null, paused_at = null
        where channel = ${channel} and paused_reason is not null returning channel`,
  );
  return found.length > 0;
}

/**
 * At start: a pause taken with other credentials than the ones this process
 * has is lifted (the operator fixed PUSH_ACCESS_TOKEN and restarted).
 */
export async function liftStalePauses(db: DbOrTx, channels: readonly NotificationChannel[], config: Config): Promise<string[]> {
  const lifted: string[] = [];
  for (const c of channels) {
    if (!c.credentialHash) continue;
    const found = await rows(
      db,
      sql`update delivery_channels set paused_reason = null, paused_at = null
          where channel = ${c.name} and paused_reason is not null and credential_hash is distinct from ${c.credentialHash(config)}
          returning channel`,
    );
    if (found.length > 0) lifted.push(c.name);
  }
  return lifted;
}

// ---- Claiming and settling ----

interface ClaimedRow {
  id: string;
  notification_id: string | null;
  user_id: string;
  target: string;
  attempts: number | string;
  last_error: string | null;
  deadline_at: string | Date | null;
  digest: QuietDigest | null;
  created_at: string | Date;
}

/** Which rows a kick claims: those of some notifications, or some rows by id (a digest, a re-queued dead letter). */
export interface ClaimFilter {
  notificationIds?: string[];
  deliveryIds?: string[];
}

async function claimDue(db: DbOrTx, channel: string, now: Date, limit: number, filter: ClaimFilter = {}): Promise<ClaimedRow[]> {
  const only = filter.notificationIds
    ? sql`and notification_id in (select (jsonb_array_elements_text(${JSON.stringify(filter.notificationIds)}::jsonb))::uuid)`
    : filter.deliveryIds
      ? sql`and id in (select (jsonb_array_elements_text(${JSON.stringify(filter.deliveryIds)}::jsonb))::uuid)`
      : sql``;
  const leaseUntil = new Date(now.getTime() + LEASE_MS).toISOString();
  return rows<ClaimedRow>(
    db,
    sql`
    with due as (
      select id from notification_deliveries
      where status = 'pending' and held_at is null and next_attempt_at <= ${now.toISOString()}::timestamptz and channel = ${channel} ${only}
      order by next_attempt_at
      limit ${limit}
      for update skip locked
    )
    update notification_deliveries d
    set next_attempt_at = ${leaseUntil}::timestamptz
    from due
    where d.id = due.id
    returning d.id, d.notification_id, d.user_id, d.target, d.attempts, d.last_error, d.deadline_at, d.digest, d.created_at`,
  );
}

interface RowUpdate {
  id: string;
  status: 'pending' | 'sent' | 'skipped' | 'failed';
  inc: number;
  next: string | null;
  err: string | null;
  target: string | null;
  /** docs/decisions.md §14.4: the row is held for quiet hours (held_at = now). */
  held?: boolean;
}

const clip = (s: string) => s.slice(0, 500);

/** Turns outcomes into ledger writes: a handful of set-based statements per call. */
async function settleResults(
  deps: DeliveryWorkerDeps,
  channel: NotificationChannel,
  deadlines: Map<string, number>,
  results: Array<[ClaimedDelivery, DeliveryResult]>,
  report: DeliveryReport,
): Promise<void> {
  if (results.length === 0) return;
  const now = deps.clock();
  const at = now.toISOString();
  const updates: RowUpdate[] = [];
  const holds: Array<{ target: string; until: string }> = [];
  const moves: Array<{ user_id: string; from: string; to: string }> = [];
  const wakes = new Map<number, string[]>();
  let pause: string | undefined;
  for (const [row, r] of results) {
    switch (r.status) {
      case 'sent':
        updates.push({ id: row.id, status: 'sent', inc: 1, next: null, err: null, target: null });
        report.sent++;
        break;
      case 'skipped':
        updates.push({ id: row.id, status: 'skipped', inc: 1, next: null, err: clip(r.reason), target: null });
        report.skipped++;
        break;
      case 'failed':
        updates.push({ id: row.id, status: 'failed', inc: 1, next: null, err: clip(r.error), target: null });
        report.failed++;
        deps.log.warn({ deliveryId: row.id, channel: channel.name, err: r.error }, 'notification delivery failed for good');
        break;
      case 'retry': {
        const deadline = deadlines.get(row.id) ?? row.notification.createdAt.getTime() + DELIVERY_DEADLINE_MS;
        const next = Math.max(now.getTime() + backoffMs(row.attempts + 1), r.notBefore?.getTime() ?? 0);
        if (next > deadline) {
          updates.push({
            id: row.id,
            status: 'failed',
            inc: 1,
            next: null,
            err: clip(`${r.error} (retries ended 1 h after the notification)`),
            target: null,
          });
          report.failed++;
        } else {
          updates.push({ id: row.id, status: 'pending', inc: 1, next: new Date(next).toISOString(), err: clip(r.error), target: null });
          report.retrying++;
          if (r.holdTarget && r.notBefore) holds.push({ target: row.target, until: r.notBefore.toISOString() });
        }
        break;
      }
      case 'retarget':
        updates.push({ id: row.id, status: 'pending', inc: 1, next: at, err: clip(r.error), target: r.target });
        moves.push({ user_id: row.userId, from: row.target, to: r.target });
        report.retrying++;
        break;
      case 'defer': {
        updates.push({ id: row.id, status: 'pending', inc: 0, next: r.until.toISOString(), err: row.lastError, target: null });
        report.deferred++;
        const ids = wakes.get(r.until.getTime()) ?? [];
        ids.push(row.id);
        wakes.set(r.until.getTime(), ids);
        break;
      }
      case 'held':
        updates.push({ id: row.id, status: 'pending', inc: 0, next: at, err: row.lastError, target: null, held: true });
        report.held++;
        break;
      case 'paused':
        pause = r.reason;
        updates.push({ id: row.id, status: 'pending', inc: 0, next: at, err: clip(r.reason), target: null });
        report.deferred++;
        break;
    }
  }
  if (pause) {
    await pauseChannel(deps.db, channel.name, pause, channel.credentialHash?.(deps.config) ?? null, now);
    deps.log.error({ channel: channel.name, reason: pause }, 'delivery channel paused: its rows wait until it is resumed');
  }
  if (moves.length > 0) {
    await rows(
      deps.db,
      sql`
      update notification_deliveries d set target = m.to, next_attempt_at = least(d.next_attempt_at, ${at}::timestamptz), updated_at = ${at}::timestamptz
      from jsonb_to_recordset(${JSON.stringify(moves)}::jsonb) as m(user_id uuid, "from" text, "to" text)
      where d.status = 'pending' and d.channel = ${channel.name} and d.user_id = m.user_id and d.target = m."from"`,
    );
  }
  await rows(
    deps.db,
    sql`
    update notification_deliveries d
    set status = v.status, attempts = d.attempts + v.inc, next_attempt_at = coalesce(v.next, d.next_attempt_at),
        last_error = v.err, target = coalesce(v.target, d.target), updated_at = ${at}::timestamptz,
        held_at = case when v.held then ${at}::timestamptz else d.held_at end
    from jsonb_to_recordset(${JSON.stringify(updates)}::jsonb) as v(id uuid, status text, inc int, next timestamptz, err text, target text, held boolean)
    where d.id = v.id and d.status = 'pending'`,
  );
  if (wakes.size > 0) wakeDeferred(deps, wakes, now.getTime());
  if (holds.length > 0) {
    // docs/decisions.md §13.3: the provider's wait holds every pending row of that chat, in the ledger.
    await rows(
      deps.db,
      sql`
      update notification_deliveries d set next_attempt_at = greatest(d.next_attempt_at, h.until)
      from jsonb_to_recordset(${JSON.stringify(holds)}::jsonb) as h(target text, until timestamptz)
      where d.status = 'pending' and d.channel = ${channel.name} and d.target = h.target`,
    );
  }
}

async function processChannel(
  deps: DeliveryWorkerDeps,
  channel: NotificationChannel,
  report: DeliveryReport,
  opts: ClaimFilter & { limit?: number },
): Promise<number> {
  const claimed = await claimDue(deps.db, channel.name, deps.clock(), opts.limit ?? CLAIM_BATCH, opts);
  report.claimed += claimed.length;
  if (claimed.length === 0) return 0;
  const ids = [...new Set(claimed.flatMap((c) => (c.notification_id ? [c.notification_id] : [])))];
  const found = ids.length > 0 ? await deps.db.select().from(notifications).where(inArray(notifications.id, ids)) : [];
  const byId = new Map<string, StoredNotification>(
    found.map((r) => [r.id, { ...r, type: r.type as NotificationType, data: r.data ?? {} }]),
  );
  const deadlines = new Map<string, number>();
  const work: ClaimedDelivery[] = [];
  const gone: Array<[ClaimedDelivery, DeliveryResult]> = [];
  for (const c of claimed) {
    if (c.deadline_at) deadlines.set(c.id, new Date(c.deadline_at).getTime());
    if (c.digest) {
      // A quiet-hours digest (docs/decisions.md §14.4): no stored notification behind it.
      const digest = c.digest;
      work.push({
        id: c.id,
        notification: {
          id: c.id,
          userId: c.user_id,
          type: 'quiet_hours_digest',
          title: digest.title,
          message: digest.body,
          read: false,
          data: {},
          createdAt: new Date(c.created_at),
        },
        digest,
        userId: c.user_id,
        target: c.target,
        attempts: Number(c.attempts),
        lastError: c.last_error,
      });
      continue;
    }
    const notification = c.notification_id ? byId.get(c.notification_id) : undefined;
    const row: ClaimedDelivery = {
      id: c.id,
      notification: notification ?? ({ createdAt: new Date(0) } as StoredNotification),
      userId: c.user_id,
      target: c.target,
      attempts: Number(c.attempts),
      lastError: c.last_error,
    };
    if (notification) work.push(row);
    else gone.push([row, { status: 'skipped', reason: 'notification deleted' }]); // cascade normally removes the row first
  }
  const settled = new Set<string>();
  const settle = async (results: Array<[ClaimedDelivery, DeliveryResult]>) => {
    const fresh = results.filter(([r]) => !settled.has(r.id));
    for (const [r] of fresh) settled.add(r.id);
    await settleResults(deps, channel, deadlines, fresh, report);
  };
  await settle(gone);
  const ctx: DeliveryContext = { ...deps, redis: deps.delivery.redis, keyPrefix: deps.delivery.keyPrefix, settle };
  let failure: unknown;
  try {
    await channel.deliver(ctx, work);
  } catch (err) {
    failure = err;
    deps.log.warn({ err, channel: channel.name }, 'a delivery channel threw; its unsettled rows are retried');
  }
  const left = work.filter((r) => !settled.has(r.id));
  if (left.length > 0) {
    const error = failure instanceof Error ? failure.message : `channel ${channel.name} left the row unsettled`;
    await settle(left.map((r) => [r, { status: 'retry', error }]));
  }
  return claimed.length;
}

/**
 * Claims the due rows (optionally only those of some notifications) of every
 * channel that is not paused, and runs the channels on them in parallel.
 * Returns what happened; never throws for a provider's failure.
 */
export async function processDueDeliveries(
  deps: DeliveryWorkerDeps,
  opts: ClaimFilter & { limit?: number } = {},
): Promise<DeliveryReport & { full: boolean }> {
  const report = emptyReport();
  const paused = await pausedChannels(deps.db);
  const limit = opts.limit ?? CLAIM_BATCH;
  const counts = await Promise.all(
    deps.delivery.channels.filter((c) => !paused.has(c.name)).map((c) => processChannel(deps, c, report, { ...opts, limit })),
  );
  return { ...report, full: counts.some((n) => n >= limit) };
}

/**
 * How long settled ledger rows are kept: long enough to answer "was it
 * delivered?" for a recent notification, short enough that the ledger does
 * not grow with every notification ever sent. Dead letters stay longer, for
 * diagnosis and re-queueing. Pending rows are never pruned.
 */
export const SETTLED_RETENTION_MS = 24 * 60 * 60_000;
export const FAILED_RETENTION_MS = 7 * 24 * 60 * 60_000;
const PRUNE_BATCH = 5_000;

/**
 * Deletes settled (sent, skipped, failed) rows past their retention, in
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

/**
 * Drains everything due (the periodic run): a few claim loops at once, so
 * one batch's provider requests overlap the next batch's claim and writes
 * (SKIP LOCKED keeps them apart; the channels' own gates bound the requests).
 */
export const SWEEP_WORKERS = 3;
export async function processAllDueDeliveries(deps: DeliveryWorkerDeps, maxBatches = 20): Promise<DeliveryReport> {
  const total = emptyReport();
  let batches = 0;
  let done = false;
  const worker = async () => {
    while (!done && batches < maxBatches) {
      batches++;
      const { full, ...r } = await processDueDeliveries(deps);
      for (const k of Object.keys(total) as (keyof DeliveryReport)[]) total[k] += r[k];
      if (!full) done = true;
    }
  };
  await Promise.all(Array.from({ length: SWEEP_WORKERS }, worker));
  return total;
}

/** How often an instance prunes settled ledger rows (from its delivery-sweep runs). */
export const DELIVERY_PRUNE_MS = 60 * 60_000;

export interface SweepReport extends DeliveryReport {
  pruned: number;
  /** Paused channels and why (docs/decisions.md §13.2). */
  paused: Record<string, string>;
}

/**
 * The periodic run (the delivery-sweep job, docs/decisions.md §9): delivers
 * everything due (retries, rows a kick left behind, rows of a dead instance)
 * and, at most once per DELIVERY_PRUNE_MS on this instance, prunes settled rows.
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
  const paused = Object.fromEntries(await pausedChannels(deps.db));
  return { ...report, pruned, paused };
}

/**
 * The in-process kick right after notify(): delivers the new notifications'
 * rows without the caller waiting. Whatever it cannot deliver stays in the
 * ledger for the periodic run.
 */
export function kickDelivery(deps: ServiceDeps & { delivery: DeliveryState }, notificationIds: string[]): void {
  if (notificationIds.length === 0) return;
  kickInBackground(deps, () => processDueDeliveries(deps, { notificationIds }));
}

/** The same for some ledger rows by id (a re-queued digest, a just-written one). */
export function kickDeliveryRows(deps: ServiceDeps & { delivery: DeliveryState }, deliveryIds: string[]): void {
  if (deliveryIds.length === 0) return;
  kickInBackground(deps, () => processDueDeliveries(deps, { deliveryIds }));
}

/**
 * Runs `work` after the current tick without the caller waiting, tracked in
 * the app's in-flight set (the app's close and drainDeliveries wait for it).
 */
export function kickInBackground(deps: Pick<ServiceDeps, 'log'> & { delivery: DeliveryState }, work: () => Promise<unknown>): void {
  const { inflight } = deps.delivery;
  const p: Promise<unknown> = new Promise((resolve) => setImmediate(resolve))
    .then(work)
    .catch((err) => deps.log.warn({ err }, 'notification delivery kick failed; the periodic run retries'));
  inflight.add(p);
  p.finally(() => inflight.delete(p)).catch(() => {});
}

/** Stops the deferred rows' wake-ups (the app's close); delivery-sweep finds those rows later. */
export function stopDeliveryWakeups(delivery: DeliveryState): void {
  delivery.closed = true;
  for (const timer of delivery.timers) clearTimeout(timer);
  delivery.timers.clear();
}

/** Waits for the in-flight kicks (the notifications plugin's onClose, tests). */
export async function drainDeliveries(delivery: DeliveryState): Promise<void> {
  while (delivery.inflight.size > 0) await Promise.allSettled([...delivery.inflight]);
}
