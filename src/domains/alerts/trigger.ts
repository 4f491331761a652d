import { sql, type SQL } from 'drizzle-orm';
import { rows } from '../../db/index.js';
import type { PriceChange } from '../events/changes.js';
import { announceNotifications, storeNotifications, type NotifyDeps } from '../notifications/service.js';

/*
 * Alert triggering: what fires price alerts when prices change. The alerts'
 * definitions (create, list, update, delete) are service.ts; big-trade alerts
 * are checked in big-trades.ts.
 */

interface FiredRow {
  id: string;
  user_id: string;
  market_id: string;
  target_price: number | null;
  condition: 'above' | 'below' | 'moves';
  side: 'yes' | 'no';
  window_minutes: number | null;
  trigger_count: number;
  price: number;
  ref: number | null;
  market_title: string;
}

/** §14.2: how far back across the target a reading must go to re-arm a repeating crossing alert. */
export const REARM_MARGIN = 0.02;
/** Float slack on the comparisons (0.58 + 0.02 is not exactly 0.6). */
const EPS = 1e-9;
/** The longest `windowMinutes` (§14.3): the oldest reading a move alert can measure from. */
const MAX_WINDOW_MINUTES = 1440;

/**
 * The crossing part of the check for one (side, condition): the alerts of the
 * changed markets `c` that this price fires (armed, past any cooldown) or
 * re-arms (not armed, and back across by REARM_MARGIN). Each is one range
 * scan of price_alerts_check_idx per market, bounded by the price, so it
 * reads only the alerts it acts on.
 */
function crossingSql(side: 'yes' | 'no', condition: 'above' | 'below', now: SQL): SQL {
  const price = side === 'yes' ? sql`c.p` : sql`(1 - c.p)`;
  const fires = condition === 'above' ? sql`a.target_price <= ${price}` : sql`a.target_price >= ${price}`;
  const rearms =
    condition === 'above'
      ? sql`a.target_price >= ${price} + ${REARM_MARGIN - EPS}::float8`
      : sql`a.target_price <= ${price} - ${REARM_MARGIN - EPS}::float8`;
  const on = sql`a.market_id = c.market_id and a.active and a.side = ${side} and a.condition = ${condition}`;
  return sql`
        select a.id, 0 as kind, a.trigger_count as tc, ${price} as price, null::float8 as ref
        from c join price_alerts a on ${on} and a.armed and ${fires}
        where a.triggered_at is null or a.triggered_at + make_interval(mins => a.cooldown_minutes) <= ${now}
        union all
        select a.id, 1, a.trigger_count, null, null
        from c join price_alerts a on ${on} and not a.armed and ${rearms}`;
}

/**
 * The check statement (exported for EXPLAIN in the benchmark). `payload` is
 * JSON `[{ m: marketId, p: yesPrice }]`, one entry per changed market. What it
 * looks at, all set-based:
 *  - crossing alerts of the changed markets (crossingSql), fired or re-armed;
 *  - move alerts of the changed markets whose `change` is within the market's
 *    largest difference from a reading of the last 1440 minutes (every
 *    reading, docs/decisions.md §14.2: the markets' earlier prices with their
 *    last reading times are read from price_readings once, one aggregate per
 *    market); for those, the min and max of the readings after each alert's
 *    own lower bound (window start, creation, last firing) come from one
 *    window function over the market's readings and the alerts' bounds sorted
 *    together, not a query per alert;
 *  - repeating alerts whose cooldown just ended (`due_at`) on markets that did
 *    not change: the market's current price is their reading, once;
 * then locks what it acts on (FOR UPDATE SKIP LOCKED, re-checking that the
 * alert has not fired since: `trigger_count` unchanged) and updates it in the
 * same statement. Returns the fired alerts.
 */
export function alertTriggerSql(payload: string, now: Date): SQL {
  const t = sql`${now.toISOString()}::timestamptz`;
  const sidePrice = sql`(case when a.side = 'yes' then d.p else 1 - d.p end)`;
  const cooledDown = sql`(a.triggered_at is null or a.triggered_at + make_interval(mins => a.cooldown_minutes) <= ${t})`;
  return sql`
      with c as materialized (
        select x.m as market_id, x.p from jsonb_to_recordset(${payload}::jsonb) as x(m text, p double precision)
        join markets mk on mk.id = x.m
      ),
      due as materialized (
        select a.id, a.market_id, mk.yes_price as p
        from price_alerts a join markets mk on mk.id = a.market_id
        where a.due_at <= ${t} and a.active and mk.yes_price is not null and mk.status = 'active'
          and not exists (select 1 from c where c.market_id = a.market_id)
      ),
      hm as (
        -- The markets whose move alerts this pass looks at, and the last day of their readings, read once.
        select c.market_id from c
        where exists (select 1 from price_alerts a where a.market_id = c.market_id and a.active and a.condition = 'moves')
        union
        select d.market_id from due d join price_alerts a on a.id = d.id where a.condition = 'moves'
      ),
      hist as materialized (
        -- Every reading of the last day (price_readings: one row per run of equal readings, at its last), not the minute points.
        select h.market_id, h.at as ts, h.price from hm join price_readings h
          on h.market_id = hm.market_id and h.at > ${t} - make_interval(mins => ${MAX_WINDOW_MINUTES}::int) and h.at <= ${t}
      ),
      moved as (
        select c.market_id, c.p, greatest(c.p - min(h.price), max(h.price) - c.p) as dev
        from c join hist h on h.market_id = c.market_id
        group by c.market_id, c.p
      ),
      mc as materialized (
        select a.id, a.trigger_count as tc, a.market_id, a.side, a.change, m.p,
               greatest(${t} - make_interval(mins => a.window_minutes), a.readings_from) as lower
        from moved m join price_alerts a
          on a.market_id = m.market_id and a.active and a.condition = 'moves' and a.change <= m.dev + ${EPS}::float8
        where ${cooledDown}
        union all
        select a.id, a.trigger_count, a.market_id, a.side, a.change, d.p,
               greatest(${t} - make_interval(mins => a.window_minutes), a.readings_from)
        from due d join price_alerts a on a.id = d.id
        where a.condition = 'moves' and ${cooledDown}
      ),
      timeline as (
        select h.market_id, h.ts, h.price, null::uuid as id, 1 as ord
        from hist h where h.market_id in (select market_id from mc)
        union all
        select market_id, lower, null, id, 0 from mc
      ),
      span as (
        -- An alert's row sorts before the readings at or before its bound, so its frame holds exactly the readings after it.
        select id, min(price) over w as lo, max(price) over w as hi
        from timeline
        window w as (partition by market_id order by ts desc, ord rows between unbounded preceding and current row)
      ),
      acts as (
        ${crossingSql('yes', 'above', t)}
        union all ${crossingSql('yes', 'below', t)}
        union all ${crossingSql('no', 'above', t)}
        union all ${crossingSql('no', 'below', t)}
        union all
        select a.id, 0, a.trigger_count, ${sidePrice}, null
        from due d join price_alerts a on a.id = d.id
        where a.condition in ('above', 'below') and a.armed and ${cooledDown}
          and case when a.condition = 'above' then a.target_price <= ${sidePrice} else a.target_price >= ${sidePrice} end
        union all
        select mc.id, 0, mc.tc,
               case when mc.side = 'yes' then mc.p else 1 - mc.p end,
               case when mc.p - s.lo >= s.hi - mc.p then s.lo else s.hi end
        from mc join span s on s.id = mc.id
        where mc.p - s.lo >= mc.change - ${EPS}::float8 or s.hi - mc.p >= mc.change - ${EPS}::float8
        union all
        select a.id, 2, a.trigger_count, null, null from price_alerts a where a.due_at <= ${t}
      ),
      act as (
        -- Fire (0) over re-arm (1) over "cooldown end looked at" (2); each kind clears a due_at that has passed.
        select distinct on (id) id, kind, tc, price, ref from acts order by id, kind
      ),
      locked as (
        select a.id, x.kind, x.price, x.ref from price_alerts a join act x on x.id = a.id
        where case x.kind when 0 then a.active and a.trigger_count = x.tc
                          when 1 then a.active and not a.armed
                          else a.due_at <= ${t} end
        for update of a skip locked
      ),
      upd as (
        update price_alerts a set
          trigger_count = a.trigger_count + (case when l.kind = 0 then 1 else 0 end),
          active = case when l.kind = 0 then a.repeat else a.active end,
          triggered_at = case when l.kind = 0 then ${t} else a.triggered_at end,
          triggered_price = case when l.kind = 0 then l.price else a.triggered_price end,
          armed = case l.kind when 0 then a.condition = 'moves' when 1 then true else a.armed end,
          readings_from = case when l.kind = 0 then ${t} else a.readings_from end,
          due_at = case
            when l.kind = 0 and a.repeat then ${t} + make_interval(mins => a.cooldown_minutes)
            when l.kind = 0 or a.due_at <= ${t} then null
            else a.due_at end,
          updated_at = ${t}
        from locked l
        where a.id = l.id
        returning a.id, a.user_id, a.market_id, a.target_price, a.condition, a.side, a.window_minutes, a.trigger_count,
                  l.kind, l.price, l.ref
      )
      select u.id, u.user_id, u.market_id, u.target_price, u.condition, u.side, u.window_minutes, u.trigger_count,
             u.price, u.ref, mk.title as market_title
      from upd u join markets mk on mk.id = u.market_id
      where u.kind = 0`;
}

const cents = (p: number) => `${Math.round(p * 1000) / 10}¢`;

function alertMessage(f: FiredRow): string {
  const side = f.side.toUpperCase();
  const price = Number(f.price);
  if (f.condition === 'moves') {
    const from = f.ref === null ? price : f.side === 'yes' ? Number(f.ref) : 1 - Number(f.ref);
    return `${side} moved from ${cents(from)} to ${cents(price)} within ${f.window_minutes} min`;
  }
  return `${side} is ${cents(price)}, ${f.condition} your ${cents(Number(f.target_price))} target`;
}

/** What the alert check needs: the notify path's dependencies (it stores and announces notifications). */
export type AlertCheckDeps = NotifyDeps;

/**
 * The price-alert check (docs/decisions.md §6, §14.2, §14.3), run by the
 * price-sync and events-sync jobs with each cycle's changed prices (whose
 * previous prices they have just written to price_readings). One statement (alertTriggerSql)
 * fires crossing and move alerts, re-arms repeating crossing alerts (a
 * re-arming reading is a change too, so it is seen) and gives a repeating
 * alert whose cooldown just ended its one look at an unchanged price. FOR
 * UPDATE SKIP LOCKED with the `trigger_count` re-check makes each firing
 * happen once, on one instance, however many instances or overlapping cycles
 * run it; only that one notifies. The notifications are stored in the same
 * transaction (the alert fires and its notification exists, or neither), then
 * announced after commit. It runs even without changes, for the cooldowns
 * that ended.
 */
export async function checkPriceAlerts(deps: AlertCheckDeps, changes: PriceChange[]): Promise<number> {
  const latest = new Map<string, number>();
  for (const c of changes) {
    if (typeof c.marketId === 'string' && Number.isFinite(c.yesPrice) && c.yesPrice >= 0 && c.yesPrice <= 1)
      latest.set(c.marketId, c.yesPrice);
  }
  const payload = JSON.stringify([...latest].map(([m, p]) => ({ m, p })));
  const now = deps.clock();

  const stored = await deps.db.transaction(async (tx) => {
    const fired = await rows<FiredRow>(tx, alertTriggerSql(payload, now));
    return storeNotifications(
      deps,
      tx,
      now,
      fired.map((f) => ({
        userId: f.user_id,
        type: 'price_alert_triggered' as const,
        title: `Price alert: ${f.market_title}`.slice(0, 200),
        message: alertMessage(f),
        data: { marketId: f.market_id, alertId: f.id, triggerCount: Number(f.trigger_count) },
      })),
    );
  });
  announceNotifications(deps, stored);
  if (stored.length > 0) deps.log.info({ fired: stored.length, markets: latest.size }, 'price alerts fired');
  return stored.length;
}
