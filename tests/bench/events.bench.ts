import { compare, comparisonTable, startApp, startBaseline, writeSection } from './harness.js';
import { startFakeVenues } from '../fakes/venues/index.js';
import { generateGammaEvents } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket } from '../fakes/venues/kalshi.js';
import { setGammaYes, setKalshiYes } from '../fakes/venues/prices.js';
import { sql } from 'drizzle-orm';

/**
 * Issue 4 "Performance": 10,000 markets in 2,000 groups (1,600 Polymarket +
 * 400 Kalshi, 5 markets each), all tracked (PRICE_TRACK_TOP=2000). One
 * price-sync cycle in which every price moved where the price path reads it
 * (the CLOB books, Kalshi quotes; the worst case: 10,000 updates, history
 * rows and publishes), timed as CPU of this process — which also runs the
 * fake venues, so the figure is an upper bound; venue calls go through the
 * real budgets of docs/venues.md, so the wall time is mostly rate limiting. Then GET /events and GET /events/:slug against a bare
 * Fastify route answering the same body from memory, in the same run.
 */
export default async function run() {
  const PM_GROUPS = 1600;
  const KS_GROUPS = 400;
  const PER = 5;
  const gamma = generateGammaEvents(PM_GROUPS, PER, 7);
  const kalshi = Array.from({ length: KS_GROUPS }, (_, g) =>
    kalshiEvent(
      `KXB-${g}`,
      'KXB',
      `Bench Kalshi event ${g}`,
      'Economics',
      Array.from({ length: PER }, (_, k) =>
        kalshiMarket(`KXB-${g}-${k}`, `KXB-${g}`, `Bench outcome ${g}-${k}`, 0.3, 0.32, 0.31, 1000 + g * 10 + k),
      ),
    ),
  );
  const venues = await startFakeVenues({ gamma, kalshi });
  const app = await startApp({ ...venues.env, JOBS: 'off', PRICE_TRACK_TOP: '2000' });
  const lines: string[] = [];
  try {
    const first = await app.app.jobs.run('events-sync');
    if (!first.ok) throw new Error(`events-sync failed: ${first.error}`);
    await app.app.jobs.run('price-sync');
    // The chart backfill of newly tracked markets is its own cost, not the cycle's: mark it done.
    await app.app.dbh.rows(sql`update markets set history_backfilled_at = now()`);

    // Move every price where price-sync reads it, then time one cycle.
    let n = 0;
    for (const e of gamma) for (const m of e.markets) setGammaYes(m, ((n++ % 97) + 1) / 100);
    for (const e of kalshi) for (const m of e.markets) setKalshiYes(m, ((n++ % 89) + 5) / 100);
    let published = 0;
    app.app.bus.on('publish', () => published++);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const outcome = await app.app.jobs.run('price-sync');
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    // An unchanged cycle (the common case) for comparison.
    const cpu1 = process.cpuUsage();
    const t1 = performance.now();
    const quiet = await app.app.jobs.run('price-sync');
    const wallQuiet = performance.now() - t1;
    const cpuQuiet = process.cpuUsage(cpu1);
    lines.push(
      '### price-sync, 10,000 markets in 2,000 groups',
      '',
      '| cycle | markets read | published | wall ms | CPU ms (service + fakes) |',
      '|---|---|---|---|---|',
      `| every price moved | ${outcome.items} | ${published} | ${wall.toFixed(0)} | ${cpuMs.toFixed(0)} |`,
      `| nothing moved | ${quiet.items} | 0 | ${wallQuiet.toFixed(0)} | ${((cpuQuiet.user + cpuQuiet.system) / 1000).toFixed(0)} |`,
      '',
    );

    const listUrl = `${app.url}/api/v1/events`;
    const listBody = await (await fetch(listUrl)).text();
    const slug = JSON.parse(listBody).events[0].slug as string;
    const detailUrl = `${app.url}/api/v1/events/${slug}`;
    const detailBody = await (await fetch(detailUrl)).text();

    const baseList = await startBaseline(listBody);
    const baseDetail = await startBaseline(detailBody);
    const baseHealth = await startBaseline(JSON.stringify({ status: 'ok' }));
    try {
      // Each pair in alternating rounds (harness.compare): the ratio is the median of the rounds.
      const cl = await compare(
        { name: `bare Fastify, same body (${listBody.length} B)`, url: `${baseList.url}/x` },
        { name: 'GET /api/v1/events (limit 50)', url: listUrl },
      );
      const cd = await compare(
        { name: `bare Fastify, same body (${detailBody.length} B)`, url: `${baseDetail.url}/x` },
        { name: 'GET /api/v1/events/:slug', url: detailUrl },
      );
      // The foundation's fixed per-request cost (security headers, request id, closing guard, NUL check) in the same run, for scale.
      const ch = await compare(
        { name: 'bare Fastify, health body', url: `${baseHealth.url}/x` },
        { name: 'GET /health/live (full stack)', url: `${app.url}/health/live` },
      );
      lines.push(
        '### GET /events',
        '',
        comparisonTable(cl.base, [cl]),
        '',
        '### GET /events/:slug',
        '',
        comparisonTable(cd.base, [cd]),
        '',
      );
      lines.push('### Floor: full stack on a tiny body', '', comparisonTable(ch.base, [ch]), '');
      lines.push(
        `Ratios (median of ${cl.rounds} alternating rounds of 5 s, 20 connections): list **${cl.ratio.toFixed(2)}**, detail **${cd.ratio.toFixed(2)}** (target ≥ 0.70); worst p99 ${cl.target.p99} / ${cd.target.p99} ms (target < 25 ms).`,
      );
      process.stdout.write(`${lines.join('\n')}\n`);
    } finally {
      await baseList.close();
      await baseDetail.close();
      await baseHealth.close();
    }
    await writeSection('Events: price-sync cycle and public reads', lines.join('\n'));
  } finally {
    await app.close();
    await venues.close();
  }
}
