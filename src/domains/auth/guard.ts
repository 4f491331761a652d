import { bearerToken } from '../../lib/bearer.js';
import { safeEqual } from '../../lib/hash.js';
import fp from 'fastify-plugin';
import fastifyJwt, { type VerifyOptions } from '@fastify/jwt';
import type { FastifyRequest } from 'fastify';
import { AppError, unauthorized } from '../../errors.js';
import { createRevocationStore, type RevocationStore } from './revocations.js';
import type { Chain } from './schemas.js';

/** What handlers see as the current user (docs/api-contract.md §2 "JWT payloads"). */
export interface AuthUser {
  id: string;
  walletAddress: string;
  chain: Chain;
  /**
   * The session (refresh family) the token belongs to (docs/decisions.md §10.5);
   * undefined for tokens issued before sessions existed.
   */
  sid?: string;
}

interface AccessClaims {
  sub: string;
  walletAddress: string;
  chain: Chain;
  sid?: string;
  iat?: number;
  exp?: number;
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: { sub: string; walletAddress: string; chain: Chain; sid?: string };
    user: AuthUser;
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route needs no bearer token (seed: "Public"). */
    public?: boolean;
    /** The route is for the platform's other services: `Authorization: Bearer <INTERNAL_API_TOKEN>`. */
    internal?: boolean;
  }
  interface FastifyInstance {
    /** Verifies an access token (HS256 pinned; JWT_SECRET, then JWT_SECRET_PREVIOUS). Throws 401 AppError. */
    verifyAccessToken(token: string): AuthUser & { exp: number };
    /** Signs a 15-minute access token for a user and session. */
    signAccessToken(user: AuthUser): string;
    /** Ended sessions, as every instance learns them (docs/decisions.md §10.6). */
    sessionRevocations: RevocationStore;
  }
}

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;

/** Access tokens whose verification each instance remembers (least recently used leave first). */
const VERIFIED_TOKEN_CACHE_SIZE = 10_000;

/**
 * HS256 pinned. A client sends the same access token with every request for up to 15 minutes, so
 * verified tokens are remembered (fast-jwt's own cache): a repeat costs a SHA-256 of the token and a
 * lookup instead of the base64 decoding, HMAC, JSON parse and claim checks (issue 21; the figures are in
 * tests/bench/RESULTS.md). An entry lives until the token's `exp` (at most fast-jwt's 10-minute
 * cacheTTL), so expiry is unchanged; failures are not cached; revocation is checked on every request
 * after verification, cached or not. The cache key is fast-jwt's default, a SHA-256 of
 * the token: the token itself would be cheaper, but fast-jwt warns at start-up about any custom key
 * (GHSA-rp9m-7r4c-75qg), and a warning about authorization bypass in every instance's log is not one
 * operators should learn to ignore.
 */
const VERIFY_OPTIONS: Partial<VerifyOptions> = {
  algorithms: ['HS256'],
  cache: VERIFIED_TOKEN_CACHE_SIZE,
};

export const sessionRevoked = () => new AppError(401, 'SESSION_REVOKED', 'This session has ended: sign in again');

/**
 * Bearer JWT on every route by default (docs/api-contract.md §5.1); `config: { public: true }`
 * opts out; `config: { internal: true }` requires INTERNAL_API_TOKEN instead.
 */
export const authPlugin = fp(
  async (app) => {
    const { config } = app;
    await app.register(fastifyJwt, {
      secret: config.JWT_SECRET,
      sign: { algorithm: 'HS256', expiresIn: ACCESS_TOKEN_TTL_SECONDS },
      verify: VERIFY_OPTIONS,
    });
    if (config.JWT_SECRET_PREVIOUS) {
      await app.register(fastifyJwt, {
        secret: config.JWT_SECRET_PREVIOUS,
        namespace: 'previous',
        verify: VERIFY_OPTIONS,
      });
    }

    const verifiers = [(t: string) => app.jwt.verify<AccessClaims>(t)];
    if (config.JWT_SECRET_PREVIOUS) {
      const prev = (app.jwt as unknown as { previous: { verify: <T>(t: string) => T } }).previous;
      verifiers.push((t: string) => prev.verify<AccessClaims>(t));
    }

    const revocations = createRevocationStore({
      redis: app.redisClient,
      redisReady: () => app.redisReady(),
      keyPrefix: app.keyPrefix,
      log: app.log,
      // An access token lives 15 minutes; the margin covers clock skew between instances.
      retainMs: (ACCESS_TOKEN_TTL_SECONDS + 120) * 1000,
    });
    app.decorate('sessionRevocations', revocations);
    await revocations.start();
    app.addHook('onClose', async () => revocations.close());

    const checkClaims = (claims: AccessClaims) => {
      if (
        typeof claims.sub !== 'string' ||
        typeof claims.walletAddress !== 'string' ||
        (claims.chain !== 'solana' && claims.chain !== 'evm') ||
        typeof claims.exp !== 'number' ||
        (claims.sid !== undefined && typeof claims.sid !== 'string')
      ) {
        throw unauthorized('The access token is malformed');
      }
    };

    app.decorate('verifyAccessToken', (token: string) => {
      for (const verify of verifiers) {
        let claims: AccessClaims;
        try {
          claims = verify(token);
        } catch (err) {
          const code = (err as { code?: string }).code;
          if (code === 'FAST_JWT_EXPIRED') {
            // The signature was checked before the expiry (fast-jwt): the claims are ours.
            // Revocation wins over expiry (docs/decisions.md §10.6).
            const sid = app.jwt.decode<AccessClaims>(token)?.sid;
            if (typeof sid === 'string' && revocations.isRevoked(sid)) throw sessionRevoked();
            throw unauthorized('The access token has expired');
          }
          continue; // maybe signed with the previous key
        }
        checkClaims(claims);
        if (claims.sid !== undefined && revocations.isRevoked(claims.sid)) throw sessionRevoked();
        return { id: claims.sub, walletAddress: claims.walletAddress, chain: claims.chain, sid: claims.sid, exp: claims.exp! };
      }
      throw unauthorized('The access token is invalid');
    });

    app.decorate('signAccessToken', (user: AuthUser) =>
      app.jwt.sign(
        user.sid === undefined
          ? { sub: user.id, walletAddress: user.walletAddress, chain: user.chain }
          : { sub: user.id, walletAddress: user.walletAddress, chain: user.chain, sid: user.sid },
      ),
    );

    // The guard is attached to each route that needs it (not a global hook),
    // so public routes pay nothing for it.
    const guard = (request: FastifyRequest, _reply: unknown, done: (err?: Error) => void) => {
      const token = bearerToken(request.headers.authorization);
      if (!token) return done(unauthorized('A bearer access token is required'));
      let user: AuthUser;
      try {
        user = app.verifyAccessToken(token);
      } catch (err) {
        return done(err as Error);
      }
      request.user = { id: user.id, walletAddress: user.walletAddress, chain: user.chain, sid: user.sid };
      done();
    };
    const internalGuard = (request: FastifyRequest, _reply: unknown, done: (err?: Error) => void) => {
      const expected = config.INTERNAL_API_TOKEN;
      const token = bearerToken(request.headers.authorization);
      if (!expected) return done(new AppError(404, 'NOT_FOUND', 'Not found'));
      if (!token || !safeEqual(token, expected)) return done(unauthorized('A valid internal API token is required'));
      done();
    };
    app.addHook('onRoute', (route) => {
      const cfg = (route.config ?? {}) as { public?: boolean; internal?: boolean };
      const hook = cfg.internal ? internalGuard : cfg.public ? undefined : guard;
      if (!hook) return;
      const existing = route.onRequest ? (Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]) : [];
      // First among the route's own hooks: authentication before rate limiting, as before.
      route.onRequest = [hook, ...existing];
    });
  },
  { name: 'auth', fastify: '5.x', dependencies: ['context', 'redis'] },
);
