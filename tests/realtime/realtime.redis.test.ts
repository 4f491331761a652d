import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import { REDIS_URL } from '../helpers/env.js';
import type { DbHandle } from '../../src/db/index.js';
import { marketChannel, userNotificationsChannel } from '../../src/domains/realtime/channels.js';
import { ack, closeAll, connect, listen, newUserId, next, notificationMessage, record, refusal, signToken, sleep } from './helpers.js';
import { eventually } from '../support/eventually.js';

let db: DbHandle;
let redis: Redis;
const apps: TestApp[] = [];

async function instance(keyPrefix: string, realtime = {}) {
  const t = await buildTestApp({}, { db, keyPrefix, realtime });
  apps.push(t);
  return { t, url: await listen(t.app) };
}

beforeAll(async () => {
  db = await createTestDb();
  redis = new Redis(REDIS_URL!);
});
afterEach(async () => {
  closeAll();
  await Promise.all(apps.splice(0).map((t) => t.close()));
});
afterAll(async () => {
  redis?.disconnect();
  await db?.close();
});

const prefix = () => `pbtest:${randomBytes(5).toString('hex')}:`;
const update = (marketId: string) => ({ marketId, yesPrice: 0.5, volume: 10, timestamp: new Date().toISOString() });

describe('several instances sharing Redis', () => {
  it("delivers each other's publishes, and nothing across key prefixes", async () => {
    const p = prefix();
    const a = await instance(p);
    const b = await instance(p);
    const other = await instance(prefix());
    const onA = await connect(a.url);
    const onB = await connect(b.url);
    const onOther = await connect(other.url);
    for (const s of [onA, onB, onOther]) expect(await ack(s, 'subscribe', { channel: 'market:pm-x' })).toEqual({ ok: true });
    const leaked = record(onOther, 'market:update');

    const atB = next(onB, 'market:update');
    const atA = next(onA, 'market:update');
    a.t.app.publish(marketChannel('pm-x'), 'market:update', update('pm-x'));
    expect(await atB).toMatchObject({ marketId: 'pm-x' });
    expect(await atA).toMatchObject({ marketId: 'pm-x' });

    const user = newUserId();
    const private1 = await connect(a.url, { token: signToken(user) });
    expect(await ack(private1, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    const note = next(private1, 'notification');
    const fromB = notificationMessage('from-b');
    b.t.app.publish(userNotificationsChannel(user), 'notification', fromB);
    expect(await note).toEqual(fromB);
    // A burst published in one turn of b's event loop crosses in one relay message, in seq order.
    const burst = record(private1, 'notification');
    const more = [2, 3, 4].map((seq) => notificationMessage(`burst-${seq}`, { seq, unreadCount: seq }));
    for (const m of more) b.t.app.publish(userNotificationsChannel(user), 'notification', m);
    await eventually(() => burst.length === more.length);
    expect(burst).toEqual(more);

    // A fence through `other`'s own app proves the pm-x updates above did not reach it.
    const fence = next(onOther, 'market:update');
    other.t.app.publish(marketChannel('pm-x'), 'market:update', update('fence'));
    expect(await fence).toMatchObject({ marketId: 'fence' });
    expect(leaked).toHaveLength(1);
  });

  it('shares the per-user limit across instances and frees slots on disconnect', async () => {
    const p = prefix();
    const a = await instance(p);
    const b = await instance(p);
    const user = newUserId();
    const token = signToken(user);
    const sockets = [];
    for (let i = 0; i < 5; i++) sockets.push(await connect(a.url, { token }));
    for (let i = 0; i < 5; i++) sockets.push(await connect(b.url, { token }));
    expect(await refusal(a.url, { token })).toBe('TOO_MANY_CONNECTIONS');
    expect(await refusal(b.url, { token })).toBe('TOO_MANY_CONNECTIONS');
    for (const s of sockets) s.close();
    await eventually(async () => (await redis.zcard(`${p}ws:conn:user:${user}`)) === 0);
    expect(await refusal(b.url, { token })).toBe('CONNECTED');
  });

  it('shares the total and per-IP limits across instances', async () => {
    const p = prefix();
    const a = await instance(p, { maxConnections: 4 });
    const b = await instance(p, { maxConnections: 4 });
    await connect(a.url);
    await connect(a.url);
    await connect(b.url);
    await connect(b.url);
    expect(await refusal(a.url)).toBe('TOO_MANY_CONNECTIONS');
    expect(await refusal(b.url)).toBe('TOO_MANY_CONNECTIONS');
    closeAll();
    await eventually(async () => (await redis.zcard(`${p}ws:conn:total`)) === 0);

    const c = await instance(p);
    const d = await instance(p);
    for (let i = 0; i < 10; i++) await connect(c.url);
    for (let i = 0; i < 10; i++) await connect(d.url);
    expect(await refusal(c.url)).toBe('TOO_MANY_CONNECTIONS');
  });

  it("keeps live connections counted by heartbeat, and stops counting a crashed instance's", async () => {
    const p = prefix();
    const a = await instance(p, { heartbeatMs: 200, entryTtlMs: 1_000 });
    const user = newUserId();
    const token = signToken(user);
    for (let i = 0; i < 10; i++) await connect(a.url, { token });
    await sleep(1_600); // longer than the entry TTL: only heartbeats keep them counted
    expect(await refusal(a.url, { token })).toBe('TOO_MANY_CONNECTIONS');
    closeAll();
    await eventually(async () => (await redis.zcard(`${p}ws:conn:user:${user}`)) === 0);

    // What a crashed instance leaves behind: entries nobody will heart-beat or remove.
    const other = newUserId();
    const [sec, micro] = await redis.time();
    const expiresAt = Number(sec) * 1000 + Math.floor(Number(micro) / 1000) + 800;
    const members = Array.from({ length: 10 }, (_, i) => [expiresAt, `crashed-${i}`]).flat();
    await redis.zadd(`${p}ws:conn:user:${other}`, ...members);
    const otherToken = signToken(other);
    expect(await refusal(a.url, { token: otherToken })).toBe('TOO_MANY_CONNECTIONS');
    await eventually(async () => (await refusal(a.url, { token: otherToken })) === 'CONNECTED', 5_000);
  });

  it('removes its entries from Redis on shutdown', async () => {
    const p = prefix();
    const a = await instance(p);
    for (let i = 0; i < 3; i++) await connect(a.url, { token: signToken(newUserId()) });
    expect(await redis.zcard(`${p}ws:conn:total`)).toBe(3);
    await a.t.close();
    apps.splice(apps.indexOf(a.t), 1);
    expect(await redis.zcard(`${p}ws:conn:total`)).toBe(0);
  });
});
