import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import { writeSnapshot } from '../../src/domains/leaderboard/sync.js';
import { compactTraderHistory, getTraderHistory, recordTraderHistory } from '../../src/domains/leaderboard/history.js';
import { LEADERBOARD_CATEGORIES, PERIODS, type SnapshotRow } from '../../src/venues/polymarket/data-map.js';
import { startApp, writeSection } from './harness.js';

/**
 * Trader history (issue 19, docs/decisions.md §14.1):
 * - one trader's history over 365 days (`GET /leaderboard/:address/history?days=365`): p99 < 20 ms;
 * - one sync's history write for 16 boards × 1,000 rows (the hourly upserts and the roll-up): < 500 ms.
 * The history tables are seeded at their steady state for these sizes: every board has its 168 hourly
 * points per trader, and the OVERALL/ALL board also 393 daily points per trader (400 days in all), laid out
 * in time order as the syncs write them, checkpointed and vacuumed.
 * HISTORY_BENCH_TRADERS scales the boards down for a quick smoke run.
 */
const TRADERS = Number(process.env.HISTORY_BENCH_TRADERS ?? 1000);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const addr = (i: number) => `0x${createHash('sha1').update(`history-bench-${i}`).digest('hex')}`;

function boardRows(n: number, shift: number): SnapshotRow[] {
  return Array.from({ length: n }, (_, i) => ({
    walletAddress: addr(i),
    displayName: `trader-${i}`,
    avatarUrl: `https://img.example/${i}.png`,
    isKol: i % 10 === 0,
    pnl: 1_000_000 - ((i + shift) % n) * 100,
    volume: (i * 104_729) % 1_000_003,
    venueRank: ((i + shift) % n) + 1,
  }));
}

function stats(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const pick = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: pick(0.5), p99: pick(0.99), max: s[s.length - 1] };
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const out = await fn();
  return [performance.now() - t0, out];
}

export default async function run() {
  const bench = await startApp();
  const lines: string[] = [];
  try {
    const { app } = bench;
    const dbh = app.dbh;
    // The current hour's start plus 5 minutes: the benchmarked sync; history lies before it.
    const now = new Date(Math.floor(Date.now() / HOUR) * HOUR + 5 * 60_000);
    const boards = LEADERBOARD_CATEGORIES.flatMap((category) => PERIODS.map((period) => ({ category, period })));

    // Boards as the previous sync left them (10 minutes earlier), then their history.
    let [seedMs] = await timed(async () => {
      for (const b of boards)
        await writeSnapshot(dbh, b.category, b.period, boardRows(TRADERS, 0), 0, new Date(now.getTime() - 10 * 60_000));
      await dbh.rows(sql`
        insert into trader_history_hourly (category, period, wallet_address, hour, at, rank, pnl, volume)
        select c.category, c.period, e.wallet_address, h, h + interval '55 minutes',
          (e.venue_rank + extract(hour from h)::int) % ${TRADERS} + 1, e.pnl + extract(epoch from h) / 3600, e.volume
        from leaderboard_current c
        join leaderboard_entries e on e.snapshot_id = c.snapshot_id
        cross join generate_series(${new Date(now.getTime() - 5 * 60_000 - 169 * HOUR).toISOString()}::timestamptz,
                                   ${new Date(now.getTime() - 5 * 60_000 - HOUR).toISOString()}::timestamptz, interval '1 hour') as h
        order by h, c.category, c.period, e.wallet_address`);
      const firstDay = new Date(now.getTime() - 400 * DAY).toISOString().slice(0, 10);
      const lastDay = new Date(now.getTime() - 8 * DAY).toISOString().slice(0, 10);
      await dbh.rows(sql`
        insert into trader_history_daily (category, period, wallet_address, day, at, rank, pnl, volume)
        select c.category, c.period, e.wallet_address, d::date, d + interval '23 hours 50 minutes',
          (e.venue_rank + extract(doy from d)::int) % ${TRADERS} + 1, e.pnl - extract(doy from d) * 10, e.volume
        from leaderboard_current c
        join leaderboard_entries e on e.snapshot_id = c.snapshot_id
        cross join generate_series(${firstDay}::date, ${lastDay}::date, interval '1 day') as d
        where c.category = 'OVERALL' and c.period = 'ALL'
        order by d, e.wallet_address`);
      // The steady state a running service has: rows laid out in the order syncs write them (an hour's
      // rows together, as each sync appends its hour), written out by checkpoints and vacuumed.
      await dbh.rows(sql`checkpoint`);
      await dbh.rows(sql`vacuum analyze trader_history_hourly`);
      await dbh.rows(sql`vacuum analyze trader_history_daily`);
    });
    const [counts] = await dbh.rows<{ h: number; d: number }>(sql`
      select (select count(*)::int from trader_history_hourly) as h, (select count(*)::int from trader_history_daily) as d`);

    // One sync: 16 snapshots written (rankChange looked up for every row), then the history write.
    const [snapMs] = await timed(async () => {
      for (const b of boards) await writeSnapshot(dbh, b.category, b.period, boardRows(TRADERS, 7), 0, now);
    });
    const pointers = await dbh.rows<{ category: string; period: string; snapshot_id: number | string }>(
      sql`select category, period, snapshot_id from leaderboard_current`,
    );
    const record = (at: Date) =>
      timed(async () => {
        for (const p of pointers)
          await recordTraderHistory(dbh, { category: p.category, period: p.period, snapshotId: Number(p.snapshot_id), at });
      });
    const [recordNewHourMs] = await record(now);
    const [recordSameHourMs] = await record(new Date(now.getTime() + 10 * 60_000));
    // The hour that just passed 7 days ago rolls into its day: what each sync after an hour boundary does.
    const [compactMs, compacted] = await timed(() => compactTraderHistory({ dbh }, new Date(now.getTime() + 10 * 60_000)));
    const [compactIdleMs] = await timed(() => compactTraderHistory({ dbh }, new Date(now.getTime() + 20 * 60_000)));

    // One trader's year: the route's service function, then over HTTP (in process).
    const wallet = addr(Math.floor(TRADERS / 2));
    const deps = { dbh, clock: () => new Date(now.getTime() + 20 * 60_000) };
    const q = { category: 'OVERALL' as const, period: 'ALL' as const, days: 365 };
    const sample = await getTraderHistory(deps, wallet, q);
    for (let i = 0; i < 50; i++) await getTraderHistory(deps, wallet, q);
    const svc: number[] = [];
    for (let i = 0; i < 500; i++) svc.push((await timed(() => getTraderHistory(deps, wallet, q)))[0]);
    const url = `/api/v1/leaderboard/${wallet}/history?days=365`;
    const http: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 50; i++) await app.inject({ method: 'GET', url });
    for (let i = 0; i < 500; i++) {
      const [ms, res] = await timed(() => app.inject({ method: 'GET', url }));
      if (res.statusCode !== 200) throw new Error(`history answered ${res.statusCode}`);
      bytes = res.body.length;
      http.push(ms);
    }
    const s = stats(svc);
    const h = stats(http);
    seedMs = Math.round(seedMs);

    const n = (x: number) => x.toLocaleString('en');
    lines.push(
      `16 boards × ${n(TRADERS)} traders; history seeded with ${n(counts.h)} hourly and ${n(counts.d)} daily rows (${(seedMs / 1000).toFixed(1)} s).`,
      '',
      '| what | measured | target |',
      '|---|---|---|',
      `| one trader over 365 days (${sample.points.length} points, ${n(bytes)} bytes): service p50 / p99 / max | ${s.p50.toFixed(2)} / ${s.p99.toFixed(2)} / ${s.max.toFixed(2)} ms | p99 < 20 ms |`,
      `| same over HTTP (inject): p50 / p99 / max | ${h.p50.toFixed(2)} / ${h.p99.toFixed(2)} / ${h.max.toFixed(2)} ms | |`,
      `| one sync's history write, 16 boards: upserts into a new hour + roll-up of one hour (${n(compacted.rolledUp)} rows) | ${(recordNewHourMs + compactMs).toFixed(0)} ms (${recordNewHourMs.toFixed(0)} + ${compactMs.toFixed(0)}) | < 500 ms |`,
      `| same, a later sync of the same hour (upserts that replace) + roll-up with nothing to do | ${(recordSameHourMs + compactIdleMs).toFixed(0)} ms (${recordSameHourMs.toFixed(0)} + ${compactIdleMs.toFixed(0)}) | < 500 ms |`,
      `| for scale: the 16 snapshots of that sync, rankChange looked up per row | ${snapMs.toFixed(0)} ms | |`,
      '',
      'Upserts run one statement per board, in turn (the sync runs 4 boards at a time, so this is an upper bound).',
    );
    await writeSection('Trader history', lines.join('\n'));
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    await bench.close();
  }
}
