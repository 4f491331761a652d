import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import { z } from 'zod';
import { problemResponses, unauthorized } from '../../errors.js';
import { applyHit } from '../../plugins/rate-limit.js';
import { clearSessionCookies, REFRESH_COOKIE, setBetaCookie, setSessionCookies } from './cookies.js';
import { createIdpVerifier } from './idp.js';
import { createNonceStore } from './nonce-store.js';
import {
  ActivateKeyBodySchema,
  ActivateKeyResponseSchema,
  IdpSignInBodySchema,
  NonceQuerySchema,
  NonceResponseSchema,
  RefreshBodySchema,
  RefreshResponseSchema,
  SignInResponseSchema,
  WalletSignInBodySchema,
} from './schemas.js';
import {
  activateBetaKey,
  hashToken,
  issueNonce,
  logout,
  refreshSession,
  signInWithIdp,
  signInWithWallet,
  type AuthDeps,
  type RouteLimit,
} from './service.js';

const MINUTE = 60_000;

function presentedRefreshToken(request: FastifyRequest): string | undefined {
  const fromBody = (request.body as { refreshToken?: unknown } | undefined)?.refreshToken;
  if (typeof fromBody === 'string' && fromBody.length > 0) return fromBody;
  const fromCookie = request.cookies?.[REFRESH_COOKIE];
  return typeof fromCookie === 'string' && fromCookie.length > 0 ? fromCookie : undefined;
}

/**
 * Sign-in and sessions (docs/api-contract.md §4.1, docs/decisions.md §3), under /api/v1/auth.
 * Every route but logout is public; limits of docs/api-contract.md §8 on each.
 */
export const authRoutes: FastifyPluginAsyncZod = async (app) => {
  // Only these routes read or set cookies: the parser and its onSend hook are
  // registered here (encapsulated), not on every route of the service.
  await app.register(fastifyCookie);
  const nonces = createNonceStore({
    keyPrefix: app.keyPrefix,
    clock: app.clock,
    limiter: app.limiter,
  });
  app.addHook('onClose', async () => nonces.close());
  const deps: AuthDeps = {
    dbh: app.dbh,
    nonces,
    signAccessToken: (user) => app.signAccessToken(user),
    verifyIdp: createIdpVerifier(app.config),
  };
  const { config } = app;

  /**
   * The sign-in nonce routes take their docs/api-contract.md §8 limit (per IP) in the handler,
   * in the same Redis script as the nonce SET/GETDEL: one round trip where the
   * plugin's hook would add a second to every sign-in. Every request counts,
   * including ones refused for a malformed body or address: a request that
   * failed validation (attachValidation) takes its hit here, then gets its 400.
   */
  const routeLimit = async (request: FastifyRequest, reply: FastifyReply): Promise<RouteLimit> => {
    const { max, timeWindow } = request.routeOptions.config.handlerRateLimit!;
    const limit = { key: `${request.routeOptions.url}:${request.ip}`, windowMs: timeWindow, max };
    const onHit = (hit: Parameters<RouteLimit['onHit']>[0]) => applyHit(reply, max, hit);
    const count = async () => onHit(await app.limiter.hit(limit.key, limit.windowMs, max));
    if (request.validationError) {
      await count();
      throw request.validationError;
    }
    return { limit, onHit, count };
  };

  app.get(
    '/wallet/nonce',
    {
      config: { public: true, handlerRateLimit: { max: 20, timeWindow: MINUTE } },
      attachValidation: true,
      schema: {
        operationId: 'getWalletNonce',
        tags: ['auth'],
        summary: 'Get a sign-in nonce for a wallet',
        description:
          'A single-use nonce bound to (chain, address), valid 5 minutes, 192 random bits in base58. ' +
          'Sign exactly its UTF-8 bytes. It is consumed by the first sign-in attempt that presents it, whether or not ' +
          'the signature verifies. EVM addresses are compared case-insensitively. Malformed address → 400. 20/min per IP ' +
          '(malformed requests count; a refused request is issued no nonce).',
        querystring: NonceQuerySchema,
        response: { 200: NonceResponseSchema, ...problemResponses(400, 429, 503) },
      },
    },
    async (request, reply) => issueNonce(deps, request.query, await routeLimit(request, reply)),
  );

  app.post(
    '/wallet',
    {
      config: { public: true, handlerRateLimit: { max: 10, timeWindow: MINUTE } },
      attachValidation: true,
      schema: {
        operationId: 'signInWithWallet',
        tags: ['auth'],
        summary: 'Sign in with a Solana or EVM wallet signature',
        description:
          'Solana: base58 ed25519 detached signature (strict RFC 8032) over the nonce bytes. EVM: EIP-191 personal_sign ' +
          'by an externally owned account; the address is stored EIP-55. Creates the user on first sign-in (storing ' +
          '`referralCode` then only) and finds it afterwards. Sets the `refresh_token` (httpOnly, Path=/api/v1/auth), ' +
          '`logged_in=1` and `beta_access=1` cookies (Max-Age 90 days). 401 INVALID_NONCE / INVALID_SIGNATURE. 10/min per IP ' +
          '(malformed requests count; a refused (429) attempt does not consume its nonce).',
        body: WalletSignInBodySchema,
        response: { 201: SignInResponseSchema, ...problemResponses(400, 401, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const session = await signInWithWallet(deps, request.body, await routeLimit(request, reply));
      setSessionCookies(reply, config, session.refreshToken);
      return reply.code(201).send({ accessToken: session.accessToken, user: session.user });
    },
  );

  app.post(
    '/idp',
    {
      config: { public: true, rateLimit: { max: 10, timeWindow: MINUTE } },
      schema: {
        operationId: 'signInWithIdp',
        tags: ['auth'],
        summary: "Sign in with an identity provider's access token",
        description:
          'Verified against IDP_JWKS_URL (issuer and audience checked) when set, else by calling IDP_USERINFO_URL. The ' +
          'account is keyed by (issuer, sub), lives at a synthetic EVM address (EIP-55 of the last 20 bytes of ' +
          'keccak256("idp:<issuer>:<sub>")) and is never merged with a wallet account. Same cookies and body as wallet ' +
          'sign-in. 401 INVALID_IDP_TOKEN when the provider rejects the token; 503 when it is unreachable or not configured. 10/min per IP.',
        body: IdpSignInBodySchema,
        response: { 201: SignInResponseSchema, ...problemResponses(400, 401, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const session = await signInWithIdp(deps, request.body);
      setSessionCookies(reply, config, session.refreshToken);
      return reply.code(201).send({ accessToken: session.accessToken, user: session.user });
    },
  );

  app.post(
    '/refresh',
    {
      config: {
        public: true,
        rateLimit: {
          max: 60,
          timeWindow: MINUTE,
          // After body parsing, so a body-borne token is keyed too; keyed by the
          // token's hash (docs/api-contract.md §8), whatever IP presents it.
          hook: 'preHandler',
          keyGenerator: (request: FastifyRequest) => {
            const token = presentedRefreshToken(request);
            return token ? `rt:${hashToken(token)}` : `ip:${request.ip}`;
          },
        },
      },
      schema: {
        operationId: 'refreshSession',
        tags: ['auth'],
        // The cookie, or the same token in the body for clients without cookies.
        security: [{ refreshCookie: [] }, {}],
        summary: 'Rotate the refresh token and get a new access token',
        description:
          'Takes the body `{ refreshToken }` when given, else the `refresh_token` cookie. The presented token is marked ' +
          'used and a successor in the same family is issued (90-day sliding expiry) in one atomic statement: of two ' +
          'concurrent refreshes with one token exactly one succeeds. Presenting a used token revokes its whole family ' +
          '(401 REFRESH_TOKEN_REUSED; no grace window). Unknown, expired or revoked: 401 INVALID_REFRESH_TOKEN. Every ' +
          'failure clears the three cookies. 60/min per token.',
        body: RefreshBodySchema,
        response: { 200: RefreshResponseSchema, ...problemResponses(400, 401, 429, 503) },
      },
    },
    async (request, reply) => {
      try {
        const session = await refreshSession(deps, presentedRefreshToken(request));
        setSessionCookies(reply, config, session.refreshToken);
        return session;
      } catch (err) {
        clearSessionCookies(reply, config);
        throw err;
      }
    },
  );

  app.post(
    '/logout',
    {
      schema: {
        operationId: 'logout',
        tags: ['auth'],
        summary: 'Sign out everywhere',
        description: 'Revokes every refresh token of the user (all families, all devices) and clears the three cookies.',
        response: { 204: z.null().describe('Signed out'), ...problemResponses(401, 503) },
      },
    },
    async (request, reply) => {
      await logout(deps, request.user.id);
      clearSessionCookies(reply, config);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/activate-key',
    {
      config: { public: true, rateLimit: { max: 5, timeWindow: MINUTE } },
      schema: {
        operationId: 'activateBetaKey',
        tags: ['auth'],
        // Anonymous, or with a bearer token to record the redeeming user.
        security: [{}, { bearerAuth: [] }],
        summary: 'Redeem a beta access key',
        description:
          'Uses one redemption of the key and sets the `beta_access=1` cookie. Public; with a bearer token the redeeming ' +
          'user is recorded and flagged (an invalid bearer token is a 401). 400 INVALID_BETA_KEY for unknown, revoked ' +
          'or used-up keys. 5/min per IP.',
        body: ActivateKeyBodySchema,
        response: { 200: ActivateKeyResponseSchema, ...problemResponses(400, 401, 429, 503) },
      },
    },
    async (request, reply) => {
      let userId: string | undefined;
      const header = request.headers.authorization;
      if (header !== undefined) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
        if (!m) throw unauthorized('The Authorization header must be "Bearer <token>"');
        userId = app.verifyAccessToken(m[1]).id;
      }
      await activateBetaKey(deps, { key: request.body.key, userId });
      setBetaCookie(reply, config);
      return { betaAccess: true as const };
    },
  );
};
