import { loadavg } from 'node:os';
import { sql } from 'drizzle-orm';
import type { PriceChange } from '../../src/domains/events/changes.js';
import { selectTrackedMarkets } from '../../src/domains/events/prices.js';
import { drainDeliveries } from '../../src/domains/notifications/delivery.js';
import { notifyMarketMoves, notifyResolvedAndNewMarkets } from '../../src/domains/watchlist/lifecycle.js';
import { PG_URL, startApp, writeSection, type BenchApp } from './harness.js';

/**
 * Issue 32 performance (docs/decisions.md §17.3): 100,000 users watching 10
 * groups each (1,000,000 watchlist rows) over 20,000 watched groups (50
 * watchers each) and 5,000 unwatched ones, two markets a group.
 *  1. A cycle that resolves 100 watched markets and moves 1,000 (by 0.12
 *     against a reading 30 s old): the Node process's CPU (user + system)
 *     for the detectors (`notifyMarketMoves` with the price batch, the
 *     watchlist-check step) beyond the cycle itself, and their wall time.
 *  2. A cycle where nothing watched changed (1,000 unwatched markets move):
 *     the same detectors, and the tracked-set query with and without the
 *     1M-row watchlist.
 * BENCH_SMOKE=1: 10,000 users, one run, RESULTS.md untouched.
 */
const SMOKE = process.env.BENCH_SMOKE === '1';
const USERS = SMOKE ? 10_000 : 100_000;
const PER_USER = 10;
const WATCHED = SMOKE ? 2_000 : 20_000;
const UNWATCHED = 5_000;
const MOVES = 1_000;
const RESOLVES = 100;
const RUNS = SMOKE ? 1 : 3;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (n: number) => Math.round(n * 10) / 10;

async function seed(b: BenchApp, now: Date) {
  const ago = new Date(now.getTime() - 30_000).toISOString();
  const groups = WATCHED + UNWATCHED;
  await b.db.rows(sql`
    insert into event_groups (id, venue, venue_event_id, slug, title, volume_24h)
    select 'wg-' || g, 'polymarket', 'wg-' || g, 'watch-group-' || g, 'Watched group ' || g, 0
    from generate_series(0, ${groups - 1}::int) g`);
  await b.db.rows(sql`
    insert into markets (id, event_group_id, venue, venue_market_id, title, yes_price, price_updated_at, created_at)
    select 'wm-' || g || '-' || k, 'wg-' || g, 'polymarket', 'wm-' || g || '-' || k, 'Market ' || k, 0.5,
           ${ago}::timestamptz, ${now.toISOString()}::timestamptz - interval '10 days'
    from generate_series(0, ${groups - 1}::int) g, generate_series(0, 1) k`);
  await b.db.rows(sql`
    insert into users (chain, wallet_address, auth_method)
    select 'evm', '0x' || lpad(to_hex(g), 40, '0'), 'wallet' from generate_series(1, ${USERS}::int) g`);
  // User k watches groups (k * 10 + j) mod WATCHED: every watched group has USERS * 10 / WATCHED watchers.
  await b.db.rows(sql`
    with u as (select id, row_number() over (order by id) - 1 as k from users)
    insert into watchlist (user_id, event_group_id, watched_at)
    select u.id, 'wg-' || ((u.k * ${PER_USER} + j) % ${WATCHED}), ${now.toISOString()}::timestamptz - interval '1 day'
    from u, generate_series(0, ${PER_USER - 1}::int) j`);
  // Each market's previous price, last read 30 s ago (what a price write stores when the price changes).
  await b.db.rows(sql`
    insert into price_readings (market_id, at, price)
    select id, ${ago}::timestamptz, 0.5 from markets where id like 'wm-%'`);
  for (const t of ['watchlist', 'markets', 'price_readings', 'event_groups', 'users']) await b.db.rows(sql.raw(`vacuum analyze ${t}`));
}

/** MOVES markets, one per group: watched groups, or the unwatched ones. */
function moves(watched: boolean, price: number, offset: number): PriceChange[] {
  return Array.from({ length: MOVES }, (_, i) => ({
    marketId: watched ? `wm-${(offset + i * 17) % WATCHED}-0` : `wm-${WATCHED + ((offset + i) % UNWATCHED)}-0`,
    yesPrice: price,
    volume: 1,
    timestamp: new Date(),
  }));
}

async function cleanUp(b: BenchApp) {
  await drainDeliveries(b.app.delivery);
  await b.db.rows(sql`delete from notifications where type in ('market_moved', 'market_resolved', 'new_market')`);
  await b.db.rows(sql`delete from watch_notices`);
  await b.db.rows(sql`update markets set status = 'active', resolved_at = null, result = null where resolved_at is not null`);
  await b.db.rows(sql`delete from user_stream_events`);
}

/** Node CPU (ms, user + system) and wall (ms) of fn. */
async function measure<T>(fn: () => Promise<T>): Promise<{ cpu: number; wall: number; value: T }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { cpu: (c.user + c.system) / 1000, wall, value };
}

export default async function run() {
  const b = await startApp({ JOBS: 'off', PUSH_API_URL: 'http://127.0.0.1:9' });
  const now = new Date();
  const deps = { ...b.app.jobs.deps(), clock: () => now };
  try {
    const t0 = performance.now();
    await seed(b, now);
    process.stdout.write(`seeded ${USERS * PER_USER} watchlist rows in ${Math.round(performance.now() - t0)} ms\n`);

    const busy = { cpu: [] as number[], wall: [] as number[], moved: 0, resolved: 0 };
    for (let r = 0; r < RUNS; r++) {
      await cleanUp(b);
      // 100 watched markets resolve (what the write that saw them does), in groups that do not move this cycle.
      await b.db.rows(sql`
        update markets set status = 'resolved', yes_price = 1, result = 'yes', resolved_at = ${now.toISOString()}::timestamptz
        where id in (select 'wm-' || ((g * 17 + 5 + ${r}) % ${WATCHED}) || '-1' from generate_series(0, ${RESOLVES - 1}::int) g)`);
      const m = await measure(() => notifyMarketMoves(deps, moves(true, 0.62, r)));
      const s = await measure(() => notifyResolvedAndNewMarkets(deps, new Date(now.getTime() - 60_000)));
      busy.cpu.push(m.cpu + s.cpu);
      busy.wall.push(m.wall + s.wall);
      busy.moved = m.value;
      busy.resolved = s.value;
      process.stdout.write(
        `busy cycle: ${m.value} moved, ${s.value} resolved; cpu ${round(m.cpu + s.cpu)} ms, wall ${round(m.wall + s.wall)} ms\n`,
      );
    }
    await cleanUp(b);

    const quiet = { cpu: [] as number[], wall: [] as number[] };
    for (let r = 0; r < RUNS + 2; r++) {
      const m = await measure(() => notifyMarketMoves(deps, moves(false, 0.62, r * 31)));
      const s = await measure(() => notifyResolvedAndNewMarkets(deps, new Date(now.getTime() - 60_000)));
      quiet.cpu.push(m.cpu + s.cpu);
      quiet.wall.push(m.wall + s.wall);
    }

    const tracked = async () => {
      const times: number[] = [];
      let n = 0;
      for (let r = 0; r < RUNS + 2; r++) {
        const x = await measure(() => selectTrackedMarkets({ ...deps, config: { PRICE_TRACK_TOP: 500 } }));
        times.push(x.wall);
        n = x.value.length;
      }
      return { ms: median(times), n };
    };
    const withList = await tracked();
    await b.db.rows(sql`create table bench_watchlist_keep as select * from watchlist`);
    await b.db.rows(sql`truncate watchlist`);
    const without = await tracked();
    await b.db.rows(sql`insert into watchlist select * from bench_watchlist_keep`);
    await b.db.rows(sql`drop table bench_watchlist_keep`);

    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' / ');
    const out = [
      `### One cycle's lifecycle detectors at ${(USERS * PER_USER).toLocaleString('en')} watchlist rows (median of ${RUNS})`,
      '',
      `${USERS.toLocaleString('en')} users × ${PER_USER} groups over ${WATCHED.toLocaleString('en')} watched groups (${(USERS * PER_USER) / WATCHED} watchers each) and ${UNWATCHED.toLocaleString('en')} unwatched ones, two markets a group, ${PG_URL ? 'PostgreSQL' : 'PGlite'}. ` +
        `"Service CPU" is the Node process's user + system CPU for the detectors beyond the cycle itself (the price write is not counted); wall includes PostgreSQL. Machine shared with other engineers' work: load average ${load} (1 / 5 / 15 min) when it finished.`,
      '',
      '| cycle | notifications | service CPU ms | wall ms | target |',
      '|---|---|---|---|---|',
      `| 100 watched markets resolve, 1,000 move by 0.12 | ${busy.moved} market_moved + ${busy.resolved} market_resolved | ${round(median(busy.cpu))} | ${round(median(busy.wall))} | < 1,000 ms CPU |`,
      `| nothing watched changes (1,000 unwatched markets move) | 0 | ${round(median(quiet.cpu))} | ${round(median(quiet.wall))} | < 20 ms more than no watchlist |`,
      `| tracked-set query, with the watchlist (${withList.n.toLocaleString('en')} markets) vs none (${without.n.toLocaleString('en')}) | — | — | ${round(withList.ms)} vs ${round(without.ms)} | — |`,
      '',
      'Each detector is one statement from what changed to the watchers of the changed groups (`watchlist_group_idx`), then the notify path stores the notifications (with their stream events and ledger rows) in chunks of 2,000 in the same transaction. ' +
        'A cycle with nothing watched costs the detectors a probe per changed market; the tracked set reads the watched groups with a loose index scan (one probe per distinct watched group), and those groups’ markets then join the price cycle, as §17.1 asks.',
      '',
    ];
    process.stdout.write(out.join('\n') + '\n');
    if (!SMOKE) await writeSection('Watchlist lifecycle notifications (issue 32)', out.join('\n'));
  } finally {
    await drainDeliveries(b.app.delivery);
    await b.close();
  }
}
