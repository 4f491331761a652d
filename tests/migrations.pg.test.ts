import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { PG_URL, withDatabase } from './helpers/env.js';
import { runScript } from './helpers/server-process.js';

function migrateInChild(url: string): Promise<{ code: number | null; out: string }> {
  const script = `
    import { createDb } from './src/db/index.ts';
    import { runMigrations } from './src/db/migrate.ts';
    const h = await createDb(process.env.URL);
    await runMigrations(h);
    await h.close();
    console.log('migrated');
  `;
  return runScript(script, { env: { URL: url } });
}

describe('migrations on PostgreSQL', () => {
  it('two processes migrating one fresh database at once do not conflict', async () => {
    const name = `${inject('runId')}_parallel_migrate`;
    const admin = postgres(PG_URL!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}"`);
    try {
      const url = withDatabase(PG_URL!, name);
      const [a, b] = await Promise.all([migrateInChild(url), migrateInChild(url)]);
      expect(a.out).toContain('migrated');
      expect(b.out).toContain('migrated');
      expect([a.code, b.code]).toEqual([0, 0]);
      const db = postgres(url, { max: 1 });
      const [{ n }] = await db`select count(*)::int as n from drizzle.__drizzle_migrations`;
      const tables = await db`select count(*)::int as n from information_schema.tables where table_schema = 'public'`;
      await db.end();
      expect(n).toBeGreaterThanOrEqual(1);
      expect(tables[0].n).toBeGreaterThanOrEqual(20);
    } finally {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    }
  }, 60_000);
});
