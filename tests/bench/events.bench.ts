import Fastify, { type FastifyInstance } from 'fastify';
import { load, loadTable, ratio, startApp, startBaseline, writeSection } from './harness.js';
import { startFakeVenues } from '../fakes/venues/index.js';
import { generateGammaEvents } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket } from '../fakes/venues/kalshi.js';

/**
 * Issue 4 "Performance": 10,000 markets in 2,000 groups (1,600 Polymarket +
 * 400 Kalshi, 5 markets each). One price-sync cycle in which every price
 * moved (the worst case: 10,000 updates, history rows and publishes), timed
 * as CPU of this process — which also runs the fake venues, so the figure is
 * an upper bound. Then GET /events and GET /events/:slug against a bare
 * Fastify route answering the same body from memory, in the same run.
 */
export default async function run() {
  const PM_GROUPS = 1600;
  const KS_GROUPS = 400;
  const PER = 5;
  const gamma = generateGammaEvents(PM_GROUPS, PER, 7);
  const kalshi = Array.from({ length: KS_GROUPS }, (_, g) =>
    kalshiEvent(`KXB-${g}`, 'KXB', `Bench Kalshi event ${g}`, 'Economics', Array.from({ length: PER }, (_, k) =>
      kalshiMarket(`KXB-${g}-${k}`, `KXB-${g}`, `Bench outcome ${g}-${k}`, 0.3, 0.32, 0.31, 1000 + g * 10 + k),
    )),
  );
  const venues = await startFakeVenues({ gamma, kalshi });
  const app = await startApp({ ...venues.env, JOBS: 'off' });
  const lines: string[] = [];
  try {
    const first = await app.app.jobs.run('events-sync');
    if (!first.ok) throw new Error(`events-sync failed: ${first.error}`);
    await app.app.jobs.run('price-sync');

    // Move every price, then time one cycle.
    let n = 0;
    for (const e of gamma) for (const m of e.markets) m.outcomePrices = JSON.stringify([String(((n++ % 97) + 1) / 100), '0.5']);
    for (const e of kalshi) for (const m of e.markets) m.last_price_dollars = (((n++ % 89) + 5) / 100).toFixed(4);
    for (const e of kalshi) for (const m of e.markets) m.yes_bid_dollars = '';
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
      '| cycle | changed prices | published | wall ms | CPU ms (service + fakes) |',
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
      const bl = await load(`bare Fastify, same body (${listBody.length} B)`, `${baseList.url}/x`);
      const ol = await load('GET /api/v1/events (limit 50)', listUrl);
      const bd = await load(`bare Fastify, same body (${detailBody.length} B)`, `${baseDetail.url}/x`);
      const od = await load('GET /api/v1/events/:slug', detailUrl);
      // The foundation's fixed per-request cost (helmet, auth and closing hooks, request ids) in the same run, for scale.
      const bh = await load('bare Fastify, health body', `${baseHealth.url}/x`);
      const oh = await load('GET /health/live (full stack)', `${app.url}/health/live`);
      lines.push('### GET /events', '', loadTable([bl, ol], bl), '', '### GET /events/:slug', '', loadTable([bd, od], bd), '');
      lines.push('### Floor: full stack on a tiny body', '', loadTable([bh, oh], bh), '');
      // Server CPU per request through app.inject (no sockets, no load generator): steadier than req/s on a shared box.
      const bare = Fastify({ logger: false });
      bare.get('/*', async (req, reply) => reply.type('application/json; charset=utf-8').send(req.url.includes('/events/') ? detailBody : listBody));
      await bare.ready();
      const rows = [
        ['GET /api/v1/events', await cpuPerRequest(bare, '/api/v1/events'), await cpuPerRequest(app.app, '/api/v1/events')],
        ['GET /api/v1/events/:slug', await cpuPerRequest(bare, `/api/v1/events/${slug}`), await cpuPerRequest(app.app, `/api/v1/events/${slug}`)],
        ['GET /health/live', await cpuPerRequest(bare, '/health/live'), await cpuPerRequest(app.app, '/health/live')],
      ] as const;
      await bare.close();
      lines.push('### Server CPU per request (app.inject, 5,000 requests)', '', '| route | bare Fastify, same body µs | ours µs | bare/ours |', '|---|---|---|---|');
      for (const [name, b, o] of rows) lines.push(`| ${name} | ${b.toFixed(1)} | ${o.toFixed(1)} | ${ratio(b, o)} |`);
      lines.push('');
      lines.push(`Ratios: list ${ratio(ol.reqPerSec, bl.reqPerSec)}, detail ${ratio(od.reqPerSec, bd.reqPerSec)} (target ≥ 0.70, p99 < 25 ms).`);
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

async function cpuPerRequest(app: FastifyInstance, url: string, n = 5000): Promise<number> {
  for (let i = 0; i < 500; i++) await app.inject({ method: 'GET', url });
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) await app.inject({ method: 'GET', url });
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}
