import { sql } from 'drizzle-orm';
import { SignJWT } from 'jose';
import type { Config } from '../config.js';
import type { DbHandle } from '../db/index.js';
import { runMigrations } from '../db/migrate.js';
import { normalizeAddress } from '../domains/auth/wallet-verify.js';
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

export { UsageError };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface TokenRequest {
  subject: string;
  chain?: 'evm' | 'solana';
  minutes: number;
}

export function parseTokenArgs(argv: string[]): TokenRequest {
  const parsed = parseCli(argv, { chain: { type: 'string' }, minutes: { type: 'string' } });
  if (parsed.positionals.length !== 1) throw new UsageError('give exactly one address or user id');
  const chain = parsed.values.chain;
  if (chain !== undefined && chain !== 'evm' && chain !== 'solana') throw new UsageError('--chain must be evm or solana');
  const minutes = wholeNumber('minutes', parsed.values.minutes, 15, 1, 1440);
  return { subject: parsed.positionals[0], chain, minutes };
}

interface UserRow {
  id: string;
  wallet_address: string;
  chain: 'evm' | 'solana';
}

/** Finds the user (by id) or finds-or-creates the wallet account (by address). */
export async function resolveTokenUser(dbh: DbHandle, req: Pick<TokenRequest, 'subject' | 'chain'>): Promise<UserRow> {
  if (UUID.test(req.subject)) {
    const [row] = await dbh.rows<UserRow>(sql`select id, wallet_address, chain from users where id = ${req.subject.toLowerCase()}`);
    if (!row) throw new UsageError(`no user has id ${req.subject}`);
    return row;
  }
  const chain = req.chain ?? (req.subject.startsWith('0x') ? 'evm' : 'solana');
  const address = normalizeAddress(chain, req.subject);
  if (!address) {
    throw new UsageError(
      `${req.subject} is neither a user id nor a valid ${chain === 'evm' ? 'EVM (0x + 40 hex)' : 'Solana (base58)'} address`,
    );
  }
  // Same account a wallet sign-in would reach: one user per (chain, address).
  const [row] = await dbh.rows<UserRow>(sql`
    insert into users (chain, wallet_address, auth_method) values (${chain}, ${address}, 'wallet')
    on conflict (chain, wallet_address) do update set updated_at = users.updated_at
    returning id, wallet_address, chain`);
  return row;
}

/** An access token as the auth plugin signs them (HS256 over JWT_SECRET; sub, walletAddress, chain). */
export async function signDevAccessToken(config: Pick<Config, 'JWT_SECRET'>, user: UserRow, minutes: number): Promise<string> {
  return new SignJWT({ walletAddress: user.wallet_address, chain: user.chain })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user.id)
    .setIssuedAt()
    .setExpirationTime(`${minutes}m`)
    .sign(new TextEncoder().encode(config.JWT_SECRET));
}

async function main(): Promise<number> {
  let req: TokenRequest;
  try {
    req = parseTokenArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
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
  const dbh = await openCliDb(config, 'token');
  if (typeof dbh === 'number') return dbh;
  try {
    await runMigrations(dbh);
    const user = await resolveTokenUser(dbh, req);
    const token = await signDevAccessToken(config, user, req.minutes);
    process.stdout.write(`${token}\n`);
    process.stderr.write(`access token for user ${user.id} (${user.chain} ${user.wallet_address}), valid ${req.minutes} min\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await dbh.close();
  }
}

runIfMain(import.meta.url, 'token', main);
