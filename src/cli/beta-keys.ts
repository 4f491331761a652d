import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.js';
import { createDb } from '../db/index.js';
import { runMigrations } from '../db/migrate.js';
import { createBetaKeys } from '../domains/auth/beta-keys.js';
import { loadDevEnv } from '../lib/dev-env.js';

export { createBetaKeys };

/**
 * `npm run beta-keys -- create --count N --uses M`: mints N beta keys, each
 * redeemable M times, stores only their SHA-256 and prints each key once, one
 * per line on stdout (so it can be piped to a file). Same DATABASE_URL as the service
 * (and the same `.env`). While the service holds an embedded PGlite database,
 * mint keys through POST /api/v1/internal/beta-keys instead. In the Docker
 * image: `docker exec <container> node dist/src/cli/beta-keys.js create --count N`.
 */
export const USAGE = 'usage: npm run beta-keys -- create [--count N (1-10000, default 1)] [--uses M (1-1000000, default 1)]';

export class UsageError extends Error {}

function positiveInt(name: string, raw: string | undefined, def: number, max: number): number {
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${name} must be a whole number`);
  const n = Number(raw);
  if (n < 1 || n > max) throw new UsageError(`--${name} must be between 1 and ${max}`);
  return n;
}

export function parseBetaKeysArgs(argv: string[]): { count: number; uses: number } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { count: { type: 'string' }, uses: { type: 'string' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.positionals.length !== 1 || parsed.positionals[0] !== 'create') throw new UsageError('the only command is "create"');
  return {
    count: positiveInt('count', parsed.values.count, 1, 10_000),
    uses: positiveInt('uses', parsed.values.uses, 1, 1_000_000),
  };
}

async function main(): Promise<number> {
  let opts;
  try {
    opts = parseBetaKeysArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  let config;
  try {
    config = loadConfig(loadDevEnv(process.env).env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
  // Two connections: the migration lock holds one while the migrator uses the other.
  const dbh = await createDb(config.DATABASE_URL, { max: 2, applicationName: 'predict-backend beta-keys' });
  try {
    await runMigrations(dbh);
    const keys = await createBetaKeys(dbh, opts);
    process.stdout.write(keys.map((k) => `${k}\n`).join(''));
    process.stderr.write(`created ${keys.length} beta key(s), ${opts.uses} use(s) each\n`);
    return 0;
  } finally {
    await dbh.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`beta-keys failed: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
