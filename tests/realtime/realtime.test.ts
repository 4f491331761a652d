import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import type { DbHandle } from '../../src/db/index.js';
import { marketChannel, monitorChannel, userChannel, userNotificationsChannel } from '../../src/domains/realtime/channels.js';
import { MonitorUpdateSchema } from '../../src/domains/realtime/schemas.js';
import {
  ack,
  closeAll,
  connect,
  listen,
  marketUpdate as update,
  newUserId,
  next,
  notificationMessage,
  record,
  refusal,
  signToken,
} from './helpers.js';
import { eventually } from '../support/eventually.js';

let db: DbHandle;
let t: TestApp;
let url: string;

beforeAll(async () => {
  db = await createTestDb();
  t = await buildTestApp({}, { db });
  url = await listen(t.app);
});
afterEach(() => closeAll());
afterAll(async () => {
  closeAll();
  await t?.close();
  await db?.close();
});

describe('public channels', () => {
  it('delivers a market:update published through app.publish to subscribers only', async () => {
    const a = await connect(url);
    const b = await connect(url);
    expect(await ack(a, 'subscribe', { channel: 'market:pm-1' })).toEqual({ ok: true });
    expect(await ack(b, 'subscribe', { channel: 'market:ks-KXBTC-25NOV22-T97999.99' })).toEqual({ ok: true });
    const seenByB = record(b, 'market:update');
    const got = next(a, 'market:update');
    t.app.publish(marketChannel('pm-1'), 'market:update', update('pm-1'));
    expect(await got).toMatchObject({ marketId: 'pm-1', yesPrice: 0.42, volume: 1000 });
    // A fence on b's own channel: once it arrives, the pm-1 update would have too.
    const fence = next(b, 'market:update');
    t.app.publish(marketChannel('ks-KXBTC-25NOV22-T97999.99'), 'market:update', update('ks-KXBTC-25NOV22-T97999.99'));
    expect(await fence).toMatchObject({ marketId: 'ks-KXBTC-25NOV22-T97999.99' });
    expect(seenByB).toHaveLength(1);
  });

  it('delivers monitor:update on monitor:leaderboard and stops after unsubscribe', async () => {
    const a = await connect(url);
    expect(await ack(a, 'subscribe', { channel: 'monitor:leaderboard' })).toEqual({ ok: true });
    expect(await ack(a, 'subscribe', { channel: 'market:pm-2' })).toEqual({ ok: true });
    const got = next(a, 'monitor:update');
    const syncedAt = new Date().toISOString();
    t.app.publish(monitorChannel('leaderboard'), 'monitor:update', { name: 'leaderboard', kind: 'sync', syncedAt });
    expect(MonitorUpdateSchema.parse(await got)).toEqual({ name: 'leaderboard', kind: 'sync', syncedAt });

    expect(await ack(a, 'unsubscribe', { channel: 'monitor:leaderboard' })).toEqual({ ok: true });
    const monitors = record(a, 'monitor:update');
    t.app.publish(monitorChannel('leaderboard'), 'monitor:update', { name: 'leaderboard', kind: 'enrich', syncedAt });
    const fence = next(a, 'market:update');
    t.app.publish(marketChannel('pm-2'), 'market:update', update('pm-2'));
    await fence;
    expect(monitors).toEqual([]);
  });

  it('works over HTTP long-polling too (the Fastify server routes /socket.io/ to Socket.IO)', async () => {
    const a = await connect(url, { transports: ['polling'] });
    expect(await ack(a, 'subscribe', { channel: 'market:pm-3' })).toEqual({ ok: true });
    const got = next(a, 'market:update');
    t.app.publish('market:pm-3', 'market:update', update('pm-3'));
    expect(await got).toMatchObject({ marketId: 'pm-3' });
  });

  it('answers INVALID_CHANNEL for unknown names and malformed payloads, and survives a missing ack', async () => {
    const a = await connect(url);
    for (const payload of [
      { channel: 'foo' },
      { channel: 'market:' },
      { channel: 'market:has space' },
      { channel: 'monitor:UPPER' },
      { channel: 'user:' },
      { channel: 'user:abc:notifications' },
      { channel: 'x'.repeat(300) },
      { channel: 42 },
      { channel: 'market:pm-1', extra: true },
      'market:pm-1',
      null,
      undefined,
    ]) {
      const r = await ack(a, 'subscribe', payload);
      expect(r, JSON.stringify(payload)).toMatchObject({ ok: false, error: { code: 'INVALID_CHANNEL' } });
      if (!r.ok) expect(typeof r.error.message).toBe('string');
    }
    expect(await ack(a, 'unsubscribe', { channel: 'nope' })).toMatchObject({ ok: false, error: { code: 'INVALID_CHANNEL' } });
    // No ack callback at all: the server must neither crash nor drop the connection.
    a.emit('subscribe', { channel: 'market:pm-4' });
    a.emit('subscribe');
    a.emit('unsubscribe', 'garbage');
    expect(await ack(a, 'subscribe', { channel: 'market:pm-5' })).toEqual({ ok: true });
    expect(a.connected).toBe(true);
    // The ack-less subscribe still took effect.
    const got = next(a, 'market:update');
    t.app.publish('market:pm-4', 'market:update', update('pm-4'));
    expect(await got).toMatchObject({ marketId: 'pm-4' });
  });
});

describe('private channels', () => {
  it('refuses user channels without a token (FORBIDDEN)', async () => {
    const a = await connect(url);
    expect(await ack(a, 'subscribe', { channel: `user:${newUserId()}` })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(await ack(a, 'subscribe', { channel: 'user:notifications' })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
  });

  it('lets the owner in, keeps others out, and routes notifications to the caller only', async () => {
    const alice = newUserId();
    const bob = newUserId();
    const a = await connect(url, { token: signToken(alice) });
    const b = await connect(url, { token: signToken(bob) });
    expect(await ack(a, 'subscribe', { channel: userChannel(alice) })).toEqual({ ok: true });
    expect(await ack(b, 'subscribe', { channel: userChannel(alice) })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    // docs/decisions.md §12.3: the stream's subscribe acks the latest seq (0: nothing stored for these users).
    expect(await ack(a, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    expect(await ack(b, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });

    const bobSees = record(b, 'notification');
    const notification = notificationMessage('n1');
    const got = next(a, 'notification');
    t.app.publish(userNotificationsChannel(alice), 'notification', notification);
    expect(await got).toEqual(notification);

    // No event is defined on user:<id> yet, so publish() would not compile: drive the bus it wraps.
    const perUser = next(a, 'position:update');
    t.app.bus.emit('publish', { channel: userChannel(alice), event: 'position:update', payload: { marketId: 'pm-1' } });
    expect(await perUser).toEqual({ marketId: 'pm-1' });

    const fence = next(b, 'notification');
    t.app.publish(userNotificationsChannel(bob), 'notification', { ...notification, id: 'n2' });
    expect(await fence).toMatchObject({ id: 'n2' });
    expect(bobSees).toHaveLength(1);
  });

  it('refuses an invalid, foreign, malformed or expired token with connect_error UNAUTHORIZED', async () => {
    expect(await refusal(url, { token: 'not-a-jwt' })).toBe('UNAUTHORIZED');
    expect(await refusal(url, { token: signToken(newUserId(), { secret: 'another-secret-another-secret-another-0000' }) })).toBe(
      'UNAUTHORIZED',
    );
    expect(await refusal(url, { token: 12345 })).toBe('UNAUTHORIZED');
    expect(await refusal(url, { token: '' })).toBe('UNAUTHORIZED');
    expect(await refusal(url, { token: signToken(newUserId(), { expiresInMs: 1 }) })).toBe('UNAUTHORIZED');
    // A token inside the 5 s expiry lead is already as good as expired.
    expect(await refusal(url, { token: signToken(newUserId(), { expiresInMs: 3_000 }) })).toBe('UNAUTHORIZED');
    const err = await connect(url, { token: 'nope' }).catch((e: Error & { data?: unknown }) => e);
    expect((err as Error & { data?: unknown }).data).toMatchObject({ code: 'UNAUTHORIZED' });
    // A null token is "no token": public channels only.
    const anon = await connect(url, { token: null });
    expect(await ack(anon, 'subscribe', { channel: 'market:pm-1' })).toEqual({ ok: true });
  });
});

describe('token expiry and re-auth', () => {
  it('leaves private channels, sends auth:expired, and resumes after auth with a fresh token', async () => {
    const alice = newUserId();
    // exp is whole seconds: 7 s means 6–7 s left, so the 5 s lead fires within about 2 s.
    const a = await connect(url, { token: signToken(alice, { expiresInMs: 7_000 }) });
    expect(await ack(a, 'subscribe', { channel: userChannel(alice) })).toEqual({ ok: true });
    expect(await ack(a, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    expect(await ack(a, 'subscribe', { channel: 'market:pm-9' })).toEqual({ ok: true });

    const expired = await next<{ channels: string[]; expiresAt: string }>(a, 'auth:expired', 5_000);
    expect(expired.channels.sort()).toEqual([userChannel(alice), 'user:notifications'].sort());
    expect(Date.parse(expired.expiresAt)).toBeGreaterThan(Date.now());

    const privateSeen = record(a, 'notification');
    t.app.publish(userNotificationsChannel(alice), 'notification', notificationMessage('late'));
    const fence = next(a, 'market:update');
    t.app.publish('market:pm-9', 'market:update', update('pm-9'));
    await fence; // public channels stay
    expect(privateSeen).toEqual([]);
    expect(await ack(a, 'subscribe', { channel: 'user:notifications' })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });

    expect(await ack(a, 'auth', { token: 'garbage' })).toMatchObject({ ok: false, error: { code: 'UNAUTHORIZED' } });
    expect(await ack(a, 'auth', { token: signToken(newUserId()) })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(await ack(a, 'auth', { nope: 1 })).toMatchObject({ ok: false });
    expect(await ack(a, 'auth', { token: signToken(alice) })).toEqual({ ok: true });
    expect(await ack(a, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    const got = next(a, 'notification');
    const fresh = notificationMessage('fresh');
    t.app.publish(userNotificationsChannel(alice), 'notification', fresh);
    expect(await got).toEqual(fresh);
  });

  it('lets an anonymous connection sign in with auth', async () => {
    const carol = newUserId();
    const a = await connect(url);
    expect(await ack(a, 'subscribe', { channel: userChannel(carol) })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(await ack(a, 'auth', { token: signToken(carol) })).toEqual({ ok: true });
    expect(await ack(a, 'subscribe', { channel: userChannel(carol) })).toEqual({ ok: true });
  });
});

describe('limits (docs/api-contract.md §8)', () => {
  it('refuses an 11th connection of one user and admits it again after a disconnect', async () => {
    const dave = newUserId();
    const token = signToken(dave);
    const sockets = [];
    for (let i = 0; i < 10; i++) sockets.push(await connect(url, { token }));
    expect(await refusal(url, { token })).toBe('TOO_MANY_CONNECTIONS');
    // Other users and anonymous clients are unaffected.
    const other = await connect(url, { token: signToken(newUserId()) });
    other.close();
    sockets[0].close();
    await eventually(async () => (await refusal(url, { token })) === 'CONNECTED');
  });

  it('caps subscribe/unsubscribe at 30 a minute per socket with RATE_LIMITED', async () => {
    const a = await connect(url);
    for (let i = 0; i < 30; i++) {
      const r = await ack(a, i % 2 ? 'unsubscribe' : 'subscribe', { channel: 'market:pm-rate' });
      expect(r).toEqual({ ok: true });
    }
    const over = await ack(a, 'subscribe', { channel: 'market:pm-rate' });
    expect(over).toMatchObject({ ok: false, error: { code: 'RATE_LIMITED' } });
    if (!over.ok) expect(over.error.retryAfter).toBeGreaterThan(0);
    expect(await ack(a, 'subscribe', 'garbage')).toMatchObject({ ok: false, error: { code: 'RATE_LIMITED' } });
    // The budget is per socket.
    const b = await connect(url);
    expect(await ack(b, 'subscribe', { channel: 'market:pm-rate' })).toEqual({ ok: true });
  });

  it('counts unknown events against that budget and disconnects a socket that floods them (issue #34)', async () => {
    const a = await connect(url);
    const closed = new Promise<string>((resolve) => a.once('disconnect', (reason: string) => resolve(reason)));
    const junk = 'x'.repeat(8 * 1024);
    for (let i = 0; i < 2_000 && a.connected; i++) a.emit(`junk-${i}`, junk);
    expect(await closed).toBe('io server disconnect');
    // Unknown events spent the budget a subscribe would use: 20 of them leave 10 subscribes.
    const b = await connect(url);
    for (let i = 0; i < 20; i++) b.emit('nope', 1);
    for (let i = 0; i < 10; i++) expect(await ack(b, 'subscribe', { channel: 'market:pm-rate' })).toEqual({ ok: true });
    expect(await ack(b, 'subscribe', { channel: 'market:pm-rate' })).toMatchObject({ ok: false, error: { code: 'RATE_LIMITED' } });
  });
});

describe('limits with their own apps', () => {
  it('caps connections per IP at 20, ignoring X-Forwarded-For unless TRUST_PROXY', async () => {
    const own = await buildTestApp({}, { db });
    const u = await listen(own.app);
    try {
      for (let i = 0; i < 20; i++) await connect(u, { extraHeaders: { 'x-forwarded-for': `198.51.100.${i + 1}` } });
      expect(await refusal(u, { extraHeaders: { 'x-forwarded-for': '203.0.113.7' } })).toBe('TOO_MANY_CONNECTIONS');
    } finally {
      closeAll();
      await own.close();
    }
  });

  it('counts the X-Forwarded-For client with TRUST_PROXY', async () => {
    const own = await buildTestApp({ TRUST_PROXY: '127.0.0.1,10.0.0.0/8' }, { db });
    const u = await listen(own.app);
    try {
      const h = { extraHeaders: { 'x-forwarded-for': '198.51.100.1, 10.0.0.1' } };
      for (let i = 0; i < 20; i++) await connect(u, h);
      expect(await refusal(u, h)).toBe('TOO_MANY_CONNECTIONS');
      expect(await refusal(u, { extraHeaders: { 'x-forwarded-for': '198.51.100.2' } })).toBe('CONNECTED');
    } finally {
      closeAll();
      await own.close();
    }
  });

  it('caps raw Engine.IO connections that never join the namespace, per client address', async () => {
    const own = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, { db, realtime: { maxConnectionsPerIp: 3 } });
    const u = await listen(own.app);
    // A bare Engine.IO handshake (no Socket.IO CONNECT): an open connection the socket limits never see.
    const handshake = (ip: string) => fetch(`${u}/socket.io/?EIO=4&transport=polling`, { headers: { 'x-forwarded-for': ip } });
    try {
      for (let i = 0; i < 3; i++) {
        const res = await handshake('198.51.100.60');
        expect(res.status).toBe(200);
        expect(await res.text()).toContain('"sid"');
      }
      const refused = await handshake('198.51.100.60');
      expect(refused.status).toBe(403);
      await refused.text();
      // Another client is unaffected, and so is a real Socket.IO client of it.
      expect((await handshake('198.51.100.61')).status).toBe(200);
      expect(await refusal(u, { extraHeaders: { 'x-forwarded-for': '198.51.100.62' } })).toBe('CONNECTED');
    } finally {
      closeAll();
      await own.close();
    }
  });

  it('caps IPv6 networks per /56 and per /48, so one allocation cannot fill the server (issue 34)', async () => {
    const own = await buildTestApp(
      { TRUST_PROXY: '127.0.0.1' },
      { db, realtime: { maxConnections: 100, maxConnectionsPerIp: 2, maxConnectionsPer56: 4, maxConnectionsPer48: 6 } },
    );
    const u = await listen(own.app);
    const from = (ip: string) => ({ extraHeaders: { 'x-forwarded-for': ip } });
    try {
      // Four /64s of one /56, one socket each: the /56 is full, whichever of its /64s asks next.
      for (let i = 0; i < 4; i++) await connect(u, from(`2001:db8:0:1${i}0::1`));
      expect(await refusal(u, from('2001:db8:0:1ff::1'))).toBe('TOO_MANY_CONNECTIONS');
      // Another /56 of the same /48 takes the /48 to its ceiling of 6.
      await connect(u, from('2001:db8:0:200::1'));
      await connect(u, from('2001:db8:0:201::1'));
      expect(await refusal(u, from('2001:db8:0:300::1'))).toBe('TOO_MANY_CONNECTIONS');
      // Other networks and IPv4 clients are unaffected.
      expect(await refusal(u, from('2001:db8:1::1'))).toBe('CONNECTED');
      expect(await refusal(u, from('198.51.100.90'))).toBe('CONNECTED');
    } finally {
      closeAll();
      await own.close();
    }
  });

  it('reserves part of the total for signed-in sockets: an anonymous flood never refuses a user (issue 34)', async () => {
    const own = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, { db, realtime: { maxConnections: 6, reservedForUsers: 2 } });
    const u = await listen(own.app);
    try {
      for (let i = 0; i < 4; i++) await connect(u, { extraHeaders: { 'x-forwarded-for': `198.51.100.${100 + i}` } });
      expect(await refusal(u, { extraHeaders: { 'x-forwarded-for': '198.51.100.110' } })).toBe('TOO_MANY_CONNECTIONS');
      await connect(u, { token: signToken(newUserId()) });
      await connect(u, { token: signToken(newUserId()) });
      expect(await refusal(u, { token: signToken(newUserId()) })).toBe('TOO_MANY_CONNECTIONS');
    } finally {
      closeAll();
      await own.close();
    }
  });

  it('caps the total number of connections (configurable; 5,000 by default)', async () => {
    const own = await buildTestApp({}, { db, realtime: { maxConnections: 3 } });
    const u = await listen(own.app);
    try {
      const first = await connect(u);
      await connect(u, { token: signToken(newUserId()) });
      await connect(u);
      expect(await refusal(u)).toBe('TOO_MANY_CONNECTIONS');
      expect(await refusal(u, { token: signToken(newUserId()) })).toBe('TOO_MANY_CONNECTIONS');
      first.close();
      await eventually(async () => (await refusal(u)) === 'CONNECTED');
    } finally {
      closeAll();
      await own.close();
    }
  });

  it('closes gracefully with sockets connected: close() resolves and clients see the disconnect', async () => {
    const own = await buildTestApp({}, { db });
    const u = await listen(own.app);
    const clients = await Promise.all([connect(u), connect(u, { token: signToken(newUserId()) }), connect(u, { transports: ['polling'] })]);
    await ack(clients[0], 'subscribe', { channel: 'market:pm-1' });
    const reasons = clients.map((c) => next<string>(c, 'disconnect', 10_000));
    await own.close();
    for (const reason of await Promise.all(reasons)) expect(['io server disconnect', 'transport close']).toContain(reason);
    expect(await refusal(u)).not.toBe('CONNECTED');
  });
});
