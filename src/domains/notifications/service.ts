import { and, eq, sql, type SQL } from 'drizzle-orm';
import { notifications, users } from '../../../drizzle/index.js';
import { rows, type DbOrTx } from '../../db/index.js';
import { AppError, notFound, someCause } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import type { PublishFn } from '../realtime/channels.js';
import { insertDeliveries, kickDelivery, type DeliveryState } from './delivery.js';
import { appendStreamEvents, publishStreamEvents, type StreamEvent } from './stream.js';
import type { ServiceDeps } from '../../lib/deps.js';
import { NotificationSchema, type Notification, type NotificationType, type StoredNotification } from './types.js';
import { isUuid } from '../../lib/uuid.js';

/** What the notify path needs; JobDeps and the app both provide it. */
export interface NotifyDeps extends ServiceDeps {
  publish: PublishFn;
  delivery: DeliveryState;
}

export interface NotifyRequest {
  userId: string;
  type: NotificationType;
  title: string;
  message: string;
  data?: Record<string, unknown>;
}

export function toNotificationJson(n: StoredNotification): Notification {
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

/** A notification just stored, with its `notification` event on the user's stream (docs/decisions.md §12). */
export type NewNotification = StoredNotification & { streamEvent: StreamEvent };

/**
 * Stores notifications, their delivery ledger rows (one per channel and
 * device or chat, docs/decisions.md §13.1) and their `notification` events on
 * the users' streams (seq and unread count, docs/decisions.md §12.1) in the
 * caller's transaction. Producers that change state and notify (the price-alert
 * trigger) call it inside their own transaction, so the state change and the
 * notification commit together or not at all.
 */
export async function storeNotifications(
  deps: { delivery: Pick<DeliveryState, 'channels'> },
  tx: DbOrTx,
  now: Date,
  requests: NotifyRequest[],
): Promise<NewNotification[]> {
  const { channels } = deps.delivery;
  if (requests.length === 0) return [];
  // One parameter for the whole batch (jsonb_to_recordset): a fan-out stores thousands at once,
  // and building a statement with a bind parameter per field cost more CPU than the rows.
  const list = JSON.stringify(
    requests.map((r) => ({ user_id: r.userId, type: r.type, title: r.title, message: r.message, data: r.data ?? {} })),
  );
  const inserted = await rows<{
    id: string;
    user_id: string;
    type: string;
    title: string;
    message: string;
    read: boolean;
    data: Record<string, unknown> | null;
  }>(
    tx,
    sql`
    insert into notifications (user_id, type, title, message, data, created_at)
    select x.user_id, x.type, x.title, x.message, coalesce(x.data, '{}'::jsonb), ${now.toISOString()}::timestamptz
    from jsonb_to_recordset(${list}::jsonb) as x(user_id uuid, type text, title text, message text, data jsonb)
    returning id, user_id, type, title, message, read, data`,
  );
  const stored = inserted.map((r) => ({
    id: r.id,
    userId: r.user_id,
    type: r.type,
    title: r.title,
    message: r.message,
    read: r.read,
    data: r.data ?? {},
    createdAt: now,
  }));
  await insertDeliveries(tx, channels, stored, now);
  const added = stored.map(toStored);
  const events = await appendStreamEvents(
    tx,
    now,
    added.map((n) => ({ userId: n.userId, event: 'notification' as const, body: toNotificationJson(n), unreadDelta: 1 })),
  );
  return added.map((n, i) => ({ ...n, streamEvent: events[i] }));
}

/** After commit: emit on each user's stream and kick delivery (never awaited). */
export function announceNotifications(deps: NotifyDeps, stored: NewNotification[]): void {
  // Delivery is kicked first: a failing live-update listener must not hold up push/messenger.
  kickDelivery(
    deps,
    stored.map((n) => n.id),
  );
  publishStreamEvents(
    deps,
    stored.map((n) => n.streamEvent),
  );
}

/**
 * The one notify path (docs/decisions.md §6): store, emit on the user's
 * `user:notifications` stream, and hand push/messenger delivery to the outbox.
 * Returns as soon as the notification is stored; delivery never delays or
 * undoes it.
 */
export async function notify(deps: NotifyDeps, request: NotifyRequest): Promise<NewNotification> {
  const [stored] = await deps.db.transaction((tx) => storeNotifications(deps, tx, deps.clock(), [request]));
  announceNotifications(deps, [stored]);
  return stored;
}

const isForeignKeyViolation = (err: unknown) => someCause(err, ({ code }) => code === '23503');

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

/**
 * How the list query writes each field of NotificationSchema from a row `s`
 * of notifications: one entry per field (the compiler refuses a missing or an
 * extra one), emitted in the schema's order, so the JSON PostgreSQL writes is
 * the Notification every other path sends.
 */
const ITEM_FIELDS = {
  id: sql`s.id`,
  type: sql`s.type`,
  title: sql`s.title`,
  message: sql`s.message`,
  read: sql`s.read`,
  data: sql`s.data`,
  createdAt: sql`to_char(s.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
} satisfies Record<keyof Notification, SQL>;
const ITEM_COLUMNS = sql.join(
  (Object.keys(NotificationSchema.shape) as (keyof Notification)[]).map((k) => sql`${ITEM_FIELDS[k]} as ${sql.identifier(k)}`),
  sql`, `,
);

/** GET /notifications' body (NotificationListSchema). */
export interface NotificationList {
  notifications: Notification[];
  unreadCount: number;
  seq: number;
  nextCursor: string | null;
}

/**
 * Newest first (createdAt desc, id desc), keyset pagination on the (user,
 * createdAt, id) index.
 *
 * One statement, one round trip: the page, whether there is more, the last
 * row's exact key, the unread count (notification_counters, kept by
 * triggers: one primary-key read) and the user's latest stream `seq`
 * (docs/decisions.md §12.4: read in the same snapshot as the page, so a
 * client resuming from it misses nothing and replays nothing the page shows), with PostgreSQL writing the items'
 * JSON (row_to_json) so Node does not map the rows one by one: a round trip
 * and the per-row mapping were most of this route's cost (tests/bench/RESULTS.md).
 * First pages are then served from the page cache, serialised once.
 */
export async function listNotifications(
  deps: { db: DbOrTx; config: { JWT_SECRET: string } },
  input: ListNotificationsInput,
): Promise<NotificationList> {
  const filters = [sql`user_id = ${input.userId}::uuid`];
  // Literals, not parameters: a generic plan could not match partial indexes on `read`.
  if (input.read !== undefined) filters.push(input.read ? sql`read` : sql`not read`);
  if (input.type !== undefined) filters.push(sql`type = ${input.type}`);
  if (input.cursor !== undefined) {
    const c = decodeCursor<CursorValue>(deps.config.JWT_SECRET, CURSOR_SCOPE, input.cursor);
    if (typeof c?.t !== 'string' || typeof c?.i !== 'string' || !isUuid(c.i) || !/^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(c.t)) {
      throw new AppError(400, 'INVALID_CURSOR', 'The cursor was not issued by this service or was altered');
    }
    filters.push(sql`(created_at, id) < (${c.t}::timestamptz, ${c.i}::uuid)`);
  }
  // NULLS LAST matches the index's order (drizzle's .desc() index is DESC NULLS LAST),
  // so the planner reads the page straight off notifications_user_created_idx.
  const [row] = await rows<{
    items: string | null;
    more: boolean;
    last_t: string | null;
    last_id: string | null;
    unread: number | string;
    seq: number | string;
  }>(
    deps.db,
    sql`
    with page as materialized (
      select id, type, title, message, read, data, created_at from notifications
      where ${sql.join(filters, sql` and `)}
      order by created_at desc nulls last, id desc nulls last
      limit ${input.limit + 1}
    ), shown as (
      select * from page order by created_at desc nulls last, id desc nulls last limit ${input.limit}
    ), last as (
      select id, created_at from shown order by created_at asc, id asc limit 1
    )
    select
      (select json_agg(
         row_to_json((select r from (select ${ITEM_COLUMNS}) r))
         order by s.created_at desc, s.id desc)::text from shown s) as items,
      (select count(*) from page) > ${input.limit} as more,
      (select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') from last) as last_t,
      (select id::text from last) as last_id,
      coalesce((select unread from notification_counters where user_id = ${input.userId}::uuid), 0) as unread,
      coalesce((select seq from user_stream_heads where user_id = ${input.userId}::uuid), 0) as seq`,
  );
  const nextCursor =
    row.more && row.last_t && row.last_id
      ? encodeCursor(deps.config.JWT_SECRET, CURSOR_SCOPE, { t: row.last_t, i: row.last_id } satisfies CursorValue)
      : null;
  return {
    notifications: row.items === null ? [] : (JSON.parse(row.items) as Notification[]),
    unreadCount: Number(row.unread),
    seq: Number(row.seq),
    nextCursor,
  };
}

/** What the user-facing changes need: they store the change and its stream event, then emit it. */
export type StreamDeps = Pick<NotifyDeps, 'db' | 'clock' | 'log' | 'publish'>;

/**
 * Marks one of the user's notifications read; someone else's id or a
 * malformed one is 404. Only a change from unread to read takes a `seq` and
 * emits `notification:updated` (docs/decisions.md §12.2); marking a read one
 * again answers the same notification and emits nothing.
 */
export async function markNotificationRead(deps: StreamDeps, userId: string, id: string): Promise<Notification> {
  if (!isUuid(id)) throw notFound('Notification');
  const { row, events } = await deps.db.transaction(async (tx) => {
    const [changed] = await tx
      .update(notifications)
      .set({ read: true })
      .where(and(eq(notifications.id, id), eq(notifications.userId, userId), eq(notifications.read, false)))
      .returning();
    if (!changed) {
      const [same] = await tx
        .select()
        .from(notifications)
        .where(and(eq(notifications.id, id), eq(notifications.userId, userId)));
      return { row: same, events: [] };
    }
    const events = await appendStreamEvents(tx, deps.clock(), [
      { userId, event: 'notification:updated', body: { id: changed.id, read: true }, unreadDelta: -1 },
    ]);
    return { row: changed, events };
  });
  if (!row) throw notFound('Notification');
  publishStreamEvents(deps, events);
  return toNotificationJson(toStored(row));
}

/** n = notifications that changed from unread to read; n = 0 takes no `seq` and emits nothing. */
export async function markAllNotificationsRead(deps: StreamDeps, userId: string): Promise<{ updated: number }> {
  const { updated, events } = await deps.db.transaction(async (tx) => {
    const changed = await tx
      .update(notifications)
      .set({ read: true })
      .where(and(eq(notifications.userId, userId), sql`${notifications.read} = false`))
      .returning({ id: notifications.id });
    if (changed.length === 0) return { updated: 0, events: [] };
    const events = await appendStreamEvents(tx, deps.clock(), [
      { userId, event: 'notifications:read-all', body: { updated: changed.length } },
    ]);
    return { updated: changed.length, events };
  });
  publishStreamEvents(deps, events);
  return { updated };
}

/** Permanent removal (its pending deliveries go with it), emitted as `notification:deleted`. */
export async function deleteNotification(deps: StreamDeps, userId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Notification');
  const events = await deps.db.transaction(async (tx) => {
    const gone = await tx
      .delete(notifications)
      .where(and(eq(notifications.id, id), eq(notifications.userId, userId)))
      .returning({ id: notifications.id });
    if (gone.length === 0) return undefined;
    return appendStreamEvents(tx, deps.clock(), [{ userId, event: 'notification:deleted', body: { id } }]);
  });
  if (!events) throw notFound('Notification');
  publishStreamEvents(deps, events);
}
