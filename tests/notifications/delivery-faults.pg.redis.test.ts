import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import { REDIS_URL } from '../helpers/env.js';
import { startServer, waitForExit, waitForHttp } from '../helpers/server-process.js';
import { freePort } from '../support/net.js';
import { startFakeExpo, type FakeExpo } from '../fakes/expo.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram.js';
import { rows } from '../../src/db/index.js';
import { processAllDueDeliveries } from '../../src/domains/notifications/delivery.js';
import { storeNotifications, type NotifyRequest } from '../../src/domains/notifications/service.js';

/**
 * docs/decisions.md §13.5, the fault test: 2,000 notifications to 200 users
 * with 3 devices and a chat each; Expo answers 5xx and hangs part of the
 * time, Telegram answers 429 with retry_after; a real app process
 * (src/server.ts) delivers until it is killed with SIGKILL mid-batch, then
 * an in-test instance on the same PostgreSQL and Redis finishes, its clock
 * driven past leases and backoffs (no sleeping through them). Every
 * (notification, device or chat) must end sent or failed; a message accepted
 * twice only if its first acceptance fell in the 2 s before the kill (or
 * while the killed process was going away); and
 * Telegram never sees two messages to a chat within a second.
 */
const USERS = 200;
const PER_USER = 10;
const TOKEN = `internal-${randomBytes(8).toString('hex')}`;
const RUN = randomBytes(4).toString('hex');
const CHAT_BASE = 6_000_000_000 + (randomBytes(4).readUInt32BE() % 1_000_000) * 1000;

let expo: FakeExpo;
let tg: FakeTelegram;
let t: TestApp;
let dbUrl: string;
let ahead = 0;

beforeAll(async () => {
  if (!REDIS_URL) throw new Error('the delivery fault test needs REDIS_URL (flood control is shared by both instances)');
  expo = await startFakeExpo();
  tg = await startFakeTelegram();
  tg.botLimit = 200;
  const db = await createTestDb();
  dbUrl = db.url;
  // The production key prefix: the killed process and this instance share Telegram's flood control.
  t = await buildTestApp(
    { PUSH_API_URL: expo.url, MESSENGER_API_URL: tg.url, MESSENGER_BOT_TOKEN: tg.token, MESSENGER_MAX_PER_SECOND: '200' },
    { db, keyPrefix: 'pb:', clock: () => new Date(Date.now() + ahead) },
  );
}, 120_000);
afterAll(async () => {
  await t?.close();
  await expo?.close();
  await tg?.close();
});

describe('delivery under faults and a killed instance', () => {
  it('every (notification, device or chat) ends sent or failed; duplicates only in the kill window; ≤ 1/s per chat', async () => {
    const db = t.app.db;
    // 200 users, 3 devices and a chat each.
    const users = await rows<{ id: string }>(
      db,
      sql`insert into users (chain, wallet_address, auth_method)
          select 'evm', '0x' || lpad(to_hex(g), 8, '0') || ${RUN} || repeat('0', 24), 'wallet' from generate_series(1, ${USERS}) g
          returning id`,
    );
    const chatOf = new Map<string, number>();
    users.forEach((u, i) => chatOf.set(u.id, CHAT_BASE + i));
    const devices = users.flatMap((u, i) => [0, 1, 2].map((d) => ({ token: `ExponentPushToken[f${RUN}-${i}-${d}]`, userId: u.id })));
    await rows(
      db,
      sql`insert into push_devices (token, user_id, platform)
          select x.token, x.user_id, 'ios' from jsonb_to_recordset(${JSON.stringify(devices.map((d) => ({ token: d.token, user_id: d.userId })))}::jsonb)
            as x(token text, user_id uuid)`,
    );
    await rows(
      db,
      sql`insert into messenger_bindings (messenger_id, user_id, chat_id, wallet_type)
          select x.chat, x.user_id, x.chat, 'connected'
          from jsonb_to_recordset(${JSON.stringify(users.map((u) => ({ chat: chatOf.get(u.id), user_id: u.id })))}::jsonb) as x(chat bigint, user_id uuid)`,
    );
    const requests: NotifyRequest[] = [];
    for (let k = 0; k < PER_USER; k++) {
      for (const u of users) requests.push({ userId: u.id, type: 'order_filled', title: `N${requests.length}`, message: 'fault test' });
    }
    for (let i = 0; i < requests.length; i += 500) {
      await db.transaction((tx) => storeNotifications(t.app, tx, new Date(), requests.slice(i, i + 500)));
    }
    const [{ n: total }] = await rows<{ n: number }>(db, sql`select count(*)::int as n from notification_deliveries`);
    expect(total).toBe(USERS * PER_USER * 4);

    expo.faults.serverErrorRate = 0.1;
    expo.faults.timeoutRate = 0.02;
    expo.faults.hangMs = 11_000;
    tg.faults.floodRate = 0.05;
    tg.faults.retryAfter = 2;

    // A real instance delivers until it is killed mid-batch.
    const port = await freePort();
    const child = startServer({
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: dbUrl,
      REDIS_URL: REDIS_URL!,
      INTERNAL_API_TOKEN: TOKEN,
      JOBS: 'off',
      LOG_LEVEL: 'warn',
      PUSH_API_URL: expo.url,
      MESSENGER_API_URL: tg.url,
      MESSENGER_BOT_TOKEN: tg.token,
      MESSENGER_MAX_PER_SECOND: '200',
    });
    let killAt: number;
    let exitAt: number;
    try {
      expect((await waitForHttp(`http://127.0.0.1:${port}/health/ready`, 90_000)).status).toBe(200);
      void fetch(`http://127.0.0.1:${port}/api/v1/internal/jobs/delivery-sweep`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      }).catch(() => {});
      const until = Date.now() + 60_000;
      while ((expo.accepted.length < 2_500 || tg.sent.length < 100) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      expect(expo.accepted.length).toBeGreaterThan(0);
    } finally {
      child.kill('SIGKILL');
      killAt = Date.now();
      await waitForExit(child, 10_000);
      // Answers to requests the process made before it died can still arrive until it is gone.
      exitAt = Date.now();
    }
    const beforeKill = { push: expo.accepted.length, chat: tg.sent.length };

    // This instance finishes: its clock jumps to the next due row whenever nothing is due now. Telegram at 1/s per
    // chat makes this ~1–2 min on a quiet machine; the deadline leaves room for a loaded one.
    const d = { db, config: t.app.config, log: t.app.log, clock: t.app.clock, delivery: t.app.delivery };
    const deadline = Date.now() + 300_000;
    for (;;) {
      const r = await processAllDueDeliveries(d);
      const [left] = await rows<{ n: number; next: string | null }>(
        db,
        sql`select count(*)::int as n, min(next_attempt_at) as next from notification_deliveries where status = 'pending'`,
      );
      if (left.n === 0 || Date.now() > deadline) break;
      const next = left.next ? new Date(left.next).getTime() : 0;
      if (r.claimed === 0 && next > t.app.clock().getTime()) ahead += next - t.app.clock().getTime() + 1;
      await new Promise((res) => setTimeout(res, 50));
    }

    const ledger = await rows<{ channel: string; target: string; notification_id: string; title: string; status: string }>(
      db,
      sql`select d.channel, d.target, d.notification_id, n.title, d.status
          from notification_deliveries d join notifications n on n.id = d.notification_id`,
    );
    const byStatus = (s: string) => ledger.filter((r) => r.status === s).length;
    expect(ledger).toHaveLength(USERS * PER_USER * 4);
    expect(byStatus('pending')).toBe(0);
    expect(byStatus('sent') + byStatus('failed')).toBe(ledger.length);

    // Duplicates only for messages first accepted in the 2 s before the kill.
    const pushTimes = new Map<string, number[]>();
    for (const m of expo.accepted) {
      const k = `${String(m.notificationId)}|${m.to}`;
      pushTimes.set(k, [...(pushTimes.get(k) ?? []), m.at]);
    }
    const chatTimes = new Map<string, number[]>();
    for (const m of tg.sentAt) {
      const k = `${m.text.split('\n')[0]}|${String(m.chat_id)}`;
      chatTimes.set(k, [...(chatTimes.get(k) ?? []), m.at]);
    }
    const outsideWindow: string[] = [];
    let duplicates = 0;
    for (const [k, times] of [...pushTimes, ...chatTimes]) {
      if (times.length < 2) continue;
      duplicates += times.length - 1;
      const first = Math.min(...times);
      if (times.length > 2 || first < killAt - 2_000 || first > exitAt)
        outsideWindow.push(`${k} at ${times.map((x) => x - killAt).join(',')} ms from the kill`);
    }
    expect(outsideWindow).toEqual([]);
    // Every sent row was accepted by its provider.
    for (const r of ledger.filter((x) => x.status === 'sent')) {
      const times = r.channel === 'push' ? pushTimes.get(`${r.notification_id}|${r.target}`) : chatTimes.get(`${r.title}|${r.target}`);
      expect(times?.length ?? 0, `${r.channel} ${r.target}`).toBeGreaterThanOrEqual(1);
    }
    expect(tg.violations).toEqual([]);
    console.info(
      `fault test: ${byStatus('sent')} sent, ${byStatus('failed')} failed, ${duplicates} duplicates (kill window), ` +
        `before the kill ${beforeKill.push} push / ${beforeKill.chat} chat accepted, clock driven ${Math.round(ahead / 1000)} s ahead`,
    );
  }, 520_000);
});
