import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { notificationDeliveries, pushDevices } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeExpo, type FakeExpo } from '../fakes/expo.js';
import { notify, type NotifyDeps } from '../../src/domains/notifications/service.js';
import { drainDeliveries } from '../../src/domains/notifications/delivery.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

// docs/decisions.md §13.4: dead letters and the ledger through the internal API.
const INTERNAL = 'internal-token-deliveries-api-01';
const auth = { authorization: `Bearer ${INTERNAL}` };
let t: TestApp;
let expo: FakeExpo;
let deps: NotifyDeps;

beforeAll(async () => {
  expo = await startFakeExpo();
  t = await buildTestApp({ PUSH_API_URL: expo.url, INTERNAL_API_TOKEN: INTERNAL });
  deps = { db: t.app.db, config: t.app.config, log: t.app.log, clock: t.app.clock, publish: t.app.publish, delivery: t.app.delivery };
});
afterAll(async () => {
  await t?.close();
  await expo?.close();
});
beforeEach(() => expo.reset());

const get = (url: string, headers: Record<string, string> = auth) => t.app.inject({ method: 'GET', url, headers });
const post = (url: string, payload?: object) => t.app.inject({ method: 'POST', url, headers: auth, ...(payload ? { payload } : {}) });

/** A user whose `n` devices Expo refuses with MessageTooBig: `n` dead letters per notification. */
async function deadLetters(n: number) {
  const u = await createUser(t.app);
  const tokens = Array.from({ length: n }, (_, i) => `ExponentPushToken[dead-${i}-${u.id.slice(0, 8)}]`);
  await t.app.db.insert(pushDevices).values(tokens.map((token) => ({ token, userId: u.id, platform: 'ios' })));
  for (const token of tokens) expo.ticketErrors.set(token, 'MessageTooBig');
  const note = await notify(deps, { userId: u.id, type: 'order_filled', title: 'Too big', message: 'M' });
  await drainDeliveries(t.app.delivery);
  return { user: u, tokens, notification: note };
}

describe('GET /api/v1/internal/deliveries', () => {
  it('lists dead letters by default, newest updatedAt first, in the documented shape, and pages with a cursor', async () => {
    const { user, tokens, notification } = await deadLetters(3);
    const res = await get('/api/v1/internal/deliveries?limit=2');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['deliveries', 'nextCursor']);
    expect(body.deliveries).toHaveLength(2);
    const first = body.deliveries[0];
    expect(Object.keys(first)).toEqual([
      'id',
      'notificationId',
      'userId',
      'channel',
      'target',
      'status',
      'attempts',
      'lastError',
      'updatedAt',
      'heldAt',
      'digest',
    ]);
    expect(first).toMatchObject({ heldAt: null, digest: null });
    expect(first).toMatchObject({ notificationId: notification.id, userId: user.id, channel: 'push', status: 'failed', attempts: 1 });
    expect(first.target.kind).toBe('device');
    expect(tokens).toContain(first.target.id);
    expect(first.lastError).toMatch(/MessageTooBig/);
    const all = [...body.deliveries];
    let cursor = body.nextCursor;
    while (cursor && all.length < 3) {
      const page = (await get(`/api/v1/internal/deliveries?limit=2&cursor=${encodeURIComponent(cursor)}`)).json();
      all.push(...page.deliveries);
      cursor = page.nextCursor;
    }
    expect(new Set(all.slice(0, 3).map((d) => d.target.id))).toEqual(new Set(tokens));
    const times = all.map((d) => Date.parse(d.updatedAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('filters by status; bad status, limit or cursor → 400; no token → 401', async () => {
    const u = await createUser(t.app);
    await t.app.db.insert(pushDevices).values({ token: `ExponentPushToken[ok-${u.id}]`, userId: u.id, platform: 'ios' });
    const n = await notify(deps, { userId: u.id, type: 'order_filled', title: 'Fine', message: 'M' });
    await drainDeliveries(t.app.delivery);
    const sent = (await get('/api/v1/internal/deliveries?status=sent&limit=100')).json();
    expect(sent.deliveries.some((d: { notificationId: string; status: string }) => d.notificationId === n.id && d.status === 'sent')).toBe(
      true,
    );
    expect(sent.deliveries.every((d: { status: string }) => d.status === 'sent')).toBe(true);
    for (const q of ['status=lost', 'limit=0', 'limit=101', 'limit=x', 'cursor=forged.cursor']) {
      expectProblem(await get(`/api/v1/internal/deliveries?${q}`), 400, q.startsWith('cursor') ? 'INVALID_CURSOR' : 'VALIDATION_ERROR');
    }
    // A cursor of another status's listing is refused.
    await deadLetters(2);
    const failedPage = (await get('/api/v1/internal/deliveries?limit=1')).json();
    expectProblem(
      await get(`/api/v1/internal/deliveries?status=sent&cursor=${encodeURIComponent(failedPage.nextCursor)}`),
      400,
      'INVALID_CURSOR',
    );
    expect((await get('/api/v1/internal/deliveries', {})).statusCode).toBe(401);
  });
});

describe('POST /api/v1/internal/deliveries/:id/retry', () => {
  it('202: the row is pending again and only that device is sent to; 409 when not failed; 404 when unknown', async () => {
    const { tokens, notification } = await deadLetters(2);
    const [row] = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.target, tokens[0]));
    expo.ticketErrors.clear();
    const res = await post(`/api/v1/internal/deliveries/${row.id}/retry`);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ id: row.id, notificationId: notification.id, status: 'pending' });
    await drainDeliveries(t.app.delivery);
    const after = await t.app.db.select().from(notificationDeliveries).where(eq(notificationDeliveries.notificationId, notification.id));
    expect(after.map((r) => [r.target, r.status]).sort()).toEqual([
      [tokens[0], 'sent'],
      [tokens[1], 'failed'],
    ]);
    expect(expo.accepted.map((m) => m.to)).toEqual([tokens[0]]);

    expectProblem(await post(`/api/v1/internal/deliveries/${row.id}/retry`), 409, 'DELIVERY_NOT_FAILED');
    expectProblem(await post('/api/v1/internal/deliveries/00000000-0000-4000-8000-000000000000/retry'), 404, 'NOT_FOUND');
    expectProblem(await post('/api/v1/internal/deliveries/not-a-uuid/retry'), 404, 'NOT_FOUND');
  });
});

describe('GET /api/v1/internal/deliveries/summary and POST …/resume', () => {
  it('one entry per channel with its pause and pending/failed counts', async () => {
    await deadLetters(1);
    const res = await get('/api/v1/internal/deliveries/summary');
    expect(res.statusCode).toBe(200);
    const { channels } = res.json();
    expect(channels.map((c: { channel: string }) => c.channel)).toEqual(['push', 'messenger']);
    for (const c of channels) expect(Object.keys(c)).toEqual(['channel', 'paused', 'pausedReason', 'pending', 'failed', 'held']);
    expect(channels[0].failed).toBeGreaterThanOrEqual(1);
    expect(channels[0]).toMatchObject({ paused: false, pausedReason: null });
    expectProblem(await post('/api/v1/internal/deliveries/resume', { channel: 'fax' }), 400, 'VALIDATION_ERROR');
    expect((await post('/api/v1/internal/deliveries/resume', { channel: 'messenger' })).json()).toMatchObject({
      channel: 'messenger',
      paused: false,
    });
  });
});
