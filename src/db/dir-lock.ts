import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';

/**
 * A pid lockfile beside a PGlite data directory. PGlite itself does not lock
 * its directory, and two processes opening one directory corrupt it
 * (electric-sql/pglite#1106), so the second process must refuse to start.
 * A lockfile left by a dead process is taken over.
 */
export function acquireDirLock(dir: string): () => void {
  const lockPath = `${dir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(lockPath, 'utf8').trim() === String(process.pid)) unlinkSync(lockPath);
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number.parseInt(readFileSync(lockPath, 'utf8').trim(), 10);
      if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
        throw new Error(
          `The embedded database ${dir} is in use by process ${owner}. Stop it, or set DATABASE_URL to another pglite:<dir> or to PostgreSQL to run several instances.`,
          { cause: err },
        );
      }
      try {
        unlinkSync(lockPath); // stale: its process is gone
      } catch {
        /* raced with another taker */
      }
    }
  }
  throw new Error(`Could not lock the embedded database directory ${dir}`);
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The live process holding the embedded database at `pglite:<dir>` (its
 * lockfile names it), or undefined: free, in memory, or a stale lockfile.
 */
export function pgliteOwner(databaseUrl: string): number | undefined {
  const dir = databaseUrl.startsWith('pglite:') ? databaseUrl.slice('pglite:'.length) : '';
  if (!dir || dir === 'memory' || dir === 'memory://') return undefined;
  try {
    const owner = Number.parseInt(readFileSync(`${dir}.lock`, 'utf8').trim(), 10);
    return Number.isInteger(owner) && owner !== process.pid && isAlive(owner) ? owner : undefined;
  } catch {
    return undefined;
  }
}
