import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { Db, DbHandle } from '../db/index.js';
import type { PublishFn } from '../plugins/infra.js';
import type { DeliveryState } from '../domains/notifications/delivery.js';

/** What a job's run() gets: explicit dependencies, no singletons. */
export interface JobDeps {
  db: Db;
  dbh: DbHandle;
  config: Config;
  log: FastifyBaseLogger;
  publish: PublishFn;
  clock: () => Date;
  redis: Redis | undefined;
  /** The notify path's delivery state (channels, in-flight kicks): notify() and delivery-sweep use it. */
  delivery: DeliveryState;
  /** Hooks later domains attach to (e.g. the alert check after each price sync). */
  hooks: JobHooks;
}

export interface JobHooks {
  /** Called by price-sync with the markets whose price changed in this cycle. */
  onPricesChanged: Array<(deps: JobDeps, changes: PriceChange[]) => Promise<void>>;
  /** Called by events-sync and price-sync after they wrote event groups or markets (read caches drop). */
  onEventsChanged?: Array<(deps: JobDeps) => Promise<void>>;
}

export interface PriceChange {
  marketId: string;
  yesPrice: number;
  volume: number;
  timestamp: Date;
}

export interface JobResult {
  /** How many things the run handled (rows written, markets refreshed, …). */
  items: number;
}

export interface JobDefinition {
  name: string;
  /** node-cron expression. */
  schedule: string;
  run(deps: JobDeps): Promise<JobResult>;
}

/** docs/decisions.md §9: the answer of the run-now endpoint and of GET /internal/jobs. */
export interface JobOutcome {
  name: string;
  ok: boolean;
  startedAt: string;
  finishedAt: string;
  items: number;
  error?: string;
}
