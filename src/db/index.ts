import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import * as schema from '../../drizzle/index.js';
import { acquireDirLock } from './dir-lock.js';

export type Schema = typeof schema;
/** One database type for both drivers: postgres-js (real PostgreSQL) and PGlite (embedded). */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
/** A transaction handle has the same query API as Db. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
export type DbOrTx = Db | Tx;

export interface DbHandle {
  db: Db;
  kind: 'postgres' | 'pglite';
  /** Most connections the pool opens (1 for PGlite). */
  poolMax: number;
  /** `rows(on ?? db, query)`; new code calls `rows()` with the db or transaction it has. */
  rows<T = Record<string, unknown>>(query: SQL, on?: DbOrTx): Promise<T[]>;
  /**
   * Runs fn while holding the session-level PostgreSQL advisory lock `key`.
   * `wait: false` returns { acquired: false } at once when another session holds it.
   */
  withAdvisoryLock<T>(
    key: bigint,
    fn: () => Promise<T>,
    opts?: { wait?: boolean; timeoutMs?: number; signal?: AbortSignal },
  ): Promise<{ acquired: true; value: T } | { acquired: false }>;
  /** Which of `keys` some session (any instance, this one included) holds as an advisory lock right now. */
  advisoryLocksHeld(keys: bigint[]): Promise<Set<bigint>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Finds the migrations folder from src/ (tsx) or dist/src/ (compiled). */
export function migrationsFolder(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'migrations');
    if (existsSync(join(candidate, 'meta', '_journal.json'))) return candidate;
    dir = dirname(dir);
  }
  throw new Error('migrations folder not found');
}

/**
 * The one way to run raw SQL: runs `query` on a database or transaction and
 * returns its rows, whichever driver answers (postgres-js returns an array of
 * rows, PGlite a result object with `rows`). Statements without a result
 * (locks, updates without RETURNING) return [].
 */
export async function rows<T = Record<string, unknown>>(db: DbOrTx, query: SQL): Promise<T[]> {
  const result: unknown = await db.execute(query);
  if (Array.isArray(result)) return result as T[];
  return (result as { rows?: T[] }).rows ?? [];
}

/**
 * DATABASE_URL as an operator may see it: the password (between `user:` and
 * the last `@`, or a `password=` parameter) replaced, whether or not the rest
 * of the URL parses (issue #34: a malformed URL must not echo its password).
 */
export function redactDatabaseUrl(url: string): string {
  return url
    .replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^:@/?#]*:)[^]*@(?=[^@]*$)/, '$1[redacted]@')
    .replace(/([?&]password=)[^&#]*/gi, '$1[redacted]');
}

/** The password DATABASE_URL carries, if any (to keep it out of a driver's message too). */
function urlPassword(url: string): string | undefined {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^:@/?#]*:([^]*)@[^@]*$/.exec(url) ?? /[?&]password=([^&#]*)/i.exec(url);
  if (!m || m[1].length < 3) return undefined;
  return m[1];
}

/**
 * An error opening the database, said so for an operator: names the database
 * and the (redacted) URL, keeps the driver's message without the password.
 * Carries no cause: a driver's URL error keeps the whole URL in `input`.
 */
export function databaseError(url: string, err: unknown, what = 'cannot open the database'): Error {
  let message = err instanceof Error ? err.message : String(err);
  const password = urlPassword(url);
  for (const p of password ? new Set([password, safeDecode(password)]) : []) message = message.split(p).join('[redacted]');
  if (message.includes('://')) message = message.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/\S+/g, (u) => redactDatabaseUrl(u));
  return new Error(`${what} at ${redactDatabaseUrl(url)} (DATABASE_URL): ${message}`);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export async function createDb(
  databaseUrl: string,
  opts: { max?: number; onNotice?: (msg: string) => void; applicationName?: string } = {},
): Promise<DbHandle> {
  if (databaseUrl.startsWith('pglite:')) return createPglite(databaseUrl.slice('pglite:'.length));
  return createPostgres(databaseUrl, opts);
}

/**
 * Statements with at most this many parameters are prepared; larger ones (multi-row inserts, long
 * `in` lists) vary in shape with their size, so preparing them would pile up statements per connection.
 */
const MAX_PREPARED_PARAMS = 64;

type PgClient = import('postgres').Sql;

/**
 * drizzle-orm hands every statement to postgres-js unprepared unless the query was given a name
 * (`prepare: name !== undefined`), and postgres-js then runs a statement with parameters in two
 * round trips: Parse + Describe first (to learn the parameter types), then Parse + Bind + Execute.
 * So PostgreSQL parsed and planned every statement twice and the service paid two socket writes
 * for each (what that cost a refresh rotation: tests/bench/RESULTS.md). Prepared, a statement is
 * parsed once per connection and then costs one round trip. postgres-js keeps the prepared
 * statements per connection (recycled every 30–60 min) and re-prepares on its own when a migration
 * invalidates one. `?prepare=false` in DATABASE_URL (PgBouncer in transaction mode before 1.21)
 * turns it off for every statement, as postgres-js documents.
 */
function preparing(client: PgClient): PgClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'unsafe') {
        return (text: string, args: unknown[] = [], options: Record<string, unknown> = {}) =>
          target.unsafe(text, args as never, {
            ...options,
            prepare: args.length > 0 && args.length <= MAX_PREPARED_PARAMS,
          });
      }
      // drizzle opens transactions and savepoints with `begin(cb)` / `savepoint(cb)`: their statements run on `cb`'s handle.
      if (prop === 'begin' || prop === 'savepoint') {
        const open = Reflect.get(target, prop, receiver) as (...a: unknown[]) => Promise<unknown>;
        return (...a: unknown[]) => {
          const cb = a.pop() as (tx: PgClient) => unknown;
          return open.call(target, ...a, (tx: PgClient) => cb(preparing(tx)));
        };
      }
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}

function open(postgres: typeof import('postgres'), url: string, poolMax: number, applicationName: string | undefined): PgClient {
  return postgres(url, {
    max: poolMax,
    idle_timeout: 30,
    connect_timeout: 5,
    // postgres-js backs off up to 20 s between reconnects, and queries wait on it:
    // during an outage requests would hang instead of failing fast with 503.
    // Cap the wait at 1 s so answers stay quick and service resumes promptly.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    // Keep the pool's notices out of stdout; a NOTICE is not an error.
    onnotice: () => {},
    connection: { application_name: applicationName ?? 'predict-backend' },
  });
}

async function createPostgres(url: string, opts: { max?: number; applicationName?: string }): Promise<DbHandle> {
  const { default: postgres } = await import('postgres');
  const { drizzle } = await import('drizzle-orm/postgres-js');
  const poolMax = opts.max ?? 10;
  let client: PgClient;
  try {
    client = open(postgres, url, poolMax, opts.applicationName);
  } catch (err) {
    throw databaseError(url, err, 'DATABASE_URL is not a valid PostgreSQL URL: cannot open the database');
  }
  const db = drizzle(preparing(client), { schema }) as unknown as Db;

  return {
    db,
    kind: 'postgres',
    poolMax,
    rows: <T>(query: SQL, on: DbOrTx = db) => rows<T>(on, query),
    async withAdvisoryLock(key, fn, { wait = false, timeoutMs = 30_000, signal } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // A reserved connection keeps the session-level lock and its unlock on one backend. While
        // another session holds the lock, the connection goes back to the pool between tries:
        // any number of waiters hold no connection (docs/decisions.md §9, run-now).
        const conn = await client.reserve();
        try {
          const [row] = await conn`select pg_try_advisory_lock(${key.toString()}::bigint) as ok`;
          if (row.ok) {
            try {
              return { acquired: true, value: await fn() };
            } finally {
              await conn`select pg_advisory_unlock(${key.toString()}::bigint)`.catch(() => {});
            }
          }
        } finally {
          conn.release();
        }
        if (!wait || Date.now() > deadline || signal?.aborted) return { acquired: false };
        await sleep(LOCK_POLL_MS, undefined, { signal }).catch(() => {});
      }
    },
    async advisoryLocksHeld(keys) {
      if (keys.length === 0) return new Set();
      // A bigint advisory lock shows in pg_locks as classid (high 32 bits), objid (low 32 bits), objsubid 1.
      const held = await client<{ key: string }[]>`
        select ((classid::bigint << 32) | objid::bigint)::text as key from pg_locks
        where locktype = 'advisory' and objsubid = 1 and granted
          and database = (select oid from pg_database where datname = current_database())`;
      const all = new Set(held.map((r) => BigInt(r.key)));
      return new Set(keys.filter((k) => all.has(k)));
    },
    async ping() {
      await client`select 1`;
    },
    async close() {
      await client.end({ timeout: 5 });
    },
  };
}

async function createPglite(location: string): Promise<DbHandle> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  let release: (() => void) | undefined;
  let pg: InstanceType<typeof PGlite>;
  if (location === 'memory' || location === 'memory://') {
    pg = new PGlite();
  } else {
    const dir = resolve(location);
    await mkdir(dirname(dir), { recursive: true });
    // PGlite has no data-directory lock of its own; two processes on one dir corrupt it.
    release = acquireDirLock(dir);
    pg = new PGlite(dir);
  }
  try {
    await pg.waitReady;
  } catch (err) {
    release?.();
    throw err;
  }
  const db = drizzle(pg, { schema }) as unknown as Db;
  // One process owns a PGlite database, so an in-process lock table is exact.
  const held = new Set<bigint>();

  return {
    db,
    kind: 'pglite',
    poolMax: 1,
    rows: <T>(query: SQL, on: DbOrTx = db) => rows<T>(on, query),
    async withAdvisoryLock(key, fn, { wait = false, timeoutMs = 30_000, signal } = {}) {
      const deadline = Date.now() + timeoutMs;
      while (held.has(key)) {
        if (!wait || Date.now() > deadline || signal?.aborted) return { acquired: false };
        await new Promise((r) => setTimeout(r, 50));
      }
      held.add(key);
      try {
        return { acquired: true, value: await fn() };
      } finally {
        held.delete(key);
      }
    },
    async advisoryLocksHeld(keys) {
      return new Set(keys.filter((k) => held.has(k)));
    },
    async ping() {
      await pg.query('select 1');
    },
    async close() {
      try {
        await pg.close();
      } finally {
        release?.();
      }
    },
  };
}

/** How often a waiter tries an advisory lock another session holds. */
const LOCK_POLL_MS = 250;

/** Stable 63-bit advisory-lock key for a name (FNV-1a, folded into the signed bigint range). */
export function lockKey(name: string): bigint {
  let h = 0xcbf29ce484222325n;
  for (const ch of Buffer.from(name, 'utf8')) {
    h ^= BigInt(ch);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h & 0x7fffffffffffffffn;
}
