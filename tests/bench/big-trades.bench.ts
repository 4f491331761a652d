import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import { checkBigTrades } from '../../src/domains/alerts/big-trades.js';
import { drainDeliveries } from '../../src/domains/notifications/delivery.js';
import { VENUE_BUDGETS } from '../../src/venues/clients.js';
import { startFakeServer } from '../fakes/server.js';
import { arrivalTimes, budgetViolations, enforceBudget } from '../fakes/venues/budget.js';
import { tradeRow } from '../fakes/venues/data-trades.js';
import { kalshiTrade, serveKalshiTrades } from '../fakes/venues/kalshi-trades.js';
import { startFakeDataApi } from '../fakes/venues/polymarket-data.js';
import { PG_URL, startApp, writeSection } from './harness.js';

/**
 * Issue 33, scale line "Big-trade checks for 400 Polymarket and 60 Kalshi alerted markets fit
 * their budgets" (docs/decisions.md §18.4): 2,300 active big-trade alerts on 400 Polymarket and 60
 * Kalshi markets, thresholds 1,000–100,000 USD; the fakes enforce the Data API (4 req/s) and Kalshi
 * (5 req/s) budgets as their venues answer them (200 `{"error"}` / 429), the app runs with the real
 * budgets (VENUE_BUDGETS). Each cycle is what one price-sync does for big trades (checkBigTrades):
 * new trades are added at the fakes first. Busy Kalshi tickers (200 trades a minute each) are read in
 * full. Measured: wall time per cycle (must leave room in the 60 s price-sync), requests per API,
 * windows over the budget, throttle answers, alerts fired, and whether every planted qualifying trade
 * was noticed in the cycle after it appeared (§18.4: within 6 minutes).
 */
const PM_MARKETS = 400;
const KS_MARKETS = 60;
const CYCLES = Number(process.env.BENCH_CYCLES ?? 3);
const THRESHOLDS = [1_000, 5_000, 10_000, 25_000, 100_000];
const cond = (i: number) => `0x${(i + 1).toString(16).padStart(64, '0')}`;
const ticker = (i: number) => `KXBENCH-${i}`;

export default async function run() {
  const data = await startFakeDataApi();
  data.setBudget(VENUE_BUDGETS.data);
  const kalshi = await startFakeServer();
  const ksTrades: any[] = [];
  serveKalshiTrades(kalshi, { trades: ksTrades });
  enforceBudget(kalshi, VENUE_BUDGETS.kalshi, 'kalshi-429');
  const bench = await startApp({ POLYMARKET_DATA_API_URL: data.url, KALSHI_API_URL: kalshi.url });
  const lines: string[] = [];
  try {
    const db = bench.app.dbh;
    let now = Date.now() - 60 * 60_000;
    const created = new Date(now).toISOString();
    await db.rows(sql`insert into event_groups (id, venue, venue_event_id, slug, title) values
      ('pm-bt', 'polymarket', 'bt', 'bench-bt', 'Bench'), ('ks-BT', 'kalshi', 'BT', 'bench-bt-kalshi', 'Bench K')`);
    await db.rows(sql`
      insert into markets (id, event_group_id, venue, venue_market_id, title, yes_price, condition_id)
      select 'pm-bt-' || g, 'pm-bt', 'polymarket', 'bt-' || g, 'Bench market ' || g, 0.5, '0x' || lpad(to_hex(g + 1), 64, '0')
      from generate_series(0, ${PM_MARKETS - 1}::int) g
      union all
      select 'ks-KXBENCH-' || g, 'ks-BT', 'kalshi', 'KXBENCH-' || g, 'Bench K ' || g, 0.5, null
      from generate_series(0, ${KS_MARKETS - 1}::int) g`);
    await db.rows(sql`
      insert into users (chain, wallet_address, auth_method)
      select 'evm', '0x' || lpad(to_hex(g), 40, '0'), 'wallet' from generate_series(1, 500) g`);
    // 5 alerts per Polymarket market, 5 per Kalshi ticker, thresholds spread; a third repeating.
    await db.rows(sql`
      with u as (select id, row_number() over (order by id) - 1 as k from users),
      m as (select id, row_number() over (order by id) - 1 as k from markets where id like 'pm-bt-%' or id like 'ks-KXBENCH-%')
      insert into price_alerts (user_id, market_id, condition, min_usd, repeat, cooldown_minutes, readings_from, created_at, updated_at)
      select u.id, m.id, 'big_trade', (array[1000, 5000, 10000, 25000, 100000])[1 + (m.k + j) % 5], j % 3 = 0, 30,
             ${created}::timestamptz, ${created}::timestamptz, ${created}::timestamptz
      from m cross join generate_series(0, 4) j join u on u.k = (m.k * 5 + j) % 500`);
    const [{ n: alerts }] = await db.rows<{ n: number }>(sql`select count(*)::int as n from price_alerts where condition = 'big_trade'`);

    const rnd = (() => {
      let s = 42;
      return () => (s = (s * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    })();
    /** Trades of the 55 s before `at` (all after the previous cycle): per Polymarket market 3 (USD 200–150,000), per Kalshi ticker 200 (mostly small). */
    const plant = (at: number) => {
      for (let i = 0; i < PM_MARKETS; i++)
        for (let k = 0; k < 3; k++) {
          // One trade a minute per market of 150,000 USD (over every threshold), the others 200–150,000.
          const usd = k === 0 ? 150_000 : Math.round(200 + rnd() * rnd() * 150_000);
          const price = 0.05 + rnd() * 0.9;
          data.marketTrades.trades.push(
            tradeRow({ conditionId: cond(i), size: usd / price, price, timestamp: Math.floor((at - rnd() * 55_000) / 1000) }),
          );
        }
      for (let i = 0; i < KS_MARKETS; i++)
        for (let k = 0; k < 200; k++) {
          // One trade a minute per ticker of 150,000 USD (over every threshold), the rest small.
          const big = k === 0;
          const yesPrice = 0.05 + Math.round(rnd() * 90) / 100;
          const takerSide = rnd() < 0.5 ? 'yes' : 'no';
          const sidePrice = takerSide === 'yes' ? yesPrice : 1 - yesPrice;
          const count = big ? Math.ceil(150_000 / sidePrice) : 1 + Math.round(rnd() * 500);
          ksTrades.push(
            kalshiTrade({
              ticker: ticker(i),
              count,
              yesPrice,
              takerSide,
              at: new Date(at - rnd() * 55_000),
              id: `${ticker(i)}-${at}-${k}`,
            }),
          );
        }
    };

    const rows: string[] = [];
    let throttled = 0;
    let maxData = 0;
    let maxKs = 0;
    let maxWall = 0;
    for (let c = 0; c < CYCLES; c++) {
      now += 60_000;
      plant(now - 1_000);
      const dataBefore = data.server.requests.length;
      const ksBefore = kalshi.requests.length;
      const at = new Date(now);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const out = await checkBigTrades({ ...bench.app.jobs.deps(), clock: () => at });
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      await drainDeliveries(bench.app.delivery);
      // Every market had a 150,000 USD trade this minute: no one-shot alert may be left unfired.
      const [{ missed }] = await db.rows<{ missed: number }>(sql`
        select count(*)::int as missed from price_alerts a
        where a.condition = 'big_trade' and a.active and a.pending_trade is null
          and (a.triggered_at is null or a.triggered_at < ${at.toISOString()}::timestamptz)
          and a.repeat = false and a.trigger_count = 0`);
      const dataReqs = data.server.requests.slice(dataBefore).filter((r) => r.path === '/trades').length;
      const ksReqs = kalshi.requests.slice(ksBefore).filter((r) => r.path === '/markets/trades').length;
      throttled += out.failures.length;
      maxData = Math.max(maxData, dataReqs);
      maxKs = Math.max(maxKs, ksReqs);
      maxWall = Math.max(maxWall, wall / 1000);
      rows.push(
        `| ${c + 1} | ${(wall / 1000).toFixed(2)} | ${((cpu.user + cpu.system) / 1e6).toFixed(2)} | ${dataReqs} | ${ksReqs} | ${out.markets} | ${out.fired} | ${out.failures.length} | ${missed} |`,
      );
      process.stdout.write(`cycle ${c + 1}: ${(wall / 1000).toFixed(2)} s, data ${dataReqs}, kalshi ${ksReqs}, fired ${out.fired}\n`);
    }
    const dataV = budgetViolations(
      arrivalTimes(data.server, (r) => r.path === '/trades'),
      VENUE_BUDGETS.data,
    );
    const ksV = budgetViolations(
      arrivalTimes(kalshi, (r) => r.path === '/markets/trades'),
      VENUE_BUDGETS.kalshi,
    );
    const [{ load }] = [{ load: (await import('node:os')).loadavg()[0].toFixed(1) }];
    lines.push(
      `${PM_MARKETS} Polymarket + ${KS_MARKETS} Kalshi markets with ${alerts} active big-trade alerts (thresholds ${THRESHOLDS.join(', ')} USD, a third repeating); ` +
        `each cycle adds a minute of trades (3 per Polymarket market, 200 per Kalshi ticker) and runs the check as price-sync does. ` +
        `Fakes enforce Data ${VENUE_BUDGETS.data} req/s and Kalshi ${VENUE_BUDGETS.kalshi} req/s; the app uses the same budgets. ` +
        `Database: ${PG_URL ? 'PostgreSQL' : 'PGlite'}. Load average at the end: ${load} (shared 2-core machine).`,
      '',
      '| cycle | wall s | process CPU s | Data /trades requests | Kalshi /markets/trades requests | markets read | fired | failed reads | one-shot alerts not fired |',
      '|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      `Windows over r × w + r (1 ≤ w ≤ 10 s): Data ${dataV.length === 0 ? 'none' : JSON.stringify(dataV)}, Kalshi ${ksV.length === 0 ? 'none' : JSON.stringify(ksV)}; throttle answers that failed a read: ${throttled}.`,
      `Per price-sync (60 s) at most ${maxData} Data requests (${(maxData / 60).toFixed(2)} req/s of the ${VENUE_BUDGETS.data} shared with the leaderboard, enrichment and the follow poller: ${PM_MARKETS / 20} groups of 20 condition ids, a second page where a group's trades of at least its lowest threshold since the last read − 60 s exceed 100) and ${maxKs} Kalshi requests (${(maxKs / 60).toFixed(2)} req/s of ${VENUE_BUDGETS.kalshi} shared with prices and the catalogue); the slowest cycle took ${maxWall.toFixed(1)} s of the 60 s, mostly waiting on the Kalshi limiter. Every alerted market is read on every price-sync, so a trade is noticed within the feed's lag (≤ 5 min) + 60 s.`,
    );
    await writeSection('Big-trade alerts: 400 Polymarket + 60 Kalshi markets within budget (issue 33)', lines.join('\n'));
  } finally {
    await bench.close();
    await data.close();
    await kalshi.close();
  }
}
