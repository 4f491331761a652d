import { sql } from 'drizzle-orm';
import { startApp, writeSection } from './harness.js';
import { startFakeVenues } from '../fakes/venues/index.js';
import { arrivalTimes, budgetViolations } from '../fakes/venues/budget.js';
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
 * docs/venues.md's budgets, and GET /events latencies at that size. The fakes
 * run in this process: CPU and RSS are service + fakes (an upper bound).
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
  const venues = await startFakeVenues(
    {},
    {
      generate: {
        polymarket: { events: size.pmEvents, markets: size.pmMarkets },
        kalshi: { events: size.ksEvents, markets: size.ksMarkets, series: Math.max(10, Math.round(10_000 * scale)) },
      },
    },
  );
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

    const budgetRows = (['gamma', 'clob', 'kalshi'] as const).map((api) => {
      const times = arrivalTimes(venues[api]);
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
    ] as const;
    const readRows: string[] = [];
    for (const [name, url] of reads) {
      const l = await latencies(url, 300);
      readRows.push(`| ${name} | ${l.p50.toFixed(1)} | ${l.p99.toFixed(1)} |`);
    }

    lines.push(
      `SCALE=${scale}: Polymarket ${size.pmEvents} events / ${size.pmMarkets} markets, Kalshi ${size.ksEvents} events / ${size.ksMarkets} markets; stored ${g} groups, ${m} markets (placeholders left out); ${list.total} listed. Database: ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}.`,
      '',
      '| phase | wall s | CPU s (service + fakes) | note |',
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
      '| read (300 sequential requests) | p50 ms | p99 ms |',
      '|---|---|---|',
      ...readRows,
      '',
    );
    process.stdout.write(`${lines.join('\n')}\n`);
    await writeSection(`Market data at scale (SCALE=${scale})`, lines.join('\n'));
  } finally {
    clearInterval(sampler);
    await app.close();
    await venues.close();
  }
}
