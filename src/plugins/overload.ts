import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { problem } from '../errors.js';
import { PROBLEM_CONTENT_TYPE } from './errors.js';

type PressureHandler = (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined) => unknown;

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when OVERLOAD_GUARD is on (docs/decisions.md §15.3). */
    overloadGuard?: OverloadGuard;
  }
  interface FastifyContextConfig {
    /** Set to {@link keepServingUnderPressure} to exempt a route from overload refusals. */
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
  /**
   * false: add no onRequest hook; the caller's own hook asks `app.overloadGuard` (src/app.ts does,
   * so every request runs one onRequest hook, not two). Default true.
   */
  hook?: boolean;
}

/** What a request asks: one boolean read, and the refusal when it is set. */
export interface OverloadGuard {
  readonly overloaded: boolean;
  /** Answers 503 UNAVAILABLE with Retry-After unless the route keeps serving under pressure; true when it answered. */
  refuse(request: FastifyRequest, reply: FastifyReply): boolean;
}

/** Route config that keeps a route answering under pressure (the health probes). */
export const keepServingUnderPressure: PressureHandler = () => undefined;

/** The event-loop delay histogram's own resolution (ms), subtracted from its mean as @fastify/under-pressure does. */
const RESOLUTION_MS = 10;

/**
 * docs/decisions.md §15.3: past the event-loop delay or heap limits, requests
 * are refused at once with 503 UNAVAILABLE and Retry-After instead of being
 * queued behind the work that is already late. The process is sampled on a
 * timer; a request reads one boolean. Health probes keep answering
 * (`keepServingUnderPressure`) so an orchestrator sees a live, ready process
 * that is shedding load, not a dead one.
 *
 * The sampling follows @fastify/under-pressure (mean delay of a 10 ms
 * resolution histogram, minus the resolution; heap used from
 * process.memoryUsage()), but its per-request hook read
 * `request.routeOptions`, which builds a new object on every request, to find
 * the route's handler: here the route config is read only while refusing.
 */
export const overloadPlugin = fp<OverloadOptions>(
  async (app, opts) => {
    const retryAfter = opts.retryAfter ?? 5;
    const maxDelay = opts.maxEventLoopDelay ?? 1000;
    const maxHeap = opts.maxHeapUsedBytes ?? Math.floor(getHeapStatistics().heap_size_limit * 0.9);
    const interval = Math.max(RESOLUTION_MS, opts.sampleInterval ?? 1000);
    // Serialised once: the refusal path must stay cheap when the process is already struggling.
    const body = JSON.stringify(problem(503, 'UNAVAILABLE', 'The service is overloaded, retry shortly'));

    let overloaded = false;
    let reason: { type: string; value: number } = { type: 'none', value: 0 };
    const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    histogram.enable();
    const sample = () => {
      let delay = Math.max(0, histogram.mean / 1e6 - RESOLUTION_MS);
      if (Number.isNaN(delay)) delay = Infinity; // no turn of the loop in the whole interval
      histogram.reset();
      const heap = process.memoryUsage().heapUsed;
      if (maxDelay > 0 && delay > maxDelay) reason = { type: 'eventLoopDelay', value: delay };
      else if (maxHeap > 0 && heap > maxHeap) reason = { type: 'heapUsedBytes', value: heap };
      else reason = { type: 'none', value: 0 };
      overloaded = reason.type !== 'none';
    };
    const timer = setInterval(sample, interval);
    timer.unref();
    app.addHook('onClose', async () => {
      clearInterval(timer);
      histogram.disable();
    });

    let lastLogged = 0;
    /** true when it answered 503 (the request ends there). */
    const refuse = (request: FastifyRequest, reply: FastifyReply): boolean => {
      // The rare path: reading routeOptions (an allocation) is fine here.
      if (request.routeOptions.config.pressureHandler === keepServingUnderPressure) return false;
      const now = Date.now();
      if (now - lastLogged > 10_000) {
        lastLogged = now;
        request.log.warn(reason, 'overloaded: refusing requests with 503');
      }
      void reply.code(503).header('retry-after', retryAfter).type(PROBLEM_CONTENT_TYPE).send(body);
      return true;
    };
    const guard: OverloadGuard = {
      get overloaded() {
        return overloaded;
      },
      refuse,
    };
    app.decorate('overloadGuard', guard);
    if (opts.hook === false) return;
    app.addHook('onRequest', (request, reply, done) => {
      // A reply sent from a hook ends the request; done() is not called then.
      if (!overloaded || !refuse(request, reply)) done();
    });
  },
  { name: 'overload', fastify: '5.x', dependencies: [] },
);
