import { isIP } from 'node:net';
import { sql } from 'drizzle-orm';
import { jwtVerify, SignJWT } from 'jose';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import type { DbHandle } from '../../db/index.js';
import { AppError } from '../../errors.js';
import { normalizeAddress } from './wallet-verify.js';
import { isUuid } from '../../lib/uuid.js';

/**
 * Access tokens for local development without a wallet (`npm run token`,
 * `npm run demo`). The CLI opens the database itself; while the service holds
 * the embedded database (one process at a time), it asks the running service
 * instead, over POST /dev/token: registered only outside production, answered
 * only to a loopback peer, and only for a proof signed with the service's own
 * JWT key (whoever holds that key can mint any token anyway, so the route adds
 * no power; without it no other local process can use the route).
 */

export interface TokenUser {
  id: string;
  wallet_address: string;
  chain: 'evm' | 'solana';
}

/** Finds the user (by id) or finds-or-creates the wallet account (by address). 404/400 AppError otherwise. */
export async function resolveTokenUser(dbh: DbHandle, req: { subject: string; chain?: 'evm' | 'solana' }): Promise<TokenUser> {
  if (isUuid(req.subject)) {
    const [row] = await dbh.rows<TokenUser>(sql`select id, wallet_address, chain from users where id = ${req.subject.toLowerCase()}`);
    if (!row) throw new AppError(404, 'NOT_FOUND', `no user has id ${req.subject}`);
    return row;
  }
  const chain = req.chain ?? (req.subject.startsWith('0x') ? 'evm' : 'solana');
  const address = normalizeAddress(chain, req.subject);
  if (!address) {
    throw new AppError(
      400,
      'VALIDATION_ERROR',
      `${req.subject} is neither a user id nor a valid ${chain === 'evm' ? 'EVM (0x + 40 hex)' : 'Solana (base58)'} address`,
    );
  }
  // Same account a wallet sign-in would reach: one user per (chain, address).
  const [row] = await dbh.rows<TokenUser>(sql`
    insert into users (chain, wallet_address, auth_method) values (${chain}, ${address}, 'wallet')
    on conflict (chain, wallet_address) do update set updated_at = users.updated_at
    returning id, wallet_address, chain`);
  return row;
}

/** An access token as the auth plugin signs them (HS256 over JWT_SECRET; sub, walletAddress, chain). */
export async function signDevAccessToken(config: Pick<Config, 'JWT_SECRET'>, user: TokenUser, minutes: number): Promise<string> {
  return new SignJWT({ walletAddress: user.wallet_address, chain: user.chain })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(user.id)
    .setIssuedAt()
    .setExpirationTime(`${minutes}m`)
    .sign(new TextEncoder().encode(config.JWT_SECRET));
}

/** The audience of the CLI's proof: never an access token's (those have none). */
export const DEV_TOKEN_AUDIENCE = 'predict-backend:dev-token';

/** The proof `npm run token` sends: a 60-second JWT over the JWT key, with the dev-token audience and no subject. */
export async function signDevTokenProof(config: Pick<Config, 'JWT_SECRET'>): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setAudience(DEV_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime('60s')
    .sign(new TextEncoder().encode(config.JWT_SECRET));
}

const isLoopback = (address: string | undefined): boolean => {
  if (!address) return false;
  const a = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  return a === '::1' || (isIP(a) === 4 && a.startsWith('127.'));
};

const DevTokenBodySchema = z
  .object({
    subject: z.string().min(1).max(128).describe('A user id, or a wallet address (its account is created when it has none)'),
    chain: z.enum(['evm', 'solana']).optional().describe('The chain of an address; default: evm for 0x…, else solana'),
    minutes: z.number().int().min(1).max(1440).default(15).describe('Lifetime of the token (1–1440 minutes)'),
  })
  .strict();

const DevTokenResponseSchema = z.object({
  accessToken: z.string(),
  user: z.object({ id: z.string(), walletAddress: z.string(), chain: z.enum(['evm', 'solana']) }),
});

/** POST /dev/token: registered by app.ts outside production only; hidden from the API document. */
export const devTokenRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/dev/token',
    {
      config: { public: true },
      schema: {
        hide: true,
        operationId: 'createDevToken',
        body: DevTokenBodySchema,
        response: { 200: DevTokenResponseSchema },
      },
    },
    async (request) => {
      // The socket's own peer: X-Forwarded-For plays no part (a proxy on loopback could forward anyone).
      if (!isLoopback(request.raw.socket.remoteAddress)) throw new AppError(404, 'NOT_FOUND');
      const proof = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
      if (!proof) throw new AppError(401, 'UNAUTHORIZED', 'a proof signed with the JWT key is required');
      try {
        await jwtVerify(proof, new TextEncoder().encode(app.config.JWT_SECRET), {
          algorithms: ['HS256'],
          audience: DEV_TOKEN_AUDIENCE,
          maxTokenAge: '60s',
        });
      } catch {
        throw new AppError(401, 'UNAUTHORIZED', 'the proof is not signed with this service’s JWT key, or it expired');
      }
      const user = await resolveTokenUser(app.dbh, request.body);
      const accessToken = await signDevAccessToken(app.config, user, request.body.minutes);
      request.log.info({ userId: user.id, minutes: request.body.minutes }, 'development access token issued');
      return { accessToken, user: { id: user.id, walletAddress: user.wallet_address, chain: user.chain } };
    },
  );
};
