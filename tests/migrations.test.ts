import * as fs from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDb } from '../src/db/index.js';
import { runMigrations } from '../src/db/migrate.js';
import { acquireDirLock } from '../src/db/dir-lock.js';

describe('migrations on the embedded database', () => {
  it('apply, and applying again is a no-op', async () => {
    const h = await createDb('pglite:memory');
    await runMigrations(h);
    await runMigrations(h);
    const rows = await h.rows<{ n: number }>(
      (await import('drizzle-orm')).sql`select count(*)::int as n from information_schema.tables where table_schema = 'public'`,
    );
    expect(rows[0].n).toBeGreaterThanOrEqual(20);
    await h.close();
  });

  it('a data directory in use by a live process is refused; a stale lock is taken over', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pglite-lock-'));
    const target = join(dir, 'db');
    const release = acquireDirLock(target);
    // Same pid re-acquiring models a second process only if the owner looks alive and different:
    // write another live pid (our parent) into the lockfile.
    release();
    fs.writeFileSync(`${target}.lock`, String(process.ppid));
    expect(() => acquireDirLock(target)).toThrow(/in use by process/);
    fs.writeFileSync(`${target}.lock`, '999999999'); // no such process
    const again = acquireDirLock(target);
    again();
    expect(fs.existsSync(`${target}.lock`)).toBe(false);
    rmSync(dir, { recursive: true, force: true });
  });
});
