import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';

/**
 * `npm run bench`: runs every tests/bench/*.bench.ts in turn (or the ones
 * named on the command line). Each exports `default async function (): Promise<void>`
 * that measures and calls writeSection() for tests/bench/RESULTS.md.
 * Set DATABASE_URL and REDIS_URL to measure against real servers.
 */
const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const files = (await readdir(dir))
  .filter((f) => f.endsWith('.bench.ts') && (only.length === 0 || only.some((o) => f.startsWith(o))))
  .sort();
for (const f of files) {
  process.stdout.write(`\n== ${f}\n`);
  const mod = await import(pathToFileURL(join(dir, f)).href);
  await mod.default();
}
process.stdout.write(`\nResults in tests/bench/RESULTS.md\n`);
process.exit(0);
