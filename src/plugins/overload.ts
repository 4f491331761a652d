import { getHeapStatistics } from 'node:v8';
import fp from 'fastify-plugin';
import underPressure from '@fastify/under-pressure';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { problem } from '../errors.js';
import { PROBLEM_CONTENT_TYPE } from './errors.js';

type PressureHandler = (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined) => unknown;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** @fastify/under-pressure's per-route handler; {@link keepServingUnderPressure} exempts a route. */
    pressureHandler?: PressureHandler;
  }
}

export interface OverloadOptions {
  /**
   * Mean event-loop delay (ms) over a sample past which requests are refused. Default 1000;
   * 0 turns the check off. A sample in which the loop never turned (blocked for the whole
   * interval) counts as past any limit.
   */
  maxEventLoopDelay?: number;
  /** Heap in use past which requests are refused. Default 90 % of V8's heap limit. */
  maxHeapUsedBytes?: number;
  /** How often the process is sampled (ms). Default 1000. */
  sampleInterval?: number;
  /** Seconds in the Retry-After of a refusal. Default 5. */
  retryAfter?: number;
}

/** Route config that keeps a route answering under pressure (the health probes). */
export const keepServingUnderPressure: PressureHandler = () => undefined;

/**
 * docs/decisions.md §15.3: past the event-loop delay or heap limits, requests
 * are refused at once with 503 UNAVAILABLE and Retry-After instead of being
 * queued behind the work that is already late. The process is sampled on a
 * timer (@fastify/under-pressure); a request only reads the last sample.
 * Health probes keep answering (`keepServingUnderPressure`) so an orchestrator
 * sees a live, ready process that is shedding load, not a dead one.
 */
export const overloadPlugin = fp<OverloadOptions>(
  async (app, opts) => {
    const retryAfter = opts.retryAfter ?? 5;
    // Serialised once: the refusal path must stay cheap when the process is already struggling.
    const body = JSON.stringify(problem(503, 'UNAVAILABLE', 'The service is overloaded, retry shortly'));
    let lastLogged = 0;
    const refuse: PressureHandler = (request, reply, type, value) => {
      const now = Date.now();
      if (now - lastLogged > 10_000) {
        lastLogged = now;
        request.log.warn({ type, value }, 'overloaded: refusing requests with 503');
      }
      // under-pressure sends a returned value as the reply.
      reply.code(503).header('retry-after', retryAfter).type(PROBLEM_CONTENT_TYPE);
      return body;
    };
    await app.register(underPressure, {
      maxEventLoopDelay: opts.maxEventLoopDelay ?? 1000,
      maxHeapUsedBytes: opts.maxHeapUsedBytes ?? Math.floor(getHeapStatistics().heap_size_limit * 0.9),
      sampleInterval: opts.sampleInterval ?? 1000,
      retryAfter,
      pressureHandler: refuse as never,
    });
  },
  { name: 'overload', fastify: '5.x' },
);
