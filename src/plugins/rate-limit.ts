import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { SlidingWindow } from '../lib/sliding-window.js';

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
      keyGenerator: (req: FastifyRequest) => req.ip,
      errorResponseBuilder: (_req, ctx) =>
        new AppError(429, 'RATE_LIMITED', `Too many requests, retry in ${Math.max(1, Math.ceil(ctx.ttl / 1000))} s`),
    });
  },
  { name: 'rate-limit', fastify: '5.x', dependencies: ['infra'] },
);
