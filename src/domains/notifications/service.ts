import { randomUUID } from 'node:crypto';
import { and, eq, sql, type SQL } from 'drizzle-orm';
import { notifications, users } from '../../../drizzle/index.js';
import { rows, type DbOrTx } from '../../db/index.js';
import { AppError, notFound, someCause } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import type { PublishFn } from '../realtime/channels.js';
import { deliveriesFrom, kickDelivery, type DeliveryState } from './delivery.js';
import { appendStreamEvents, publishStreamEvents, type StreamEvent } from './stream.js';
import type { ServiceDeps } from '../../lib/deps.js';
import { NotificationSchema, type Notification, type NotificationType, type StoredNotification, type StreamPayload } from './types.js';
import { jsonbObject } from '../../lib/jsonb.js';
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
 *
 * A batch costs two statements whatever its size, and each notification
 * crosses to PostgreSQL once (tests/bench/RESULTS.md, issue 32): the ids are
 * made here (UUID v4, as the column's default), so nothing comes back per
 * notification; the first statement inserts the notifications and, from the
 * same rows, their ledger rows; the second bumps each user's stream head by
 * its number of new notifications and writes the stream events, their
 * payloads built by PostgreSQL from the stored rows (notificationEventPayload),
 * returning one row per user (its new head and unread count), from which the
 * same payloads are built here for the live emit.
 */
export async function storeNotifications(
  deps: { delivery: Pick<DeliveryState, 'channels'> },
  tx: DbOrTx,
  now: Date,
  requests: NotifyRequest[],
): Promise<NewNotification[]> {
  if (requests.length === 0) return [];
  const at = now.toISOString();
  const createdAt = at;
  const stored = new Array<StoredNotification>(requests.length);
  // Per notification: its place among its user's new ones (k, from 1); per user: how many (n).
  const k = new Array<number>(requests.length);
  const perUser = new Map<string, number>();
  // What notifications share (a fan-out's requests built from one object: type, title, message and
  // the same `data`) is sent once: `contents`, each notification pointing at its content by index.
  const contents: Array<{ c: number; t: string; ti: string; m: string; d: Record<string, unknown> }> = [];
  const byData = new Map<object, number[]>();
  const list = new Array<{ i: string; u: string; c: number; k: number }>(requests.length);
  for (let i = 0; i < requests.length; i++) {
    const r = requests[i];
    let c = -1;
    const same = r.data ? byData.get(r.data) : undefined;
    if (same) c = same.find((x) => contents[x].t === r.type && contents[x].ti === r.title && contents[x].m === r.message) ?? -1;
    if (c < 0) {
      c = contents.length;
      // As PostgreSQL's jsonb gives it back, so the live payload is the stored one (key order included).
      contents.push({ c, t: r.type, ti: r.title, m: r.message, d: jsonbObject(r.data) });
      if (r.data) (same ?? byData.set(r.data, []).get(r.data)!).push(c);
    }
    const id = randomUUID();
    stored[i] = {
      id,
      userId: r.userId,
      type: r.type,
      title: r.title,
      message: r.message,
      read: false,
      data: contents[c].d,
      createdAt: now,
    };
    const n = (perUser.get(r.userId) ?? 0) + 1;
    perUser.set(r.userId, n);
    k[i] = n;
    list[i] = { i: id, u: r.userId, c, k: n };
  }
  // One parameter for the whole batch (jsonb_to_recordset), used by both statements: a fan-out stores
  // thousands at once, and building a statement with a bind parameter per field cost more CPU than the rows.
  const batch = JSON.stringify(list);
  const insert = sql`
    insert into notifications (id, user_id, type, title, message, data, created_at)
    select x.i, x.u, c.t, c.ti, c.m, coalesce(c.d, '{}'::jsonb), ${at}::timestamptz
    from jsonb_to_recordset(${batch}::jsonb) as x(i uuid, u uuid, c int)
    join jsonb_to_recordset(${JSON.stringify(contents)}::jsonb) as c(c int, t text, ti text, m text, d jsonb) on c.c = x.c`;
  const deliveries = deliveriesFrom(deps.delivery.channels, now);
  await rows(tx, deliveries ? sql`with n as (${insert} returning id, user_id) ${deliveries}` : insert);

  // The stream events (docs/decisions.md §12.1), after the notifications: the unread counters (kept by
  // triggers) include them. Heads are locked in user-id order, like the counters, so two transactions
  // touching the same users cannot deadlock; the counter rows of these users are locked since the
  // insert above (its trigger updated them), so the unread count read here is this transaction's,
  // whichever snapshot reads it, and every earlier seq's change is in it. Per notification, k is its
  // place among its user's new ones (from 1) and n their number.
  const heads = await rows<{ user_id: string; seq: number | string; unread: number | string }>(
    tx,
    sql`
    with b as (
      select x.i as id, x.u as user_id, x.k, count(*) over (partition by x.u) as n
      from jsonb_to_recordset(${batch}::jsonb) as x(i uuid, u uuid, k int)
    ), h as (
      insert into user_stream_heads (user_id, seq)
      select b.user_id, b.n from b where b.k = b.n order by b.user_id
      on conflict (user_id) do update set seq = user_stream_heads.seq + excluded.seq
      returning user_id, seq
    ), c as (
      select h.user_id, h.seq, coalesce(nc.unread, 0) as unread
      from h left join notification_counters nc on nc.user_id = h.user_id
    ), ev as (
      insert into user_stream_events (user_id, seq, event, payload, created_at)
      select b.user_id, c.seq - b.n + b.k, 'notification',
             ${notificationEventPayload(sql`c.seq - b.n + b.k`, sql`greatest(0, c.unread - (b.n - b.k))`)},
             ${at}::timestamptz
      from b join c on c.user_id = b.user_id join notifications s on s.id = b.id
    )
    select user_id, seq, unread from c`,
  );
  const head = new Map<string, { seq: number; unread: number }>();
  for (const h of heads) head.set(h.user_id, { seq: Number(h.seq), unread: Number(h.unread) });
  const out = new Array<NewNotification>(requests.length);
  for (let i = 0; i < requests.length; i++) {
    const n = stored[i];
    const u = head.get(n.userId)!;
    const left = perUser.get(n.userId)! - k[i]; // this user's notifications after this one in the batch
    const seq = u.seq - left;
    const payload = {
      id: n.id,
      type: n.type,
      title: n.title,
      message: n.message,
      read: false,
      data: n.data,
      createdAt,
      seq,
      unreadCount: Math.max(0, u.unread - left),
    } satisfies StreamPayload<'notification'>;
    out[i] = { ...n, streamEvent: { userId: n.userId, seq, event: 'notification', payload } };
  }
  return out;
}

/**
 * A `notification` event's payload as PostgreSQL writes it from the stored
 * row `s`: NotificationSchema's fields in its order (ITEM_FIELDS, the list's
 * own), then `seq` and `unreadCount` — the object storeNotifications emits.
 */
function notificationEventPayload(seq: SQL, unreadCount: SQL): SQL {
  const fields = (Object.keys(NotificationSchema.shape) as (keyof Notification)[]).map(
    (key) => sql`${sql.raw(`'${key}'`)}, ${ITEM_FIELDS[key]}`,
  );
  return sql`json_build_object(${sql.join(fields, sql`, `)}, 'seq', ${seq}, 'unreadCount', ${unreadCount})`;
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
