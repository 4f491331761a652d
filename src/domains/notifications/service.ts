import { and, count, eq, sql } from 'drizzle-orm';
import { notificationDeliveries, notifications, users } from '../../../drizzle/index.js';
import type { DbOrTx } from '../../db/index.js';
import { AppError, notFound } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import type { DeliveryDeps, NotificationType, StoredNotification } from '../../lib/notify-types.js';
import type { PublishFn } from '../../plugins/infra.js';
import { deliveryChannels, userNotificationsChannel } from './channels.js';
import { kickDelivery } from './delivery.js';
import type { NotificationJson } from './schemas.js';

/** What the notify path needs; JobDeps and the app both provide it. */
export interface NotifyDeps extends DeliveryDeps {
  publish: PublishFn;
}

export interface NotifyRequest {
  userId: string;
  type: NotificationType;
  title: string;
  message: string;
  data?: Record<string, unknown>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function toNotificationJson(n: StoredNotification): NotificationJson {
  return {
    id: n.id,
    type: n.type,
    title: n.title,
    message: n.message,
    read: n.read,
    data: n.data ?? {},
    createdAt: n.createdAt.toISOString(),
  };
}

function toStored(r: typeof notifications.$inferSelect): StoredNotification {
  return { ...r, type: r.type as NotificationType, data: r.data ?? {} };
}

/**
 * Stores notifications and their outbox rows (one per delivery channel) in
 * the caller's transaction: one INSERT … RETURNING for the notifications, one
 * for the deliveries. Producers that change state and notify (the price-alert
 * trigger) call it inside their own transaction, so the state change and the
 * notification commit together or not at all.
 */
export async function storeNotifications(tx: DbOrTx, now: Date, requests: NotifyRequest[]): Promise<StoredNotification[]> {
  if (requests.length === 0) return [];
  const rows = await tx
    .insert(notifications)
    .values(
      requests.map((r) => ({
        userId: r.userId,
        type: r.type,
        title: r.title,
        message: r.message,
        data: r.data ?? {},
        createdAt: now,
      })),
    )
    .returning();
  if (deliveryChannels.length > 0) {
    await tx.insert(notificationDeliveries).values(
      rows.flatMap((n) =>
        deliveryChannels.map((c) => ({ notificationId: n.id, channel: c.name, nextAttemptAt: now, createdAt: now, updatedAt: now })),
      ),
    );
  }
  return rows.map(toStored);
}

/** After commit: emit on each user's stream and kick delivery (never awaited). */
export function announceNotifications(deps: NotifyDeps, stored: StoredNotification[]): void {
  // Delivery is kicked first: a failing live-update listener must not hold up push/messenger.
  kickDelivery(deps, stored.map((n) => n.id));
  for (const n of stored) {
    try {
      deps.publish(userNotificationsChannel(n.userId), 'notification', toNotificationJson(n));
    } catch (err) {
      deps.log.warn({ err, notificationId: n.id }, 'publishing a notification failed; it is stored and listed');
    }
  }
}

/**
 * The one notify path (decisions.md §6): store, emit on the user's
 * `user:notifications` stream, and hand push/messenger delivery to the outbox.
 * Returns as soon as the notification is stored; delivery never delays or
 * undoes it.
 */
export async function notify(deps: NotifyDeps, request: NotifyRequest): Promise<StoredNotification> {
  const [stored] = await deps.db.transaction((tx) => storeNotifications(tx, deps.clock(), [request]));
  announceNotifications(deps, [stored]);
  return stored;
}

function isForeignKeyViolation(err: unknown): boolean {
  for (let e: unknown = err, i = 0; e && i < 5; i++, e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === '23503') return true;
  }
  return false;
}

/** POST /internal/notifications: notify() for the platform's other services; unknown user → 404. */
export async function notifyFromService(deps: NotifyDeps, request: NotifyRequest): Promise<StoredNotification> {
  const [user] = await deps.db.select({ id: users.id }).from(users).where(eq(users.id, request.userId)).limit(1);
  if (!user) throw notFound('User');
  try {
    return await notify(deps, request);
  } catch (err) {
    if (isForeignKeyViolation(err)) throw notFound('User'); // deleted in between
    throw err;
  }
}

interface CursorValue {
  t: string; // created_at, microsecond text (exact, unlike a JS Date)
  i: string;
}

const CURSOR_SCOPE = 'notifications';

export interface ListNotificationsInput {
  userId: string;
  read?: boolean;
  type?: NotificationType;
  limit: number;
  cursor?: string;
}

/** Newest first (createdAt desc, id desc), keyset pagination on the (user, createdAt, id) index. */
export async function listNotifications(deps: { db: DbOrTx; config: { JWT_SECRET: string } }, input: ListNotificationsInput) {
  const filters = [eq(notifications.userId, input.userId)];
  if (input.read !== undefined) filters.push(eq(notifications.read, input.read));
  if (input.type !== undefined) filters.push(eq(notifications.type, input.type));
  if (input.cursor !== undefined) {
    const c = decodeCursor<CursorValue>(deps.config.JWT_SECRET, CURSOR_SCOPE, input.cursor);
    if (typeof c?.t !== 'string' || typeof c?.i !== 'string' || !UUID.test(c.i) || !/^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(c.t)) {
      throw new AppError(400, 'INVALID_CURSOR', 'The cursor was not issued by this service or was altered');
    }
    filters.push(sql`(${notifications.createdAt}, ${notifications.id}) < (${c.t}::timestamptz, ${c.i}::uuid)`);
  }
  const [rows, [unread]] = await Promise.all([
    deps.db
      .select({
        row: notifications,
        cursorTs: sql<string>`to_char(${notifications.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
      })
      .from(notifications)
      .where(and(...filters))
      // NULLS LAST matches the index's order (drizzle's .desc() index is DESC NULLS LAST),
      // so the planner reads the first page straight off notifications_user_created_idx.
      .orderBy(sql`${notifications.createdAt} desc nulls last`, sql`${notifications.id} desc nulls last`)
      .limit(input.limit + 1),
    deps.db
      .select({ n: count() })
      .from(notifications)
      .where(and(eq(notifications.userId, input.userId), eq(notifications.read, false))),
  ]);
  const page = rows.slice(0, input.limit);
  const last = page[page.length - 1];
  const nextCursor =
    rows.length > input.limit && last
      ? encodeCursor(deps.config.JWT_SECRET, CURSOR_SCOPE, { t: last.cursorTs, i: last.row.id } satisfies CursorValue)
      : null;
  return {
    notifications: page.map((r) => toNotificationJson(toStored(r.row))),
    unreadCount: Number(unread?.n ?? 0),
    nextCursor,
  };
}

/** Marks one of the user's notifications read; someone else's id or a malformed one is 404. */
export async function markNotificationRead(deps: { db: DbOrTx }, userId: string, id: string): Promise<NotificationJson> {
  if (!UUID.test(id)) throw notFound('Notification');
  const [row] = await deps.db
    .update(notifications)
    .set({ read: true })
    .where(and(eq(notifications.id, id), eq(notifications.userId, userId)))
    .returning();
  if (!row) throw notFound('Notification');
  return toNotificationJson(toStored(row));
}

/** n = notifications that changed from unread to read. */
export async function markAllNotificationsRead(deps: { db: DbOrTx }, userId: string): Promise<{ updated: number }> {
  const rows = await deps.db
    .update(notifications)
    .set({ read: true })
    .where(and(eq(notifications.userId, userId), eq(notifications.read, false)))
    .returning({ id: notifications.id });
  return { updated: rows.length };
}

/** Permanent removal (its pending deliveries go with it). */
export async function deleteNotification(deps: { db: DbOrTx }, userId: string, id: string): Promise<void> {
  if (!UUID.test(id)) throw notFound('Notification');
  const rows = await deps.db
    .delete(notifications)
    .where(and(eq(notifications.id, id), eq(notifications.userId, userId)))
    .returning({ id: notifications.id });
  if (rows.length === 0) throw notFound('Notification');
}
