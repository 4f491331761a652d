import type { FastifyReply } from 'fastify';
import type { BodyCache, CachedResponse } from './body-cache.js';
import { cachedBody, JSON_CONTENT_TYPE } from './serializer.js';

const NOT_KEPT = Symbol('not kept');

/**
 * Marks an answer the cache must not keep (a page of an older snapshot, say): it is sent, not stored.
 * The mark is a symbol, so no serializer writes it.
 */
export function notCacheable<T extends object>(value: T): T {
  (value as Record<symbol, unknown>)[NOT_KEPT] = true;
  return value;
}

export interface ServeCachedOptions<T> {
  /** The entry's group (a user id); '' by default. */
  group?: string;
  /**
   * docs/decisions.md §11.4: the instant sent as `Last-Modified` (an ISO string or a Date), worked out once per
   * kept body; null or undefined for none.
   */
  lastModified?: (value: T) => string | Date | null | undefined;
}

function httpDate(at: string | Date | null | undefined): string | undefined {
  if (at === null || at === undefined) return undefined;
  const t = typeof at === 'string' ? Date.parse(at) : at.getTime();
  return Number.isFinite(t) ? new Date(t).toUTCString() : undefined;
}

function send(reply: FastifyReply, r: CachedResponse): void {
  if (r.lastModified !== undefined) reply.header('last-modified', r.lastModified);
  reply.type(JSON_CONTENT_TYPE).send(r.body);
}

/**
 * Answers a route from the body cache (src/lib/body-cache.ts): a hit is sent synchronously as the kept
 * bytes with its `Last-Modified` (no promise, no microtask, nothing serialised); a miss runs `produce`
 * (the service, returning the response object) once for every concurrent request of the key,
 * serialises its result with the route's own compiled 200 serializer (src/lib/serializer.ts: only the
 * declared fields are written) and keeps the bytes. With `key` (or `cache`) undefined nothing is looked up or kept.
 */
export function serveCached<T extends object>(
  reply: FastifyReply,
  cache: BodyCache | undefined,
  key: string | undefined,
  produce: () => Promise<T>,
  opts: ServeCachedOptions<T> = {},
): void | Promise<void> {
  const group = opts.group ?? '';
  if (cache === undefined) key = undefined;
  else if (key !== undefined) {
    const hit = cache.peek(group, key);
    if (hit !== undefined) return send(reply, hit);
  }
  const serialize = reply.getSerializationFunction('200') as ((data: unknown) => string) | undefined;
  const toResponse = (value: T): CachedResponse => ({
    body: cachedBody(serialize ? serialize(value) : JSON.stringify(value)),
    lastModified: httpDate(opts.lastModified?.(value)),
    ...((value as Record<symbol, unknown>)[NOT_KEPT] === true ? { keep: false as const } : {}),
  });
  if (key === undefined) return produce().then((value) => send(reply, toResponse(value)));
  return cache!.load(group, key, () => produce().then(toResponse)).then((r) => send(reply, r));
}
