import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../support/users.js';

/**
 * The per-instance cache of first notification pages (src/domains/notifications/plugin.ts, src/lib/body-cache.ts):
 * never a page older than a change the reader could have seen, on one instance and, with Redis,
 * across two instances sharing the database.
 */

const INTERNAL = 'internal-token-0123456789abcdef';

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

describe('GET /notifications with the page cache: the budget', () => {
  let t: TestApp;
  const now = Date.now();
  beforeAll(async () => {
    // The app's clock stands still: kept pages do not expire however long the reads take.
    t = await buildTestApp({ INTERNAL_API_TOKEN: INTERNAL }, { clock: () => new Date(now) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("one user's many pages cannot evict everyone else's: a per-user share of the budget (issue #34)", async () => {
    const victim = await createUser(t.app);
    const hog = await createUser(t.app);
    expect((await list(t, victim.auth)).notifications).toEqual([]); // kept
    // Written without a stream event, so nothing drops the victim's kept page: a read shows whether it is still kept.
    await t.db.rows(
      sql`insert into notifications (user_id, type, title, message) values (${victim.id}, 'system', 'unseen', 'written behind the cache')`,
    );
    // 50 first pages of 20 KB notifications (limit 1..50): ~25 MB, past the whole 16 MB budget.
    await t.db.rows(sql`
      insert into notifications (user_id, type, title, message, created_at)
      select ${hog.id}, 'system', 'n' || i, repeat('x', 20000), now() - i * interval '1 second' from generate_series(1, 50) as i`);
    for (let limit = 1; limit <= 50; limit++) expect((await list(t, hog.auth, `?limit=${limit}`)).notifications).toHaveLength(limit);
    expect((await list(t, victim.auth)).notifications).toEqual([]); // still the kept page
  });
});
