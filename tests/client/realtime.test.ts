import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigner } from 'fast-jwt';
import { userChannel as clientUserChannel, type Realtime } from '../../client/src/index.js';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import { signedInClient } from './helpers.js';
import { eventually } from '../support/eventually.js';
import type { DbHandle } from '../../src/db/index.js';
import { marketChannel, userChannel, userNotificationsChannel } from '../../src/domains/realtime/channels.js';
import { marketUpdate, notificationMessage } from '../realtime/helpers.js';

const SECRET = 'test-secret-test-secret-test-secret-0123456789';
let db: DbHandle;
let t: TestApp;
let port: number;
const open: Realtime[] = [];

async function startOn(p: number) {
  const app = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, { db });
  await app.app.listen({ port: p, host: '127.0.0.1' });
  return app;
}

beforeAll(async () => {
  db = await createTestDb();
  t = await startOn(0);
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(async () => {
  for (const r of open) r.close();
  await t?.close();
  await db?.close();
});

describe('client realtime helper', () => {
  it('subscribes with acks and receives its own notifications', async () => {
    const { c, user } = await signedInClient(`http://127.0.0.1:${port}`);
    const live = c.realtime({ socketOptions: { reconnectionDelay: 200, reconnectionDelayMax: 500 } });
    open.push(live);
    const got: unknown[] = [];
    live.on('notification', (n) => got.push(n));
    expect(await live.subscribe('user:notifications')).toEqual({ ok: true, seq: 0 });
    expect(await live.subscribe('user:00000000-0000-4000-8000-000000000000')).toMatchObject({
      ok: false,
      error: { code: expect.any(String) },
    });
    t.app.publish(userNotificationsChannel(user.id), 'notification', notificationMessage('n1', { title: 'Hi' }));
    await eventually(() => got.length, 15_000);
    expect(got[0]).toMatchObject({ id: 'n1' });
  });

  it('survives a token expiry: refreshes, re-authenticates and resubscribes to private channels', async () => {
    const { c, user } = await signedInClient(`http://127.0.0.1:${port}`);
    // A token that expires in 7 s: the server warns 5 s before, i.e. after ~2 s.
    const shortLived = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 7_000 })({
      sub: user.id,
      walletAddress: user.walletAddress,
      chain: user.chain,
    });
    (c.session as unknown as { accessToken: string }).accessToken = shortLived;
    const live = c.realtime();
    open.push(live);
    let expiredSeen = 0;
    live.on('auth:expired', () => expiredSeen++);
    expect(await live.subscribe(clientUserChannel(user.id))).toEqual({ ok: true });
    await eventually(() => expiredSeen > 0, 10_000);
    await eventually(() => c.session.token !== shortLived, 15_000);
    const got: unknown[] = [];
    // No event is defined on user:<id> yet: listen on the raw socket and drive the bus publish() wraps.
    live.socket.on('portfolio:update', (p: unknown) => got.push(p));
    // Resubscribed after re-auth: a publish on the private channel arrives.
    await eventually(() => {
      t.app.bus.emit('publish', { channel: userChannel(user.id), event: 'portfolio:update', payload: { v: 1 } });
      return got.length > 0;
    }, 15_000);
    expect(got[0]).toEqual({ v: 1 });
  }, 30_000);

  it('survives a server restart: reconnects and resubscribes', async () => {
    const { c } = await signedInClient(`http://127.0.0.1:${port}`);
    const live = c.realtime({ socketOptions: { reconnectionDelay: 200, reconnectionDelayMax: 500 } });
    open.push(live);
    expect(await live.subscribe('market:pm-restart')).toEqual({ ok: true });
    let disconnects = 0;
    live.socket.on('disconnect', () => disconnects++);
    await t.close();
    await eventually(() => disconnects > 0, 15_000);
    t = await startOn(port);
    await eventually(() => live.socket.connected, 15_000);
    const got: unknown[] = [];
    live.on('market:update', (u) => got.push(u));
    await eventually(() => {
      t.app.publish(marketChannel('pm-restart'), 'market:update', marketUpdate('pm-restart', 0.5));
      return got.length > 0;
    }, 15_000);
    expect(got[0]).toMatchObject({ marketId: 'pm-restart' });
  }, 30_000);
});
