import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import type { VenueClients } from '../venues/clients.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    instanceId: string;
    clock: () => Date;
    /**
     * One HTTP client and rate limiter per venue API for the whole process
     * (docs/venues.md "What we call"): jobs and on-demand paths share them.
     * Built by the composition root (src/app.ts).
     */
    venues: VenueClients;
  }
}

export interface ContextOptions {
  config: Config;
  clock?: () => Date;
  venues: VenueClients;
}

/** What every other plugin reads: the frozen config, this instance's id, the clock and the venue clients. */
export const contextPlugin = fp<ContextOptions>(
  async (app, opts) => {
    app.decorate('config', opts.config);
    app.decorate('instanceId', randomUUID());
    app.decorate('clock', opts.clock ?? (() => new Date()));
    app.decorate('venues', opts.venues);
  },
  { name: 'context', fastify: '5.x', dependencies: [] },
);
