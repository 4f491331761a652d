import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { HitResult, SlidingWindow } from '../lib/sliding-window.js';

type Cb = (err: Error | null, res?: { current: number; ttl: number }) => void;

/** A @fastify/rate-limit store over our sliding window (Redis, with in-process fallback). */
function slidingStore(window: SlidingWindow) {
  return class SlidingWindowStore {
    constructor(
      _opts: unknown,
      private readonly prefix = 'global:',
    ) {}
    incr(key: string, cb: Cb, timeWindow: number, max: number) {
      window.hit(this.prefix + key, timeWindow, max).then(
        (r) => cb(null, { current: r.current, ttl: r.ttlMs }),
        (err: Error) => cb(err),
      );
    }
    child(routeOptions: { routeInfo?: { method?: string | string[]; url?: string } }) {
      const info = routeOptions.routeInfo ?? {};
      const method = Array.isArray(info.method) ? info.method.join(',') : (info.method ?? '');
      return new SlidingWindowStore(routeOptions, `${method}${info.url ?? ''}:`);
    }
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A limit the route's handler takes itself with applyHit(), fused with
     * the Redis command it guards (the sign-in nonce routes); documented like
     * `rateLimit`, never run by the plugin's hook.
     */
    handlerRateLimit?: { max: number; timeWindow: number };
  }
}

/** The 429 of every limited route. */
export function rateLimited(ttlMs: number): AppError {
  return new AppError(429, 'RATE_LIMITED', `Too many requests, retry in ${Math.max(1, Math.ceil(ttlMs / 1000))} s`);
}

/**
 * For a route that takes its hit itself (fused with the Redis command it
 * guards, see FallbackSlidingWindow.hitThen): the same headers and 429 as
 * the plugin's hook gives every other limited route.
 */
export function applyHit(reply: FastifyReply, max: number, hit: HitResult): void {
  const resetSec = Math.ceil(hit.ttlMs / 1000);
  reply.header('ratelimit-limit', max);
  reply.header('ratelimit-reset', resetSec);
  if (hit.current > max) {
    reply.header('ratelimit-remaining', 0);
    reply.header('retry-after', resetSec);
    throw rateLimited(hit.ttlMs);
  }
  reply.header('ratelimit-remaining', Math.max(0, max - hit.current));
}

/**
 * Rate limiting with a sliding window (not the plugin's built-in fixed
 * window). Only routes that declare `config.rateLimit` are limited; the seed
 * sets limits for the auth routes and leaves the rest to the deployment.
 * 429 answers carry Retry-After and RateLimit-Limit/-Remaining/-Reset.
 */
export const rateLimitPlugin = fp(
  async (app) => {
    await app.register(rateLimit, {
      global: false,
      store: slidingStore(app.limiter) as never,
      enableDraftSpec: true,
      // docs/decisions.md §10.1: the client address (IPv6 by /64), never a client-written header.
      keyGenerator: (req: FastifyRequest) => req.clientKey,
      errorResponseBuilder: (_req, ctx) => rateLimited(ctx.ttl),
    });
  },
  { name: 'rate-limit', fastify: '5.x', dependencies: ['redis', 'client-address'] },
);
