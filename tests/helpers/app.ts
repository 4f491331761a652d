import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';
import { Redis } from 'ioredis';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildOverrides } from '../../src/app.js';
import { testConfig, type Config } from '../../src/config.js';
import { createDb, type DbHandle } from '../../src/db/index.js';
import { runMigrations } from '../../src/db/migrate.js';
import { PG_URL, REDIS_URL, withDatabase } from './env.js';
import type { VenueClientOptions } from '../../src/venues/clients.js';

let counter = 0;

/**
 * Venue clients for tests about behaviour, not budgets: limits far above the
 * venues' (docs/venues.md), short backoffs. Budget tests keep the real ones.
 */
export const FAST_VENUES: VenueClientOptions = {
  budgets: { gamma: 1000, clob: 1000, kalshi: 1000, data: 1000 },
  backoffMs: 20,
  maxBackoffMs: 200,
};

/**
 * A fresh, migrated database for one test file: on PostgreSQL a clone of the
 * run's template (cheap), on PGlite a new in-memory instance.
 */
export async function createTestDb(): Promise<DbHandle & { url: string }> {
  if (PG_URL) {
    const name = `${inject('runId')}_${process.pid}_${++counter}`;
    const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`create database "${name}" template "${inject('pgTemplate')}"`);
        break;
      } catch (err) {
        // Another worker copying the template at the same moment: try again shortly.
        if (attempt > 20) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
    await admin.end();
    const url = withDatabase(PG_URL, name);
    const h = await createDb(url, { max: 5 });
    return Object.assign(h, { url });
  }
  const h = await createDb('pglite:memory');
  await runMigrations(h);
  return Object.assign(h, { url: 'pglite:memory' });
}

export function testRedis(): Redis | undefined {
  return REDIS_URL ? new Redis(REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: true }) : undefined;
}

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  db: DbHandle;
  redis: Redis | undefined;
  keyPrefix: string;
  close(): Promise<void>;
}

/**
 * Builds the real app on a test database and (when configured) the real Redis
 * with a key prefix of its own, so parallel test files never share limits.
 */
export async function buildTestApp(
  env: Record<string, string | undefined> = {},
  opts: BuildOverrides & { extend?: (app: FastifyInstance) => void | Promise<void> } = {},
): Promise<TestApp> {
  const ownsDb = !opts.db;
  const db = opts.db ?? (await createTestDb());
  // `redis: undefined` given explicitly means: no shared client (the app opens its own from REDIS_URL, or none).
  const redis = 'redis' in opts ? opts.redis : testRedis();
  const ownsRedis = !('redis' in opts) && redis !== undefined;
  const keyPrefix = opts.keyPrefix ?? `pbtest:${randomBytes(6).toString('hex')}:`;
  const config = testConfig({
    JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    ...(REDIS_URL ? { REDIS_URL } : {}),
    ...env,
  });
  const { extend, ...overrides } = opts;
  // A shared 2-core machine and the embedded PGlite (synchronous WASM) stall the event
  // loop for a second now and then, and the overload guard rightly answers 503 for the
  // next second (a sample with no reading counts as infinitely late). The event-loop
  // check is off here; tests/overload.test.ts sets its own thresholds to test that path.
  const overload = overrides.overload ?? { maxEventLoopDelay: 0 };
  const app = await buildApp(config, { ...overrides, overload, db, redis, keyPrefix, migrate: false, logger: opts.logger ?? false });
  // Test-only routes go in before ready(), like any domain plugin.
  if (extend) await extend(app);
  await app.ready();
  return {
    app,
    config,
    db,
    redis,
    keyPrefix,
    async close() {
      await app.close();
      if (ownsRedis) redis.disconnect();
      if (ownsDb) await db.close();
    },
  };
}
