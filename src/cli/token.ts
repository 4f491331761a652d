import type { Config } from '../config.js';
import { pgliteOwner } from '../db/dir-lock.js';
import { databaseError } from '../db/index.js';
import { runMigrations } from '../db/migrate.js';
import { resolveTokenUser, signDevAccessToken, signDevTokenProof } from '../domains/auth/dev-token.js';
import { AppError } from '../errors.js';
import { loadDevEnv } from '../lib/dev-env.js';
import { loadCliConfig, openCliDb, parseCli, runIfMain, UsageError, wholeNumber } from './common.js';

/**
 * `npm run token -- <address|userId>`: prints an access token for local use
 * (curl, Swagger's "Authorize", a socket client) without signing in with a
 * wallet. A user id must exist; an address (EVM `0x…` or Solana base58) gets
 * its wallet account created when it has none. The token is signed with the
 * configured JWT_SECRET (the development key in `.data/` when none is set)
 * and carries no session id, like a token from before sessions existed
 * (docs/decisions.md §10.5). Refuses to run with NODE_ENV=production.
 */
export const USAGE =
  'usage: npm run token -- <address|userId> [--chain evm|solana] [--minutes N (1-1440, default 15)]\n' +
  '  prints an access token for local use; an address gets its wallet account created when needed';

const HELP = [
  '',
  'The token is signed with JWT_SECRET (outside production without one: the key kept in .data/jwt-secret)',
  'and read from the same .env and DATABASE_URL as the service. While `npm start` holds the embedded',
  'database, the running service issues the token (POST /dev/token on loopback, development only).',
  'Refuses to run with NODE_ENV=production. Example:',
  '  curl -H "Authorization: Bearer $(npm run -s token -- 0x52908400098527886e0f7030069857d2e4169ee7)" http://127.0.0.1:3000/api/v1/notifications',
].join('\n');

export { UsageError, resolveTokenUser, signDevAccessToken };

export interface TokenRequest {
  subject: string;
  chain?: 'evm' | 'solana';
  minutes: number;
  help?: boolean;
}

export function parseTokenArgs(argv: string[]): TokenRequest {
  const parsed = parseCli(argv, { chain: { type: 'string' }, minutes: { type: 'string' }, help: { type: 'boolean', short: 'h' } });
  if (parsed.values.help) return { subject: '', minutes: 15, help: true };
  if (parsed.positionals.length !== 1) throw new UsageError('give exactly one address or user id');
  const chain = parsed.values.chain;
  if (chain !== undefined && chain !== 'evm' && chain !== 'solana') throw new UsageError('--chain must be evm or solana');
  const minutes = wholeNumber('minutes', parsed.values.minutes, 15, 1, 1440);
  return { subject: parsed.positionals[0], chain, minutes };
}

/**
 * The embedded database is held by a running service (its lockfile names a live
 * process): ask that service for the token over its loopback-only development
 * route, proving with the JWT key we share. Resolves the exit code.
 */
async function askRunningService(config: Config, req: TokenRequest, owner: number): Promise<number> {
  const host = ['0.0.0.0', '::', '127.0.0.1', 'localhost', ''].includes(config.HOST)
    ? '127.0.0.1'
    : config.HOST === '::1'
      ? '[::1]'
      : undefined;
  const cannot = (why: string) => {
    process.stderr.write(
      `The embedded database is in use by process ${owner} and ${why}. Stop that process, or run both on PostgreSQL (DATABASE_URL=postgres://…).\n`,
    );
    return 1;
  };
  if (!host) return cannot(`the service listens on ${config.HOST}, not on loopback`);
  const url = `http://${host}:${config.PORT}/dev/token`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${await signDevTokenProof(config)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ subject: req.subject, chain: req.chain, minutes: req.minutes }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    return cannot(`no service answers on ${url} (${(err as Error).message})`);
  }
  const body = (await res.json().catch(() => ({}))) as {
    accessToken?: string;
    user?: { id: string; walletAddress: string; chain: string };
    detail?: string;
  };
  if (!res.ok || !body.accessToken || !body.user) {
    if (res.status === 400 || res.status === 404) {
      process.stderr.write(`${body.detail ?? `the service answered ${res.status}`}\n`);
      return 1;
    }
    return cannot(`the service on ${url} answered ${res.status}${body.detail ? `: ${body.detail}` : ''}`);
  }
  process.stdout.write(`${body.accessToken}\n`);
  process.stderr.write(
    `access token for user ${body.user.id} (${body.user.chain} ${body.user.walletAddress}), valid ${req.minutes} min (issued by the running service, process ${owner})\n`,
  );
  return 0;
}

async function main(): Promise<number> {
  let req: TokenRequest;
  try {
    req = parseTokenArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (req.help) {
    process.stdout.write(`${USAGE}\n${HELP}\n`);
    return 0;
  }
  const refuse = () => {
    process.stderr.write('npm run token is for local development and refuses to run with NODE_ENV=production\n');
    return 2;
  };
  const { env } = loadDevEnv(process.env);
  if (env.NODE_ENV?.trim() === 'production') return refuse();
  const config = loadCliConfig(env);
  if (typeof config === 'number') return config;
  if (config.isProduction) return refuse();
  if (config.databaseKind === 'pglite') {
    const owner = pgliteOwner(config.DATABASE_URL);
    if (owner !== undefined) return askRunningService(config, req, owner);
  }
  const dbh = await openCliDb(config, 'token');
  if (typeof dbh === 'number') return dbh;
  try {
    await runMigrations(dbh).catch((err: unknown) => Promise.reject(databaseError(config.DATABASE_URL, err)));
    const user = await resolveTokenUser(dbh, req);
    const token = await signDevAccessToken(config, user, req.minutes);
    process.stdout.write(`${token}\n`);
    process.stderr.write(`access token for user ${user.id} (${user.chain} ${user.wallet_address}), valid ${req.minutes} min\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || err instanceof AppError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await dbh.close();
  }
}

runIfMain(import.meta.url, 'token', main);
