import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../lib/hash.js';
import type { DbHandle } from '../../db/index.js';
import { AppError, notFound, validationError } from '../../errors.js';
import type { AuthUser } from './guard.js';
import type { HitResult } from '../../lib/sliding-window.js';
import type { IdpVerifier } from './idp.js';
import { deriveIdpAddress } from './idp.js';
import type { NonceLimit, NonceStore, TakenNonce } from './nonce-store.js';
import {
  findPresentedToken,
  listUserSessions,
  redeemBetaKey,
  reuseWithinGrace,
  revokeFamily,
  revokeOtherSessions,
  revokeUserSession,
  revokeUserSessions,
  rotateRefreshToken,
  upsertIdpUserWithSession,
  upsertWalletUserWithSession,
  type RotatedUser,
  type SeenFrom,
} from './queries.js';
import type { RevocationStore } from './revocations.js';
import type { z } from 'zod';
import type { Chain, SessionSchema, SessionUser } from './schemas.js';
import type { SuccessorSeal } from './successor-seal.js';
import { buildSignInMessage, checkSignInMessage, parseSignInMessage, SOLANA_CHAIN_ID, type IssuedMessage } from './wallet-message.js';
import { normalizeAddress, verifyWalletSignature } from './wallet-verify.js';
import { isUuid } from '../../lib/uuid.js';

export interface AuthDeps {
  dbh: DbHandle;
  nonces: NonceStore;
  clock: () => Date;
  signAccessToken: (user: AuthUser) => string;
  verifyIdp: IdpVerifier;
  revocations: Pick<RevocationStore, 'revoke'>;
  seal: SuccessorSeal;
  settings: {
    /** REFRESH_REUSE_GRACE_SECONDS (docs/decisions.md §10.3). */
    graceSeconds: number;
    /** SIGN_IN_CHAIN_ID: the EIP-155 chain id of EVM sign-in messages. */
    evmChainId: number;
    /** SIGN_IN_BARE_NONCE: whether a signature over the bare nonce is still accepted. */
    bareNonce: boolean;
  };
}

/**
 * The outcome of a step that counts against a rate limit: the hit (which the
 * route turns into headers, or a 429 when refused), and the step's value or
 * the problem it ends in. The service never writes to the reply.
 */
export type Limited<T> = { hit: HitResult } & ({ ok: true; value: T } | { ok: false; error?: AppError });

export interface Session {
  accessToken: string;
  refreshToken: string;
  user: SessionUser;
}

/** SHA-256 hex: refresh tokens and beta keys are stored (and rate-limited) by this only. */
export const hashToken: (token: string) => string = sha256Hex;

/** 256 random bits, base64url (docs/decisions.md §3.6). */
export function generateRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

const invalidAddress = (chain: Chain) =>
  validationError(
    [{ path: 'address', message: chain === 'evm' ? 'must be 0x followed by 40 hex digits' : 'must be a base58 32-byte public key' }],
    `The address is not a valid ${chain} address`,
  );

const invalidNonce = () =>
  new AppError(401, 'INVALID_NONCE', 'The nonce is unknown, expired, already used or was issued for another address or chain');
const invalidMessage = (why: string) =>
  new AppError(401, 'INVALID_MESSAGE', `The signed message does not match the sign-in request: ${why}`);
const invalidRefresh = (detail = 'The refresh token is unknown, expired or revoked') => new AppError(401, 'INVALID_REFRESH_TOKEN', detail);
const refreshReused = () =>
  new AppError(401, 'REFRESH_TOKEN_REUSED', 'This refresh token was already used; every token of its session is now revoked');

/**
 * GET /auth/wallet/nonce: a nonce bound to (chain, address) and the ready-to-sign
 * message naming `target` (docs/decisions.md §10.7). A malformed address still
 * counts against the limit.
 */
export async function issueNonce(
  deps: Pick<AuthDeps, 'nonces' | 'clock' | 'settings'> & { countHit: (limit: NonceLimit) => Promise<HitResult> },
  input: { chain: Chain; address: string; target: IssuedMessage },
  limit: NonceLimit,
): Promise<Limited<{ nonce: string; expiresAt: string; message: string }>> {
  const address = normalizeAddress(input.chain, input.address);
  if (!address) return { hit: await deps.countHit(limit), ok: false, error: invalidAddress(input.chain) };
  const issued = await deps.nonces.issue({ chain: input.chain, address, ...input.target }, limit);
  if (!issued.value) return { hit: issued.hit, ok: false };
  const { nonce, expiresAt } = issued.value;
  const message = buildSignInMessage(input.chain, {
    ...input.target,
    address,
    nonce,
    chainId: deps.settings.evmChainId,
    issuedAt: deps.clock(),
    expirationTime: expiresAt,
  });
  return { hit: issued.hit, ok: true, value: { nonce, expiresAt: expiresAt.toISOString(), message } };
}

/**
 * The first step of a wallet sign-in: takes (deletes) the nonce, counting the
 * attempt, so every attempt consumes it, successful or not.
 */
export async function takeNonce(
  deps: Pick<AuthDeps, 'nonces'>,
  nonce: string,
  limit: NonceLimit,
): Promise<Limited<TakenNonce | undefined>> {
  const taken = await deps.nonces.take(nonce, limit);
  if (taken.hit.current > limit.max) return { hit: taken.hit, ok: false };
  return { hit: taken.hit, ok: true, value: taken.value };
}

/**
 * Wallet sign-in with the nonce already taken: the binding must match, the
 * signed text must be the domain-bound message issued with it (or the bare
 * nonce while SIGN_IN_BARE_NONCE allows it), and the signature must verify.
 */
export async function signInWithWallet(
  deps: AuthDeps,
  input: { chain: Chain; address: string; signature: string; nonce: string; message?: string; referralCode?: string },
  binding: TakenNonce | undefined,
  seen: SeenFrom,
): Promise<Session> {
  const address = normalizeAddress(input.chain, input.address);
  if (!address) throw invalidAddress(input.chain);
  if (!binding || binding.chain !== input.chain || binding.address !== address) throw invalidNonce();
  let signed = input.nonce;
  if (input.message !== undefined) {
    const parsed = parseSignInMessage(input.chain, input.message);
    if (!parsed) throw invalidMessage(`it is not a Sign-In with ${input.chain === 'evm' ? 'Ethereum (EIP-4361)' : 'Solana'} message`);
    const why = checkSignInMessage(parsed, {
      issued: binding,
      address,
      nonce: input.nonce,
      chainId: input.chain === 'evm' ? String(deps.settings.evmChainId) : SOLANA_CHAIN_ID,
      nonceExpiresAt: binding.expiresAt,
      now: deps.clock().getTime(),
      normalize: (a) => normalizeAddress(input.chain, a),
    });
    if (why) throw invalidMessage(why);
    signed = input.message;
  } else if (!deps.settings.bareNonce) {
    throw invalidMessage('sign the `message` the nonce request returned (a bare nonce is not accepted here)');
  }
  const ok = await verifyWalletSignature(input.chain, address, input.signature, signed);
  if (!ok) throw new AppError(401, 'INVALID_SIGNATURE', 'The signature does not verify for this address and message');
  const refreshToken = generateRefreshToken();
  const user = await upsertWalletUserWithSession(deps.dbh, {
    chain: input.chain,
    walletAddress: address,
    referralCode: input.referralCode ?? null,
    refreshTokenHash: hashToken(refreshToken),
    seen,
  });
  if (!user) throw new AppError(409, 'CONFLICT', 'This address belongs to an account of another sign-in method');
  return startedSession(deps, user, refreshToken);
}

function startedSession(deps: Pick<AuthDeps, 'signAccessToken'>, user: SessionUser & { sid: string }, refreshToken: string): Session {
  const { sid, ...profile } = user;
  const accessToken = deps.signAccessToken({ id: user.id, walletAddress: user.walletAddress, chain: user.chain, sid });
  return { accessToken, refreshToken, user: profile };
}

/**
 * Identity-provider sign-in (docs/decisions.md §3.4, §10.8): the account of
 * (issuer, subject), at its synthetic EVM address. When that address is
 * taken by anything else, 409 ACCOUNT_CONFLICT: never merged.
 */
export async function signInWithIdp(deps: AuthDeps, input: { accessToken: string }, seen: SeenFrom): Promise<Session> {
  const { issuer, subject } = await deps.verifyIdp(input.accessToken);
  const walletAddress = deriveIdpAddress(issuer, subject);
  const refreshToken = generateRefreshToken();
  const args = { walletAddress, issuer, subject, refreshTokenHash: hashToken(refreshToken), seen };
  // A second try finds the account a concurrent first sign-in of the same identity created.
  const user = (await upsertIdpUserWithSession(deps.dbh, args)) ?? (await upsertIdpUserWithSession(deps.dbh, args));
  if (!user) {
    throw new AppError(409, 'ACCOUNT_CONFLICT', "This identity's address belongs to another account; it is not merged with it");
  }
  return startedSession(deps, user, refreshToken);
}

export interface Refreshed {
  accessToken: string;
  refreshToken: string;
  user: { id: string; walletAddress: string; chain: Chain };
}

/**
 * Rotation (docs/decisions.md §3.6, §10.2, §10.3). A used token is a reuse:
 * its session is ended (committed before the error is answered, and on every
 * instance), unless the grace window applies, which answers the successor
 * already issued.
 */
export async function refreshSession(deps: AuthDeps, presented: string | undefined, seen: SeenFrom): Promise<Refreshed> {
  if (!presented) throw invalidRefresh('No refresh token was presented');
  const presentedHash = hashToken(presented);
  const refreshToken = generateRefreshToken();
  const graceSeconds = deps.settings.graceSeconds;
  const rotated = await rotateRefreshToken(deps.dbh, {
    presentedHash,
    successorHash: hashToken(refreshToken),
    sealedSuccessor: graceSeconds > 0 ? deps.seal.seal(refreshToken, presentedHash) : null,
    graceSeconds,
    seen,
  });
  if (rotated) return refreshed(deps, rotated, refreshToken);

  const token = await findPresentedToken(deps.dbh, presentedHash);
  if (!token || !token.used) throw invalidRefresh();
  if (graceSeconds > 0 && token.sealedSuccessor && token.usedSecondsAgo !== null && token.usedSecondsAgo <= graceSeconds) {
    const successor = deps.seal.open(token.sealedSuccessor, presentedHash);
    if (successor) {
      const again = await reuseWithinGrace(deps.dbh, {
        family: token.family,
        presentedHash,
        successorHash: hashToken(successor),
        graceSeconds,
        seen,
      });
      if (again) return refreshed(deps, again, successor);
    }
  }
  await endSessions(deps, await revokeFamily(deps.dbh, token.family));
  throw refreshReused();
}

function refreshed(deps: Pick<AuthDeps, 'signAccessToken'>, user: RotatedUser, refreshToken: string): Refreshed {
  const { sid, ...who } = user;
  return { accessToken: deps.signAccessToken({ ...who, sid }), refreshToken, user: who };
}

/** Ended sessions reach access tokens and sockets everywhere (docs/decisions.md §10.6). */
async function endSessions(deps: Pick<AuthDeps, 'revocations'>, sids: string[]): Promise<void> {
  if (sids.length > 0) await deps.revocations.revoke(sids);
}

/** POST /auth/logout: every session of the user (docs/decisions.md §3.8). */
export async function logout(deps: Pick<AuthDeps, 'dbh' | 'revocations'>, userId: string): Promise<void> {
  await endSessions(deps, await revokeUserSessions(deps.dbh, userId));
}

export type SessionView = z.infer<typeof SessionSchema>;

/** GET /auth/sessions (docs/decisions.md §10.5). */
export async function listSessions(deps: Pick<AuthDeps, 'dbh'>, user: AuthUser): Promise<{ sessions: SessionView[] }> {
  const rows = await listUserSessions(deps.dbh, user.id);
  return {
    sessions: rows.map((r) => ({
      id: r.id,
      current: r.id === user.sid,
      createdAt: r.createdAt.toISOString(),
      lastUsedAt: r.lastUsedAt.toISOString(),
      expiresAt: r.expiresAt.toISOString(),
      userAgent: r.userAgent,
      ip: r.ip,
    })),
  };
}

/**
 * DELETE /auth/sessions/:id: another user's, unknown, malformed or already
 * ended id is 404 (existence is not leaked). Says whether it was the caller's
 * own session (the route then clears the cookies).
 */
export async function endSession(
  deps: Pick<AuthDeps, 'dbh' | 'revocations'>,
  user: AuthUser,
  sessionId: string,
): Promise<{ current: boolean }> {
  if (!isUuid(sessionId)) throw notFound('Session');
  const ended = await revokeUserSession(deps.dbh, user.id, sessionId.toLowerCase());
  if (ended.length === 0) throw notFound('Session');
  await endSessions(deps, ended);
  return { current: ended[0] === user.sid };
}

/** DELETE /auth/sessions: every session of the caller but the current one. */
export async function endOtherSessions(deps: Pick<AuthDeps, 'dbh' | 'revocations'>, user: AuthUser): Promise<{ revoked: number }> {
  const ended = await revokeOtherSessions(deps.dbh, user.id, user.sid);
  await endSessions(deps, ended);
  return { revoked: ended.length };
}

export async function activateBetaKey(deps: Pick<AuthDeps, 'dbh'>, input: { key: string; userId?: string }): Promise<void> {
  const ok = await redeemBetaKey(deps.dbh, hashToken(input.key), input.userId);
  if (!ok) throw new AppError(400, 'INVALID_BETA_KEY', 'The beta key is unknown, revoked or already used up');
}

/** Beta keys: `beta_` + 128 random bits in base64url. */
export function generateBetaKey(): string {
  return `beta_${randomBytes(16).toString('base64url')}`;
}
