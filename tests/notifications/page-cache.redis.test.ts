import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../support/users.js';
import { eventually } from '../support/eventually.js';

/**
 * The per-instance cache of first notification pages (src/domains/notifications/page-cache.ts)
 * across two instances sharing the database and Redis: a change made on one reaches the pages the
 * other has cached (tests/notifications/page-cache.test.ts covers one instance).
 */

const INTERNAL = 'internal-token-0123456789abcdef';

type Page = { notifications: Array<{ id: string; read: boolean; title: string }>; unreadCount: number; seq: number };

async function raise(t: TestApp, userId: string, title: string) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/internal/notifications',
    headers: { authorization: `Bearer ${INTERNAL}` },
    payload: { userId, type: 'order_filled', title, message: 'm' },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>();
}

const list = async (t: TestApp, auth: Record<string, string>) => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/notifications', headers: auth });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Page>();
};

describe('GET /notifications with the page cache, two instances on one database and Redis', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await buildTestApp({ INTERNAL_API_TOKEN: INTERNAL });
    b = await buildTestApp({ INTERNAL_API_TOKEN: INTERNAL }, { db: a.db, keyPrefix: a.keyPrefix });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  /** What instance b lists, once it shows what `done` wants (the change travels through Redis), or fails after 2 s. */
  const settled = (auth: Record<string, string>, done: (p: Page) => boolean): Promise<Page> =>
    eventually(
      async () => {
        const p = await list(b, auth);
        return done(p) && p;
      },
      { timeoutMs: 2_000, intervalMs: 10 },
    );

  it('a change made on one instance reaches the cached pages of the other', async () => {
    const u = await createUser(a.app);
    expect((await list(b, u.auth)).notifications).toEqual([]); // b caches the empty page
    const n = await raise(a, u.id, 'from a');
    expect((await settled(u.auth, (p) => p.notifications.length === 1)).notifications.map((x) => x.title)).toEqual(['from a']);

    expect((await a.app.inject({ method: 'PATCH', url: `/api/v1/notifications/${n.id}`, headers: u.auth })).statusCode).toBe(200);
    expect(await settled(u.auth, (p) => p.unreadCount === 0)).toMatchObject({ unreadCount: 0, seq: 2 });

    expect((await a.app.inject({ method: 'DELETE', url: `/api/v1/notifications/${n.id}`, headers: u.auth })).statusCode).toBe(204);
    expect(await settled(u.auth, (p) => p.notifications.length === 0)).toMatchObject({ notifications: [], seq: 3 });
  });
});
