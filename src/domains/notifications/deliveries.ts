import { sql } from 'drizzle-orm';
import { rows, type DbOrTx } from '../../db/index.js';
import { AppError, notFound } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../lib/cursor.js';
import type { ServiceDeps } from '../../lib/deps.js';
import { DELIVERY_DEADLINE_MS, kickDeliveryRows, pausedChannels, resumeChannel, type DeliveryState } from './delivery.js';
import type { Delivery } from './schemas.js';
import { isUuid } from '../../lib/uuid.js';

/**
 * The delivery ledger seen from the internal API (docs/decisions.md §13.4):
 * listing by status (dead letters by default), re-queueing a dead letter,
 * per-channel counts and pauses, and lifting a pause.
 */
export interface LedgerDeps extends ServiceDeps {
  delivery: DeliveryState;
}

const CURSOR_SCOPE = 'deliveries';

interface CursorValue {
  s: string; // the status listed: a cursor is only valid for its own listing
  t: string; // updated_at, microsecond text
  i: string;
}

interface LedgerRow {
  id: string;
  notification_id: string | null;
  user_id: string;
  channel: Delivery['channel'];
  target_kind: Delivery['target']['kind'];
  target: string;
  status: Delivery['status'];
  attempts: number | string;
  last_error: string | null;
  held_at: string | null;
  digest: { count: number } | null;
  updated_at: string;
  updated_us: string;
}

const COLUMNS = sql`id, notification_id, user_id, channel, target_kind, target, status, attempts, last_error, digest,
  to_char(held_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as held_at,
  to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at,
  to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as updated_us`;

function toDelivery(r: LedgerRow): Delivery {
  return {
    id: r.id,
    notificationId: r.notification_id,
    userId: r.user_id,
    channel: r.channel,
    target: { kind: r.target_kind, id: r.target },
    status: r.status,
    attempts: Number(r.attempts),
    lastError: r.last_error,
    updatedAt: r.updated_at,
    heldAt: r.held_at,
    digest: r.digest ? { count: Number(r.digest.count) } : null,
  };
}

const channelNames = (deps: LedgerDeps) =>
  sql`(select jsonb_array_elements_text(${JSON.stringify(deps.delivery.channels.map((c) => c.name))}::jsonb))`;

/** Newest `updatedAt` first, keyset pagination on (status, updated_at, id). */
export async function listDeliveries(
  deps: LedgerDeps,
  input: { status: Delivery['status']; limit: number; cursor?: string },
): Promise<{ deliveries: Delivery[]; nextCursor: string | null }> {
  const filters = [sql`status = ${input.status}`, sql`channel in ${channelNames(deps)}`, sql`target is not null`];
  if (input.cursor !== undefined) {
    const c = decodeCursor<CursorValue>(deps.config.JWT_SECRET, CURSOR_SCOPE, input.cursor);
    if (
      c?.s !== input.status ||
      typeof c?.t !== 'string' ||
      typeof c?.i !== 'string' ||
      !isUuid(c.i) ||
      !/^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(c.t)
    ) {
      throw new AppError(400, 'INVALID_CURSOR', 'The cursor was not issued for this listing or was altered');
    }
    filters.push(sql`(updated_at, id) < (${c.t}::timestamptz, ${c.i}::uuid)`);
  }
  const found = await rows<LedgerRow>(
    deps.db,
    sql`select ${COLUMNS} from notification_deliveries where ${sql.join(filters, sql` and `)}
        order by updated_at desc, id desc limit ${input.limit + 1}`,
  );
  const page = found.slice(0, input.limit);
  const last = page[page.length - 1];
  const nextCursor =
    found.length > input.limit && last
      ? encodeCursor(deps.config.JWT_SECRET, CURSOR_SCOPE, { s: input.status, t: last.updated_us, i: last.id } satisfies CursorValue)
      : null;
  return { deliveries: page.map(toDelivery), nextCursor };
}

/**
 * A dead letter back to `pending`, due now, with a fresh hour of retries;
 * this instance tries it at once. Unknown id → 404; not failed → 409.
 */
export async function retryDelivery(deps: LedgerDeps, id: string): Promise<Delivery> {
  if (!isUuid(id)) throw notFound('Delivery');
  const now = deps.clock();
  const at = now.toISOString();
  const deadline = new Date(now.getTime() + DELIVERY_DEADLINE_MS).toISOString();
  const [row] = await rows<LedgerRow>(
    deps.db,
    sql`update notification_deliveries
        set status = 'pending', next_attempt_at = ${at}::timestamptz, deadline_at = ${deadline}::timestamptz, updated_at = ${at}::timestamptz
        where id = ${id}::uuid and status = 'failed' and channel in ${channelNames(deps)}
        returning ${COLUMNS}`,
  );
  if (!row) {
    const [exists] = await rows<{ status: string }>(
      deps.db,
      sql`select status from notification_deliveries where id = ${id}::uuid and channel in ${channelNames(deps)}`,
    );
    if (!exists) throw notFound('Delivery');
    throw new AppError(409, 'DELIVERY_NOT_FAILED', `Only failed deliveries can be retried; this one is ${exists.status}`);
  }
  kickDeliveryRows(deps, [row.id]);
  return toDelivery(row);
}

export interface ChannelSummary {
  channel: Delivery['channel'];
  paused: boolean;
  pausedReason: string | null;
  pending: number;
  failed: number;
  held: number;
}

async function countByChannel(db: DbOrTx): Promise<Map<string, { pending: number; held: number; failed: number }>> {
  const found = await rows<{ channel: string; pending: number | string; held: number | string; failed: number | string }>(
    db,
    sql`select channel, count(*) filter (where status = 'pending') as pending,
          count(*) filter (where status = 'pending' and held_at is not null) as held,
          count(*) filter (where status = 'failed') as failed
        from notification_deliveries where status in ('pending', 'failed') group by channel`,
  );
  return new Map(found.map((r) => [r.channel, { pending: Number(r.pending), held: Number(r.held), failed: Number(r.failed) }]));
}

export async function deliverySummary(deps: LedgerDeps): Promise<{ channels: ChannelSummary[] }> {
  const [counts, paused] = await Promise.all([countByChannel(deps.db), pausedChannels(deps.db)]);
  return {
    channels: deps.delivery.channels.map((c) => ({
      channel: c.name as Delivery['channel'],
      paused: paused.has(c.name),
      pausedReason: paused.get(c.name) ?? null,
      pending: counts.get(c.name)?.pending ?? 0,
      failed: counts.get(c.name)?.failed ?? 0,
      held: counts.get(c.name)?.held ?? 0,
    })),
  };
}

/** Lifts a channel's pause (docs/decisions.md §13.2); answers its summary. */
export async function resumeDeliveryChannel(deps: LedgerDeps, channel: string): Promise<ChannelSummary> {
  const known = deps.delivery.channels.some((c) => c.name === channel);
  if (!known) throw notFound(`Delivery channel ${channel}`);
  if (await resumeChannel(deps.db, channel)) deps.log.info({ channel }, 'delivery channel resumed');
  const summary = await deliverySummary(deps);
  return summary.channels.find((c) => c.channel === channel)!;
}
