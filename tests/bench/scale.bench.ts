import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { sql } from 'drizzle-orm';
import { compare, ROOT, startApp, startBaseline, treeCpuSeconds, writeSection } from './harness.js';
import { budgetViolations } from '../fakes/venues/budget.js';
import { syncCatalogue } from '../../src/domains/events/catalogue.js';
import { refreshTrackedPrices } from '../../src/domains/events/prices.js';
import { VENUE_BUDGETS } from '../../src/venues/clients.js';

/**
 * Issue #16 "Performance" (`npm run bench -- scale`, `SCALE` = fraction of the
 * real sizes, default 1): fakes serving 22,000 Polymarket events / 80,000
 * markets in keyset pages of 100 and 12,000 Kalshi events / 110,000 markets in
 * pages of 200, scaled. Measures the first full catalogue load (wall, CPU,
 * peak RSS), an incremental pass with nothing new, a price cycle of the
 * tracked markets, the venue request rates seen at the fakes against
 * docs/venues.md's budgets, GET /events latencies at that size and the
 * throughput of those reads against a bare route serving the same bytes. The
 * fakes run in a process of their own (tests/bench/scale-fakes.ts): CPU and
 * RSS are the service's (this process; PostgreSQL is not counted).
 */
const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; wallMs: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await fn();
  return { value, wallMs: performance.now() - t0, cpuMs: cpuMs(process.cpuUsage(c0)) };
}

async function latencies(url: string, n: number): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(n * 0.5)], p99: ms[Math.min(n - 1, Math.floor(n * 0.99))] };
}

export default async function run() {
  const scale = Number(process.env.SCALE ?? '1');
  if (!(scale > 0 && scale <= 1)) throw new Error('SCALE must be in (0, 1]');
  const size = {
    pmEvents: Math.round(22_000 * scale),
    pmMarkets: Math.round(80_000 * scale),
    ksEvents: Math.round(12_000 * scale),
    ksMarkets: Math.round(110_000 * scale),
  };
  const fakes = spawn(
    process.execPath,
    ['--import', 'tsx', 'tests/bench/scale-fakes.ts', JSON.stringify({ ...size, series: Math.max(10, Math.round(10_000 * scale)) })],
    { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const fakeLines = createInterface({ input: fakes.stdout })[Symbol.asyncIterator]();
  const fromFakes = async <T>(type: string): Promise<T> => {
    for (;;) {
      const { value, done } = await fakeLines.next();
      if (done) throw new Error(`venue fakes ended before "${type}"`);
      const msg = JSON.parse(value) as { type: string };
      if (msg.type === type) return msg as T;
    }
  };
  const { env: venueEnv } = await fromFakes<{ env: Record<string, string> }>('ready');
  const venues = { env: venueEnv };
  // Tracked: the top groups by 24 h volume, about 20,000 × SCALE markets.
  const top = Math.max(1, Math.round(2_000 * scale));
  const app = await startApp({ ...venues.env, JOBS: 'off', PRICE_TRACK_TOP: String(top) });
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const lines: string[] = [];
  try {
    const deps = app.app.jobs.deps();
    const rss0 = process.memoryUsage().rss;
    const full = await timed(() => syncCatalogue(deps, { full: true }));
    if (full.value.failures.length > 0) throw new Error(full.value.failures.join('; '));
    const fullPeak = peakRss;
    const [{ g, m }] = await app.db.rows<{ g: number; m: number }>(
      sql`select (select count(*)::int from event_groups) as g, (select count(*)::int from markets) as m`,
    );
    const incremental = await timed(() => syncCatalogue(deps, {}));
    const firstPrices = await timed(() => refreshTrackedPrices(deps));
    const prices = await timed(() => refreshTrackedPrices(deps));

    fakes.stdin.write(`${JSON.stringify({ type: 'arrivals' })}\n`);
    const { times: arrivals } = await fromFakes<{ times: Record<'gamma' | 'clob' | 'kalshi', number[]> }>('arrivals');
    const fakeCpuS = await treeCpuSeconds(fakes.pid!);
    const budgetRows = (['gamma', 'clob', 'kalshi'] as const).map((api) => {
      const times = arrivals[api];
      const v = budgetViolations(times, VENUE_BUDGETS[api]);
      return `| ${api} | ${times.length} | ${VENUE_BUDGETS[api]} | ${v.length === 0 ? 'none' : v.map((x) => `${x.count}/${x.allowed} in ${x.windowSec} s`).join(', ')} |`;
    });

    const base = `${app.url}/api/v1/events`;
    const list = await (await fetch(`${base}?limit=1`)).json();
    const slug = (await (await fetch(`${base}?limit=1`)).json()).events[0].slug as string;
    const reads = [
      ['GET /events (first page)', `${base}`],
      ['GET /events?category=politics', `${base}?category=politics`],
      [`GET /events?offset=${Math.round(30_000 * scale)}`, `${base}?offset=${Math.round(30_000 * scale)}`],
      ['GET /events/:slug', `${base}/${slug}`],
      // docs/decisions.md §16.6: every sort, first page and offset=5000; a search matching most groups and one matching few.
      ...(['volume24h', 'newest', 'closing', 'movers'] as const).flatMap((sort) => [
        [`GET /events?sort=${sort}`, `${base}?sort=${sort}`] as const,
        [`GET /events?sort=${sort}&offset=5000`, `${base}?sort=${sort}&offset=${Math.min(5000, Math.round(30_000 * scale))}`] as const,
      ]),
      ['GET /events?q=generated (most groups)', `${base}?q=generated`],
      ['GET /events?q=generated&offset=5000', `${base}?q=generated&offset=${Math.min(5000, Math.round(30_000 * scale))}`],
      ['GET /events?q=generated event 1234 (few)', `${base}?q=${encodeURIComponent('generated event 1234')}`],
    ] as const;
    const readRows: string[] = [];
    for (const [name, url] of reads) {
      const l = await latencies(url, 300);
      // Throughput against a bare Fastify route answering the same bytes, alternating rounds (median).
      const body = await (await fetch(url)).text();
      const bare = await startBaseline(body);
      try {
        const c = await compare(
          { name: 'bare', url: `${bare.url}/x`, opts: { connections: 20, durationSec: 3 } },
          { name, url, opts: { connections: 20, durationSec: 3 } },
        );
        readRows.push(
          `| ${name} | ${l.p50.toFixed(1)} | ${l.p99.toFixed(1)} | ${Buffer.byteLength(body)} | ${Math.round(c.target.reqPerSec)} / ${Math.round(c.base.reqPerSec)} | ${c.ratio.toFixed(2)} |`,
        );
      } finally {
        await bare.close();
      }
    }

    lines.push(
      `SCALE=${scale}: Polymarket ${size.pmEvents} events / ${size.pmMarkets} markets, Kalshi ${size.ksEvents} events / ${size.ksMarkets} markets; stored ${g} groups, ${m} markets (placeholders left out); ${list.total} listed. Database: ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}.`,
      '',
      '| phase | wall s | service CPU s | note |',
      '|---|---|---|---|',
      `| first full catalogue load | ${(full.wallMs / 1000).toFixed(1)} | ${(full.cpuMs / 1000).toFixed(1)} | peak RSS ${(fullPeak / 2 ** 20).toFixed(0)} MB (${(rss0 / 2 ** 20).toFixed(0)} MB before) |`,
      `| incremental pass, nothing new | ${(incremental.wallMs / 1000).toFixed(2)} | ${(incremental.cpuMs / 1000).toFixed(2)} | ${incremental.value.items} groups rewritten |`,
      `| first price cycle (${firstPrices.value.items} tracked markets) | ${(firstPrices.wallMs / 1000).toFixed(1)} | ${(firstPrices.cpuMs / 1000).toFixed(2)} | |`,
      `| price cycle (${prices.value.items} tracked markets) | ${(prices.wallMs / 1000).toFixed(1)} | ${(prices.cpuMs / 1000).toFixed(2)} | wall is mostly the venue budgets |`,
      '',
      '| venue API | requests | budget req/s | windows over r × w + r |',
      '|---|---|---|---|',
      ...budgetRows,
      '',
      '| read (300 sequential requests for latency; then autocannon -c 20, 3 alternating rounds of 3 s) | p50 ms | p99 ms | bytes | req/s service / bare | ratio (median) |',
      '|---|---|---|---|---|---|',
      ...readRows,
      '',
      `The venue fakes (their own process) spent ${fakeCpuS.toFixed(1)} s of CPU over the catalogue loads and price cycles. Targets (issue #16): first load < 10 min wall, < 3 min service CPU, peak RSS < 600 MB; incremental < 1 s CPU; a price cycle of ~20,000 tracked markets < 2 s service CPU; budgets kept; reads p99 < 25 ms.`,
      '',
    );
    process.stdout.write(`${lines.join('\n')}\n`);
    await writeSection(`Market data at scale (SCALE=${scale})`, lines.join('\n'));
  } finally {
    clearInterval(sampler);
    await app.close();
    fakes.stdin.write(`${JSON.stringify({ type: 'quit' })}\n`);
    await new Promise((r) => setTimeout(r, 200));
    fakes.kill('SIGKILL');
  }
}
