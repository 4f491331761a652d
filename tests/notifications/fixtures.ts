import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { eventGroups, markets, users } from '../../drizzle/index.js';
import type { Db } from '../../src/db/index.js';

/** A user row and a bearer token for it (no sign-in flow needed). */
export async function createUser(
  app: FastifyInstance,
  db: Db = app.db,
): Promise<{ id: string; token: string; auth: { authorization: string } }> {
  const walletAddress = `0x${randomBytes(20).toString('hex')}`;
  const [u] = await db.insert(users).values({ chain: 'evm', walletAddress, authMethod: 'wallet' }).returning({ id: users.id });
  const token = app.signAccessToken({ id: u.id, walletAddress, chain: 'evm' });
  return { id: u.id, token, auth: { authorization: `Bearer ${token}` } };
}

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

/** Polls until fn() returns a truthy value (background delivery), or fails after timeoutMs. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

export function expectProblemShape(
  res: { statusCode: number; body: string; headers: Record<string, unknown>; json(): any },
  status: number,
  code: string,
) {
  if (res.statusCode !== status) throw new Error(`expected ${status} ${code}, got ${res.statusCode}: ${res.body}`);
  const ct = String(res.headers['content-type']);
  if (!ct.startsWith('application/problem+json')) throw new Error(`not problem+json: ${ct}`);
  const body = res.json();
  if (body.code !== code) throw new Error(`expected code ${code}, got ${body.code}`);
  return body;
}
