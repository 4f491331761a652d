import { pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { createDb, type DbHandle } from '../db/index.js';

/** What the operator typed is wrong: exit 2 with the usage line. */
export class UsageError extends Error {}

/** Strict `node:util` parseArgs whose errors are usage errors. */
export function parseCli<O extends NonNullable<ParseArgsConfig['options']>>(
  argv: string[],
  options: O,
): ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; strict: true; options: O }>> {
  try {
    return parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** `--name N`: a whole number in [min, max], `def` when absent. */
export function wholeNumber(name: string, raw: string | undefined, def: number, min: number, max: number): number {
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new UsageError(`--${name} must be a whole number between ${min} and ${max}`);
  }
  return Number(raw);
}

/** The service's config (same `.env` handling), or the message and exit code 1. */
export function loadCliConfig(env: NodeJS.ProcessEnv): Config | number {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

/**
 * Opens the service's database with two connections (the migration lock
 * holds one while the migrator uses the other), or says why it cannot:
 * an embedded PGlite database admits one process at a time.
 */
export async function openCliDb(config: Config, tool: string): Promise<DbHandle | number> {
  try {
    return await createDb(config.DATABASE_URL, { max: 2, applicationName: `predict-backend ${tool}` });
  } catch (err) {
    process.stderr.write(
      `${(err as Error).message}\n` +
        (config.databaseKind === 'pglite'
          ? 'The embedded database allows one process at a time: stop the service first, or run both on PostgreSQL (DATABASE_URL=postgres://…).\n'
          : ''),
    );
    return 1;
  }
}

/** Runs `main` when `moduleUrl` is the script node was started with, exiting with its code. */
export function runIfMain(moduleUrl: string, tool: string, main: () => Promise<number>): void {
  if (!process.argv[1] || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  main().then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`${tool} failed: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
