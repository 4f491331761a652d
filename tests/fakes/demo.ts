import { createHash, randomBytes } from 'node:crypto';
import closeWithGrace from 'close-with-grace';
import { buildApp } from '../../src/app.js';
import { resolveTokenUser, signDevAccessToken } from '../../src/cli/token.js';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import { syncBoard } from '../../src/domains/leaderboard/sync.js';
import { PERIODS } from '../../src/venues/polymarket/data-map.js';
import { NOTIFICATION_TYPES } from '../../src/domains/notifications/types.js';
import { loadDevEnv } from '../../src/lib/dev-env.js';
import { startFakeExpo } from './expo.js';
import { loadSampleData, startFakeVenues } from './venues/index.js';
import { startFakeDataApi } from './venues/polymarket-data.js';
import { startFakeMarketWs } from './venues/market-ws.js';
import { driftPrices } from './venues/prices.js';

/**
 * `npm run demo`: the whole service offline, on loopback fakes of every
 * upstream (Gamma, CLOB and its market WebSocket, Kalshi, the Polymarket Data
 * API, Expo push), so it
 * never reaches the network:
 * - events from the bundled sample data, prices drifting every 20 s so
 *   price-sync has something to publish (where it reads them: the CLOB
 *   fake's books, Kalshi quotes; the market WebSocket fake pushes them too);
 * - a leaderboard of 40 generated traders on every board (one page per
 *   ordering, so the first sync at the real Data API budget takes seconds, not
 *   minutes; DEMO_TRADERS sets another count), with a month of
 *   OVERALL history (board syncs replayed at past instants through the real
 *   sync code)
 *   and enriched profiles (the fake Data API serves deterministic positions,
 *   closed positions and trades for any address, so on-demand profiles of
 *   other addresses work too);
 * - a demo user with a 24-hour access token, and a notification for it every
 *   DEMO_NOTIFY_INTERVAL_MS (default 5 s) through the real internal notify
 *   path, so `user:notifications` shows traffic.
 * It prints the URLs to open and the tokens as soon as the API listens (issue
 * 35: a banner within seconds); the venue data fills in live as the first
 * catalogue, price and leaderboard runs finish, and a line says when they have.
 * Uses an in-memory PGlite unless DATABASE_URL is set; INTERNAL_API_TOKEN is
 * generated unless set.
 */
const DEMO_WALLET = '0xde30000000000000000000000000000000000001';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const started = Date.now();
const sample = loadSampleData();
const venues = await startFakeVenues(sample);
const dataApi = await startFakeDataApi();
const expo = await startFakeExpo();
// Hot markets (docs/market-data.md "Hot markets"): the market WebSocket fake pushes the same drift to subscribed tokens.
const marketWs = await startFakeMarketWs();

// Generated traders per board: addresses and figures from a fixed hash, ranked by the ordering.
// Fewer than a venue page (50) by default, so each board is one request per ordering.
const askedTraders = Number(process.env.DEMO_TRADERS ?? 40);
const traderCount = Number.isInteger(askedTraders) && askedTraders >= 1 && askedTraders <= 1_000 ? askedTraders : 40;
const traders = Array.from({ length: traderCount }, (_, i) => {
  const h = createHash('sha256').update(`demo-trader-${i}`).digest();
  return {
    proxyWallet: `0x${h.subarray(0, 20).toString('hex')}`,
    userName: i % 3 === 0 ? '' : `trader${i}`,
    pnl: Math.round((h.readUInt32BE(20) / 2 ** 32 - 0.2) * 500_000),
    vol: Math.round((h.readUInt32BE(24) / 2 ** 32) * 5_000_000),
    verifiedBadge: i % 17 === 0,
    /** How much of today's figures the trader had `daysAgo` days ago varies per trader, so ranks move over time. */
    pace: 0.4 + (h[28] / 255) * 0.6,
  };
});

/** Every board as the venue would have answered `daysAgo` days ago (0: now). */
function setBoards(daysAgo: number) {
  const then = traders.map(({ pace, ...t }) => {
    const share = Math.max(0.05, 1 - (daysAgo / 30) * pace);
    return { ...t, pnl: Math.round(t.pnl * share), vol: Math.round(t.vol * share) };
  });
  dataApi.setEveryBoard(then);
}

let tick = 0;
const drift = setInterval(() => {
  driftPrices({ gamma: venues.gamma.state, kalshi: venues.kalshi.state }, ++tick);
  // Hot markets: the market WebSocket fake pushes the same moves to the tokens the service subscribed.
  for (const e of venues.gamma.state.events) {
    for (const m of e?.markets ?? []) {
      if (m.closed === true || typeof m.bestBid !== 'number') continue;
      const token = typeof m.clobTokenIds === 'string' ? (JSON.parse(m.clobTokenIds) as string[])[0] : undefined;
      if (token) marketWs.priceChange(token, { bid: m.bestBid, ask: m.bestAsk });
    }
  }
}, 20_000);

const { env } = loadDevEnv(process.env);
const config = loadConfig({
  ...env,
  DATABASE_URL: env.DATABASE_URL ?? 'pglite:memory',
  INTERNAL_API_TOKEN: env.INTERNAL_API_TOKEN ?? `demo-${randomBytes(16).toString('hex')}`,
  JOBS: 'on',
  ...venues.env,
  POLYMARKET_DATA_API_URL: dataApi.url,
  PUSH_API_URL: expo.url,
  POLYMARKET_MARKET_WS_URL: marketWs.url,
});
// Opened (and migrated) here rather than inside the app: an embedded database can take
// longer than Fastify's plugin start timeout on a busy machine.
const db = await createDb(config.DATABASE_URL);
await runMigrations(db);
const app = await buildApp(config, { db, migrate: false });

// History: the OVERALL boards as they were 30, 7, 2 and 1 days ago, written by the real sync at
// those instants (docs/decisions.md §14.1), so profiles show history and rank changes at once
// (the other categories collect theirs from now on). The jobs' own sync at start then writes
// today's boards.
const api = { baseUrl: dataApi.url };
for (const daysAgo of [30, 7, 2, 1]) {
  setBoards(daysAgo);
  const at = new Date(Date.now() - daysAgo * DAY - HOUR);
  const deps = { dbh: db, log: app.log, publish: () => {}, clock: () => at, api };
  for (const period of PERIODS) {
    const board = await syncBoard(deps, 'OVERALL', period, at);
    if (board.error) app.log.warn({ period, error: board.error }, 'demo history: a board was not written');
  }
}
setBoards(0);

const demoUser = await resolveTokenUser(db, { subject: DEMO_WALLET, chain: 'evm' });
const accessToken = await signDevAccessToken(config, demoUser, 24 * 60);

const notifiers: NodeJS.Timeout[] = [];
closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'demo: fatal error, shutting down');
  else app.log.info({ signal }, 'demo: shutting down');
  clearInterval(drift);
  for (const t of notifiers) clearInterval(t);
  // Each step on its own, so one that fails is named and the rest still close.
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['app', () => app.close()],
    ['database', () => db.close()],
    ['fake venues', () => venues.close()],
    ['fake Data API', () => dataApi.close()],
    ['fake Expo', () => expo.close()],
    ['fake market WebSocket', () => marketWs.close()],
  ];
  let failed = false;
  for (const [name, close] of steps) {
    const started = Date.now();
    try {
      await close();
    } catch (error) {
      failed = true;
      app.log.error({ err: error }, `demo: closing the ${name} failed`);
    }
    app.log.info({ ms: Date.now() - started }, `demo: closed the ${name}`);
  }
  if (failed) throw new Error('demo: shutdown incomplete');
});
await app.listen({ port: config.PORT, host: config.HOST });
const base = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${config.PORT}`;

// A notification every few seconds through POST /api/v1/internal/notifications: stored,
// emitted on the user's `user:notifications` stream, counted in unread.
const markets = [...sample.gamma.map((e) => e.title as string), ...sample.kalshi.map((e) => e.title as string)];
let sent = 0;
async function notify() {
  const type = NOTIFICATION_TYPES[sent % NOTIFICATION_TYPES.length];
  const market = markets[sent % markets.length];
  sent++;
  try {
    const res = await fetch(`${base}/api/v1/internal/notifications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${config.INTERNAL_API_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        userId: demoUser.id,
        type,
        title: `Demo ${type.replace(/_/g, ' ')} #${sent}`,
        message: `${market}: something happened (demo notification ${sent}).`,
        data: { demo: true, n: sent },
      }),
    });
    if (!res.ok) app.log.warn({ status: res.status }, 'demo notification refused');
  } catch (err) {
    app.log.warn({ err }, 'demo notification failed');
  }
}
const asked = Number(env.DEMO_NOTIFY_INTERVAL_MS ?? 5_000);
const every = Number.isFinite(asked) && asked >= 100 ? asked : 5_000;
notifiers.push(setInterval(() => void notify(), every));
void notify();

const sampleTrader = [...traders].sort((a, b) => b.pnl - a.pnl)[0].proxyWallet;
process.stdout.write(
  [
    '',
    'Demo ready: offline, on loopback fakes of Polymarket (Gamma, CLOB, market WebSocket, Data API), Kalshi and Expo push.',
    `  API          ${base}/api/v1/events`,
    `  leaderboard  ${base}/api/v1/leaderboard`,
    `  profile      ${base}/api/v1/leaderboard/${sampleTrader}  (history: …/history)`,
    `  docs         ${base}/docs`,
    `  asyncapi     ${base}/docs/asyncapi.json`,
    `  socket       ${base}  (Socket.IO path /socket.io/; auth: { token }; subscribe to user:notifications)`,
    `  demo user    ${demoUser.id} (evm ${demoUser.wallet_address}); a notification every ${every / 1000} s`,
    `  access token ${accessToken}`,
    `  internal     ${config.INTERNAL_API_TOKEN}  (Authorization: Bearer … on /api/v1/internal/*)`,
    `  filling in   events, prices and the leaderboard arrive as the first job runs finish (${traderCount} traders; a line follows)`,
    '',
  ].join('\n') + '\n',
);

// The data fills in live: say when the first catalogue and leaderboard syncs (started by listen) are in.
const FIRST_RUNS = ['events-sync', 'price-sync', 'leaderboard-sync', 'leaderboard-enrich'];
const filled = setInterval(() => {
  void app.jobs.statuses().then(
    (jobs) => {
      if (!FIRST_RUNS.every((name) => jobs.find((j) => j.name === name)?.finishedAt)) return;
      clearInterval(filled);
      process.stdout.write(
        `Demo data filled in after ${((Date.now() - started) / 1000).toFixed(1)} s: events, prices, leaderboard and profiles.\n`,
      );
    },
    () => {},
  );
}, 500);
notifiers.push(filled);
