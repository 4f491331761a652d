import closeWithGrace from 'close-with-grace';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import { loadSampleData, startFakeVenues } from './venues/index.js';

/**
 * `npm run demo`: the service on local fake venues serving the bundled
 * sample data, so it shows populated events with no network access. Prices
 * drift every 20 s so price-sync has something to publish. Uses an in-memory
 * PGlite unless DATABASE_URL is set. Other venue fakes (e.g. the Polymarket
 * Data API for the leaderboard) plug in next to startFakeVenues().
 */
const sample = loadSampleData();
const venues = await startFakeVenues(sample);

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

const config = loadConfig({
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'pglite:memory',
  JOBS: 'on',
  ...venues.env,
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
});
await app.listen({ port: config.PORT, host: config.HOST });
app.log.info(
  { gamma: venues.gamma.url, kalshi: venues.kalshi.url, clob: venues.clob.url },
  `demo: fake venues up; try http://${config.HOST}:${config.PORT}/api/v1/events`,
);
