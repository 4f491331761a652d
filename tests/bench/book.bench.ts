import { loadavg } from 'node:os';
import { sql } from 'drizzle-orm';
import { startApp, writeSection } from './harness.js';
import { maxInWindow } from '../fakes/venues/budget.js';
import { startFakeVenues } from '../fakes/venues/index.js';
import type { FakeRequest } from '../fakes/server.js';
import { syncCatalogue } from '../../src/domains/events/catalogue.js';
import { BOOK_FRESH_MS } from '../../src/domains/events/book.js';

/**
 * Order books on request (issue #30, docs/decisions.md §16.4):
 * `npm run bench -- book`. Two measurements against the venue fakes, each
 * book read answered after VENUE_MS (a venue's round trip), so requests
 * overlap the read in flight:
 * - bursts: 200 concurrent GET /markets/:id/book for one market never read
 *   before (a Polymarket and a Kalshi market in turn): how many venue reads
 *   (target 1), and the latencies the 200 callers saw;
 * - sustained: 200 concurrent clients asking for 20 markets for 10 s: venue
 *   reads per market in any 5 s window (issue #30: at most 2).
 * The book cache is per instance (book.ts); one instance is measured here.
 */
const VENUE_MS = 100;
const BURST = 200;
const BURSTS = 5;
const CLIENTS = 200;
const SUSTAIN_MS = 10_000;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
};
const median = (xs: number[]) => pct(xs, 0.5);
/** Non-200 answers as "n (status code × k, …)". */
const failures = (answers: Array<{ status: number; code?: string }>) => {
  const by = new Map<string, number>();
  for (const a of answers)
    if (a.status !== 200) by.set(`${a.status} ${a.code ?? ''}`.trim(), (by.get(`${a.status} ${a.code ?? ''}`.trim()) ?? 0) + 1);
  const n = [...by.values()].reduce((x, y) => x + y, 0);
  return n === 0 ? '0' : `${n} (${[...by].map(([k, v]) => `${k} × ${v}`).join(', ')})`;
};

export default async function run() {
  const venues = await startFakeVenues(
    {},
    { generate: { polymarket: { events: 60, markets: 240 }, kalshi: { events: 30, markets: 240, series: 10 } } },
  );
  const isBookRead = (r: FakeRequest) => r.path === '/book' || /^\/markets\/[^/]+\/orderbook$/.test(r.path);
  const slow = async (r: FakeRequest) => {
    if (isBookRead(r)) await new Promise((res) => setTimeout(res, VENUE_MS));
    return undefined;
  };
  venues.clob.intercept(slow);
  venues.kalshi.intercept(slow);
  const app = await startApp({ ...venues.env, JOBS: 'off', PRICE_TRACK_TOP: '0' });
  const lines: string[] = [];
  try {
    const sync = await syncCatalogue(app.app.jobs.deps(), { full: true });
    if (sync.failures.length > 0) throw new Error(sync.failures.join('; '));
    // The catalogue load spent the venues' request budgets: let their 10 s windows pass.
    await new Promise((r) => setTimeout(r, 11_000));
    // Active markets with a book at the venue, in both venues' id spaces.
    const pick = async (venue: string, n: number) => {
      const rows = await app.db.rows<{ id: string }>(
        sql`select m.id from markets m join event_groups g on g.id = m.event_group_id
               where g.venue = ${venue} and m.status = 'active' and m.yes_price is not null and (m.yes_token_id is not null or g.venue = 'kalshi')
               order by m.id limit ${n}`,
      );
      if (rows.length < n) throw new Error(`only ${rows.length} ${venue} markets`);
      return rows.map((r) => r.id);
    };
    const pm = await pick('polymarket', BURSTS + 10);
    const ks = await pick('kalshi', BURSTS + 10);
    const reads = () => [...venues.clob.requests, ...venues.kalshi.requests].filter(isBookRead);
    const get = async (id: string) => {
      const t0 = performance.now();
      const res = await fetch(`${app.url}/api/v1/markets/${id}/book?depth=${1 + Math.floor(Math.random() * 50)}`);
      const body = (await res.json()) as { fetchedAt?: string; code?: string };
      return { ms: performance.now() - t0, status: res.status, fetchedAt: body.fetchedAt, code: body.code };
    };
    // Warm the process (JIT, pools) on markets the measurements do not use.
    await Promise.all([get(pm[BURSTS + 9]), get(ks[BURSTS + 9])]);

    // 1. Bursts: 200 at once for one cold market.
    const burstRows: string[] = [];
    for (const [venue, ids] of [
      ['Polymarket (CLOB GET /book)', pm],
      ['Kalshi (GET /markets/{ticker}/orderbook)', ks],
    ] as const) {
      const all: number[] = [];
      const walls: number[] = [];
      const perBurst: number[] = [];
      const answered: Array<{ status: number; code?: string }> = [];
      let fetchedAts = 0;
      const load: number[] = [];
      for (let b = 0; b < BURSTS; b++) {
        load.push(loadavg()[0]);
        const before = reads().length;
        const t0 = performance.now();
        const answers = await Promise.all(Array.from({ length: BURST }, () => get(ids[b])));
        walls.push(performance.now() - t0);
        perBurst.push(reads().length - before);
        answered.push(...answers);
        fetchedAts = Math.max(fetchedAts, new Set(answers.map((a) => a.fetchedAt)).size);
        all.push(...answers.map((a) => a.ms));
      }
      burstRows.push(
        `| ${venue} | ${BURSTS} × ${BURST} | ${perBurst.join(', ')} | ${fetchedAts} | ${failures(answered)} | ${median(all).toFixed(0)} | ${pct(all, 0.99).toFixed(0)} | ${median(walls).toFixed(0)} | ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)} |`,
      );
    }

    // 2. Sustained: 200 clients over 20 markets for 10 s.
    const markets = [...pm.slice(BURSTS, BURSTS + 10), ...ks.slice(BURSTS, BURSTS + 10)];
    const start = performance.now();
    const firstRead = reads().length;
    const lat: number[] = [];
    const answered: Array<{ status: number; code?: string }> = [];
    const load0 = loadavg()[0];
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        for (let i = 0; performance.now() - start < SUSTAIN_MS; i++) {
          const a = await get(markets[(c + i) % markets.length]);
          lat.push(a.ms);
          answered.push(a);
        }
      }),
    );
    const wall = performance.now() - start;
    const sustained = reads().slice(firstRead);
    const byMarket = new Map<string, number[]>();
    for (const r of sustained) {
      const key = r.path === '/book' ? `pm:${r.query.get('token_id')}` : `ks:${r.path}`;
      byMarket.set(key, [...(byMarket.get(key) ?? []), r.at]);
    }
    const counts = [...byMarket.values()].map((ts) => ts.length);
    const worstWindow = Math.max(...[...byMarket.values()].map((ts) => maxInWindow(ts, BOOK_FRESH_MS)));

    lines.push(
      `Each venue book read is answered after ${VENUE_MS} ms (the fakes' intercept), so concurrent requests overlap the read in flight. One instance; its book cache is per instance (N instances read a market at most N times per 5 s). Requests ask for a random \`depth\` in 1–50: one read serves every depth.`,
      '',
      `### ${BURST} concurrent requests for one market never read before`,
      '',
      '| venue | bursts × requests | venue reads per burst (target 1) | distinct `fetchedAt` per burst | non-200 | p50 ms | p99 ms | wall ms per burst (median) | load average (1 min) |',
      '|---|---|---|---|---|---|---|---|---|',
      ...burstRows,
      '',
      `### ${CLIENTS} concurrent clients, 20 markets (10 per venue), ${(SUSTAIN_MS / 1000).toFixed(0)} s`,
      '',
      '| requests | req/s | non-200 | p50 ms | p99 ms | venue reads | reads per market (min–max) | most reads of one market in any 5 s window (target ≤ 2) | load average (1 min) at start |',
      '|---|---|---|---|---|---|---|---|---|',
      `| ${lat.length} | ${Math.round(lat.length / (wall / 1000))} | ${failures(answered)} | ${median(lat).toFixed(0)} | ${pct(lat, 0.99).toFixed(0)} | ${sustained.length} | ${Math.min(...counts)}–${Math.max(...counts)} (${byMarket.size} markets) | ${worstWindow} | ${load0.toFixed(1)} |`,
      '',
    );
    process.stdout.write(`${lines.join('\n')}\n`);
    await writeSection('Order books on request: coalescing (issue 30)', lines.join('\n'));
  } finally {
    await app.close();
    await venues.close();
  }
}
