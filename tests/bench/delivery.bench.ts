import { sql } from 'drizzle-orm';
import { rows } from '../../src/db/index.js';
import { processAllDueDeliveries } from '../../src/domains/notifications/delivery.js';
import { storeNotifications, type NotifyRequest } from '../../src/domains/notifications/service.js';
import { startFakeExpo } from '../fakes/expo.js';
import { PG_URL, startApp, writeSection } from './harness.js';

/**
 * docs/decisions.md §13, issue #18: ledger throughput to a fake Expo. 20,000
 * push rows (1,000 users × 5 devices × 4 notifications) are stored, then one
 * instance drains them: claim (FOR UPDATE SKIP LOCKED), preferences and
 * devices read per batch, requests of 100 with at most 6 in flight, one
 * set-based settle per Expo answer, tickets stored. Target ≥ 2,000/s on PostgreSQL.
 */
export default async function run() {
  const expo = await startFakeExpo();
  const bench = await startApp({ PUSH_API_URL: expo.url });
  const { app } = bench;
  try {
    const users = await rows<{ id: string }>(
      app.db,
      sql`insert into users (chain, wallet_address, auth_method)
          select 'evm', '0x' || lpad(to_hex(g), 40, '0'), 'wallet' from generate_series(1, 1000) g returning id`,
    );
    await rows(
      app.db,
      sql`insert into push_devices (token, user_id, platform)
          select 'ExponentPushToken[bench-' || u.id || '-' || d || ']', u.id, 'ios'
          from users u cross join generate_series(1, 5) d`,
    );
    const requests: NotifyRequest[] = [];
    for (let k = 0; k < 4; k++)
      for (const u of users) requests.push({ userId: u.id, type: 'order_filled', title: `B${k}`, message: 'bench' });
    for (let i = 0; i < requests.length; i += 1000) {
      await app.db.transaction((tx) => storeNotifications(app, tx, new Date(), requests.slice(i, i + 1000)));
    }
    const deps = { db: app.db, config: app.config, log: app.log, clock: app.clock, delivery: app.delivery };
    const started = performance.now();
    let sent = 0;
    for (;;) {
      const r = await processAllDueDeliveries(deps, 100);
      sent += r.sent;
      if (r.claimed === 0) break;
    }
    const seconds = (performance.now() - started) / 1000;
    const perSec = Math.round(sent / seconds);
    const line = `${sent} push deliveries in ${seconds.toFixed(2)} s: **${perSec} deliveries/s** (${PG_URL ? 'PostgreSQL' : 'PGlite'}; ${expo.batches.length} Expo requests, at most ${expo.inFlight.peak} in flight; target ≥ 2,000/s on PostgreSQL)`;
    process.stdout.write(`${line}\n`);
    await writeSection('Delivery ledger throughput', line);
  } finally {
    await bench.close();
    await expo.close();
  }
}
