import { and, asc, eq, gt, lte, sql } from 'drizzle-orm';
import { userStreamEvents, userStreamHeads } from '../../../drizzle/index.js';
import { rows, type DbOrTx } from '../../db/index.js';
import type { PublishFn } from '../realtime/channels.js';
import { userNotificationsChannel } from '../realtime/channels.js';
import type { StreamEventName, StreamPayload } from './types.js';

/**
 * A user's private stream (`user:notifications`, docs/decisions.md §12): every
 * change to a user's notifications that changes something gets the next
 * `seq` of that user, in the transaction that stores the change, and its
 * payload is stored as first emitted so a client that missed it can resume.
 */

/** One event of a user's stream, as stored and as emitted. */
export interface StreamEvent<E extends StreamEventName = StreamEventName> {
  userId: string;
  seq: number;
  event: E;
  payload: StreamPayload<E>;
}

type Body<E extends StreamEventName> = Omit<StreamPayload<E>, 'seq' | 'unreadCount'>;

/** A change to record: its event and payload without `seq` and `unreadCount`, which are filled in here. */
export type StreamChange = {
  [E in StreamEventName]: {
    userId: string;
    event: E;
    body: Body<E>;
    /** How this change moved the user's unread count (a new notification: +1). Only needed for batches with several changes of one user. */
    unreadDelta?: number;
  };
}[StreamEventName];

/**
 * Records `changes` on their users' streams, in the caller's transaction and
 * after the changes themselves were made (so the unread counters, kept by
 * triggers, already include them). One upsert bumps each user's head by the
 * number of its changes: the head row lock, held to commit, orders a user's
 * events (and a transaction that rolls back gives its seqs back). Heads are
 * locked in user-id order, like the unread counters, so two transactions
 * touching the same users cannot deadlock. `unreadCount` is read after the
 * lock, so it includes every earlier seq's change.
 */
export async function appendStreamEvents(tx: DbOrTx, now: Date, changes: StreamChange[]): Promise<StreamEvent[]> {
  if (changes.length === 0) return [];
  const perUser = new Map<string, number>();
  for (const c of changes) perUser.set(c.userId, (perUser.get(c.userId) ?? 0) + 1);
  const userIds = [...perUser.keys()].sort();
  // One parameter per statement (jsonb_to_recordset): a fan-out appends thousands of events at once.
  const heads = await rows<{ user_id: string; seq: number | string }>(
    tx,
    sql`
    insert into user_stream_heads (user_id, seq)
    select x.user_id, x.n from jsonb_to_recordset(${JSON.stringify(userIds.map((u) => ({ user_id: u, n: perUser.get(u)! })))}::jsonb)
      as x(user_id uuid, n bigint)
    order by x.user_id
    on conflict (user_id) do update set seq = user_stream_heads.seq + excluded.seq
    returning user_id, seq`,
  );
  const counters = await rows<{ user_id: string; unread: number }>(
    tx,
    sql`select user_id, unread from notification_counters
        where user_id in (select (jsonb_array_elements_text(${JSON.stringify(userIds)}::jsonb))::uuid)`,
  );

  // Walk each user's changes backwards from its new head and its unread count now.
  const nextSeq = new Map(heads.map((h) => [h.user_id, Number(h.seq)]));
  const unread = new Map(userIds.map((u) => [u, 0]));
  for (const c of counters) unread.set(c.user_id, Number(c.unread));
  const events = new Array<StreamEvent>(changes.length);
  for (let i = changes.length - 1; i >= 0; i--) {
    const c = changes[i];
    const seq = nextSeq.get(c.userId)!;
    const unreadCount = Math.max(0, unread.get(c.userId)!);
    nextSeq.set(c.userId, seq - 1);
    unread.set(c.userId, unreadCount - (c.unreadDelta ?? 0));
    events[i] = { userId: c.userId, seq, event: c.event, payload: { ...c.body, seq, unreadCount } };
  }
  await rows(
    tx,
    sql`
    insert into user_stream_events (user_id, seq, event, payload, created_at)
    select x.user_id, x.seq, x.event, x.payload, ${now.toISOString()}::timestamptz
    from json_to_recordset(${JSON.stringify(events.map((e) => ({ user_id: e.userId, seq: e.seq, event: e.event, payload: e.payload })))}::json)
      as x(user_id uuid, seq bigint, event text, payload json)`,
  );
  return events;
}

/** After commit: emits each event on its user's stream (a failing listener never undoes the stored change). */
export function publishStreamEvents(deps: { publish: PublishFn; log: { warn(obj: object, msg: string): void } }, events: StreamEvent[]) {
  for (const e of events) {
    try {
      (deps.publish as (channel: string, event: string, payload: unknown) => void)(userNotificationsChannel(e.userId), e.event, e.payload);
    } catch (err) {
      deps.log.warn({ err, userId: e.userId, seq: e.seq }, 'publishing a stream event failed; it is stored for resume');
    }
  }
}

/** The user's latest seq (0 when it has none). */
export async function readStreamHead(db: DbOrTx, userId: string): Promise<number> {
  const [row] = await db.select({ seq: userStreamHeads.seq }).from(userStreamHeads).where(eq(userStreamHeads.userId, userId));
  return row ? Number(row.seq) : 0;
}

/** The user's stored events with afterSeq < seq ≤ uptoSeq, in order, at most `limit`. */
export async function readStreamEvents(
  db: DbOrTx,
  userId: string,
  afterSeq: number,
  uptoSeq: number,
  limit: number,
): Promise<StreamEvent[]> {
  const found = await db
    .select({ seq: userStreamEvents.seq, event: userStreamEvents.event, payload: userStreamEvents.payload })
    .from(userStreamEvents)
    .where(and(eq(userStreamEvents.userId, userId), gt(userStreamEvents.seq, afterSeq), lte(userStreamEvents.seq, uptoSeq)))
    .orderBy(asc(userStreamEvents.seq))
    .limit(limit);
  return found.map((r) => ({ userId, seq: Number(r.seq), event: r.event as StreamEventName, payload: r.payload as StreamPayload }));
}

export interface StreamKeep {
  STREAM_KEEP_DAYS: number;
  STREAM_KEEP_EVENTS: number;
}

/**
 * Deletes the stream events no longer kept (docs/decisions.md §12.1): an
 * event goes once it is older than STREAM_KEEP_DAYS and not among its user's
 * last STREAM_KEEP_EVENTS. What goes is always a prefix of a user's seqs
 * (everything up to the newest old-enough one), even when commit order and
 * `created_at` order differ slightly, so what is kept never has a hole and a
 * resume either replays everything after `lastSeq` or answers `reset`.
 * Returns the number of events deleted.
 */
export async function pruneStreamEvents(deps: { db: DbOrTx; config: StreamKeep }, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - deps.config.STREAM_KEEP_DAYS * 86_400_000);
  const deleted = await rows<{ n: number | string }>(
    deps.db,
    sql`
    with old as (
      select user_id, max(seq) as upto from user_stream_events where created_at < ${cutoff.toISOString()}::timestamptz group by user_id
    ), cut as (
      select o.user_id, least(o.upto, h.seq - ${deps.config.STREAM_KEEP_EVENTS}) as upto
      from old o join user_stream_heads h on h.user_id = o.user_id
    ), gone as (
      delete from user_stream_events e using cut where e.user_id = cut.user_id and e.seq <= cut.upto returning 1
    )
    select count(*) as n from gone`,
  );
  return Number(deleted[0]?.n ?? 0);
}
