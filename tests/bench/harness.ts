import { execFile } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import Fastify from 'fastify';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildOverrides } from '../../src/app.js';
import { testConfig, type Config } from '../../src/config.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';

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

/** A loopback port that was free a moment ago (METRICS_PORT=0 means off, so the bench needs a real one). */
function freeMetricsPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The real app on a fresh database (PostgreSQL when DATABASE_URL is set), listening on loopback. */
export async function startApp(env: Record<string, string> = {}, overrides: BuildOverrides = {}): Promise<BenchApp> {
  let db: DbHandle;
  let dropDb: (() => Promise<void>) | undefined;
  if (PG_URL) {
    const name = `pbbench_${process.pid}_${randomBytes(3).toString('hex')}`;
    const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    const u = new URL(PG_URL);
    u.pathname = `/${name}`;
    db = await createDb(u.toString(), { max: 20 });
    dropDb = async () => {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    };
  } else {
    db = await createDb('pglite:memory');
  }
  await runMigrations(db);
  const config = testConfig({
    JWT_SECRET: 'bench-secret-bench-secret-bench-secret-000',
    LOG_LEVEL: 'silent',
    // Measured as deployed: metrics on (docs/decisions.md §15.1); BENCH_METRICS=off measures without.
    METRICS_PORT: process.env.BENCH_METRICS === 'off' ? '0' : String(await freeMetricsPort()),
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
