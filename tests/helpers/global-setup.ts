import postgres from 'postgres';
import { Redis } from 'ioredis';
import { createDb } from '../../src/db/index.js';
import { isAlive } from '../../src/db/dir-lock.js';
import { runMigrations } from '../../src/db/migrate.js';
import { PG_URL, REDIS_URL, withDatabase } from './env.js';

/**
 * Says in the first lines which services this run uses, fails loudly when a
 * configured one is unreachable, and on PostgreSQL builds a migrated template
 * database that every test file clones (never the developer's own data).
 */
export default async function setup({ provide }: { provide: (key: string, value: unknown) => void }) {
  const runId = `pbrun_${process.pid}_${Date.now().toString(36)}`;
  let teardownPg: (() => Promise<void>) | undefined;

  if (PG_URL) {
    const admin = postgres(PG_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
    try {
      await admin`select 1`;
    } catch (err) {
      await admin.end({ timeout: 1 }).catch(() => {});
      throw new Error(
        `DATABASE_URL is set but PostgreSQL is not reachable at ${new URL(PG_URL).host}: ${(err as Error).message}. ` +
          'Start it (see docs/development.md "Tests") or unset DATABASE_URL to test on the embedded PGlite.',
        { cause: err },
      );
    }
    // Leftovers of runs that died (their process is gone): drop them. Databases
    // of runs still going on (another terminal, a parallel CI) are left alone.
    const stale = await admin<{ datname: string }[]>`select datname from pg_database where datname like 'pbrun\\_%'`;
    for (const { datname } of stale) {
      const pid = Number(/^pbrun_(\d+)_/.exec(datname)?.[1]);
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) continue;
      await admin.unsafe(`drop database if exists "${datname}" with (force)`).catch(() => {});
    }
    const template = `${runId}_tpl`;
    await admin.unsafe(`create database "${template}"`);
    const h = await createDb(withDatabase(PG_URL, template), { max: 2 });
    await runMigrations(h);
    await h.close();
    provide('pgTemplate', template);
    provide('runId', runId);
    process.stdout.write(`Test database: PostgreSQL at ${new URL(PG_URL).host} (a database per test file, cloned from ${template})\n`);
    teardownPg = async () => {
      const dbs = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${runId + '%'}`;
      for (const { datname } of dbs) await admin.unsafe(`drop database if exists "${datname}" with (force)`).catch(() => {});
      await admin.end({ timeout: 5 });
    };
  } else {
    provide('pgTemplate', '');
    provide('runId', runId);
    process.stdout.write(
      'Test database: embedded PGlite in memory (DATABASE_URL is unset; set it to a postgres:// URL to test on PostgreSQL)\n',
    );
  }

  if (REDIS_URL) {
    const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 3000, retryStrategy: () => null });
    try {
      await r.connect();
      await r.ping();
    } catch (err) {
      throw new Error(`REDIS_URL is set but Redis is not reachable: ${(err as Error).message}. Start it or unset REDIS_URL.`, {
        cause: err,
      });
    } finally {
      r.disconnect();
    }
    process.stdout.write(`Test Redis: ${new URL(REDIS_URL).host} (keys prefixed per test app)\n`);
  } else {
    process.stdout.write('Test Redis: none (REDIS_URL is unset; in-process stores)\n');
  }

  return async () => {
    await teardownPg?.();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgTemplate: string;
    runId: string;
  }
}
