import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../config.js';
import type { Db, DbHandle } from '../db/index.js';
import type { DataTopic } from '../plugins/signals.js';
import type { PublishFn } from '../domains/realtime/channels.js';
import type { DeliveryState } from '../domains/notifications/delivery.js';
import type { VenueClients } from '../venues/clients.js';

/**
 * What a job's run() gets: explicit dependencies, no singletons. A job hands
 * each domain function the part it asks for (the domains define their own
 * deps types; this object satisfies them structurally).
 */
export interface JobDeps {
  db: Db;
  dbh: DbHandle;
  config: Config;
  log: FastifyBaseLogger;
  publish: PublishFn;
  clock: () => Date;
  redis: Redis | undefined;
  /** Tells this instance's read caches that the job wrote (app.signals `dataChanged`). */
  dataChanged(topic: DataTopic): void;
  /** The notify path's delivery state (channels, in-flight kicks): notify() and delivery-sweep use it. */
  delivery: DeliveryState;
  /** The process's venue clients (one rate limiter per venue API), shared with the on-demand paths. */
  venues: VenueClients;
  /**
   * Markets with a `market:<id>` subscriber on any instance (docs/decisions.md
   * §11.2, price tracking). Default: this instance's Socket.IO rooms.
   */
  subscribedMarketIds?: () => Promise<string[]>;
  /**
   * Aborted when the service shuts down (docs/decisions.md §9): `venues` carry it on every
   * request, and long loops check it, so a run ends within SHUTDOWN_TIMEOUT_MS whatever it waits on.
   */
  signal: AbortSignal;
  /** `manual` for the run-now endpoint and app.jobs.run (events-sync then does a full reconcile). */
  trigger: 'schedule' | 'manual';
  /**
   * A run-now's `?mode=` (docs/decisions.md §9): `increment` makes events-sync
   * run only its ≤ 5-minute increments instead of the full reconcile.
   */
  mode?: 'full' | 'increment';
}

export interface JobResult {
  /** How many things the run handled (rows written, markets refreshed, …). */
  items: number;
  /**
   * Venue rows skipped as malformed (docs/decisions.md §9, docs/venues.md
   * "What we call": one event, market or board row, whichever failed alone).
   * The run is still ok; more than 0 marks it degraded in the job views and metrics.
   */
  skipped?: number;
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
  /** Venue rows skipped as malformed; present only when the run skipped some. */
  skipped?: number;
  error?: string;
}

/** docs/decisions.md §15.2: one entry of GET /internal/jobs. The last finished run's fields are absent before the first. */
export interface JobStatus extends Partial<JobOutcome> {
  name: string;
  schedule: string;
  running: boolean;
  runningSince?: string;
  nextRunAt: string | null;
  lastSuccessAt: string | null;
}

/** docs/decisions.md §15.2: one row of GET /internal/jobs/:name/runs. */
export interface JobRun {
  id: number;
  name: string;
  instanceId: string;
  state: 'running' | 'succeeded' | 'failed' | 'abandoned';
  startedAt: string;
  finishedAt: string | null;
  items: number;
  /** Venue rows skipped as malformed; present only when the run skipped some. */
  skipped?: number;
  error?: string;
}
