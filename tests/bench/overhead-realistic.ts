import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { openSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createDb } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import { startFakeVenues } from '../fakes/venues/index.js';
import { startFakeDataApi } from '../fakes/venues/polymarket-data.js';
import { startFakeMarketWs } from '../fakes/venues/market-ws.js';
import { startFakeExpo } from '../fakes/expo.js';
import { startFakeTelegram } from '../fakes/telegram.js';
import { freePort } from '../support/net.js';
import { freshPgDatabase, PG_URL, REDIS_URL, ROOT, seedBenchUser, treeCpuSeconds, type ChildServer } from './harness.js';

/**
 * Issue 36: the service as an operator deploys it, for the "realistic" rows of
 * `npm run bench -- overhead`. Started from a shell through the npm scripts
 * (`npm start`, `npm run start:dist`), with PostgreSQL, Redis, CORS_ORIGINS,
 * TRUST_PROXY, every venue URL pointed at a loopback fake (Gamma, CLOB and its
 * market WebSocket, Kalshi, the Data API), push and Telegram configured, jobs
 * on; measured only after one catalogue sync (events-sync) and one leaderboard
 * sync have finished, while the schedule keeps running (price-sync, the hot-
 * market socket with prices moving every second, leaderboard-enrich,
 * delivery-sweep …), as in production.
 *
 * The fakes run in the bench process: their CPU is not the service's.
 */
const JWT_SECRET = 'bench-secret-bench-secret-bench-secret-000';
const INTERNAL = 'bench-internal-token-0123456789abcdef';
const SIZE = { pmEvents: 2_000, pmMarkets: 8_000, ksEvents: 1_000, ksMarkets: 4_000, series: 300 };
const TRADERS = 120;

export interface RealisticSetup {
  bearer: Record<string, string>;
  /** Starts the service through `sh -c 'exec npm run <script>'` and waits for the first syncs. */
  start(kind: 'dist' | 'tsx', extraEnv?: Record<string, string>): Promise<RealisticService>;
  cleanup(): Promise<void>;
}

export interface RealisticService extends ChildServer {
  /** Seconds from start until events-sync and leaderboard-sync had both succeeded once. */
  warmSeconds: number;
  /** CPU µs per second the service spends with no requests (its jobs, sockets and timers), over `idleSeconds`. */
  idleCpuUsPerSec(idleSeconds?: number): Promise<number>;
}

export function loadAverage(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
}

export async function setupRealistic(): Promise<RealisticSetup> {
  if (!PG_URL || !REDIS_URL) throw new Error('overhead (realistic): needs DATABASE_URL (PostgreSQL) and REDIS_URL');
  const fresh = await freshPgDatabase('pbreal');
  const dbUrl = fresh.url;
  const db = await createDb(dbUrl, { max: 2 });
  const venues = await startFakeVenues(
    {},
    {
      generate: {
        polymarket: { events: SIZE.pmEvents, markets: SIZE.pmMarkets },
        kalshi: { events: SIZE.ksEvents, markets: SIZE.ksMarkets, series: SIZE.series },
      },
    },
  );
  const dataApi = await startFakeDataApi();
  const marketWs = await startFakeMarketWs();
  const expo = await startFakeExpo();
  const telegram = await startFakeTelegram();
  // Every board the sync reads, one ordering per figure, as the venue ranks them.
  const traders = Array.from({ length: TRADERS }, (_, i) => {
    const h = createHash('sha256').update(`bench-trader-${i}`).digest();
    return {
      proxyWallet: `0x${h.subarray(0, 20).toString('hex')}`,
      userName: `trader${i}`,
      pnl: Math.round((h.readUInt32BE(20) / 2 ** 32 - 0.2) * 500_000),
      vol: Math.round((h.readUInt32BE(24) / 2 ** 32) * 5_000_000),
      verifiedBadge: i % 17 === 0,
    };
  });
  dataApi.setEveryBoard(traders);
  // Hot markets: every subscribed token's price moves once a second.
  let tick = 0;
  const drift = setInterval(() => {
    tick++;
    for (const token of marketWs.subscribed()) {
      const mid = 0.3 + ((Number(BigInt(token) % 97n) + tick) % 40) / 100;
      marketWs.priceChange(token, { bid: mid - 0.01, ask: mid + 0.01 });
    }
  }, 1_000);

  const cleanup = async () => {
    clearInterval(drift);
    await Promise.allSettled([venues.close(), dataApi.close(), marketWs.close(), expo.close(), telegram.close()]);
    await db.close();
    await fresh.drop();
  };
  try {
    await runMigrations(db);
    const bearer = await seedBenchUser(db, JWT_SECRET);

    const env = async (): Promise<Record<string, string>> => ({
      NODE_ENV: 'production',
      SIGN_IN_DOMAIN: 'app.example.com',
      SIGN_IN_URI: 'https://app.example.com',
      DATABASE_URL: dbUrl,
      REDIS_URL: REDIS_URL!,
      JWT_SECRET,
      INTERNAL_API_TOKEN: INTERNAL,
      CORS_ORIGINS: 'https://app.example.com,https://admin.example.com',
      TRUST_PROXY: '127.0.0.1,10.0.0.0/8',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      METRICS_PORT: String(await freePort()),
      ...venues.env,
      POLYMARKET_DATA_API_URL: dataApi.url,
      POLYMARKET_MARKET_WS_URL: marketWs.url,
      PUSH_API_URL: expo.url,
      PUSH_ACCESS_TOKEN: 'bench-expo-access-token',
      MESSENGER_API_URL: telegram.url,
      MESSENGER_BOT_TOKEN: telegram.token,
      MESSENGER_WEBHOOK_SECRET: 'bench-webhook-secret-0123456789',
      MESSENGER_BOT_USERNAME: 'bench_bot',
    });

    const start = async (kind: 'dist' | 'tsx', extraEnv: Record<string, string> = {}): Promise<RealisticService> => {
      const port = await freePort();
      const script = kind === 'dist' ? 'start:dist' : 'start';
      const started = Date.now();
      // From a shell, as an operator starts it: sh → npm → (the script's `exec`) node.
      const child = spawn('sh', ['-c', `exec npm run -s ${script}`], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          ...(await env()),
          ...extraEnv,
          PORT: String(port),
          HOST: '127.0.0.1',
        },
        // BENCH_SERVICE_LOG=<file>: the service's log lines (stdout) for a look at what it does while measured.
        stdio: ['ignore', process.env.BENCH_SERVICE_LOG ? openSync(process.env.BENCH_SERVICE_LOG, 'a') : 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
      const url = `http://127.0.0.1:${port}`;
      const close = () =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
          child.once('exit', () => {
            clearTimeout(kill);
            resolve();
          });
          child.kill('SIGTERM');
        });
      const deadline = Date.now() + 600_000;
      // Listening, then both first syncs done (the jobs run them at start, on whichever instance holds their lock).
      for (;;) {
        if (child.exitCode !== null) throw new Error(`service (${script}) exited ${child.exitCode}: ${stderr}`);
        if (Date.now() > deadline) {
          await close();
          throw new Error(`service (${script}): first syncs not done within 10 minutes: ${stderr}`);
        }
        try {
          const res = await fetch(`${url}/api/v1/internal/jobs`, { headers: { authorization: `Bearer ${INTERNAL}` } });
          if (res.ok) {
            const { jobs } = (await res.json()) as { jobs: Array<{ name: string; lastSuccessAt: string | null }> };
            const done = (n: string) => jobs.some((j) => j.name === n && j.lastSuccessAt && Date.parse(j.lastSuccessAt) >= started);
            // With JOBS=off (a comparison against the same data without a schedule) nothing runs: answering is enough.
            if (extraEnv.JOBS === 'off' || (done('events-sync') && done('leaderboard-sync'))) break;
          }
        } catch {
          /* not listening yet */
        }
        await new Promise((r) => setTimeout(r, 1_000));
      }
      const warmSeconds = (Date.now() - started) / 1000;
      const pid = child.pid!;
      return {
        pid,
        url,
        close,
        warmSeconds,
        async idleCpuUsPerSec(idleSeconds = 5) {
          const c0 = await treeCpuSeconds(pid);
          await new Promise((r) => setTimeout(r, idleSeconds * 1000));
          return (((await treeCpuSeconds(pid)) - c0) * 1e6) / idleSeconds;
        },
      };
    };
    return { bearer, start, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
