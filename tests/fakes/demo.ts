import { createHash } from 'node:crypto';
import closeWithGrace from 'close-with-grace';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDb } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import { loadSampleData, startFakeVenues } from './venues/index.js';
import { startFakeDataApi } from './venues/polymarket-data.js';
import { startFakeMarketWs } from './venues/market-ws.js';
import { driftPrices } from './venues/prices.js';

/**
 * `npm run demo`: the service on local fake venues serving the bundled
 * sample data, so it shows populated events with no network access. Prices
 * drift every 20 s where price-sync reads them (the CLOB fake's books, Kalshi
 * quotes), so it has something to publish. The leaderboard comes from a
 * fake Data API with generated boards, so nothing reaches the network. Uses
 * an in-memory PGlite unless DATABASE_URL is set.
 */
const sample = loadSampleData();
const venues = await startFakeVenues(sample);
const dataApi = await startFakeDataApi();
// Hot markets (README "Hot markets"): the market WebSocket fake pushes the same drift to subscribed tokens.
const marketWs = await startFakeMarketWs();
// 200 generated traders per board: addresses and figures from a fixed hash, ranked by the ordering.
const traders = Array.from({ length: 200 }, (_, i) => {
  const h = createHash('sha256').update(`demo-trader-${i}`).digest();
  return {
    proxyWallet: `0x${h.subarray(0, 20).toString('hex')}`,
    userName: i % 3 === 0 ? '' : `trader${i}`,
    pnl: Math.round((h.readUInt32BE(20) / 2 ** 32 - 0.2) * 500_000),
    vol: Math.round((h.readUInt32BE(24) / 2 ** 32) * 5_000_000),
    verifiedBadge: i % 17 === 0,
  };
});
for (const category of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO']) {
  for (const period of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
    dataApi.setBoard(
      category,
      period,
      'PNL',
      [...traders].sort((a, b) => b.pnl - a.pnl),
    );
    dataApi.setBoard(
      category,
      period,
      'VOL',
      [...traders].sort((a, b) => b.vol - a.vol),
    );
  }
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

const config = loadConfig({
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'pglite:memory',
  JOBS: 'on',
  ...venues.env,
  POLYMARKET_DATA_API_URL: dataApi.url,
  POLYMARKET_MARKET_WS_URL: marketWs.url,
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
  await marketWs.close();
});
await app.listen({ port: config.PORT, host: config.HOST });
app.log.info(
  { gamma: venues.gamma.url, kalshi: venues.kalshi.url, clob: venues.clob.url, data: dataApi.url, marketWs: marketWs.url },
  `demo: fake venues up; try http://${config.HOST}:${config.PORT}/api/v1/events`,
);
