import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { createDb } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import { startFakeVenues } from '../fakes/venues/index.js';
import { generateGammaEvents } from '../fakes/venues/gamma.js';
import { freePort } from '../support/net.js';
import {
  capture,
  freshPgDatabase,
  seedBenchUser,
  compareCpu,
  cpuTable,
  PG_URL,
  REDIS_URL,
  ROOT,
  spawnBaseline,
  spawnService,
  writeSection,
  type ChildServer,
  type CpuComparison,
} from './harness.js';
import type { BaselineRoute } from './baseline-server.js';
import { loadAverage, setupRealistic } from './overhead-realistic.js';

/**
 * Issue 21: the service's CPU per response against a bare Fastify 5 route
 * serving the same bytes and headers, each in its own process, load from a
 * third (autocannon -c 50). Measured on the built service (`npm run
 * start:dist`, what the image runs) and on `npm start` (tsx), then the cost
 * of metrics + overload protection (issue 20: ≤ 3 %) on the built service.
 *
 * Issue 36 adds a second configuration beside that minimal one: the service
 * started from a shell through the npm scripts with everything an operator
 * configures and jobs on, measured after its first catalogue and leaderboard
 * syncs (overhead-realistic.ts).
 *
 * BENCH_SERVICE=dist|tsx|dist,tsx (default both), BENCH_CONFIG=minimal|
 * realistic|minimal,realistic (default both), BENCH_SECONDS (measured seconds
 * per run, default 3), BENCH_PROFILE=1 starts the service with --cpu-prof
 * (profiles in tests/bench/.tmp/profiles).
 */
const exec = promisify(execFile);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
/** Alternating rounds per compared pair (the issue asks for at least three; single rounds on this VM swing ±0.3, so five). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LOAD = { connections: 50, durationSec: SECONDS };
const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-000';
const INTERNAL = 'bench-internal-token-0123456789abcdef';

/** A fresh database the service processes share, seeded from here, and the fake venues. */
export async function setupOverhead() {
  if (!PG_URL || !REDIS_URL) throw new Error('overhead: needs DATABASE_URL (PostgreSQL) and REDIS_URL');
  const fresh = await freshPgDatabase();
  const dbUrl = fresh.url;
  const db = await createDb(dbUrl, { max: 2 });
  const venues = await startFakeVenues({ gamma: generateGammaEvents(200, 5, 7) });
  const cleanup = async () => {
    await venues.close();
    await db.close();
    await fresh.drop();
  };
  try {
    await runMigrations(db);
    const bearer = await seedBenchUser(db, JWT_SECRET);
    const [snap] = await db.rows<{ id: number }>(
      sql`insert into leaderboard_snapshots (category, period, status) values ('OVERALL', '7D', 'ready') returning id`,
    );
    await db.rows(sql`
      insert into leaderboard_entries (snapshot_id, wallet_address, display_name, avatar_url, is_kol, pnl, volume, venue_rank,
        roi, win_rate, trade_count, sparkline)
      select ${snap.id}, '0x' || md5('bench-' || i) || substr(md5('x' || i), 1, 8), 'trader-' || i, 'https://img.example/' || i || '.png', i % 10 = 0,
        round(((i * 7919) % 100003) * 3.7 - 50000), (i * 104729) % 1000003, i,
        (i % 1000) / 100.0, (i % 101) / 100.0, i % 500,
        '[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30]'::jsonb
      from generate_series(1::bigint, 1000::bigint) as i`);
    await db.rows(sql`insert into leaderboard_current (category, period, snapshot_id) values ('OVERALL', '7D', ${snap.id})`);
    const serviceEnv = async (extra: Record<string, string> = {}) => ({
      NODE_ENV: 'production',
      SIGN_IN_DOMAIN: 'app.example.com',
      SIGN_IN_URI: 'https://app.example.com',
      DATABASE_URL: dbUrl,
      REDIS_URL: REDIS_URL!,
      JWT_SECRET,
      INTERNAL_API_TOKEN: INTERNAL,
      JOBS: 'off',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      METRICS_PORT: String(await freePort()),
      ...venues.env,
      // BENCH_OVERLOAD_GUARD=off: on a saturated machine the guard answers 503 to the measured load.
      ...(process.env.BENCH_OVERLOAD_GUARD ? { OVERLOAD_GUARD: process.env.BENCH_OVERLOAD_GUARD } : {}),
      ...extra,
    });
    /** Runs the sync jobs once through the internal route (they write the shared database). */
    const seedEvents = async (url: string) => {
      for (const job of ['events-sync', 'price-sync']) {
        const res = await fetch(`${url}/api/v1/internal/jobs/${job}`, { method: 'POST', headers: { authorization: `Bearer ${INTERNAL}` } });
        const out = (await res.json()) as { ok?: boolean; error?: string };
        if (!out.ok) throw new Error(`${job}: ${JSON.stringify(out)}`);
      }
    };
    return { bearer, serviceEnv, seedEvents, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** The compared routes; the event's slug is read from the list. */
export async function overheadPairs(url: string, bearer: Record<string, string>) {
  const list = await capture(`${url}/api/v1/events`);
  const slug = (JSON.parse(list.body) as { events: Array<{ slug: string }> }).events[0].slug;
  const pairs: Array<{
    label: string;
    path: string;
    pattern?: string;
    headers?: Record<string, string>;
    /** The bare route's path is this prefix + path (two bare routes for one service path). */
    barePrefix?: string;
    jwtCache?: boolean;
  }> = [
    { label: 'GET /health/live', path: '/health/live' },
    { label: 'GET /api/v1/events (cached page, 50 groups)', path: '/api/v1/events' },
    { label: 'GET /api/v1/events/:slug (cached)', path: `/api/v1/events/${slug}`, pattern: '/api/v1/events/:slug' },
    { label: 'GET /api/v1/leaderboard (cached page, 50 rows)', path: '/api/v1/leaderboard' },
    { label: 'GET /api/v1/notifications (bearer, 50 items)', path: '/api/v1/notifications?limit=50', headers: bearer },
    {
      label: 'GET /api/v1/notifications (bearer), bare also remembering verified tokens',
      path: '/api/v1/notifications?limit=50',
      headers: bearer,
      barePrefix: '/remembered',
      jwtCache: true,
    },
  ];
  return pairs;
}

export default async function run() {
  if (!PG_URL || !REDIS_URL) {
    process.stdout.write('overhead: needs DATABASE_URL (PostgreSQL) and REDIS_URL; skipped\n');
    return;
  }
  const kinds = (process.env.BENCH_SERVICE ?? 'dist,tsx').split(',') as Array<'dist' | 'tsx'>;
  const configs = (process.env.BENCH_CONFIG ?? 'minimal,realistic').split(',');
  if (kinds.includes('dist')) await exec('npm', ['run', 'build'], { cwd: ROOT });
  if (configs.includes('minimal')) await runMinimal(kinds);
  if (configs.includes('realistic')) await runRealistic(kinds);
}

async function runMinimal(kinds: Array<'dist' | 'tsx'>) {
  const { bearer, serviceEnv, seedEvents, cleanup } = await setupOverhead();
  const servers: ChildServer[] = [];
  const sections: string[] = [];
  try {
    const profArgs = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${ROOT}tests/bench/.tmp/profiles`] : [];

    // The sync jobs run in a process of their own that then exits, so the measured processes carry
    // nothing a sync leaves behind (jobs run on whichever instance holds their lock, not on every one).
    // Not measured: its overload guard would refuse the sync runs on a busy machine.
    const seeder = await spawnService(kinds[0], await serviceEnv({ OVERLOAD_GUARD: 'off' }));
    await seedEvents(seeder.url);
    await seeder.close();
    const summary: string[] = [];
    for (const kind of kinds) {
      const svc = await spawnService(kind, await serviceEnv(), profArgs);
      servers.push(svc);
      const pairs = await overheadPairs(svc.url, bearer);
      const routes = await captureRoutes(svc.url, pairs);
      const base = await spawnBaseline(routes);
      servers.push(base);
      const rows = await comparePairs(svc, base, pairs, kind);
      await base.close();
      const bytes = routes
        .filter((r) => !r.jwtCache)
        .map((r) => `${r.path.startsWith('/api/v1/events/') ? '/events/:slug' : r.path} ${Buffer.byteLength(r.body)} B`)
        .join(', ');
      sections.push(
        `### ${kind === 'dist' ? 'Built service (`npm run start:dist`)' : '`npm start` (tsx)'}`,
        '',
        cpuTable(rows),
        '',
        `Bodies: ${bytes}.`,
        '',
      );
      summary.push(`${kind}: ${rows.map((r) => r.c.cpuRatio.toFixed(2)).join(' / ')}`);

      if (kind === kinds[0]) {
        // Issue 20: metrics + overload protection against the same service with both off.
        // Both fresh: a process that already served every route holds more (caches, compiled code) and
        // was measured to cost more per request than a fresh one, which would be charged to the guard.
        const full = await spawnService(kind, await serviceEnv());
        servers.push(full);
        const bare = await spawnService(kind, await serviceEnv({ METRICS_PORT: '0', OVERLOAD_GUARD: 'off' }));
        servers.push(bare);
        const mo: Array<{ label: string; c: CpuComparison }> = [];
        for (const p of pairs.slice(0, 2)) {
          const c = await compareCpu(
            { name: 'off', url: `${bare.url}${p.path}`, pid: bare.pid, opts: LOAD },
            { name: p.label, url: `${full.url}${p.path}`, pid: full.pid, opts: LOAD },
            ROUNDS,
          );
          mo.push({ label: p.label, c });
          process.stdout.write(
            `${kind} metrics+overload ${p.label}: ${c.target.cpuUs.toFixed(1)} vs ${c.base.cpuUs.toFixed(1)} µs → ${c.cpuRatio.toFixed(3)}\n`,
          );
        }
        await bare.close();
        await full.close();
        sections.push(
          `### Cost of metrics + overload protection (${kind})`,
          '',
          'Two fresh processes: the service as deployed, and the same with `METRICS_PORT=0 OVERLOAD_GUARD=off` as the baseline.',
          '',
          cpuTable(mo, 'off'),
          '',
        );
      }
      await svc.close();
    }
    const intro = [
      `Each side in its own process, load from a third (autocannon -c ${LOAD.connections}, 1 s warm-up then ${SECONDS} s measured),`,
      `${ROUNDS} alternating rounds, medians. CPU = utime + stime of the listening process and its children from \`/proc/<pid>/stat\``,
      'over the measured window, divided by the responses counted; CPU ratio = bare ÷ service (target ≥ 0.77, i.e. the service',
      `costs at most 1.3× the bare route). Service at \`LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'info'}\` (as deployed, logs to /dev/null),`,
      'NODE_ENV=production, metrics on, jobs off. The bare route answers the captured bytes and headers, declared with the same route pattern (`/api/v1/events/:slug` is parametric on both sides); for the bearer route it',
      "first verifies the same JWT with @fastify/jwt: in full on every request (the issue's baseline), and in the last row remembering",
      "verified tokens as the service does (fast-jwt's cache, src/domains/auth/guard.ts), which isolates the rest of the path.",
      '',
      `CPU ratios (health / events / event / leaderboard / notifications / notifications against a bare route remembering tokens): ${summary.join('; ')}.`,
      '',
    ];
    await writeSection('Per-request cost: service vs bare Fastify (CPU)', [...intro, ...sections].join('\n'));
  } finally {
    for (const s of servers) await s.close();
    await cleanup();
  }
}

/** Each pair, service against the bare route, in alternating rounds; a line per pair on stdout. */
async function comparePairs(
  svc: ChildServer,
  base: ChildServer,
  pairs: Awaited<ReturnType<typeof overheadPairs>>,
  tag: string,
): Promise<Array<{ label: string; c: CpuComparison }>> {
  const rows: Array<{ label: string; c: CpuComparison }> = [];
  for (const p of pairs) {
    const opts = { ...LOAD, headers: p.headers };
    const c = await compareCpu(
      { name: 'bare', url: `${base.url}${p.barePrefix ?? ''}${p.path}`, pid: base.pid, opts },
      { name: p.label, url: `${svc.url}${p.path}`, pid: svc.pid, opts },
      ROUNDS,
    );
    rows.push({ label: p.label, c });
    process.stdout.write(`${tag} ${p.label}: ${c.target.cpuUs.toFixed(1)} vs ${c.base.cpuUs.toFixed(1)} µs → ${c.cpuRatio.toFixed(2)}\n`);
  }
  return rows;
}

/** The captured responses of the compared routes, as the bare server's routes. */
async function captureRoutes(url: string, pairs: Awaited<ReturnType<typeof overheadPairs>>): Promise<BaselineRoute[]> {
  const routes: BaselineRoute[] = [];
  for (const p of pairs) {
    const c = await capture(`${url}${p.path}`, p.headers);
    if (c.status !== 200) throw new Error(`${p.path}: ${c.status} ${c.body.slice(0, 200)}`);
    routes.push({
      path: (p.barePrefix ?? '') + p.path.split('?')[0],
      pattern: p.pattern,
      ...c,
      ...(p.headers ? { jwtSecret: JWT_SECRET, jwtCache: p.jwtCache } : {}),
    });
  }
  return routes;
}

/**
 * Issue 36: the same pairs against the service started and warmed like a deployed one. The CPU of
 * the service's own background work (its schedule, the hot-market socket, timers) during a measured
 * window is part of what it costs; the idle rate beside each table says how much of it that is.
 */
async function runRealistic(kinds: Array<'dist' | 'tsx'>) {
  const setup = await setupRealistic();
  const servers: ChildServer[] = [];
  const sections: string[] = [];
  const summary: string[] = [];
  try {
    for (const kind of kinds) {
      // npm refuses --cpu-prof in NODE_OPTIONS: a preload profiles the server process instead.
      const profile = process.env.BENCH_PROFILE
        ? { NODE_OPTIONS: `--import=${ROOT}tests/bench/cpu-profile-preload.mjs`, CPU_PROFILE_DIR: `${ROOT}tests/bench/.tmp/profiles` }
        : undefined;
      const svc = await setup.start(kind, profile);
      servers.push(svc);
      const idleBefore = await svc.idleCpuUsPerSec();
      const pairs = await overheadPairs(svc.url, setup.bearer);
      const routes = await captureRoutes(svc.url, pairs);
      const base = await spawnBaseline(routes);
      servers.push(base);
      const loadAtStart = loadAverage();
      const rows = await comparePairs(svc, base, pairs, `realistic ${kind}`);
      const loadAtEnd = loadAverage();
      const idleAfter = await svc.idleCpuUsPerSec();
      await base.close();
      await svc.close();
      sections.push(
        `### Realistic configuration, ${kind === 'dist' ? '`npm run start:dist`' : '`npm start`'} from a shell`,
        '',
        cpuTable(rows),
        '',
        `Warm-up (start until the first events-sync and leaderboard-sync had finished): ${svc.warmSeconds.toFixed(0)} s.`,
        `Service CPU with no requests (its jobs, sockets, timers): ${(idleBefore / 1000).toFixed(1)} ms/s before the`,
        `measurements, ${(idleAfter / 1000).toFixed(1)} ms/s after. Load average (1 / 5 / 15 min): ${loadAtStart} at the start, ${loadAtEnd} at the end.`,
        '',
      );
      summary.push(`${kind}: ${rows.map((r) => r.c.cpuRatio.toFixed(2)).join(' / ')}`);
    }
    const intro = [
      'Issue 36: the service as an operator runs it: `sh -c "exec npm run <script>"`, PostgreSQL, Redis, `CORS_ORIGINS`,',
      '`TRUST_PROXY`, every venue URL at a loopback fake (Gamma with 2,000 events / 8,000 markets, Kalshi 1,000 / 4,000,',
      'the CLOB and its market WebSocket with every subscribed price moving each second, the Data API with 120 traders on',
      'every board), push and Telegram configured, NODE_ENV=production, jobs on; measured once the first catalogue and',
      'leaderboard syncs had finished, with the schedule still running. Same pairs, rounds and bare server as above (the',
      'bare routes answer the bytes and headers captured from this service).',
      '',
      `CPU ratios (same order): ${summary.join('; ')}.`,
      '',
    ];
    await writeSection('Per-request cost: realistic configuration (CPU)', [...intro, ...sections].join('\n'));
  } finally {
    for (const s of servers) await s.close();
    await setup.cleanup();
  }
}
