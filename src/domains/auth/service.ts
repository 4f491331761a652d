import { createHash, randomBytes } from 'node:crypto';
import type { DbHandle } from '../../db/index.js';
import { AppError, validationError } from '../../errors.js';
import type { AuthUser } from '../../plugins/auth.js';
import type { IdpVerifier } from './idp.js';
import { deriveIdpAddress } from './idp.js';
import type { HitResult } from '../../lib/sliding-window.js';
import type { NonceLimit, NonceStore } from './nonce-store.js';
import { redeemBetaKey, revokeFamilyIfReused, revokeUserTokens, rotateRefreshToken, upsertUserWithSession } from './queries.js';
import type { Chain, SessionUser } from './schemas.js';
import { normalizeAddress, verifyWalletSignature } from './wallet-verify.js';

export interface AuthDeps {
  dbh: DbHandle;
  nonces: NonceStore;
  signAccessToken: (user: AuthUser) => string;
  verifyIdp: IdpVerifier;
}

/**
 * A route's rate limit, taken by the nonce store together with the nonce
 * command. `onHit` answers the hit (headers; throws 429 when refused);
 * `count` takes a hit alone, for a request refused before the store is
 * reached (it counts all the same).
 */
export interface RouteLimit {
  limit: NonceLimit;
  onHit(hit: HitResult): void;
  count(): Promise<void>;
}

export interface Session {
  accessToken: string;
  refreshToken: string;
  user: SessionUser;
}

/** SHA-256 hex: refresh tokens and beta keys are stored (and rate-limited) by this only. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** 256 random bits, base64url (docs/decisions.md §3.6). */
export function generateRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

const invalidAddress = (chain: Chain) =>
  validationError(
    [{ path: 'address', message: chain === 'evm' ? 'must be 0x followed by 40 hex digits' : 'must be a base58 32-byte public key' }],
    `The address is not a valid ${chain} address`,
  );

function canonicalAddress(chain: Chain, address: string): string {
  const canonical = normalizeAddress(chain, address);
  if (!canonical) throw invalidAddress(chain);
  return canonical;
}

export async function issueNonce(deps: Pick<AuthDeps, 'nonces'>, input: { chain: Chain; address: string }, limit: RouteLimit) {
  const address = normalizeAddress(input.chain, input.address);
  if (!address) {
    await limit.count(); // refused all the same: counts, then 400 (or 429 when over)
    throw invalidAddress(input.chain);
  }
  const issued = await deps.nonces.issue({ chain: input.chain, address }, limit.limit);
  limit.onHit(issued.hit);
  const { nonce, expiresAt } = issued.value!;
  return { nonce, expiresAt: expiresAt.toISOString() };
}

const invalidNonce = () =>
  new AppError(401, 'INVALID_NONCE', 'The nonce is unknown, expired, already used or was issued for another address or chain');
const conflict = () => new AppError(409, 'CONFLICT', 'This address belongs to an account of another sign-in method');

type SessionInput = Omit<Parameters<typeof upsertUserWithSession>[1], 'refreshTokenHash'>;

async function startSession(deps: AuthDeps, input: SessionInput): Promise<Session> {
  const refreshToken = generateRefreshToken();
  const user = await upsertUserWithSession(deps.dbh, { ...input, refreshTokenHash: hashToken(refreshToken) });
  if (!user) throw conflict();
  const accessToken = deps.signAccessToken({ id: user.id, walletAddress: user.walletAddress, chain: user.chain });
  return { accessToken, refreshToken, user };
}

/**
 * Wallet sign-in. The nonce is taken (deleted) before anything else is
 * checked, so every attempt consumes it, successful or not.
 */
export async function signInWithWallet(
  deps: AuthDeps,
  input: { chain: Chain; address: string; signature: string; nonce: string; referralCode?: string },
  limit: RouteLimit,
): Promise<Session> {
  const taken = await deps.nonces.take(input.nonce, limit.limit);
  limit.onHit(taken.hit);
  const binding = taken.value;
  const address = canonicalAddress(input.chain, input.address);
  if (!binding || binding.chain !== input.chain || binding.address !== address) throw invalidNonce();
  const ok = await verifyWalletSignature(input.chain, address, input.signature, input.nonce);
  if (!ok) throw new AppError(401, 'INVALID_SIGNATURE', 'The signature does not verify for this address and nonce');
  return startSession(deps, {
    chain: input.chain,
    walletAddress: address,
    authMethod: 'wallet',
    referralCode: input.referralCode ?? null,
  });
}

/** Identity-provider sign-in: a separate account at a synthetic EVM address (docs/decisions.md §3.4). */
export async function signInWithIdp(deps: AuthDeps, input: { accessToken: string }): Promise<Session> {
  const { issuer, subject } = await deps.verifyIdp(input.accessToken);
  return startSession(deps, {
    chain: 'evm',
    walletAddress: deriveIdpAddress(issuer, subject),
    authMethod: 'idp',
    idpIssuer: issuer,
    idpSubject: subject,
  });
}

export async function refreshSession(
  deps: AuthDeps,
  presented: string | undefined,
): Promise<{ accessToken: string; refreshToken: string; user: AuthUser }> {
  if (!presented) throw new AppError(401, 'INVALID_REFRESH_TOKEN', 'No refresh token was presented');
  const presentedHash = hashToken(presented);
  const refreshToken = generateRefreshToken();
  const user = await rotateRefreshToken(deps.dbh, presentedHash, hashToken(refreshToken));
  if (!user) {
    const outcome = await revokeFamilyIfReused(deps.dbh, presentedHash);
    if (outcome === 'reused') {
      throw new AppError(401, 'REFRESH_TOKEN_REUSED', 'This refresh token was already used; every session of its family is now revoked');
    }
    throw new AppError(401, 'INVALID_REFRESH_TOKEN', 'The refresh token is unknown, expired or revoked');
  }
  return { accessToken: deps.signAccessToken(user), refreshToken, user };
}

export async function logout(deps: Pick<AuthDeps, 'dbh'>, userId: string): Promise<void> {
  await revokeUserTokens(deps.dbh, userId);
}

export async function activateBetaKey(deps: Pick<AuthDeps, 'dbh'>, input: { key: string; userId?: string }): Promise<void> {
  const ok = await redeemBetaKey(deps.dbh, hashToken(input.key), input.userId);
  if (!ok) throw new AppError(400, 'INVALID_BETA_KEY', 'The beta key is unknown, revoked or already used up');
}

/** Beta keys: `beta_` + 128 random bits in base64url. */
export function generateBetaKey(): string {
  return `beta_${randomBytes(16).toString('base64url')}`;
}
