import { and, asc, eq, inArray, lt, sql } from 'drizzle-orm';
import { pushDevices, pushPreferences, pushTickets } from '../../../drizzle/index.js';
import { AppError } from '../../errors.js';
import type { DbOrTx } from '../../db/index.js';
import type { Clock, ServiceDeps } from '../../lib/deps.js';
import { NOTIFICATION_TYPES, type DeliveryOutcome, type StoredNotification } from '../notifications/types.js';
import { chunk, EXPO_RECEIPT_BATCH, EXPO_SEND_BATCH, getExpoReceipts, sendExpoBatch, type ExpoMessage } from './expo.js';
import type { PushPreferences, UpdatePushPreferences } from './schemas.js';

/**
 * Idempotent upsert by token for its owner. A token registered to another user
 * is not moved (409 CONFLICT): anyone who learned a device's token could
 * otherwise silence the owner's notifications and send their own to the
 * owner's device. It becomes registrable again once the owner unregisters it
 * (or Expo reports the device gone).
 */
export async function registerDevice(deps: { db: DbOrTx; clock: Clock }, userId: string, token: string, platform: string) {
  const now = deps.clock();
  const rows = await deps.db
    .insert(pushDevices)
    .values({ token, userId, platform, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: pushDevices.token, set: { platform, updatedAt: now }, setWhere: eq(pushDevices.userId, userId) })
    .returning({ token: pushDevices.token });
  if (rows.length === 0) {
    throw new AppError(409, 'CONFLICT', 'This device token is registered to another account; it must be unregistered there first');
  }
}

/** Removes the caller's own device; an unknown token or someone else's is left alone (still 200). */
export async function unregisterDevice(deps: { db: DbOrTx }, userId: string, token: string): Promise<boolean> {
  const rows = await deps.db
    .delete(pushDevices)
    .where(and(eq(pushDevices.token, token), eq(pushDevices.userId, userId)))
    .returning({ token: pushDevices.token });
  return rows.length > 0;
}

function fullPreferences(row: { enabled: boolean; types: Record<string, boolean> } | undefined): PushPreferences {
  const types = Object.fromEntries(NOTIFICATION_TYPES.map((t) => [t, row?.types?.[t] !== false])) as PushPreferences['types'];
  return { enabled: row?.enabled ?? true, types };
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
  const [row] = await deps.db
    .insert(pushPreferences)
    .values({ userId, enabled: patch.enabled ?? true, types, updatedAt: now })
    .onConflictDoUpdate({
      target: pushPreferences.userId,
      set: {
        enabled: patch.enabled === undefined ? sql`${pushPreferences.enabled}` : patch.enabled,
        types: sql`${pushPreferences.types} || ${JSON.stringify(types)}::jsonb`,
        updatedAt: now,
      },
    })
    .returning();
  return fullPreferences(row);
}

async function removeDevices(db: DbOrTx, tokens: string[]) {
  if (tokens.length > 0) await db.delete(pushDevices).where(inArray(pushDevices.token, tokens));
}

/**
 * The push channel of the notify path: honours the user's preferences
 * (master switch and per type), sends one message per device through Expo in
 * batches of ≤ 100, stores the tickets for the receipt check and removes
 * devices Expo reports as DeviceNotRegistered. Throws (→ outbox retry) when a
 * send request fails as a whole.
 */
export async function deliverPush(deps: ServiceDeps, n: StoredNotification): Promise<DeliveryOutcome> {
  const prefs = await getPreferences(deps, n.userId);
  if (!prefs.enabled || !prefs.types[n.type]) return 'skipped';
  const devices = await deps.db
    .select({ token: pushDevices.token })
    .from(pushDevices)
    .where(eq(pushDevices.userId, n.userId))
    .orderBy(asc(pushDevices.createdAt));
  if (devices.length === 0) return 'skipped';

  const messages: ExpoMessage[] = devices.map((d) => ({
    to: d.token,
    title: n.title,
    body: n.message,
    data: { ...n.data, notificationId: n.id, type: n.type },
    sound: 'default',
    priority: 'high',
  }));
  for (const batch of chunk(messages, EXPO_SEND_BATCH)) {
    const tickets = await sendExpoBatch(deps.config, batch);
    const ok: { id: string; token: string; createdAt: Date }[] = [];
    const gone: string[] = [];
    tickets.forEach((t, i) => {
      const token = batch[i].to;
      if (t.status === 'ok' && typeof t.id === 'string') ok.push({ id: t.id, token, createdAt: deps.clock() });
      else if (t.status === 'error') {
        if (t.details?.error === 'DeviceNotRegistered') gone.push(token);
        else deps.log.warn({ notificationId: n.id, error: t.details?.error ?? t.message }, 'Expo rejected a push message');
      }
    });
    if (ok.length > 0) await deps.db.insert(pushTickets).values(ok).onConflictDoNothing();
    await removeDevices(deps.db, gone);
  }
  return 'sent';
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
    for (const t of batch) {
      const r = receipts[t.id];
      if (!r) continue; // not ready yet: ask again next time
      done.push(t.id);
      if (r.status === 'error') {
        if (r.details?.error === 'DeviceNotRegistered') gone.push(t.token);
        else deps.log.warn({ error: r.details?.error ?? r.message }, 'Expo push receipt reports an error');
      }
    }
    await removeDevices(deps.db, gone);
    removed += gone.length;
    if (done.length > 0) await deps.db.delete(pushTickets).where(inArray(pushTickets.id, done));
  }
  return { checked: tickets.length, removedDevices: removed };
}
