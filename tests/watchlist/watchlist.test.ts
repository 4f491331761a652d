import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { rows } from '../../src/db/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { createUser } from '../support/users.js';
import { expectProblem } from '../support/problem.js';

/** docs/decisions.md §17.1: the watchlist routes, the cap under concurrency, and tracking of watched groups. */
let t: TestApp;
let venues: FakeVenues;
beforeAll(async () => {
  // Two small Polymarket groups; PRICE_TRACK_TOP=0 so nothing is tracked unless watched.
  venues = await startFakeVenues({
    gamma: [
      gammaEvent('9001', 'watched-one', 'Watched one', [gammaMarket('990001', 'One?', 0.4, 100)]),
      gammaEvent('9002', 'watched-two', 'Watched two', [gammaMarket('990002', 'Two?', 0.6, 200)]),
    ],
  });
  t = await buildTestApp({ ...venues.env, PRICE_TRACK_TOP: '0' });
  expect(await t.app.jobs.run('events-sync')).toMatchObject({ ok: true });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

const api = (method: 'GET' | 'PUT' | 'DELETE', path: string, auth?: Record<string, string>) =>
  t.app.inject({ method, url: `/api/v1/watchlist${path}`, headers: auth ?? {} });

/** Groups straight into the catalogue (the cap test needs hundreds). */
async function makeGroups(prefix: string, n: number): Promise<string[]> {
  const slugs = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  await rows(
    t.app.db,
    sql`insert into event_groups (id, venue, venue_event_id, slug, title)
        select 'pm-' || s, 'polymarket', s, s, 'Group ' || s from json_array_elements_text(${JSON.stringify(slugs)}::json) as s`,
  );
  return slugs;
}

describe('PUT, DELETE and GET /watchlist (§17.1)', () => {
  it('PUT is 201 then 200 with the same body; GET lists EventSummary & watchedAt, most recent first; DELETE is 204', async () => {
    const u = await createUser(t.app);
    const first = await api('PUT', '/watched-one', u.auth);
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual({ slug: 'watched-one', watchedAt: expect.any(String) });
    const again = await api('PUT', '/watched-one', u.auth);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    await new Promise((r) => setTimeout(r, 5));
    expect((await api('PUT', '/watched-two', u.auth)).statusCode).toBe(201);

    const list = await api('GET', '', u.auth);
    expect(list.statusCode).toBe(200);
    const events = list.json().events;
    expect(events.map((e: any) => e.slug)).toEqual(['watched-two', 'watched-one']);
    expect(events[1]).toEqual({
      id: 'pm-9001',
      slug: 'watched-one',
      title: 'Watched one',
      category: 'CRYPTO',
      marketCount: 1,
      totalVolume: 100,
      status: 'active',
      imageUrl: expect.stringMatching(/^https:/),
      venue: 'polymarket',
      volume24h: expect.any(Number),
      endDate: expect.any(String),
      createdAt: expect.any(String),
      change24h: expect.any(Number),
      watchedAt: first.json().watchedAt,
    });
    // The same summary fields as the public list.
    const summary = (await t.app.inject({ method: 'GET', url: '/api/v1/events?limit=100' }))
      .json()
      .events.find((e: any) => e.id === 'pm-9001');
    const { watchedAt, ...rest } = events[1];
    expect(watchedAt).toBeDefined();
    expect(rest).toEqual(summary);

    expect((await api('DELETE', '/watched-two', u.auth)).statusCode).toBe(204);
    expect((await api('DELETE', '/watched-two', u.auth)).statusCode).toBe(204); // not watched any more
    expect((await api('DELETE', '/no-such-group', u.auth)).statusCode).toBe(204); // unknown
    expect((await api('GET', '', u.auth)).json().events.map((e: any) => e.slug)).toEqual(['watched-one']);
    // Watching again after unwatching is a new watch.
    expect((await api('PUT', '/watched-two', u.auth)).statusCode).toBe(201);
  });

  it('unknown slug → 404; no bearer → 401; a user’s list is theirs alone', async () => {
    const u = await createUser(t.app);
    const other = await createUser(t.app);
    expectProblem(await api('PUT', '/no-such-group', u.auth), 404, 'NOT_FOUND');
    expectProblem(await api('PUT', '/watched-one'), 401, 'UNAUTHORIZED');
    expectProblem(await api('GET', ''), 401, 'UNAUTHORIZED');
    expectProblem(await api('DELETE', '/watched-one'), 401, 'UNAUTHORIZED');
    expect((await api('PUT', '/watched-one', u.auth)).statusCode).toBe(201);
    expect((await api('GET', '', other.auth)).json()).toEqual({ events: [] });
    // Another user's DELETE leaves the first user's watch in place.
    expect((await api('DELETE', '/watched-one', other.auth)).statusCode).toBe(204);
    expect((await api('GET', '', u.auth)).json().events).toHaveLength(1);
    expect((await api('PUT', '/watched-one', other.auth)).statusCode).toBe(201);
  });

  it('at most 500 groups: the 501st is 409 WATCHLIST_FULL, and concurrent PUTs never pass 500', async () => {
    const u = await createUser(t.app);
    const slugs = await makeGroups(`cap-${u.id.slice(0, 8)}`, 510);
    await rows(
      t.app.db,
      sql`insert into watchlist (user_id, event_group_id, watched_at)
          select ${u.id}::uuid, 'pm-' || s, now() from json_array_elements_text(${JSON.stringify(slugs.slice(0, 490))}::json) as s`,
    );
    // 20 at once for the last 10 free places: 10 distinct new groups twice each.
    const res = await Promise.all(slugs.slice(490, 510).map((s) => api('PUT', `/${s}`, u.auth)));
    const codes = res.map((r) => r.statusCode);
    expect(codes.filter((c) => c === 201)).toHaveLength(10);
    expect(codes.filter((c) => c === 409)).toHaveLength(10);
    for (const r of res.filter((x) => x.statusCode === 409)) expectProblem(r, 409, 'WATCHLIST_FULL');
    const list = (await api('GET', '', u.auth)).json().events;
    expect(list).toHaveLength(500);
    // Already watched stays 200 when full; after one DELETE there is room again.
    expect((await api('PUT', `/${slugs[0]}`, u.auth)).statusCode).toBe(200);
    expect((await api('DELETE', `/${slugs[0]}`, u.auth)).statusCode).toBe(204);
    const again = await Promise.all(slugs.slice(490, 510).map((s) => api('PUT', `/${s}`, u.auth)));
    expect(again.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect((await api('GET', '', u.auth)).json().events).toHaveLength(500);
  });
});

describe('watched groups are tracked (§17.1, §11.2)', () => {
  it('price-sync reads a watched group’s markets while anyone watches it, and stops after the last unwatch', async () => {
    const tokens = () =>
      venues.clob.requests.filter((r) => r.path === '/midpoints').flatMap((r) => (r.body as any[]).map((x) => x.token_id as string));
    const TOKEN = `990002${'1'.repeat(22)}`; // gammaMarket's YES token
    const a = await createUser(t.app);
    const b = await createUser(t.app);
    // Start from nobody watching watched-two.
    await rows(t.app.db, sql`delete from watchlist where event_group_id = 'pm-9002'`);
    venues.clob.requests.length = 0;
    await t.app.jobs.run('price-sync');
    expect(tokens()).not.toContain(TOKEN);

    await api('PUT', '/watched-two', a.auth);
    await api('PUT', '/watched-two', b.auth);
    venues.clob.requests.length = 0;
    expect(await t.app.jobs.run('price-sync')).toMatchObject({ ok: true });
    expect(tokens()).toContain(TOKEN);

    await api('DELETE', '/watched-two', a.auth);
    venues.clob.requests.length = 0;
    await t.app.jobs.run('price-sync');
    expect(tokens()).toContain(TOKEN); // b still watches

    await api('DELETE', '/watched-two', b.auth);
    venues.clob.requests.length = 0;
    await t.app.jobs.run('price-sync');
    expect(tokens()).not.toContain(TOKEN);
  });
});
