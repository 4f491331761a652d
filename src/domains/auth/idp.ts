import { createRemoteJWKSet, jwtVerify, errors as joseErrors } from 'jose';
import { getAddress, keccak256, stringToBytes } from 'viem';
import type { Config } from '../../config.js';
import { AppError, unavailable } from '../../errors.js';
import { requestJson, UpstreamError } from '../../lib/http.js';

export interface IdpIdentity {
  issuer: string;
  subject: string;
}

export type IdpVerifier = (accessToken: string) => Promise<IdpIdentity>;

const rejected = (detail = 'The identity provider rejected the access token') => new AppError(401, 'INVALID_IDP_TOKEN', detail);
const providerDown = () => unavailable('The identity provider is unreachable, try again shortly', 5);

/** docs/decisions.md §3.4: EIP-55 of the last 20 bytes of keccak256(utf8(`idp:<issuer>:<sub>`)). */
export function deriveIdpAddress(issuer: string, subject: string): string {
  const hash = keccak256(stringToBytes(`idp:${issuer}:${subject}`));
  return getAddress(`0x${hash.slice(-40)}`);
}

// Errors that mean "this token is not acceptable" (401); anything else from
// jose (JWKS fetch failed, timed out, answered garbage) means the provider is down (503).
const TOKEN_ERRORS = new Set<string>([
  joseErrors.JWTExpired.code,
  joseErrors.JWTClaimValidationFailed.code,
  joseErrors.JWTInvalid.code,
  joseErrors.JWSInvalid.code,
  joseErrors.JWSSignatureVerificationFailed.code,
  joseErrors.JOSEAlgNotAllowed.code,
  joseErrors.JOSENotSupported.code,
  joseErrors.JWKSNoMatchingKey.code,
  joseErrors.JWKSMultipleMatchingKeys.code,
]);

/**
 * RFC 6750 b64token: what a Bearer credential may hold. Anything else cannot
 * be carried in the userinfo request's Authorization header (fetch throws
 * before sending), so it is the caller's token that is wrong: 401, never 503
 * (docs/decisions.md §10.8).
 */
/** Userinfo statuses that answer about the token itself: refused (400, 401, 403) or unknown (404, 410). */
const IDP_REJECTS = new Set([400, 401, 403, 404, 410]);

const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * Builds the verifier the configuration asks for: JWKS (jose; the configured
 * issuer and audience always checked, docs/decisions.md §10.8) when IDP_JWKS_URL
 * is set, else the provider's userinfo endpoint. Neither configured: every
 * call is a 503.
 */
export function createIdpVerifier(config: Config): IdpVerifier {
  if (config.IDP_JWKS_URL) {
    const jwksUrl = config.IDP_JWKS_URL;
    const issuer = config.IDP_ISSUER;
    const audience = config.IDP_AUDIENCE;
    // The configuration refuses IDP_JWKS_URL without both; never verify with either left open.
    if (!issuer || !audience) throw new Error('IDP_JWKS_URL requires IDP_ISSUER and IDP_AUDIENCE');
    const jwks = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: 5_000, cooldownDuration: 30_000, cacheMaxAge: 10 * 60_000 });
    return async (token) => {
      let payload;
      try {
        ({ payload } = await jwtVerify(token, jwks, {
          issuer,
          audience,
          // An access token must expire; asymmetric algorithms only (no HS* with a public key).
          requiredClaims: ['exp', 'sub'],
          algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'],
          clockTolerance: 30,
        }));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code && TOKEN_ERRORS.has(code)) throw rejected();
        throw providerDown();
      }
      if (typeof payload.sub !== 'string' || payload.sub.length === 0) throw rejected('The access token names no subject');
      return { issuer, subject: payload.sub };
    };
  }
  if (config.IDP_USERINFO_URL) {
    const userinfoUrl = config.IDP_USERINFO_URL;
    const issuer = config.IDP_ISSUER ?? userinfoUrl;
    return async (token) => {
      if (!BEARER_TOKEN.test(token)) throw rejected('The access token holds characters a bearer token cannot');
      let info: unknown;
      try {
        info = await requestJson(userinfoUrl, {
          headers: { authorization: `Bearer ${token}` },
          timeoutMs: 5_000,
          attempts: 2,
          backoffMs: 200,
        });
      } catch (err) {
        // The provider answered about this token: 400/401/403 refuse it, 404/410 do not know it
        // (whatever the body, JSON or not), and a 2xx whose body is not JSON identifies no account,
        // like a JSON one without `sub` below (issue #34). Unreachable, timed out or 5xx: 503.
        if (err instanceof UpstreamError && err.status !== undefined && IDP_REJECTS.has(err.status)) throw rejected();
        if (err instanceof UpstreamError && err.status !== undefined && err.status >= 200 && err.status < 300) {
          throw rejected('The identity provider did not identify an account');
        }
        throw providerDown();
      }
      const sub = (info as { sub?: unknown } | null)?.sub;
      const subject = typeof sub === 'number' ? String(sub) : sub;
      if (typeof subject !== 'string' || subject.length === 0 || subject.length > 255) {
        throw rejected('The identity provider did not identify an account');
      }
      return { issuer, subject };
    };
  }
  return async () => {
    throw unavailable('Identity-provider sign-in is not configured on this server', 60);
  };
}
