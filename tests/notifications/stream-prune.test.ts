import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asc, eq } from 'drizzle-orm';
import { userStreamEvents } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { appendStreamEvents, pruneStreamEvents, readStreamHead } from '../../src/domains/notifications/stream.js';
import { createUser } from '../support/users.js';

/** docs/decisions.md §12.1: what the stream keeps for resume, and that it only ever drops a prefix. */

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

const DAY = 86_400_000;

async function append(userId: string, at: Date, n: number) {
  await t.app.db.transaction((tx) =>
    appendStreamEvents(
      tx,
      at,
      Array.from({ length: n }, (_, i) => ({ userId, event: 'notification:deleted' as const, body: { id: `x-${i}` } })),
    ),
  );
}

const kept = async (userId: string) =>
  (
    await t.app.db
      .select({ seq: userStreamEvents.seq })
      .from(userStreamEvents)
      .where(eq(userStreamEvents.userId, userId))
      .orderBy(asc(userStreamEvents.seq))
  ).map((r) => Number(r.seq));

describe('pruneStreamEvents', () => {
  it('keeps the last STREAM_KEEP_DAYS days or the last STREAM_KEEP_EVENTS events, whichever is more', async () => {
    const u = await createUser(t.app);
    const now = new Date();
    await append(u.id, now, 5);
    const keep = { STREAM_KEEP_DAYS: 7, STREAM_KEEP_EVENTS: 2 };
    // Recent: all kept, though more than STREAM_KEEP_EVENTS.
    await pruneStreamEvents({ db: t.app.db, config: keep }, now);
    expect(await kept(u.id)).toEqual([1, 2, 3, 4, 5]);
    // Eight days on: only the last two.
    const later = new Date(now.getTime() + 8 * DAY);
    expect(await pruneStreamEvents({ db: t.app.db, config: keep }, later)).toBeGreaterThanOrEqual(3);
    expect(await kept(u.id)).toEqual([4, 5]);
    // Both 0: nothing kept, and the head stays (the next event is 6, a resume from before is reset).
    await pruneStreamEvents({ db: t.app.db, config: { STREAM_KEEP_DAYS: 0, STREAM_KEEP_EVENTS: 0 } }, new Date(now.getTime() + 1));
    expect(await kept(u.id)).toEqual([]);
    expect(await readStreamHead(t.app.db, u.id)).toBe(5);
    await append(u.id, now, 1);
    expect(await kept(u.id)).toEqual([6]);
  });

  it('deletes a prefix of seqs even when commit order and created_at order differ', async () => {
    const u = await createUser(t.app);
    const base = Date.now() - 3 * DAY;
    await append(u.id, new Date(base + 10_000), 1); // seq 1
    await append(u.id, new Date(base), 1); // seq 2, stamped earlier
    await append(u.id, new Date(base + 20_000), 1); // seq 3
    await pruneStreamEvents({ db: t.app.db, config: { STREAM_KEEP_DAYS: 0, STREAM_KEEP_EVENTS: 0 } }, new Date(base + 5_000));
    expect(await kept(u.id)).toEqual([3]);
  });

  it('never touches other users', async () => {
    const a = await createUser(t.app);
    const b = await createUser(t.app);
    const old = new Date(Date.now() - 30 * DAY);
    await append(a.id, old, 3);
    await append(b.id, new Date(), 3);
    await pruneStreamEvents({ db: t.app.db, config: { STREAM_KEEP_DAYS: 7, STREAM_KEEP_EVENTS: 1 } }, new Date());
    expect(await kept(a.id)).toEqual([3]);
    expect(await kept(b.id)).toEqual([1, 2, 3]);
  });
});
