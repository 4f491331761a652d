import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../support/net.js';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import Fastify from 'fastify';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { SignJWT } from 'jose';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildOverrides } from '../../src/app.js';
import { testConfig, type Config } from '../../src/config.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import type { BaselineRoute } from './baseline-server.js';

/**
 * Shared pieces of `npm run bench`: a real app on a fresh database, load from
 * a separate autocannon process (never in-process), and a baseline Fastify
 * route that returns the same body from memory, measured in the same run so
 * results are ratios, not absolute numbers from a noisy 2-core machine.
 */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PG_URL = process.env.DATABASE_URL && /^postgres/.test(process.env.DATABASE_URL) ? process.env.DATABASE_URL : undefined;
export const REDIS_URL = process.env.REDIS_URL || undefined;

export interface LoadResult {
  name: string;
  requests: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  connections?: number;
  durationSec?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  pipelining?: number;
  /** Offered load in requests/s over all connections (autocannon -R); flat out when unset. */
  rate?: number;
  /** Called after the warm-up, right before the measured run starts. */
  beforeMeasured?: () => Promise<void>;
}

/** Runs autocannon in a child process against url (a warm-up first), bounded in time. */
export async function load(name: string, url: string, opts: LoadOptions = {}): Promise<LoadResult> {
  const args = [
    join(ROOT, 'node_modules/autocannon/autocannon.js'),
    '-j',
    '-c',
    String(opts.connections ?? 20),
    '-p',
    String(opts.pipelining ?? 1),
  ];
  if (opts.method) args.push('-m', opts.method);
  if (opts.rate) args.push('-R', String(opts.rate));
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}=${v}`);
  if (opts.body) args.push('-b', opts.body);
  const run = (duration: number) =>
    new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [...args, '-d', String(duration), url],
        { maxBuffer: 64 * 1024 * 1024, timeout: (duration + 30) * 1000 },
        (err, stdout) => (err ? reject(new Error(err.message, { cause: err })) : resolve(stdout)),
      ),
    );
  await run(1); // warm-up, discarded
  await opts.beforeMeasured?.();
  const r = JSON.parse(await run(opts.durationSec ?? 5));
  return {
    name,
    requests: r.requests.total,
    reqPerSec: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx ?? 0,
    errors: r.errors ?? 0,
  };
}

export interface Comparison {
  /** The baseline's median run. */
  base: LoadResult;
  /** The target's median run (p99: the worst of the rounds). */
  target: LoadResult;
  /** Median of the per-round ratios target / base. */
  ratio: number;
  rounds: number;
}

/**
 * Baseline and target measured in alternating order for `rounds` rounds
 * (base→target, then target→base, …), so a slow phase of this shared 2-core
 * machine hits both sides alike; the ratio is the median of the per-round
 * ratios. One 5-s run each was observed to swing ±25 % here on its own.
 */
export async function compare(
  base: { name: string; url: string; opts?: LoadOptions },
  target: { name: string; url: string; opts?: LoadOptions },
  rounds = 3,
): Promise<Comparison> {
  const bs: LoadResult[] = [];
  const ts: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      bs.push(await load(base.name, base.url, base.opts));
      ts.push(await load(target.name, target.url, target.opts));
    } else {
      ts.push(await load(target.name, target.url, target.opts));
      bs.push(await load(base.name, base.url, base.opts));
    }
  }
  const median = <T>(xs: T[], key: (x: T) => number): T => [...xs].sort((a, b) => key(a) - key(b))[Math.floor(xs.length / 2)];
  const ratios = ts.map((t, i) => (bs[i].reqPerSec === 0 ? 0 : t.reqPerSec / bs[i].reqPerSec));
  return {
    base: median(bs, (x) => x.reqPerSec),
    target: { ...median(ts, (x) => x.reqPerSec), p99: Math.max(...ts.map((t) => t.p99)) },
    ratio: median(ratios, (r) => r),
    rounds,
  };
}

/** Table rows for comparisons: one baseline row, then each target with its median ratio. */
export function comparisonTable(base: LoadResult, rows: Comparison[]): string {
  const lines = [
    '| target | req/s (median) | p50 ms | p99 ms (worst round) | non-2xx | ratio to baseline (median of rounds) |',
    '|---|---|---|---|---|---|',
  ];
  lines.push(`| ${base.name} | ${base.reqPerSec} | ${base.p50} | ${base.p99} | ${base.non2xx} | 1.00 |`);
  for (const c of rows)
    lines.push(
      `| ${c.target.name} | ${c.target.reqPerSec} | ${c.target.p50} | ${c.target.p99} | ${c.target.non2xx} | ${c.ratio.toFixed(2)} |`,
    );
  return lines.join('\n');
}

/** A Fastify server that answers `body` (already serialised) from memory: the serialisation ceiling. */
export async function startBaseline(
  body: string,
  contentType = 'application/json; charset=utf-8',
): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get('/*', async (_req, reply) => reply.type(contentType).send(body));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

export interface BenchApp {
  app: FastifyInstance;
  db: DbHandle;
  url: string;
  config: Config;
  close(): Promise<void>;
}

/** A new, empty PostgreSQL database beside DATABASE_URL's (the bench's own), and how to drop it. */
export async function freshPgDatabase(prefix = 'pbbench'): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!PG_URL) throw new Error('needs DATABASE_URL (PostgreSQL)');
  const name = `${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}

/**
 * The overhead benches' signed-in user: a wallet account with 60 notifications and an HS256
 * access token for it, as the `authorization` header of a bearer route.
 */
export async function seedBenchUser(db: DbHandle, jwtSecret: string): Promise<Record<string, string>> {
  const walletAddress = '0x00000000000000000000000000000000000000be';
  const [user] = await db.rows<{ id: string }>(
    sql`insert into users (chain, wallet_address, auth_method) values ('evm', ${walletAddress}, 'wallet') returning id`,
  );
  await db.rows(sql`
    insert into notifications (user_id, type, title, message, data, created_at)
    select ${user.id}, 'system', 'Notice ' || i, 'Bench notification number ' || i, jsonb_build_object('n', i), now() - i * interval '1 minute'
    from generate_series(1, 60) as i`);
  const token = await new SignJWT({ walletAddress, chain: 'evm' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user.id)
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(new TextEncoder().encode(jwtSecret));
  return { authorization: `Bearer ${token}` };
}

/** The real app on a fresh database (PostgreSQL when DATABASE_URL is set), listening on loopback. */
export async function startApp(env: Record<string, string> = {}, overrides: BuildOverrides = {}): Promise<BenchApp> {
  let db: DbHandle;
  let dropDb: (() => Promise<void>) | undefined;
  if (PG_URL) {
    const fresh = await freshPgDatabase();
    db = await createDb(fresh.url, { max: 20 });
    dropDb = fresh.drop;
  } else {
    db = await createDb('pglite:memory');
  }
  await runMigrations(db);
  const config = testConfig({
    JWT_SECRET: 'bench-secret-bench-secret-bench-secret-000',
    LOG_LEVEL: 'silent',
    // Measured as deployed: metrics on (docs/decisions.md §15.1); BENCH_METRICS=off measures without.
    METRICS_PORT: process.env.BENCH_METRICS === 'off' ? '0' : String(await freePort()),
    ...(REDIS_URL ? { REDIS_URL } : {}),
    ...env,
  });
  const app = await buildApp(config, {
    db,
    migrate: false,
    logger: false,
    keyPrefix: `pbbench:${randomBytes(4).toString('hex')}:`,
    ...overrides,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return {
    app,
    db,
    config,
    url: `http://127.0.0.1:${port}`,
    async close() {
      await app.close();
      await db.close();
      await dropDb?.();
    },
  };
}

export function ratio(a: number, b: number): string {
  return b === 0 ? 'n/a' : (a / b).toFixed(2);
}

/** A markdown table of load results with each row's ratio to the baseline row. */
export function loadTable(rows: LoadResult[], baseline: LoadResult): string {
  const lines = ['| target | req/s | p50 ms | p99 ms | non-2xx | ratio to baseline |', '|---|---|---|---|---|---|'];
  for (const r of rows)
    lines.push(`| ${r.name} | ${r.reqPerSec} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${ratio(r.reqPerSec, baseline.reqPerSec)} |`);
  return lines.join('\n');
}

/** Replaces (or appends) the `## <section>` part of tests/bench/RESULTS.md. */
export async function writeSection(section: string, markdown: string): Promise<void> {
  const file = join(ROOT, 'tests/bench/RESULTS.md');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    text = '# Benchmark results\n\nWritten by `npm run bench`; ratios are against a baseline measured in the same run.\n';
  }
  const header = `## ${section}`;
  const block = `${header}\n\n_${new Date().toISOString()}, node ${process.version}, ${PG_URL ? 'PostgreSQL' : 'PGlite'}${REDIS_URL ? ' + Redis' : ''}_\n\n${markdown.trim()}\n`;
  const start = text.indexOf(`\n${header}\n`);
  if (start === -1) text = `${text.trimEnd()}\n\n${block}`;
  else {
    const next = text.indexOf('\n## ', start + header.length + 1);
    text = text.slice(0, start + 1) + block + (next === -1 ? '' : text.slice(next));
  }
  await writeFile(file, text.endsWith('\n') ? text : `${text}\n`);
}

// ---------------------------------------------------------------------------
// CPU per response (issue 21): service, baseline and load each in a process
// of their own; the CPU a process spent is read from /proc/<pid>/stat.
// ---------------------------------------------------------------------------

const CLK_TCK = 100; // USER_HZ: the unit of /proc/<pid>/stat times on Linux (getconf CLK_TCK)

/** CPU seconds (utime + stime, plus reaped children's) of pid and every live descendant. */
export async function treeCpuSeconds(pid: number): Promise<number> {
  let ticks = 0;
  const seen = new Set<number>();
  const visit = async (p: number) => {
    if (seen.has(p)) return;
    seen.add(p);
    let stat: string;
    try {
      stat = await readFile(`/proc/${p}/stat`, 'utf8');
    } catch {
      return; // exited in between
    }
    // Fields after the parenthesised command: [0] state … [11] utime [12] stime [13] cutime [14] cstime.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    let tasks: string[];
    try {
      tasks = await readdir(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const t of tasks) {
      let children: string;
      try {
        children = await readFile(`/proc/${p}/task/${t}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const c of children.split(' ').filter(Boolean)) await visit(Number(c));
    }
  };
  await visit(pid);
  return ticks / CLK_TCK;
}

export interface CpuLoadResult extends LoadResult {
  /** µs of CPU the serving process tree spent per response over the measured window. */
  cpuUs: number;
}

/** load() with the serving process tree's CPU over the measured window only (the warm-up is excluded). */
export async function loadWithCpu(name: string, url: string, pid: number, opts: LoadOptions = {}): Promise<CpuLoadResult> {
  let cpu0 = 0;
  const r = await load(name, url, {
    ...opts,
    beforeMeasured: async () => {
      cpu0 = await treeCpuSeconds(pid);
    },
  });
  const cpu = (await treeCpuSeconds(pid)) - cpu0;
  return { ...r, cpuUs: r.requests === 0 ? 0 : (cpu * 1e6) / r.requests };
}

export interface Target {
  name: string;
  url: string;
  /** The listening process. */
  pid: number;
  opts?: LoadOptions;
}

export interface CpuComparison {
  base: CpuLoadResult;
  target: CpuLoadResult;
  /** Median over rounds of base µs/response ÷ target µs/response (1 = same cost; 0.77 = target costs 1.3×). */
  cpuRatio: number;
  /** Median over rounds of target req/s ÷ base req/s. */
  rpsRatio: number;
  rounds: Array<{ base: CpuLoadResult; target: CpuLoadResult }>;
}

const medianOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Baseline and target in alternating order (base→target, target→base, …) so
 * a slow phase of this shared machine hits both alike; each side's figures
 * are medians over the rounds, and so are the per-round ratios.
 */
export async function compareCpu(base: Target, target: Target, rounds = 3): Promise<CpuComparison> {
  const out: Array<{ base: CpuLoadResult; target: CpuLoadResult }> = [];
  for (let i = 0; i < rounds; i++) {
    let b: CpuLoadResult;
    let t: CpuLoadResult;
    if (i % 2 === 0) {
      b = await loadWithCpu(base.name, base.url, base.pid, base.opts);
      t = await loadWithCpu(target.name, target.url, target.pid, target.opts);
    } else {
      t = await loadWithCpu(target.name, target.url, target.pid, target.opts);
      b = await loadWithCpu(base.name, base.url, base.pid, base.opts);
    }
    out.push({ base: b, target: t });
  }
  const med = (pick: (x: { base: CpuLoadResult; target: CpuLoadResult }) => CpuLoadResult): CpuLoadResult => {
    const xs = out.map(pick);
    return {
      ...xs[0],
      requests: medianOf(xs.map((x) => x.requests)),
      reqPerSec: medianOf(xs.map((x) => x.reqPerSec)),
      p50: medianOf(xs.map((x) => x.p50)),
      p99: Math.max(...xs.map((x) => x.p99)),
      non2xx: Math.max(...xs.map((x) => x.non2xx)),
      errors: Math.max(...xs.map((x) => x.errors)),
      cpuUs: medianOf(xs.map((x) => x.cpuUs)),
    };
  };
  return {
    base: med((x) => x.base),
    target: med((x) => x.target),
    cpuRatio: medianOf(out.map((x) => (x.target.cpuUs === 0 ? 0 : x.base.cpuUs / x.target.cpuUs))),
    rpsRatio: medianOf(out.map((x) => (x.base.reqPerSec === 0 ? 0 : x.target.reqPerSec / x.base.reqPerSec))),
    rounds: out,
  };
}

/** One markdown table: each pair's µs of CPU per response on both sides, their ratio, req/s beside. */
export function cpuTable(rows: Array<{ label: string; c: CpuComparison }>, baseLabel = 'bare'): string {
  const lines = [
    `| route | service µs CPU/resp | ${baseLabel} µs CPU/resp | CPU ratio (${baseLabel}/service) | service req/s | ${baseLabel} req/s | req/s ratio | rounds (CPU ratio) | non-2xx |`,
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const { label, c } of rows)
    lines.push(
      `| ${label} | ${c.target.cpuUs.toFixed(1)} | ${c.base.cpuUs.toFixed(1)} | **${c.cpuRatio.toFixed(2)}** | ${c.target.reqPerSec} | ${c.base.reqPerSec} | ${c.rpsRatio.toFixed(2)} | ${c.rounds
        .map((r) => (r.base.cpuUs / r.target.cpuUs).toFixed(2))
        .join(', ')} | ${c.target.non2xx} |`,
    );
  return lines.join('\n');
}

export interface ChildServer {
  pid: number;
  url: string;
  /** SIGTERM, then wait for the exit (a --cpu-prof profile is written on the way out). */
  close(): Promise<void>;
}

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * The service as its own process, started as the scripts start it:
 * `dist` is `npm run start:dist` (node dist/src/server.js, what the image
 * runs), `tsx` is `npm start` (node --import tsx src/server.ts). Spawned
 * directly rather than through npm so the process measured is the one that
 * listens. Its stdout (the logs) goes to /dev/null.
 */
export async function spawnService(kind: 'dist' | 'tsx', env: Record<string, string>, nodeArgs: string[] = []): Promise<ChildServer> {
  const port = await freePort();
  const args = kind === 'dist' ? [...nodeArgs, 'dist/src/server.js'] : [...nodeArgs, '--import', 'tsx', 'src/server.ts'];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service (${kind}) exited ${child.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${url}/health/live`)).ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`service (${kind}) did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { pid: child.pid!, url, close: () => stopChild(child) };
}

/** The bare Fastify baseline (tests/bench/baseline-server.ts) in its own process. */
export async function spawnBaseline(routes: BaselineRoute[], nodeArgs: string[] = []): Promise<ChildServer> {
  const dir = join(ROOT, 'tests/bench/.tmp');
  await mkdir(dir, { recursive: true });
  const file = join(dir, `baseline-${process.pid}-${randomBytes(3).toString('hex')}.json`);
  await writeFile(file, JSON.stringify({ routes }));
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', join(ROOT, 'tests/bench/baseline-server.ts'), file], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`baseline exited ${code}`)));
  });
  return { pid: child.pid!, url: `http://127.0.0.1:${port}`, close: () => stopChild(child) };
}

/** Headers a captured response is replayed with: all but the ones the HTTP layer writes itself. */
const TRANSPORT_HEADERS = new Set(['date', 'content-length', 'connection', 'keep-alive', 'transfer-encoding']);

/** GETs url and returns what a baseline route needs to answer the same bytes and headers. */
export async function capture(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const res = await fetch(url, { headers });
  const body = await res.text();
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!TRANSPORT_HEADERS.has(k)) out[k] = v;
  });
  return { status: res.status, headers: out, body };
}
