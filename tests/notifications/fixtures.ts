import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { eventGroups, markets } from '../../drizzle/index.js';
import type { Db } from '../../src/db/index.js';

/** An event group with one market. */
export async function createMarket(
  db: Db,
  opts: { id?: string; title?: string; yesPrice?: number } = {},
): Promise<{ id: string; title: string }> {
  const id = opts.id ?? `pm-${randomUUID()}`;
  const title = opts.title ?? `Will ${id} happen?`;
  const groupId = `pm-g-${id}`;
  await db.insert(eventGroups).values({ id: groupId, venue: 'polymarket', venueEventId: groupId, slug: groupId, title: `Group ${id}` });
  await db
    .insert(markets)
    .values({ id, eventGroupId: groupId, venue: 'polymarket', venueMarketId: id, title, yesPrice: opts.yesPrice ?? 0.5 });
  return { id, title };
}

/** Collects what the app publishes (the realtime plugin's input). */
export function recordPublishes(app: FastifyInstance) {
  const events: Array<{ channel: string; event: string; payload: any }> = [];
  const fn = (e: { channel: string; event: string; payload: unknown }) => events.push(e);
  app.bus.on('publish', fn);
  return { events, stop: () => app.bus.off('publish', fn) };
}
