import { sql } from 'drizzle-orm';
import { rows, type DbOrTx } from '../../db/index.js';
import { DELIVERY_DEADLINE_MS } from './delivery.js';

/**
 * Quiet hours (docs/decisions.md §14.4): while the user's local wall time is
 * inside `[start, end)` (a window may cross midnight), push and Telegram
 * deliveries of types not in `urgentTypes` are held in the ledger; when the
 * window is over they go out as one digest per channel target. The window is
 * evaluated on the user's wall clock through Intl, so a DST change moves it
 * with the user's clocks; `now` is always an input (the sweep's clock).
 */
export interface QuietHours {
  start: string;
  end: string;
  timezone: string;
}

export const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;

const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    if (formats.size > 1000) formats.clear();
    formats.set(timeZone, f);
  }
  return f;
}

/**
 * An IANA zone name Intl knows (case as the user wrote it). UTC offsets
 * ('+01:00'), which recent Intl versions also accept, are not zones: refused.
 */
export function isTimeZone(value: string): boolean {
  if (!/^[A-Za-z]/.test(value) || value.length > 64) return false;
  try {
    formatFor(value);
    return true;
  } catch {
    return false;
  }
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Minutes since local midnight in `timeZone` at `now` (wall time, DST included). */
export function localMinutes(now: Date, timeZone: string): number {
  let hour = 0;
  let minute = 0;
  for (const p of formatFor(timeZone).formatToParts(now)) {
    if (p.type === 'hour') hour = Number(p.value) % 24;
    else if (p.type === 'minute') minute = Number(p.value);
  }
  return hour * 60 + minute;
}

/** Whether `now` is inside the window: start inclusive, end exclusive, across midnight when end < start. */
export function insideQuietHours(q: QuietHours | null | undefined, now: Date): boolean {
  if (!q) return false;
  const start = minutesOf(q.start);
  const end = minutesOf(q.end);
  let t: number;
  try {
    t = localMinutes(now, q.timezone);
  } catch {
    return false; // a zone this runtime no longer knows: never hold (stored zones were valid when set)
  }
  return start < end ? t >= start && t < end : t >= start || t < end;
}

/** Whether a delivery of `type` is held now for a user with these preferences. */
export function heldByQuietHours(
  prefs: { quietHours?: QuietHours | null; urgentTypes?: readonly string[] | null } | null | undefined,
  type: string,
  now: Date,
): boolean {
  if (!prefs?.quietHours) return false;
  if (prefs.urgentTypes?.includes(type)) return false;
  return insideQuietHours(prefs.quietHours, now);
}

/** docs/decisions.md §14.4: the digest's title is "N" and this. */
const DIGEST_TITLE_TAIL = ' notifications while quiet hours were on';

/** The settled reason of a held row that went out in a digest (the row is `skipped`, its content in the digest row). */
export const DIGEST_REASON = 'quiet hours: sent in a digest';

const USER_BATCH = 1000;

interface PrefRow {
  user_id: string;
  enabled: boolean | null;
  types: Record<string, boolean> | null;
  quiet_hours: QuietHours | null;
}

/**
 * The release of held deliveries (docs/decisions.md §14.4), run by the
 * delivery-sweep job and kicked by a preferences change: for every user with
 * held rows whose quiet hours are over (the clock passed `end`, or the window
 * changed or was removed), one statement settles the user's held rows and
 * writes one digest row per (channel, target), due now:
 * - held rows become `skipped` with DIGEST_REASON (their content is in the
 *   digest), or with 'preferences' when the user has since turned the type
 *   off, or push off (no push digest while push is disabled);
 * - the digest counts the rows it stands for and lists the first three
 *   titles, oldest first.
 * The UPDATE … WHERE status = 'pending' takes the held rows' locks, so two
 * instances releasing at once release each row once: the second finds them
 * settled and writes no digest. Returns the new digest rows' ids.
 */
export async function releaseHeldDeliveries(
  deps: { db: DbOrTx; clock: () => Date },
  opts: { userIds?: string[] } = {},
): Promise<{ released: number; digests: string[] }> {
  const now = deps.clock();
  const at = now.toISOString();
  const deadline = new Date(now.getTime() + DELIVERY_DEADLINE_MS).toISOString();
  const only = opts.userIds
    ? sql`and d.user_id in (select (jsonb_array_elements_text(${JSON.stringify(opts.userIds)}::jsonb))::uuid)`
    : sql``;
  let after = '00000000-0000-0000-0000-000000000000';
  let released = 0;
  const digests: string[] = [];
  for (;;) {
    const users = await rows<PrefRow>(
      deps.db,
      sql`
      select u.user_id, p.enabled, p.types, p.quiet_hours
      from (select distinct d.user_id from notification_deliveries d
            where d.status = 'pending' and d.held_at is not null and d.user_id > ${after}::uuid ${only}
            order by d.user_id limit ${USER_BATCH}) u
      left join push_preferences p on p.user_id = u.user_id
      order by u.user_id`,
    );
    if (users.length === 0) break;
    after = users[users.length - 1].user_id;
    const due = users
      .filter((u) => !insideQuietHours(u.quiet_hours, now))
      .map((u) => ({
        user_id: u.user_id,
        push: u.enabled !== false,
        off: Object.entries(u.types ?? {})
          .filter(([, on]) => on === false)
          .map(([t]) => t),
      }));
    if (due.length > 0) {
      const [out] = await rows<{ ids: string[] | null; released: number | string }>(
        deps.db,
        sql`
        with u as (
          select * from jsonb_to_recordset(${JSON.stringify(due)}::jsonb) as x(user_id uuid, push boolean, off jsonb)
        ), released as (
          update notification_deliveries d
          set status = 'skipped', updated_at = ${at}::timestamptz,
              last_error = case when (d.channel = 'push' and not u.push) or (u.off ? n.type) then 'preferences' else ${DIGEST_REASON} end
          from u, notifications n
          where d.user_id = u.user_id and n.id = d.notification_id and d.status = 'pending' and d.held_at is not null
          returning d.user_id, d.channel, d.target_kind, d.target, d.last_error, n.id as nid, n.title, n.created_at
        ), grouped as (
          select user_id, channel, target_kind, target, count(*)::int as n,
                 array_to_string((array_agg(title order by created_at, nid))[1:3], E'\n') as body
          from released where last_error = ${DIGEST_REASON}
          group by user_id, channel, target_kind, target
        ), inserted as (
          insert into notification_deliveries
            (notification_id, user_id, channel, target_kind, target, digest, next_attempt_at, deadline_at, created_at, updated_at)
          select null, user_id, channel, target_kind, target,
                 jsonb_build_object('title', n::text || ${DIGEST_TITLE_TAIL}::text, 'body', body, 'count', n),
                 ${at}::timestamptz, ${deadline}::timestamptz, ${at}::timestamptz, ${at}::timestamptz
          from grouped
          returning id
        )
        select (select jsonb_agg(id) from inserted) as ids, (select count(*) from released) as released`,
      );
      released += Number(out?.released ?? 0);
      digests.push(...(out?.ids ?? []));
    }
    if (users.length < USER_BATCH) break;
  }
  return { released, digests };
}
