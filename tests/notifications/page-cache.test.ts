import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from './fixtures.js';
import { createNotificationPageCache } from '../../src/domains/notifications/page-cache.js';

/**
 * The per-instance cache of first notification pages (src/domains/notifications/page-cache.ts):
 * never a page older than a change the reader could have seen, on one instance and, with Redis,
 * across two instances sharing the database.
 */

const INTERNAL = 'internal-token-0123456789abcdef';

/** A kept page as text (the cache holds bytes), or undefined on a miss. */
const text = (page: Buffer | undefined) => page?.toString('utf8');

describe('createNotificationPageCache', () => {
  const make = (over: { usable?: () => boolean; now?: () => number; maxBytes?: number } = {}) =>
    createNotificationPageCache({ ttlMs: 1_000, maxBytes: over.maxBytes ?? 1_000, usable: over.usable ?? (() => true), now: over.now });

  it('keeps a page per (user, key) and drops every page of a user on invalidate', () => {
    const c = make();
    c.store(c.begin('u1'), 'a', '{"a":1}');
    c.store(c.begin('u1'), 'b', '{"b":1}');
    c.store(c.begin('u2'), 'a', '{"a":2}');
    expect([text(c.peek('u1', 'a')), text(c.peek('u1', 'b')), text(c.peek('u2', 'a')), text(c.peek('u2', 'b'))]).toEqual([
      '{"a":1}',
      '{"b":1}',
      '{"a":2}',
      undefined,
    ]);
    c.invalidate('u1');
    expect([text(c.peek('u1', 'a')), text(c.peek('u1', 'b')), text(c.peek('u2', 'a'))]).toEqual([undefined, undefined, '{"a":2}']);
  });

  it('does not keep what a read in flight during an invalidation read', () => {
    const c = make();
    const token = c.begin('u1');
    c.invalidate('u1'); // a change committed while the read ran
    c.store(token, 'a', '{"stale":true}');
    expect(text(c.peek('u1', 'a'))).toBeUndefined();
    // A read begun after the change keeps its page.
    c.store(c.begin('u1'), 'a', '{"fresh":true}');
    expect(text(c.peek('u1', 'a'))).toBe('{"fresh":true}');
    // clear() is an invalidation of everyone.
    const t2 = c.begin('u2');
    c.clear();
    c.store(t2, 'a', '{"stale":true}');
    expect(text(c.peek('u2', 'a'))).toBeUndefined();
  });

  it('expires pages after the TTL and holds at most the byte budget, oldest user first', () => {
    let now = 0;
    const c = make({ now: () => now, maxBytes: 25 });
    c.store(c.begin('u1'), 'a', '1234567890');
    now = 500;
    c.store(c.begin('u2'), 'a', '1234567890');
    expect(c.bytes).toBe(20);
    c.store(c.begin('u3'), 'a', '1234567890'); // 30 > 25: u1 leaves
    expect([text(c.peek('u1', 'a')), text(c.peek('u2', 'a')), text(c.peek('u3', 'a'))]).toEqual([undefined, '1234567890', '1234567890']);
    expect(c.bytes).toBe(20);
    c.store(c.begin('u4'), 'a', 'x'.repeat(26)); // alone over the budget: not kept
    expect(text(c.peek('u4', 'a'))).toBeUndefined();
    now = 1_600; // u2 was stored at 500, u3 at 500: both past 1 s
    expect([text(c.peek('u2', 'a')), text(c.peek('u3', 'a'))]).toEqual([undefined, undefined]);
  });

  it('keeps a page as its UTF-8 bytes and counts bytes, not characters', () => {
    const c = make({ maxBytes: 25 });
    c.store(c.begin('u1'), 'a', '{"t":"élan"}'); // 12 characters, 13 bytes
    expect(Buffer.isBuffer(c.peek('u1', 'a'))).toBe(true);
    expect(text(c.peek('u1', 'a'))).toBe('{"t":"élan"}');
    expect(c.bytes).toBe(13);
    c.store(c.begin('u2'), 'a', 'é'.repeat(13)); // 13 characters, 26 bytes: over the budget alone
    expect(c.peek('u2', 'a')).toBeUndefined();
    expect(c.bytes).toBe(13);
  });

  it('is emptied and bypassed while invalidations from other instances cannot arrive', () => {
    let up = true;
    const c = make({ usable: () => up });
    c.store(c.begin('u1'), 'a', '{"a":1}');
    up = false;
    expect(text(c.peek('u1', 'a'))).toBeUndefined();
    expect(c.begin('u1')).toBeUndefined();
    c.store(c.begin('u1'), 'a', '{"a":2}');
    up = true;
    expect(text(c.peek('u1', 'a'))).toBeUndefined(); // what was held before the outage is gone
    expect(c.bytes).toBe(0);
  });
});

type Page = { notifications: Array<{ id: string; read: boolean; title: string }>; unreadCount: number; seq: number };

async function raise(t: TestApp, userId: string, title: string, type = 'order_filled') {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/internal/notifications',
    headers: { authorization: `Bearer ${INTERNAL}` },
    payload: { userId, type, title, message: 'm' },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>();
}

const list = async (t: TestApp, auth: Record<string, string>, query = '') => {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/notifications${query}`, headers: auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Page>();
};

describe('GET /notifications with the page cache, one instance', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ INTERNAL_API_TOKEN: INTERNAL });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('shows every change at once: new, read, all read, deleted; filters and limits are separate pages', async () => {
    const u = await createUser(t.app);
    expect(await list(t, u.auth)).toMatchObject({ notifications: [], unreadCount: 0, seq: 0 });
    expect(await list(t, u.auth)).toMatchObject({ notifications: [], unreadCount: 0, seq: 0 }); // from the cache

    const a = await raise(t, u.id, 'a');
    const b = await raise(t, u.id, 'b', 'mission_completed');
    let page = await list(t, u.auth);
    expect(page.notifications.map((n) => n.title)).toEqual(['b', 'a']);
    expect(page).toMatchObject({ unreadCount: 2, seq: 2 });
    expect((await list(t, u.auth, '?type=mission_completed')).notifications.map((n) => n.title)).toEqual(['b']);
    expect((await list(t, u.auth, '?limit=1')).notifications.map((n) => n.title)).toEqual(['b']);
    expect((await list(t, u.auth, '?read=false')).notifications).toHaveLength(2);

    expect((await t.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${a.id}`, headers: u.auth })).statusCode).toBe(200);
    page = await list(t, u.auth);
    expect(page.notifications.find((n) => n.id === a.id)?.read).toBe(true);
    expect(page).toMatchObject({ unreadCount: 1, seq: 3 });
    expect((await list(t, u.auth, '?read=false')).notifications.map((n) => n.title)).toEqual(['b']);

    expect((await t.app.inject({ method: 'PATCH', url: '/api/v1/notifications/mark-all-read', headers: u.auth })).statusCode).toBe(200);
    expect(await list(t, u.auth)).toMatchObject({ unreadCount: 0, seq: 4 });
    expect((await list(t, u.auth, '?read=false')).notifications).toEqual([]);

    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/notifications/${b.id}`, headers: u.auth })).statusCode).toBe(204);
    page = await list(t, u.auth);
    expect(page.notifications.map((n) => n.title)).toEqual(['a']);
    expect(page.seq).toBe(5);
    expect((await list(t, u.auth, '?type=mission_completed')).notifications).toEqual([]);
  });

  it("never serves one user's page to another", async () => {
    const u = await createUser(t.app);
    const v = await createUser(t.app);
    await raise(t, u.id, 'for u only');
    expect((await list(t, u.auth)).notifications.map((n) => n.title)).toEqual(['for u only']);
    expect((await list(t, v.auth)).notifications).toEqual([]);
  });
});
