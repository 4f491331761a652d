import { loadCliConfig, openCliDb, parseCli, runIfMain, UsageError, wholeNumber } from './common.js';
import { databaseError } from '../db/index.js';
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

export { UsageError };

const HELP = [
  '',
  'Mints N beta keys, each redeemable M times, and prints each key once, one per line (only their SHA-256 is stored).',
  'Uses the same .env and DATABASE_URL as the service and runs its migrations first. While the service holds the',
  'embedded database, mint keys through POST /api/v1/internal/beta-keys instead (INTERNAL_API_TOKEN).',
].join('\n');

export function parseBetaKeysArgs(argv: string[]): { count: number; uses: number; help?: boolean } {
  const parsed = parseCli(argv, { count: { type: 'string' }, uses: { type: 'string' }, help: { type: 'boolean', short: 'h' } });
  if (parsed.values.help) return { count: 1, uses: 1, help: true };
  if (parsed.positionals.length !== 1 || parsed.positionals[0] !== 'create') throw new UsageError('the only command is "create"');
  return {
    count: wholeNumber('count', parsed.values.count, 1, 1, 10_000),
    uses: wholeNumber('uses', parsed.values.uses, 1, 1, 1_000_000),
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
  if (opts.help) {
    process.stdout.write(`${USAGE}\n${HELP}\n`);
    return 0;
  }
  const config = loadCliConfig(loadDevEnv(process.env).env);
  if (typeof config === 'number') return config;
  const dbh = await openCliDb(config, 'beta-keys');
  if (typeof dbh === 'number') return dbh;
  try {
    await runMigrations(dbh).catch((err: unknown) => Promise.reject(databaseError(config.DATABASE_URL, err)));
    const keys = await createBetaKeys(dbh, opts);
    process.stdout.write(keys.map((k) => `${k}\n`).join(''));
    process.stderr.write(`created ${keys.length} beta key(s), ${opts.uses} use(s) each\n`);
    return 0;
  } finally {
    await dbh.close();
  }
}

runIfMain(import.meta.url, 'beta-keys', main);
