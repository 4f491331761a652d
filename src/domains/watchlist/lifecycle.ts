import { sql, type SQL } from 'drizzle-orm';
import { rows } from '../../db/index.js';
import type { PriceChange } from '../events/changes.js';
import { announceNotifications, storeNotifications, type NotifyDeps, type NotifyRequest } from '../notifications/service.js';
import type { NotificationType } from '../notifications/types.js';

/**
 * The watchlist's lifecycle notifications (docs/decisions.md §17.2):
 * `market_resolved`, `market_closing_soon`, `market_moved`, `new_market`.
 *
 * Every detector is one set-based statement that starts from what changed
 * (the markets a price write changed, the markets that resolved or appeared
 * since the last check, the closes that entered the 24-hour window) and
 * joins it to the watchlist by group: its cost grows with the markets that
 * changed and their watchers, never with the watchers of markets that did
 * not (§17.3). The same statement inserts into watch_notices, whose primary
 * key (user, type, market or group) makes each notification exactly once
 * across instances by construction: `on conflict do nothing` (or, for
 * `market_moved`, an update only when the last one is 6 hours old)
 * `returning` feeds the notify path, in the same transaction
 * (storeNotifications), so a notice exists exactly when its notification
 * does. Only current watchers are joined (nothing after unwatching), and
 * only what happened after their `watched_at` (nothing replayed).
 */

/** docs/decisions.md §17.2 `market_moved`: the move, the window it is measured over, and the quiet time per group. */
export const MOVE_THRESHOLD = 0.1;
export const MOVE_WINDOW_MINUTES = 60;
export const MOVE_EVERY_HOURS = 6;
/** `market_closing_soon`: an active market whose `endDate` is within this. */
export const CLOSING_SOON_HOURS = 24;

/** One notification a detector decided to send: who, the market, the group, and the type's own fields. */
interface NoticeRow {
  user_id: string;
  market_id: string;
  slug: string;
  group_title: string;
  market_title: string;
  outcome: string;
  type: NotificationType;
  result: string | null;
  resolved_outcome: string | null;
  end_date: string | Date | null;
  from_p: number | null;
  to_p: number | null;
}

const TEXT_MAX = 200;
/** Notifications stored per statement. */
const STORE_CHUNK = 2_000;
const clip = (s: string) => (s.length <= TEXT_MAX ? s : `${s.slice(0, TEXT_MAX - 1)}…`);
const cents = (p: number) => `${Math.round(p * 1000) / 10}¢`;

/** "Group — Market", or the market alone when its title already is the group's (single-market groups). */
function marketName(r: NoticeRow): string {
  return r.market_title === r.group_title ? r.market_title : `${r.group_title} — ${r.market_title}`;
}

function utc(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The stored notification of one detected row: plain-text title and body ≤ 200 characters, `data` with eventSlug and marketId. */
export function lifecycleNotification(r: NoticeRow): NotifyRequest {
  const base = { eventSlug: r.slug, marketId: r.market_id };
  const name = marketName(r);
  switch (r.type) {
    case 'market_resolved': {
      const result = r.result === 'yes' ? 'yes' : 'no';
      // A Yes/No market says YES or NO; any other names the winning outcome (docs/decisions.md §17.2).
      const body =
        r.outcome.toLowerCase() === 'yes'
          ? `Resolved ${result.toUpperCase()}`
          : `Resolved: ${r.resolved_outcome ?? (result === 'yes' ? r.outcome : `not ${r.outcome}`)}`;
      return { userId: r.user_id, type: r.type, title: clip(name), message: clip(body), data: { ...base, result } };
    }
    case 'market_closing_soon': {
      const end = new Date(r.end_date!);
      return {
        userId: r.user_id,
        type: r.type,
        title: clip(name),
        message: clip(`Closes ${utc(end)}`),
        data: { ...base, endDate: end.toISOString() },
      };
    }
    case 'market_moved': {
      const from = Number(r.from_p);
      const to = Number(r.to_p);
      return {
        userId: r.user_id,
        type: r.type,
        title: clip(name),
        message: clip(`${r.outcome} moved from ${cents(from)} to ${cents(to)} within ${MOVE_WINDOW_MINUTES} min`),
        data: { ...base, from, to },
      };
    }
    default:
      return {
        userId: r.user_id,
        type: r.type,
        title: clip(`New market in ${r.group_title}`),
        message: clip(r.market_title),
        data: { ...base, title: r.market_title },
      };
  }
}

/**
 * Runs one detector statement (`found`: rows of NoticeRow keyed by
 * (user_id, type, subject)), records the notices and stores the
 * notifications in one transaction, then announces them. `upsert` is the
 * conflict clause: do nothing, or market_moved's 6-hour update.
 */
async function send(deps: NotifyDeps, found: SQL, subject: SQL, onConflict: SQL): Promise<number> {
  const now = deps.clock();
  const stored = await deps.db.transaction(async (tx) => {
    const sent = await rows<NoticeRow>(
      tx,
      sql`with found as materialized (
            select distinct on (f.user_id, f.type, ${subject}) f.* from (${found}) f order by f.user_id, f.type, ${subject}
          ),
          ins as (
            insert into watch_notices (user_id, type, subject, at)
            select f.user_id, f.type, ${subject}, ${now.toISOString()}::timestamptz from found f
            ${onConflict}
            returning user_id, type, subject
          )
          select f.* from found f join ins on ins.user_id = f.user_id and ins.type = f.type and ins.subject = ${subject}`,
    );
    // One content per change, shared by its watchers: the notify path sends what they share once.
    const shared = new Map<string, NotifyRequest>();
    const requests = sent.map((r) => {
      const key = `${r.type}\n${r.market_id}\n${r.from_p}\n${r.to_p}`;
      let content = shared.get(key);
      if (!content) shared.set(key, (content = lifecycleNotification(r)));
      return { ...content, userId: r.user_id };
    });
    // In chunks: each statement and its JSON stay bounded however many watchers a change has.
    const out = [];
    for (let i = 0; i < requests.length; i += STORE_CHUNK) {
      out.push(...(await storeNotifications(deps, tx, now, requests.slice(i, i + STORE_CHUNK))));
    }
    return out;
  });
  announceNotifications(deps, stored);
  return stored.length;
}

const DO_NOTHING = sql`on conflict do nothing`;
const MARKET = sql`f.market_id`;

/** The columns every detector selects, from markets `m`, event_groups `g` and watchlist `w`. */
const COMMON = sql`w.user_id, m.id as market_id, g.slug, g.title as group_title, m.title as market_title, m.outcome`;

/**
 * `market_resolved` and `new_market` (docs/decisions.md §17.2), from what the
 * catalogue and price writes changed since `since`: markets whose
 * `resolved_at` (set by the write that first saw them resolved) or
 * `created_at` (their first write) is after it, each an index range
 * (markets_resolved_at_idx, markets_created_idx), joined to their groups'
 * watchers who watched before it happened. The caller passes an overlap
 * (its last run minus a margin): re-seeing a change sends nothing twice.
 */
export async function notifyResolvedAndNewMarkets(deps: NotifyDeps, since: Date): Promise<number> {
  const s = sql`${since.toISOString()}::timestamptz`;
  const resolved = await send(
    deps,
    sql`select ${COMMON}, 'market_resolved'::text as type, m.result, m.resolved_outcome,
               null::timestamptz as end_date, null::float8 as from_p, null::float8 as to_p
        from markets m
        join watchlist w on w.event_group_id = m.event_group_id and w.watched_at <= m.resolved_at
        join event_groups g on g.id = m.event_group_id
        where m.resolved_at >= ${s} and m.status = 'resolved'`,
    MARKET,
    DO_NOTHING,
  );
  const created = await send(
    deps,
    sql`select ${COMMON}, 'new_market'::text as type, null::text as result, null::text as resolved_outcome,
               null::timestamptz as end_date, null::float8 as from_p, null::float8 as to_p
        from markets m
        join watchlist w on w.event_group_id = m.event_group_id and w.watched_at < m.created_at
        join event_groups g on g.id = m.event_group_id
        where m.created_at >= ${s}`,
    MARKET,
    DO_NOTHING,
  );
  return resolved + created;
}

/**
 * `market_moved` (docs/decisions.md §17.2), run with each batch of price
 * changes as it is written (the price-change handler). For the changed
 * markets that are active and watched: their readings of the last 60
 * minutes (price_readings, every reading counts), the one farthest from the
 * current reading; a watcher who started watching after that reading gets
 * the farthest reading since `watched_at` instead. A move is at least 0.10
 * between prices rounded to 4 decimals; per (user, group) the largest move
 * of the batch, at most once per 6 hours (watch_notices' `at`). A market
 * that resolved is not active, so a resolution is never also a move.
 */
export async function notifyMarketMoves(deps: NotifyDeps, changes: PriceChange[]): Promise<number> {
  const latest = new Map<string, number>();
  for (const c of changes) if (Number.isFinite(c.yesPrice) && c.yesPrice >= 0 && c.yesPrice <= 1) latest.set(c.marketId, c.yesPrice);
  if (latest.size === 0) return 0;
  const payload = JSON.stringify([...latest].map(([m, p]) => ({ m, p })));
  const now = deps.clock();
  const t = sql`${now.toISOString()}::timestamptz`;
  const far = (x: SQL) => sql`abs(round(${x}::numeric, 4) - round(c.p::numeric, 4))`;
  return send(
    deps,
    sql`with c as materialized (
          select x.m as market_id, x.p, m.event_group_id as gid
          from jsonb_to_recordset(${payload}::jsonb) as x(m text, p double precision)
          join markets m on m.id = x.m and m.status = 'active'
          where exists (select 1 from watchlist w where w.event_group_id = m.event_group_id)
        ),
        r as materialized (
          select c.market_id, h.at, h.price from c join price_readings h
            on h.market_id = c.market_id and h.at > ${t} - make_interval(mins => ${MOVE_WINDOW_MINUTES}::int) and h.at <= ${t}
        ),
        best as (
          -- Per market, the reading of the hour farthest from the current one (ties: the latest).
          select distinct on (c.market_id) c.market_id, c.p, c.gid, r.price as from_p, r.at as from_at
          from c join r on r.market_id = c.market_id
          order by c.market_id, ${far(sql`r.price`)} desc, r.at desc
        ),
        moved as (
          select b.* from best b where abs(round(b.from_p::numeric, 4) - round(b.p::numeric, 4)) >= ${MOVE_THRESHOLD}
        ),
        per_watcher as (
          select w.user_id, w.watched_at, mv.market_id, mv.gid, mv.p,
                 case when mv.from_at > w.watched_at then mv.from_p
                      else (select r.price from r where r.market_id = mv.market_id and r.at > w.watched_at
                            order by abs(round(r.price::numeric, 4) - round(mv.p::numeric, 4)) desc, r.at desc limit 1) end as from_p
          from moved mv join watchlist w on w.event_group_id = mv.gid
        ),
        chosen as (
          select distinct on (pw.user_id, pw.gid) pw.*
          from per_watcher pw
          where pw.from_p is not null and abs(round(pw.from_p::numeric, 4) - round(pw.p::numeric, 4)) >= ${MOVE_THRESHOLD}
          order by pw.user_id, pw.gid, abs(pw.from_p - pw.p) desc, pw.market_id
        )
        select ch.user_id, m.id as market_id, g.slug, g.title as group_title, m.title as market_title, m.outcome,
               'market_moved'::text as type, null::text as result, null::text as resolved_outcome, null::timestamptz as end_date,
               ch.from_p, ch.p as to_p, ch.gid
        from chosen ch join markets m on m.id = ch.market_id join event_groups g on g.id = ch.gid`,
    sql`f.gid`,
    sql`on conflict (user_id, type, subject) do update set at = excluded.at
        where watch_notices.at <= excluded.at - make_interval(hours => ${MOVE_EVERY_HOURS}::int)`,
  );
}

/**
 * `market_closing_soon` (docs/decisions.md §17.2), checked by the watchlist
 * job every minute: active markets of watched groups whose `endDate` is
 * within the next 24 hours, once per (user, market) (a later change of
 * `endDate` sends nothing more). Driven by what changed since the last
 * check (`since`): closes that entered the 24-hour window since then (an
 * index range on markets.end_date), and groups watched since then (a
 * market already within 24 h of its close when the user starts watching is
 * told at the next check). `full` looks at every close within 24 hours.
 */
export async function notifyClosingSoon(deps: NotifyDeps, since: Date, opts: { full?: boolean } = {}): Promise<number> {
  const now = deps.clock();
  // A full pass (the job's first run of each hour) also catches a close the venue moved into the window.
  if (opts.full) since = new Date(0);
  const t = sql`${now.toISOString()}::timestamptz`;
  const s = sql`${since.toISOString()}::timestamptz`;
  const horizon = sql`make_interval(hours => ${CLOSING_SOON_HOURS}::int)`;
  const cols = sql`${COMMON}, 'market_closing_soon'::text as type, null::text as result, null::text as resolved_outcome,
                   m.end_date, null::float8 as from_p, null::float8 as to_p`;
  return send(
    deps,
    sql`select ${cols}
        from markets m
        join watchlist w on w.event_group_id = m.event_group_id
        join event_groups g on g.id = m.event_group_id
        where m.status = 'active' and m.end_date > ${t} and m.end_date <= ${t} + ${horizon} and m.end_date > ${s} + ${horizon}
        union all
        select ${cols}
        from watchlist w
        join markets m on m.event_group_id = w.event_group_id
        join event_groups g on g.id = m.event_group_id
        where w.watched_at >= ${s} and m.status = 'active' and m.end_date > ${t} and m.end_date <= ${t} + ${horizon}`,
    MARKET,
    DO_NOTHING,
  );
}
