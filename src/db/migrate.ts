import type { DbHandle } from './index.js';
import { lockKey, migrationsFolder } from './index.js';

/**
 * Applies the committed migrations. Several instances may start at once: the
 * advisory lock makes them take turns, and the later ones find nothing to do.
 */
export async function runMigrations(handle: DbHandle): Promise<void> {
  const folder = migrationsFolder();
  const result = await handle.withAdvisoryLock(
    lockKey('predict-backend:migrations'),
    async () => {
      if (handle.kind === 'pglite') {
        const { migrate } = await import('drizzle-orm/pglite/migrator');
        await migrate(handle.db as never, { migrationsFolder: folder });
      } else {
        const { migrate } = await import('drizzle-orm/postgres-js/migrator');
        await migrate(handle.db as never, { migrationsFolder: folder });
      }
    },
    { wait: true, timeoutMs: 120_000 },
  );
  if (!result.acquired) throw new Error('Timed out waiting for the migration lock');
}
