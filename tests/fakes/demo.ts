import { createHash } from 'node:crypto';
import closeWithGrace from 'close-with-grace';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import { loadDevEnv } from '../../src/lib/dev-env.js';
import { loadSampleData, startFakeVenues } from './venues/index.js';
import { startFakeDataApi, type FakeDataApi } from './venues/polymarket-data.js';

/**
 * `npm run demo`: the service on local fake venues serving the bundled
 * sample data, so it shows populated events with no network access. Prices
 * drift every 20 s so price-sync has something to publish. Uses an in-memory
 * PGlite unless DATABASE_URL is set. The leaderboard comes from a fake
 * Polymarket Data API with deterministic traders (profiles and history are
 * the fake's synthetic activity), so nothing leaves the machine.
 */
const sample = loadSampleData();
const venues = await startFakeVenues(sample);
const dataApi = await startFakeDataApi();
fillBoards(dataApi);

/** 120 deterministic traders on every (category, period) board, in both orderings. */
function fillBoards(api: FakeDataApi) {
  for (const category of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO']) {
    for (const [p, period] of ['DAY', 'WEEK', 'MONTH', 'ALL'].entries()) {
      const rows = Array.from({ length: 120 }, (_, i) => {
        const h = createHash('sha256').update(`${category}:${i}`).digest();
        const scale = 10 ** (p + 2);
        return {
          proxyWallet: `0x${h.subarray(0, 20).toString('hex')}`,
          userName: `demo-${category.toLowerCase()}-${i + 1}`,
          vol: Math.round((h.readUInt32BE(20) / 2 ** 32) * scale * 50),
          pnl: Math.round(((h.readUInt32BE(24) / 2 ** 32) * 2 - 0.4) * scale * 5),
          verifiedBadge: i % 17 === 0,
        };
      });
      api.setBoard(
        category,
        period,
        'PNL',
        [...rows].sort((a, b) => b.pnl - a.pnl),
      );
      api.setBoard(
        category,
        period,
        'VOL',
        [...rows].sort((a, b) => b.vol - a.vol),
      );
    }
  }
}

let tick = 0;
const drift = setInterval(() => {
  tick++;
  for (const e of venues.gamma.state.events) {
    for (const m of e.markets ?? []) {
      const prices = JSON.parse(m.outcomePrices).map(Number);
      const yes = Math.min(0.99, Math.max(0.01, prices[0] + Math.sin(tick + Number(m.id)) * 0.01));
      m.outcomePrices = JSON.stringify([yes.toFixed(3), (1 - yes).toFixed(3)]);
    }
  }
  for (const e of venues.kalshi.state.events) {
    for (const m of e.markets ?? []) {
      const last = Math.min(0.99, Math.max(0.01, Number(m.last_price_dollars) + Math.cos(tick + m.ticker.length) * 0.01));
      m.last_price_dollars = last.toFixed(4);
      m.yes_bid_dollars = Math.max(0, last - 0.01).toFixed(4);
      m.yes_ask_dollars = Math.min(1, last + 0.01).toFixed(4);
    }
  }
}, 20_000);

// .env and the development JWT key in .data/ apply as for `npm start`.
const { env } = loadDevEnv(process.env);
const config = loadConfig({
  ...env,
  DATABASE_URL: env.DATABASE_URL ?? 'pglite:memory',
  JOBS: 'on',
  ...venues.env,
  POLYMARKET_DATA_API_URL: dataApi.url,
});
// Opened (and migrated) here rather than inside the app: an embedded database can take
// longer than Fastify's plugin start timeout on a busy machine.
const db = await createDb(config.DATABASE_URL);
await runMigrations(db);
const app = await buildApp(config, { db, migrate: false });
closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS }, async () => {
  clearInterval(drift);
  await app.close();
  await db.close();
  await venues.close();
  await dataApi.close();
});
await app.listen({ port: config.PORT, host: config.HOST });
app.log.info(
  { gamma: venues.gamma.url, kalshi: venues.kalshi.url, clob: venues.clob.url, dataApi: dataApi.url },
  `demo: fake venues up; try http://${config.HOST}:${config.PORT}/api/v1/events and http://${config.HOST}:${config.PORT}/api/v1/leaderboard`,
);
