import { sql } from 'drizzle-orm';
import type { DbHandle } from '../../db/index.js';
import { rows } from '../../db/index.js';
import { mapLimit } from '../../lib/map-limit.js';
import type { VenueClient } from '../../venues/clients.js';
import { fetchActivityTrades, type ActivityTrade } from '../../venues/polymarket/data-v2.js';
import { shortAddress } from '../../venues/polymarket/data-map.js';
import {
  announceNotifications,
  storeNotifications,
  type NewNotification,
  type NotifyDeps,
  type NotifyRequest,
} from '../notifications/service.js';
import { httpsUrl } from '../../lib/safe-url.js';

/**
 * The follow poller (docs/decisions.md §18.3, §18.5; docs/venues.md "What we
 * call"): reads followed traders' new fills from Data v2 `/v2/activity` and
 * tells their followers, one `trader_trade` notification per (trader,
 * market, side) per poll.
 *
 * Which traders a run reads: the 300 most-followed whose last read is
 * `TOP_DUE_MS` old (so each is read at least every 5 minutes: the next run
 * comes within 60 s, the due ones take up to ~50 s of it at the lane's rate,
 * and the venue's CDN may add 15 s: 2.5 + 1 + 0.8 + 0.25 < 5), then the others
 * whose last read is `REST_DUE_MS` old, longest unread first, as far as the
 * run's share of the Data budget goes. The run's requests go through the
 * Data limiter's priority lane (half of the budget, served first), and a run
 * stops starting reads after `RUN_BUDGET_MS`, so runs do not pile up.
 *
 * Once only: each fill is claimed by inserting its key (wallet, transaction
 * hash, token id, side) into trader_fills, in the transaction that stores its
 * notifications; a fill another instance (or an earlier run) claimed is
 * skipped. A follower only hears of fills at or after its `followed_at`.
 */
export const TOP_FOLLOWED = 300;
export const TOP_DUE_MS = 150_000;
export const REST_DUE_MS = 25 * 60_000;
/** Wall time a run spends starting reads (the job runs every 60 s). */
export const RUN_BUDGET_MS = 50_000;
/** Traders read at once (their requests still queue at the limiter's lane). */
const READ_CONCURRENCY = 4;
/** Traders per transaction (claim, fan-out, watermarks). */
const CHUNK = 25;
/** Notifications per storeNotifications statement group (PostgreSQL's 65,535 bind parameters). */
const NOTIFY_BATCH = 2_000;
/** docs/venues.md "What we call": pages per trader per poll (100 fills each). */
const MAX_PAGES = 5;
/** Claimed fills older than their trader's watermark are kept this long, then pruned. */
const FILL_KEEP_MS = 24 * 60 * 60_000;

export interface PollDeps extends NotifyDeps {
  dbh: DbHandle;
  /** The Data API client on the poller's priority lane (withPriorityShare). */
  data: Pick<VenueClient, 'baseUrl' | 'http'>;
  /** Wall-clock milliseconds for the run budget (tests shrink nothing here; the app clock may be frozen). */
  wallNow?: () => number;
  runBudgetMs?: number;
  /** The job's abort signal (docs/decisions.md §9): the run stops between chunks. */
  signal?: AbortSignal;
}

export interface PollOutcome {
  /** Traders read. */
  read: number;
  /** Traders whose read failed (read again next run). */
  failed: number;
  /** Fills claimed by this run. */
  fills: number;
  notifications: number;
  /** Venue rows that failed strict parsing. */
  skipped: number;
  requests: number;
}

interface DueTrader {
  wallet_address: string;
  seen_until: number | string | null;
  first_followed: Date | string | null;
}

/** Traders to read now, in reading order (most-followed first; the rest longest unread first). */
async function selectDue(deps: PollDeps, now: Date, limit: number): Promise<DueTrader[]> {
  const t = now.toISOString();
  return deps.dbh.rows<DueTrader>(sql`
    with ranked as (
      select wallet_address, seen_until, polled_at,
             row_number() over (order by follower_count desc, wallet_address) as pos
      from followed_traders where follower_count > 0
    ), due as (
      select * from ranked
      where polled_at is null
         or (pos <= ${TOP_FOLLOWED} and polled_at <= ${t}::timestamptz - make_interval(secs => ${TOP_DUE_MS / 1000}))
         or polled_at <= ${t}::timestamptz - make_interval(secs => ${REST_DUE_MS / 1000})
      order by (pos <= ${TOP_FOLLOWED}) desc,
               case when pos <= ${TOP_FOLLOWED} then pos end,
               polled_at asc nulls first, pos
      limit ${limit}
    )
    select d.wallet_address, d.seen_until,
           (select min(f.followed_at) from follows f where f.wallet_address = d.wallet_address) as first_followed
    from due d
    order by (d.pos <= ${TOP_FOLLOWED}) desc, case when d.pos <= ${TOP_FOLLOWED} then d.pos end, d.polled_at asc nulls first, d.pos`);
}

interface TraderRead {
  wallet: string;
  rows: ActivityTrade[];
  skipped: number;
  requests: number;
  ok: boolean;
}

/** One trader's fills since its watermark (or since its first current follower followed). */
async function readTrader(deps: PollDeps, d: DueTrader): Promise<TraderRead> {
  const followedSec = d.first_followed === null ? 0 : Math.floor(new Date(d.first_followed).getTime() / 1000);
  const seen = d.seen_until === null ? 0 : Number(d.seen_until);
  const start = Math.max(seen, followedSec, 1);
  try {
    const r = await fetchActivityTrades(deps.data, d.wallet_address, {
      start,
      maxPages: MAX_PAGES,
      // docs/venues.md "What we call": the next page only while this one held only unseen fills.
      more: (page) => page.every((x) => x.timestamp > seen),
    });
    return { wallet: d.wallet_address, rows: r.rows, skipped: r.skipped, requests: r.requests, ok: true };
  } catch (err) {
    deps.log.warn({ err, wallet: d.wallet_address }, 'follows-poll: reading a trader failed; read again next run');
    return { wallet: d.wallet_address, rows: [], skipped: 0, requests: 1, ok: false };
  }
}

interface GroupRow {
  user_id: string;
  wallet: string;
  condition_id: string;
  side: 'buy' | 'sell';
  size: number | string;
  cost: number | string;
  at: Date | string;
  tx: string;
  token: string;
  outcome: string;
  title: string;
  fills: number | string;
}

interface MarketRow {
  cond: string | null;
  token: string | null;
  id: string;
  title: string;
  slug: string;
}

const cents = (p: number) => `${Math.round(p * 1000) / 10}¢`;
// One formatter each: toLocaleString builds a new one per call, which was most of a 25,000-notification fan-out's CPU.
const SHARES = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const USD = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const shares = (n: number) => (n >= 100 ? SHARES.format(n) : String(Math.round(n * 100) / 100));
const usd = (n: number) => `$${USD.format(n)}`;

/**
 * Claims the new fills of some traders, fans them out to the followers and
 * moves the traders' watermarks, in one transaction (set-based: one claim,
 * one grouping join over the followers, storeNotifications in batches, one
 * watermark update).
 */
async function settleChunk(deps: PollDeps, reads: TraderRead[], now: Date): Promise<{ fills: number; stored: NewNotification[] }> {
  const ok = reads.filter((r) => r.ok);
  if (ok.length === 0) return { fills: 0, stored: [] };
  const fills = ok.flatMap((r) =>
    r.rows.map((x) => ({
      w: r.wallet,
      tx: x.transaction_hash.toLowerCase(),
      tok: x.token_id,
      side: x.side === 'BUY' ? 'buy' : 'sell',
      c: x.condition_id.toLowerCase(),
      size: x.size,
      price: x.price,
      at: new Date(x.timestamp * 1000).toISOString(),
      outcome: x.outcome,
      title: x.title,
    })),
  );
  // The venue may list one fill twice across pages: keep the first.
  const unique = [...new Map(fills.map((f) => [`${f.w}|${f.tx}|${f.tok}|${f.side}`, f])).values()];
  const traders = ok.map((r) => {
    const newest = r.rows.reduce<ActivityTrade | undefined>((a, x) => (a === undefined || x.timestamp > a.timestamp ? x : a), undefined);
    const named = r.rows.find((x) => x.name.trim() || x.pseudonym.trim());
    const avatar = r.rows.map((x) => httpsUrl(x.profile_image)).find((u) => u !== null);
    return {
      w: r.wallet,
      seen: newest?.timestamp ?? null,
      name: named ? named.name.trim() || named.pseudonym.trim() : null,
      avatar: avatar ?? null,
    };
  });
  const at = now.toISOString();

  const result = await deps.db.transaction(async (tx) => {
    // The claim: a fill another run or instance already claimed comes back from no one.
    const claimed =
      unique.length === 0
        ? []
        : await rows<{ wallet_address: string; transaction_hash: string; token_id: string; side: string }>(
            tx,
            sql`
        insert into trader_fills (wallet_address, transaction_hash, token_id, side, at, seen_at)
        select x.w, x.tx, x.tok, x.side, x.at, ${at}::timestamptz
        from jsonb_to_recordset(${JSON.stringify(unique)}::jsonb) as x(w text, tx text, tok text, side text, at timestamptz)
        on conflict do nothing
        returning wallet_address, transaction_hash, token_id, side`,
          );
    const keys = new Set(claimed.map((c) => `${c.wallet_address}|${c.transaction_hash}|${c.token_id}|${c.side}`));
    const fresh = unique.filter((f) => keys.has(`${f.w}|${f.tx}|${f.tok}|${f.side}`));
    // The fan-out: one grouping join of the fresh fills to every follower who followed before them.
    const groups =
      fresh.length === 0
        ? []
        : await rows<GroupRow>(
            tx,
            sql`
        with n as (
          select x.*, row_number() over () as n
          from jsonb_to_recordset(${JSON.stringify(fresh)}::jsonb)
            as x(w text, tx text, tok text, side text, c text, size float8, price float8, at timestamptz, outcome text, title text)
        )
        select f.user_id, n.w as wallet, n.c as condition_id, n.side,
               sum(n.size) as size, sum(n.size * n.price) as cost, max(n.at) as at,
               (array_agg(n.tx order by n.at desc, n.n))[1] as tx,
               (array_agg(n.tok order by n.at desc, n.n))[1] as token,
               (array_agg(n.outcome order by n.at desc, n.n))[1] as outcome,
               (array_agg(n.title order by n.at desc, n.n))[1] as title,
               count(*) as fills
        from n join follows f on f.wallet_address = n.w and n.at >= f.followed_at
        group by f.user_id, n.w, n.c, n.side
        order by n.w, n.c, n.side, f.user_id`,
          );
    // Our catalogue's market for each group: by condition id (either outcome's fills), else by the YES token
    // (markets read before the catalogue stored condition ids).
    const conds = [...new Set(groups.map((g) => g.condition_id))];
    const tokens = [...new Set(groups.map((g) => g.token))];
    const marketRows =
      groups.length === 0
        ? []
        : await rows<MarketRow>(
            tx,
            sql`select m.condition_id as cond, m.yes_token_id as token, m.id, m.title, g.slug
                from markets m join event_groups g on g.id = m.event_group_id
                where m.venue = 'polymarket'
                  and (m.condition_id in (select jsonb_array_elements_text(${JSON.stringify(conds)}::jsonb))
                       or m.yes_token_id in (select jsonb_array_elements_text(${JSON.stringify(tokens)}::jsonb)))`,
          );
    const byCondition = new Map(marketRows.filter((m) => m.cond !== null).map((m) => [m.cond!, m]));
    const byToken = new Map(marketRows.filter((m) => m.token !== null).map((m) => [m.token!, m]));
    const wallets = [...new Set(groups.map((g) => g.wallet))];
    const names = new Map<string, string>();
    if (wallets.length > 0) {
      const ranked = await rows<{ wallet_address: string; display_name: string }>(
        tx,
        sql`select distinct on (e.wallet_address) e.wallet_address, e.display_name
            from leaderboard_current c join leaderboard_entries e on e.snapshot_id = c.snapshot_id
            where e.wallet_address in (select jsonb_array_elements_text(${JSON.stringify(wallets)}::jsonb))
            order by e.wallet_address, (c.category = 'OVERALL' and c.period = 'ALL') desc`,
      );
      for (const r of ranked) if (r.display_name.trim()) names.set(r.wallet_address, r.display_name.trim());
    }
    const venueNames = new Map(traders.map((t) => [t.w, t.name]));
    const requests: NotifyRequest[] = groups.map((g) => {
      const size = Number(g.size);
      const cost = Number(g.cost);
      const price = size > 0 ? cost / size : 0;
      const market = byCondition.get(g.condition_id) ?? byToken.get(g.token);
      const who = names.get(g.wallet) ?? venueNames.get(g.wallet) ?? shortAddress(g.wallet);
      const outcome = g.outcome.trim() || 'shares';
      const title = (market?.title ?? g.title).trim() || 'a market';
      const fillCount = Number(g.fills);
      return {
        userId: g.user_id,
        type: 'trader_trade' as const,
        title: `${who} ${g.side === 'buy' ? 'bought' : 'sold'} ${outcome} on ${title}`.slice(0, 200),
        message: `${shares(size)} shares at ${cents(price)} (${usd(cost)})${fillCount > 1 ? ` in ${fillCount} fills` : ''}`,
        data: {
          walletAddress: g.wallet,
          marketId: market?.id ?? null,
          eventSlug: market?.slug ?? null,
          side: g.side,
          outcome: g.outcome,
          price: Math.round(price * 1e6) / 1e6,
          size: Math.round(size * 1e6) / 1e6,
          usd: Math.round(cost * 1e6) / 1e6,
          at: new Date(g.at).toISOString(),
          transactionHash: g.tx,
          fills: fillCount,
        },
      };
    });
    const stored: NewNotification[] = [];
    for (let i = 0; i < requests.length; i += NOTIFY_BATCH) {
      stored.push(...(await storeNotifications(deps, tx, now, requests.slice(i, i + NOTIFY_BATCH))));
    }
    await rows(
      tx,
      sql`
      update followed_traders t set
        polled_at = ${at}::timestamptz,
        seen_until = greatest(t.seen_until, x.seen),
        last_trade_at = greatest(t.last_trade_at, to_timestamp(x.seen)),
        display_name = coalesce(x.name, t.display_name),
        avatar_url = coalesce(x.avatar, t.avatar_url)
      from jsonb_to_recordset(${JSON.stringify(traders)}::jsonb) as x(w text, seen bigint, name text, avatar text)
      where t.wallet_address = x.w`,
    );
    return { fills: fresh.length, stored };
  });
  return result;
}

/**
 * One poll: the due traders, read through the priority lane, settled in
 * chunks as their reads finish. Throws when every read failed (the venue is
 * down), after settling nothing; partial failures are read again next run.
 */
export async function pollFollowedTraders(deps: PollDeps): Promise<PollOutcome> {
  const wallNow = deps.wallNow ?? (() => performance.now());
  const started = wallNow();
  const budgetMs = deps.runBudgetMs ?? RUN_BUDGET_MS;
  const now = deps.clock();
  const due = await selectDue(deps, now, 2_000);
  const out: PollOutcome = { read: 0, failed: 0, fills: 0, notifications: 0, skipped: 0, requests: 0 };
  for (let i = 0; i < due.length; i += CHUNK) {
    if (wallNow() - started > budgetMs || deps.signal?.aborted) break;
    const chunk = due.slice(i, i + CHUNK);
    const reads = await mapLimit(chunk, READ_CONCURRENCY, (d) =>
      wallNow() - started > budgetMs ? Promise.resolve<TraderRead | undefined>(undefined) : readTrader(deps, d),
    );
    const done = reads.filter((r): r is TraderRead => r !== undefined);
    for (const r of done) {
      out.requests += r.requests;
      out.skipped += r.skipped;
      if (r.ok) out.read++;
      else out.failed++;
    }
    const { fills, stored } = await settleChunk(deps, done, deps.clock());
    out.fills += fills;
    out.notifications += stored.length;
    announceNotifications(deps, stored);
  }
  await pruneFills(deps, now);
  if (out.read === 0 && out.failed > 0) throw new Error(`follows-poll: every trader read failed (${out.failed})`);
  if (out.notifications > 0 || out.skipped > 0) deps.log.info(out, 'follows-poll: fills fanned out');
  return out;
}

/** Claimed fills strictly older than their trader's watermark are never read again (the next read starts at it). */
async function pruneFills(deps: PollDeps, now: Date): Promise<void> {
  const cutoff = new Date(now.getTime() - FILL_KEEP_MS).toISOString();
  await deps.dbh.rows(sql`
    delete from trader_fills f using followed_traders t
    where f.wallet_address = t.wallet_address and f.seen_at < ${cutoff}::timestamptz
      and t.seen_until is not null and f.at < to_timestamp(t.seen_until)`);
}
