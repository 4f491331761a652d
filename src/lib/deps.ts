import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../db/index.js';

/** Services read the time from this, so tests and jobs drive it. */
export type Clock = () => Date;

/**
 * The dependencies most services take, passed explicitly (no singletons, never
 * the whole FastifyInstance). A service that needs less declares a Pick of it
 * (`Pick<ServiceDeps, 'db' | 'clock'>`); one that needs more extends it.
 */
export interface ServiceDeps {
  db: Db;
  config: Config;
  log: FastifyBaseLogger;
  clock: Clock;
}
