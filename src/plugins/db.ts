import fp from 'fastify-plugin';
import { createDb, databaseError, type Db, type DbHandle } from '../db/index.js';
import { runMigrations } from '../db/migrate.js';

declare module 'fastify' {
  interface FastifyInstance {
    dbh: DbHandle;
    db: Db;
  }
}

export interface DbOptions {
  /** A handle shared by the caller (tests), who closes it. */
  db?: DbHandle;
  /** Skip migrations when the caller already applied them. */
  migrate?: boolean;
}

/**
 * The database (postgres-js or PGlite, src/db/), migrated under a lock.
 * Whoever opens a resource closes it: a handle opened here is closed in
 * onClose; one handed in by a caller is left to the caller.
 */
export const dbPlugin = fp<DbOptions>(
  async (app, opts) => {
    // An application_name of its own lets PostgreSQL tell this instance's
    // connections apart (the metrics plugin's pool gauge reads them).
    const dbh = opts.db ?? (await createDb(app.config.DATABASE_URL, { applicationName: `predict-backend ${app.instanceId.slice(0, 8)}` }));
    if (!opts.db) app.addHook('onClose', async () => dbh.close());
    // The first query connects: a refusal says it was the database (issue #34), URL redacted.
    if (opts.migrate !== false)
      await runMigrations(dbh).catch((err: unknown) => Promise.reject(databaseError(app.config.DATABASE_URL, err)));
    app.decorate('dbh', dbh);
    app.decorate('db', dbh.db);
  },
  { name: 'db', fastify: '5.x', dependencies: ['context'] },
);
