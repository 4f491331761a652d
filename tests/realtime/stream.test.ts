import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../support/users.js';
import { appendStreamEvents, type StreamEvent } from '../../src/domains/notifications/stream.js';
import { userNotificationsChannel } from '../../src/domains/realtime/channels.js';
import { streamPruneJob } from '../../src/jobs/stream-prune.js';
import type { Client } from './helpers.js';
import { ack, closeAll, connect, listen, next, notificationMessage, sleep } from './helpers.js';
import { eventually } from '../support/eventually.js';

/**
 * docs/decisions.md §12 on one instance (PGlite or PostgreSQL): the four
 * stream events with seq and unreadCount, resume with lastSeq, reset, the
 * lastSeq validation, and the per-socket ordering that fills gaps from the
 * database. tests/multi-instance.pg.redis.test.ts covers two instances.
 */

const INTERNAL = 'internal-token-0123456789abcdef';
const STREAM_EVENTS = ['notification', 'notification:updated', 'notification:deleted', 'notifications:read-all'];

let t: TestApp;
let url: string;

beforeAll(async () => {
  t = await buildTestApp(
    { INTERNAL_API_TOKEN: INTERNAL, STREAM_KEEP_DAYS: '0', STREAM_KEEP_EVENTS: '3' },
    { realtime: { streamGapWaitMs: 100 } },
  );
  url = await listen(t.app);
});
afterEach(() => closeAll());
afterAll(async () => {
  closeAll();
  await t?.close();
});

type Seen = { event: string; payload: Record<string, any> };

/** Every stream event a socket receives, in arrival order. */
function stream(socket: Client): Seen[] {
  const seen: Seen[] = [];
  socket.onAny((event: string, payload: Record<string, any>) => {
    if (STREAM_EVENTS.includes(event)) seen.push({ event, payload });
  });
  return seen;
}

async function raise(userId: string, title = 'n') {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/internal/notifications',
    headers: { authorization: `Bearer ${INTERNAL}` },
    payload: { userId, type: 'order_filled', title, message: 'm' },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>();
}

const rest = (auth: Record<string, string>, method: 'GET' | 'PATCH' | 'DELETE', path = '') =>
  t.app.inject({ method, url: `/api/v1/notifications${path}`, headers: auth });

const seqs = (seen: Seen[]) => seen.map((s) => s.payload.seq as number);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('the four stream events (docs/decisions.md §12.2)', () => {
  it('carry seq and unreadCount; changes that change nothing emit nothing and take no seq; the list carries seq', async () => {
    const u = await createUser(t.app);
    expect((await rest(u.auth, 'GET')).json()).toMatchObject({ seq: 0, unreadCount: 0 });
    const s = await connect(url, { token: u.token });
    const seen = stream(s);
    expect(await ack(s, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });

    const a = await raise(u.id, 'a');
    const b = await raise(u.id, 'b');
    const c = await raise(u.id, 'c');
    expect((await rest(u.auth, 'PATCH', `/${a.id}`)).statusCode).toBe(200);
    expect((await rest(u.auth, 'PATCH', `/${a.id}`)).json()).toMatchObject({ id: a.id, read: true }); // no change: no event
    expect((await rest(u.auth, 'DELETE', `/${b.id}`)).statusCode).toBe(204);
    expect((await rest(u.auth, 'PATCH', '/mark-all-read')).json()).toEqual({ updated: 1 });
    expect((await rest(u.auth, 'PATCH', '/mark-all-read')).json()).toEqual({ updated: 0 }); // no change: no event
    expect((await rest(u.auth, 'DELETE', `/${c.id}`)).statusCode).toBe(204);

    await eventually(() => seen.length >= 7);
    await sleep(150);
    expect(seen.map((x) => [x.event, x.payload.seq, x.payload.unreadCount])).toEqual([
      ['notification', 1, 1],
      ['notification', 2, 2],
      ['notification', 3, 3],
      ['notification:updated', 4, 2],
      ['notification:deleted', 5, 1],
      ['notifications:read-all', 6, 0],
      ['notification:deleted', 7, 0],
    ]);
    expect(seen[0].payload).toMatchObject({ id: a.id, title: 'a', read: false, type: 'order_filled' });
    expect(seen[3].payload).toEqual({ id: a.id, read: true, seq: 4, unreadCount: 2 });
    expect(seen[4].payload).toEqual({ id: b.id, seq: 5, unreadCount: 1 });
    expect(seen[5].payload).toEqual({ updated: 1, seq: 6, unreadCount: 0 });
    expect((await rest(u.auth, 'GET')).json()).toMatchObject({ seq: 7, unreadCount: 0 });
  });

  it('every socket of the user gets each event, so badges agree across devices', async () => {
    const u = await createUser(t.app);
    const sockets = await Promise.all([0, 1, 2].map(() => connect(url, { token: u.token })));
    const seen = sockets.map(stream);
    for (const s of sockets) expect(await ack(s, 'subscribe', { channel: 'user:notifications' })).toEqual({ ok: true, seq: 0 });
    const made = [await raise(u.id), await raise(u.id)];
    await rest(u.auth, 'PATCH', `/${made[0].id}`);
    await eventually(() => seen.every((x) => x.length === 3));
    for (const x of seen) expect(x.map((e) => e.payload.unreadCount)).toEqual([1, 2, 1]);
  });
});

describe('resume with lastSeq (docs/decisions.md §12.3)', () => {
  it('replays the stored events after lastSeq in order, as first emitted, then acks the latest seq, then goes live', async () => {
    const u = await createUser(t.app);
    const live = await connect(url, { token: u.token });
    const first = stream(live);
    await ack(live, 'subscribe', { channel: 'user:notifications' });
    const a = await raise(u.id);
    await raise(u.id);
    await rest(u.auth, 'PATCH', `/${a.id}`);
    await eventually(() => first.length === 3);

    const s = await connect(url, { token: u.token });
    const seen = stream(s);
    const answer = await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq: 1 });
    // The replay came before the ack, in order, with the payloads sent live.
    expect(seqs(seen)).toEqual([2, 3]);
    expect(answer).toEqual({ ok: true, seq: 3 });
    expect(seen).toEqual(first.slice(1));
    await raise(u.id);
    await eventually(() => seen.length === 3);
    expect(seqs(seen)).toEqual([2, 3, 4]);
  });

  it('resumes from the seq of the list the client loaded, and from the latest with nothing to replay', async () => {
    const u = await createUser(t.app);
    await raise(u.id);
    const { seq } = (await rest(u.auth, 'GET')).json();
    expect(seq).toBe(1);
    await raise(u.id);
    const s = await connect(url, { token: u.token });
    const seen = stream(s);
    expect(await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq: seq })).toEqual({ ok: true, seq: 2 });
    expect(seqs(seen)).toEqual([2]);
    const again = await connect(url, { token: u.token });
    const none = stream(again);
    expect(await ack(again, 'subscribe', { channel: 'user:notifications', lastSeq: 2 })).toEqual({ ok: true, seq: 2 });
    await sleep(100);
    expect(none).toEqual([]);
  });

  it('answers reset: true, replaying nothing, when lastSeq is ahead or its successors are no longer kept', async () => {
    const u = await createUser(t.app);
    for (let i = 0; i < 6; i++) await raise(u.id);
    const s = await connect(url, { token: u.token });
    const seen = stream(s);
    expect(await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq: 7 })).toEqual({ ok: true, seq: 6, reset: true });
    // STREAM_KEEP_DAYS=0, STREAM_KEEP_EVENTS=3: the stream-prune job keeps seqs 4-6 only.
    const run = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/jobs/stream-prune',
      headers: { authorization: `Bearer ${INTERNAL}` },
    });
    expect(run.json()).toMatchObject({ name: 'stream-prune', ok: true });
    expect(await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq: 2 })).toEqual({ ok: true, seq: 6, reset: true });
    expect(seen).toEqual([]);
    expect(await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq: 3 })).toEqual({ ok: true, seq: 6 });
    expect(seqs(seen)).toEqual([4, 5, 6]);
    // After a reset the stream continues live from the acked seq.
    await raise(u.id);
    await eventually(() => seen.length === 4);
    expect(seqs(seen)).toEqual([4, 5, 6, 7]);
  });

  it('refuses a lastSeq that is not a non-negative integer with VALIDATION_ERROR', async () => {
    const u = await createUser(t.app);
    const s = await connect(url, { token: u.token });
    for (const lastSeq of [-1, 1.5, '3', null, true, { n: 1 }, 2 ** 60]) {
      expect(await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq }), JSON.stringify(lastSeq)).toMatchObject({
        ok: false,
        error: { code: 'VALIDATION_ERROR' },
      });
    }
    expect(await ack(s, 'subscribe', { channel: 'market:pm-1', lastSeq: 0 })).toMatchObject({
      ok: false,
      error: { code: 'VALIDATION_ERROR' },
    });
    expect(await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq: 0 })).toEqual({ ok: true, seq: 0 });
    const anon = await connect(url);
    expect(await ack(anon, 'subscribe', { channel: 'user:notifications', lastSeq: 0 })).toMatchObject({
      ok: false,
      error: { code: 'FORBIDDEN' },
    });
  });
});

describe('order and gaps on one socket (docs/decisions.md §12.3)', () => {
  it('holds an event that overtook others, reads the missing ones from the database, and drops duplicates', async () => {
    const u = await createUser(t.app);
    const s = await connect(url, { token: u.token });
    const seen = stream(s);
    await ack(s, 'subscribe', { channel: 'user:notifications' });
    // Three committed events whose publishes are late or lost (as from another instance).
    const stored: StreamEvent[] = await t.app.db.transaction((tx) =>
      appendStreamEvents(
        tx,
        new Date(),
        [1, 2, 3].map((i) => ({ userId: u.id, event: 'notification' as const, body: notificationMessage(`gap-${i}`), unreadDelta: 0 })),
      ),
    );
    const publish = (e: StreamEvent) =>
      t.app.bus.emit('publish', { channel: userNotificationsChannel(u.id), event: e.event, payload: e.payload });
    publish(stored[2]);
    await sleep(30);
    expect(seen).toEqual([]); // held: 1 and 2 are missing
    await eventually(() => seen.length === 3);
    expect(seqs(seen)).toEqual([1, 2, 3]);
    expect(seen.map((x) => x.payload)).toEqual(stored.map((e) => e.payload));
    publish(stored[0]);
    publish(stored[1]);
    const fence = next<Record<string, any>>(s, 'notification');
    await raise(u.id);
    expect((await fence).seq).toBe(4);
    expect(seqs(seen)).toEqual([1, 2, 3, 4]);
  });

  it('puts events published out of order back in order without waiting for the database', async () => {
    const u = await createUser(t.app);
    const s = await connect(url, { token: u.token });
    const seen = stream(s);
    await ack(s, 'subscribe', { channel: 'user:notifications' });
    const stored: StreamEvent[] = await t.app.db.transaction((tx) =>
      appendStreamEvents(
        tx,
        new Date(),
        [1, 2, 3, 4].map((i) => ({ userId: u.id, event: 'notification' as const, body: notificationMessage(`ooo-${i}`), unreadDelta: 0 })),
      ),
    );
    for (const i of [1, 3, 2, 0]) {
      t.app.bus.emit('publish', { channel: userNotificationsChannel(u.id), event: 'notification', payload: stored[i].payload });
    }
    await eventually(() => seen.length === 4);
    expect(seqs(seen)).toEqual([1, 2, 3, 4]);
  });

  it('a resume racing live events neither repeats nor skips one at the seam', async () => {
    const u = await createUser(t.app);
    for (let i = 0; i < 20; i++) await raise(u.id);
    const s = await connect(url, { token: u.token });
    const seen = stream(s);
    const writer = (async () => {
      for (let i = 0; i < 20; i++) await raise(u.id);
    })();
    const answer = await ack(s, 'subscribe', { channel: 'user:notifications', lastSeq: 5 });
    await writer;
    expect(answer).toMatchObject({ ok: true });
    await eventually(() => seen.length === 35);
    await sleep(150);
    expect(seqs(seen)).toEqual(range(6, 40));
  });
});

describe('stream-prune (docs/decisions.md §12.1)', () => {
  it('is in the job table, hourly', () => {
    expect(t.app.jobs.names()).toContain('stream-prune');
    expect(streamPruneJob.schedule).toBe('23 * * * *');
  });
});
