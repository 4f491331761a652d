import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSigner } from 'fast-jwt';
import { type Realtime, type RealtimeEvents } from '../../client/src/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { signedInClient } from './helpers.js';
import { eventually } from '../support/eventually.js';

/**
 * The client's side of docs/decisions.md §12: it remembers the last `seq` of
 * the notifications stream and resumes with it, by itself, after a dropped
 * connection and after `auth:expired` → `auth`; a `reset` reaches the app as
 * `notifications:reset`.
 */

const SECRET = 'test-secret-test-secret-test-secret-0123456789';
const INTERNAL = 'internal-token-0123456789abcdef';
let t: TestApp;
let port: number;
const open: Realtime[] = [];

beforeAll(async () => {
  t = await buildTestApp({ TRUST_PROXY: '127.0.0.1', INTERNAL_API_TOKEN: INTERNAL });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(async () => {
  for (const r of open) r.close();
  await t?.close();
});

async function raise(userId: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/internal/notifications',
    headers: { authorization: `Bearer ${INTERNAL}` },
    payload: { userId, type: 'mission_completed', title: 'Done', message: 'm' },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>();
}

/** Every stream event the app's listeners get, as [event, seq]. */
function listen(live: Realtime) {
  const got: Array<[string, number]> = [];
  for (const e of ['notification', 'notification:updated', 'notification:deleted', 'notifications:read-all'] as const) {
    live.on(e, (p: RealtimeEvents[typeof e]) => got.push([e, p.seq]));
  }
  return got;
}

describe('client: the notifications stream resumes by itself', () => {
  it('after a dropped connection, with the last seq it saw: every missed event once, in order', async () => {
    const { c, user } = await signedInClient(`http://127.0.0.1:${port}`);
    const live = c.realtime();
    open.push(live);
    const got = listen(live);
    expect(await live.subscribe('user:notifications')).toEqual({ ok: true, seq: 0 });
    const first = await raise(user.id);
    await raise(user.id);
    await eventually(() => got.length === 2, 15_000);

    // The network drops; changes happen while the client is away; then it comes back.
    live.socket.io.reconnection(false);
    const down = new Promise((r) => live.socket.once('disconnect', r));
    live.socket.io.engine.close();
    await down;
    await raise(user.id);
    await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/notifications/${first.id}`,
      headers: { authorization: `Bearer ${c.session.token}` },
    });
    await raise(user.id);
    live.socket.io.reconnection(true);
    live.socket.connect();

    await eventually(() => got.length === 5, 15_000);
    expect(got).toEqual([
      ['notification', 1],
      ['notification', 2],
      ['notification', 3],
      ['notification:updated', 4],
      ['notification', 5],
    ]);
    expect(live.notificationsSeq).toBe(5);
    await raise(user.id);
    await eventually(() => got.length === 6, 15_000);
    expect(got[5]).toEqual(['notification', 6]);
  }, 30_000);

  it('after auth:expired → auth, with the last seq it saw', async () => {
    // The refresh takes 1.5 s: events raised meanwhile are missed live and must be replayed.
    const { c, user } = await signedInClient(`http://127.0.0.1:${port}`, { slowRefresh: 1_500 });
    const shortLived = createSigner({ key: SECRET, algorithm: 'HS256', expiresIn: 7_000 })({
      sub: user.id,
      walletAddress: user.walletAddress,
      chain: user.chain,
    });
    (c.session as unknown as { accessToken: string }).accessToken = shortLived;
    const live = c.realtime();
    open.push(live);
    const got = listen(live);
    let expired = 0;
    live.on('auth:expired', () => expired++);
    expect(await live.subscribe('user:notifications')).toEqual({ ok: true, seq: 0 });
    await raise(user.id);
    await eventually(() => got.length === 1, 15_000);
    await eventually(() => expired > 0, 10_000);
    await raise(user.id);
    await raise(user.id);
    await eventually(() => got.length === 3, 15_000);
    expect(got.map(([, seq]) => seq)).toEqual([1, 2, 3]);
    expect(c.session.token).not.toBe(shortLived);
  }, 30_000);

  it('tells the app to reload with notifications:reset when the stream cannot be resumed, then continues', async () => {
    const { c, user } = await signedInClient(`http://127.0.0.1:${port}`);
    const live = c.realtime();
    open.push(live);
    const got = listen(live);
    const resets: Array<{ seq: number }> = [];
    live.on('notifications:reset', (r) => resets.push(r));
    // A lastSeq the server never issued (e.g. a database restored from a backup).
    expect(await live.subscribe('user:notifications', { lastSeq: 40 })).toEqual({ ok: true, seq: 0, reset: true });
    expect(resets).toEqual([{ seq: 0 }]);
    expect(live.notificationsSeq).toBe(0);
    await raise(user.id);
    await eventually(() => got.length === 1, 15_000);
    expect(got).toEqual([['notification', 1]]);
  }, 30_000);
});
