import { and, asc, eq, inArray, lt, sql } from 'drizzle-orm';
import { notificationDeliveries, pushDevices, pushPreferences, pushTickets } from '../../../drizzle/index.js';
import type { DbOrTx } from '../../db/index.js';
import type { Clock, ServiceDeps } from '../../lib/deps.js';
import { UpstreamError } from '../../lib/http.js';
import type { Semaphore } from '../../lib/semaphore.js';
import { NOTIFICATION_TYPES, type ClaimedDelivery, type DeliveryContext, type DeliveryResult } from '../notifications/types.js';
import { chunk, EXPO_RECEIPT_BATCH, EXPO_SEND_BATCH, getExpoReceipts, sendExpoBatch, type ExpoMessage, type ExpoTicket } from './expo.js';
import { heldByQuietHours, type QuietHours } from '../notifications/quiet-hours.js';
import type { PushPreferences, UpdatePushPreferences } from './schemas.js';

/**
 * Idempotent upsert by token (docs/decisions.md §6). A token registered to another account
 * moves to the caller: one phone signed into another account, whose app could not unregister
 * at sign-out. The token is a device secret only the device's app holds (never logged or
 * returned), so whoever presents it is that device's current user.
 */
export async function registerDevice(deps: { db: DbOrTx; clock: Clock }, userId: string, token: string, platform: string) {
  const now = deps.clock();
  await deps.db
    .insert(pushDevices)
    .values({ token, userId, platform, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: pushDevices.token, set: { userId, platform, updatedAt: now } });
}

/** Removes the caller's own device; an unknown token or someone else's is left alone (still 200). */
export async function unregisterDevice(deps: { db: DbOrTx }, userId: string, token: string): Promise<boolean> {
  const rows = await deps.db
    .delete(pushDevices)
    .where(and(eq(pushDevices.token, token), eq(pushDevices.userId, userId)))
    .returning({ token: pushDevices.token });
  return rows.length > 0;
}

type PreferencesRow = {
  enabled: boolean;
  types: Record<string, boolean>;
  quietHours?: QuietHours | null;
  urgentTypes?: string[] | null;
};

export function fullPreferences(row: PreferencesRow | undefined): PushPreferences {
  const types = Object.fromEntries(NOTIFICATION_TYPES.map((t) => [t, row?.types?.[t] !== false])) as PushPreferences['types'];
  const urgent = new Set(row?.urgentTypes ?? []);
  return {
    enabled: row?.enabled ?? true,
    types,
    quietHours: row?.quietHours ? { start: row.quietHours.start, end: row.quietHours.end, timezone: row.quietHours.timezone } : null,
    // In the order of NOTIFICATION_TYPES, known types only.
    urgentTypes: NOTIFICATION_TYPES.filter((t) => urgent.has(t)),
  };
}

export async function getPreferences(deps: { db: DbOrTx }, userId: string): Promise<PushPreferences> {
  const [row] = await deps.db.select().from(pushPreferences).where(eq(pushPreferences.userId, userId)).limit(1);
  return fullPreferences(row);
}

/**
 * Merges into the stored preferences in one atomic upsert (jsonb `||`), so
 * two concurrent partial updates both keep their keys.
 */
export async function updatePreferences(
  deps: { db: DbOrTx; clock: Clock },
  userId: string,
  patch: UpdatePushPreferences,
): Promise<PushPreferences> {
  const now = deps.clock();
  const types = Object.fromEntries(Object.entries(patch.types ?? {}).filter(([, v]) => v !== undefined)) as Record<string, boolean>;
  // docs/decisions.md §14.4: quietHours and urgentTypes replace the stored value when given, else keep it.
  const urgentTypes = patch.urgentTypes === undefined ? undefined : [...new Set(patch.urgentTypes)];
  const [row] = await deps.db
    .insert(pushPreferences)
    .values({
      userId,
      enabled: patch.enabled ?? true,
      types,
      quietHours: patch.quietHours ?? null,
      urgentTypes: urgentTypes ?? [],
      updatedAt: now,
    })
    .onConflictDoUpdate({
      target: pushPreferences.userId,
      set: {
        enabled: patch.enabled === undefined ? sql`${pushPreferences.enabled}` : patch.enabled,
        types: sql`${pushPreferences.types} || ${JSON.stringify(types)}::jsonb`,
        quietHours:
          patch.quietHours === undefined
            ? sql`${pushPreferences.quietHours}`
            : sql`${patch.quietHours === null ? null : JSON.stringify(patch.quietHours)}::jsonb`,
        urgentTypes: urgentTypes === undefined ? sql`${pushPreferences.urgentTypes}` : sql`${JSON.stringify(urgentTypes)}::jsonb`,
        updatedAt: now,
      },
    })
    .returning();
  return fullPreferences(row);
}

async function removeDevices(db: DbOrTx, tokens: string[]) {
  if (tokens.length > 0) await db.delete(pushDevices).where(inArray(pushDevices.token, tokens));
}

/** Ticket errors that no retry can fix (docs/decisions.md §13.2): the row is a dead letter at once. */
const FATAL_TICKET_ERRORS = new Set(['MessageTooBig', 'MismatchSenderId', 'InvalidProviderToken']);

export interface PushChannelOptions {
  /** Expo requests in flight per instance (docs/decisions.md §13.2: at most 6). */
  maxInFlight?: number;
  /** Per request. */
  timeoutMs?: number;
}

type Settled = Array<[ClaimedDelivery, DeliveryResult]>;

/** What a failed send request means for each of its rows. */
function requestFailure(err: unknown): DeliveryResult {
  const message = (err instanceof Error ? err.message : String(err)).slice(0, 300);
  if (err instanceof UpstreamError && err.status !== undefined) {
    if (err.status === 401) return { status: 'paused', reason: 'InvalidCredentials' };
    if (err.status === 400) return { status: 'failed', error: `Expo refused the request: ${message}` };
  }
  // 429, 5xx, network errors and timeouts (and anything unexpected): back off and try again.
  return { status: 'retry', error: message };
}

/**
 * The push leg of the ledger (docs/decisions.md §13.2): every claimed row is
 * one device. Honours the user's preferences (master switch and per type),
 * sends through Expo in requests of ≤ 100 messages with at most
 * `maxInFlight` requests in flight on this instance, and settles each
 * request's rows as soon as Expo answers.
 */
export async function deliverPushRows(
  ctx: DeliveryContext,
  items: ClaimedDelivery[],
  opts: { gate: Pick<Semaphore, 'run'>; timeoutMs: number; pausedBy: { reason?: string } },
): Promise<void> {
  if (items.length === 0) return;
  const userIds = [...new Set(items.map((r) => r.userId))];
  const tokens = [...new Set(items.map((r) => r.target))];
  const [prefRows, deviceRows] = await Promise.all([
    ctx.db.select().from(pushPreferences).where(inArray(pushPreferences.userId, userIds)),
    ctx.db.select({ token: pushDevices.token, userId: pushDevices.userId }).from(pushDevices).where(inArray(pushDevices.token, tokens)),
  ]);
  const prefs = new Map(prefRows.map((p) => [p.userId, fullPreferences(p)]));
  const owner = new Map(deviceRows.map((d) => [d.token, d.userId]));
  const early: Settled = [];
  const sendable: ClaimedDelivery[] = [];
  const asOf = ctx.clock();
  for (const r of items) {
    const p = prefs.get(r.userId) ?? fullPreferences(undefined);
    if (owner.get(r.target) !== r.userId) early.push([r, { status: 'skipped', reason: 'device unregistered' }]);
    else if (!p.enabled) early.push([r, { status: 'skipped', reason: 'preferences' }]);
    // A quiet-hours digest (docs/decisions.md §14.4): only the master switch applies to it.
    else if (r.digest) sendable.push(r);
    else if (!p.types[r.notification.type]) early.push([r, { status: 'skipped', reason: 'preferences' }]);
    else if (heldByQuietHours(p, r.notification.type, asOf)) early.push([r, { status: 'held' }]);
    else sendable.push(r);
  }
  await ctx.settle(early);

  const sendChunk = async (batch: ClaimedDelivery[]) => {
    if (opts.pausedBy.reason) {
      await ctx.settle(batch.map((r) => [r, { status: 'paused', reason: opts.pausedBy.reason! }]));
      return;
    }
    const messages: ExpoMessage[] = batch.map((r) =>
      r.digest
        ? {
            to: r.target,
            title: r.digest.title,
            body: r.digest.body,
            data: { type: 'quiet_hours_digest', count: r.digest.count },
            sound: 'default',
            priority: 'high',
          }
        : {
            to: r.target,
            title: r.notification.title,
            body: r.notification.message,
            data: { ...r.notification.data, notificationId: r.notification.id, type: r.notification.type },
            sound: 'default',
            priority: 'high',
          },
    );
    let tickets: ExpoTicket[];
    try {
      tickets = await sendExpoBatch(ctx.config, messages, { timeoutMs: opts.timeoutMs });
    } catch (err) {
      const result = requestFailure(err);
      if (result.status === 'paused') opts.pausedBy.reason = result.reason;
      await ctx.settle(batch.map((r) => [r, result]));
      return;
    }
    const now = ctx.clock();
    const ok: { id: string; token: string; deliveryId: string; createdAt: Date }[] = [];
    const gone: string[] = [];
    const results: Settled = tickets.map((t, i) => {
      const row = batch[i];
      if (t.status === 'ok' && typeof t.id === 'string') {
        ok.push({ id: t.id, token: row.target, deliveryId: row.id, createdAt: now });
        return [row, { status: 'sent' }];
      }
      const code = (t.status === 'error' && t.details?.error) || 'UnknownError';
      const text = `Expo ticket ${code}${t.status === 'error' && t.message ? `: ${t.message.slice(0, 200)}` : ''}`;
      if (code === 'DeviceNotRegistered') {
        gone.push(row.target);
        return [row, { status: 'skipped', reason: 'device unregistered (DeviceNotRegistered)' }];
      }
      if (code === 'InvalidCredentials') {
        opts.pausedBy.reason = 'InvalidCredentials';
        return [row, { status: 'paused', reason: 'InvalidCredentials' }];
      }
      if (FATAL_TICKET_ERRORS.has(code)) return [row, { status: 'failed', error: text }];
      // MessageRateExceeded and anything Expo may add later: back off and try again.
      return [row, { status: 'retry', error: text }];
    });
    // Accepted first: the window in which a kill could lose an acceptance stays as short as the writes.
    await ctx.settle(results);
    if (ok.length > 0) await ctx.db.insert(pushTickets).values(ok).onConflictDoNothing();
    await removeDevices(ctx.db, gone);
  };
  await Promise.all(chunk(sendable, EXPO_SEND_BATCH).map((batch) => opts.gate.run(() => sendChunk(batch))));
}

/** docs/decisions.md §13.2: a DeviceNotRegistered receipt makes its ledger row `skipped`. */
async function markReceiptGone(db: DbOrTx, deliveryIds: string[], now: Date) {
  await db
    .update(notificationDeliveries)
    .set({ status: 'skipped', lastError: 'device unregistered (DeviceNotRegistered receipt)', updatedAt: now })
    .where(inArray(notificationDeliveries.id, deliveryIds));
}

export interface ReceiptCheckOptions {
  /** Only tickets at least this old (Expo recommends ~15 min after sending). */
  minAgeMs?: number;
  /** Tickets older than this without a receipt are dropped (Expo purges receipts after 24 h). */
  maxAgeMs?: number;
  maxTickets?: number;
}

/**
 * The receipt check: asks Expo about stored tickets, removes devices whose
 * receipt says DeviceNotRegistered, and forgets tickets that got a receipt or
 * are too old to get one. Idempotent, so two instances running it at once is
 * harmless.
 */
export async function checkPushReceipts(
  deps: Pick<ServiceDeps, 'config' | 'log' | 'clock'> & { db: DbOrTx },
  opts: ReceiptCheckOptions = {},
): Promise<{ checked: number; removedDevices: number }> {
  const now = deps.clock().getTime();
  const minAge = opts.minAgeMs ?? 15 * 60_000;
  const maxAge = opts.maxAgeMs ?? 24 * 60 * 60_000;
  await deps.db.delete(pushTickets).where(lt(pushTickets.createdAt, new Date(now - maxAge)));
  const tickets = await deps.db
    .select()
    .from(pushTickets)
    .where(lt(pushTickets.createdAt, new Date(now - minAge + 1)))
    .orderBy(asc(pushTickets.createdAt))
    .limit(opts.maxTickets ?? 3000);
  let removed = 0;
  for (const batch of chunk(tickets, EXPO_RECEIPT_BATCH)) {
    const receipts = await getExpoReceipts(
      deps.config,
      batch.map((t) => t.id),
    );
    const done: string[] = [];
    const gone: string[] = [];
    const goneRows: string[] = [];
    for (const t of batch) {
      const r = receipts[t.id];
      if (!r) continue; // not ready yet: ask again next time
      done.push(t.id);
      if (r.status === 'error') {
        if (r.details?.error === 'DeviceNotRegistered') {
          gone.push(t.token);
          if (t.deliveryId) goneRows.push(t.deliveryId);
        } else deps.log.warn({ error: r.details?.error ?? r.message }, 'Expo push receipt reports an error');
      }
    }
    await removeDevices(deps.db, gone);
    if (goneRows.length > 0) await markReceiptGone(deps.db, goneRows, deps.clock());
    removed += gone.length;
    if (done.length > 0) await deps.db.delete(pushTickets).where(inArray(pushTickets.id, done));
  }
  return { checked: tickets.length, removedDevices: removed };
}
