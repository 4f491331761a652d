import { bearerToken } from '../../lib/bearer.js';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fastifyCookie from '@fastify/cookie';
import { z } from 'zod';
import { AppError, problemResponses, unauthorized } from '../../errors.js';
import { applyHit, rateLimited } from '../../plugins/rate-limit.js';
import { clearSessionCookies, REFRESH_COOKIE, setBetaCookie, setSessionCookies } from './cookies.js';
import { createIdpVerifier } from './idp.js';
import { createNonceStore, type NonceLimit } from './nonce-store.js';
import { cookieRefreshAllowed, messageTarget, type RequestOriginInfo } from './origin.js';
import type { SeenFrom } from './queries.js';
import {
  ActivateKeyBodySchema,
  ActivateKeyResponseSchema,
  IdpSignInBodySchema,
  NonceQuerySchema,
  NonceResponseSchema,
  RefreshBodySchema,
  RefreshResponseSchema,
  RevokedCountSchema,
  SessionListSchema,
  SessionParamsSchema,
  SignInResponseSchema,
  WalletSignInBodySchema,
} from './schemas.js';
import {
  activateBetaKey,
  endOtherSessions,
  endSession,
  hashToken,
  issueNonce,
  listSessions,
  logout,
  refreshSession,
  signInWithIdp,
  signInWithWallet,
  takeNonce,
  type AuthDeps,
  type Limited,
} from './service.js';
import { createSuccessorSeal } from './successor-seal.js';

const MINUTE = 60_000;
/** docs/decisions.md §3.6: refreshes per client address per minute, across all tokens. */
const REFRESH_PER_ADDRESS = 120;

/** The refresh token presented, and where it came from (the cookie rule of docs/decisions.md §10.4 depends on it). */
function presentedRefreshToken(request: FastifyRequest): { token: string | undefined; fromCookie: boolean } {
  const fromBody = (request.body as { refreshToken?: unknown } | undefined)?.refreshToken;
  if (typeof fromBody === 'string' && fromBody.length > 0) return { token: fromBody, fromCookie: false };
  const fromCookie = request.cookies?.[REFRESH_COOKIE];
  return { token: typeof fromCookie === 'string' && fromCookie.length > 0 ? fromCookie : undefined, fromCookie: true };
}

const header = (request: FastifyRequest, name: string): string | undefined => {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

function originInfo(request: FastifyRequest): RequestOriginInfo {
  return {
    origin: header(request, 'origin'),
    secFetchSite: header(request, 'sec-fetch-site'),
    host: header(request, 'host'),
    protocol: request.clientProtocol,
  };
}

/** What a session records of the request (docs/decisions.md §10.5). */
function seenFrom(request: FastifyRequest): SeenFrom {
  const ua = header(request, 'user-agent');
  return {
    userAgent: ua ? ua.slice(0, 512) : null,
    ip: request.clientAddress === 'unknown' ? null : request.clientAddress,
  };
}

/**
 * Sign-in and sessions (docs/api-contract.md §4.1, docs/decisions.md §3 and §10), under
 * /api/v1/auth. Every route but logout and the sessions routes is public;
 * limits of docs/api-contract.md §8 on each, keyed by the client address of §10.1.
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
  const { config } = app;
  const deps: AuthDeps = {
    dbh: app.dbh,
    nonces,
    clock: app.clock,
    signAccessToken: (user) => app.signAccessToken(user),
    verifyIdp: createIdpVerifier(app.config),
    revocations: app.sessionRevocations,
    seal: createSuccessorSeal(config.JWT_SECRET, config.JWT_SECRET_PREVIOUS),
    settings: {
      graceSeconds: config.REFRESH_REUSE_GRACE_SECONDS,
      evmChainId: config.SIGN_IN_CHAIN_ID,
      bareNonce: config.SIGN_IN_BARE_NONCE,
    },
  };

  /**
   * The sign-in nonce routes take their docs/api-contract.md §8 limit (per client address)
   * in the nonce store, in the same Redis script as the nonce SET/GETDEL: one round trip where
   * the plugin's hook would add a second to every sign-in. Every request counts, including
   * ones refused for a malformed body or address: a request that failed validation
   * (attachValidation) takes its hit here, then gets its 400. The service reports each hit;
   * this layer owns HTTP: the headers, and the 429.
   */
  const limitOf = (request: FastifyRequest): NonceLimit => {
    const { max, timeWindow } = request.routeOptions.config.handlerRateLimit!;
    return { key: `${request.routeOptions.url}:${request.clientKey}`, windowMs: timeWindow, max };
  };
  const countHit = (limit: NonceLimit) => app.limiter.hit(limit.key, limit.windowMs, limit.max);
  const refuseInvalid = async (request: FastifyRequest, reply: FastifyReply, limit: NonceLimit) => {
    if (!request.validationError) return;
    applyHit(reply, limit.max, await countHit(limit));
    throw request.validationError;
  };
  /** Headers for the hit (429 when refused), then the step's value or its problem. */
  function settle<T>(reply: FastifyReply, limit: NonceLimit, r: Limited<T>): T {
    applyHit(reply, limit.max, r.hit);
    if (!r.ok) throw r.error ?? rateLimited(r.hit.ttlMs);
    return r.value;
  }

  app.get(
    '/wallet/nonce',
    {
      config: { public: true, handlerRateLimit: { max: 20, timeWindow: MINUTE } },
      attachValidation: true,
      schema: {
        operationId: 'getWalletNonce',
        tags: ['auth'],
        summary: 'Get a sign-in nonce and the message to sign',
        description:
          'A single-use nonce bound to (chain, address), valid 5 minutes, 192 random bits in base58, and `message`: the ' +
          'ready-to-sign, domain-bound text (docs/decisions.md §10.7) with the address, the nonce, `Issued At` (now) and ' +
          "`Expiration Time` (the nonce's expiry). `evm`: EIP-4361 (Sign-In with Ethereum), `Chain ID` from SIGN_IN_CHAIN_ID " +
          '(default 1); `solana`: the Sign-In With Solana text, `Chain ID: mainnet`. Its domain and URI are SIGN_IN_DOMAIN and ' +
          "SIGN_IN_URI when set (both required in production), else the request's Origin when it is listed in CORS_ORIGINS, " +
          "else the listening address (HOST:PORT over http); never the request's Host or X-Forwarded-Host. " +
          'The nonce is consumed by the first sign-in attempt that presents it, whether or not the signature verifies. EVM ' +
          'addresses are compared case-insensitively. Malformed address → 400. 20/min per client address (malformed ' +
          'requests count; a refused request is issued no nonce).',
        querystring: NonceQuerySchema,
        response: { 200: NonceResponseSchema, ...problemResponses(400, 429, 503) },
      },
    },
    async (request, reply) => {
      const limit = limitOf(request);
      await refuseInvalid(request, reply, limit);
      const target = messageTarget(config, originInfo(request));
      return settle(reply, limit, await issueNonce({ ...deps, countHit }, { ...request.query, target }, limit));
    },
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
          'Sign the `message` of GET /auth/wallet/nonce and post it back as `message` (or a message the client built in the ' +
          'same format; a statement is optional). It is parsed and its domain, URI, address (any case), chain, nonce and ' +
          'version must be the ones issued with the nonce, `Issued At` within 60 s of now and `Expiration Time`, if present, ' +
          "no later than the nonce's expiry + 60 s; else 401 INVALID_MESSAGE. Without `message` the signature is over the " +
          'bare nonce (the original flow), accepted while SIGN_IN_BARE_NONCE is true (the default outside production; false ' +
          'by default in production; 401 INVALID_MESSAGE when false). Solana: base58 ed25519 detached signature (strict RFC 8032) over the UTF-8 bytes. EVM: EIP-191 ' +
          'personal_sign by an externally owned account; the address is stored EIP-55. Creates the user on first sign-in ' +
          '(storing `referralCode` then only) and finds it afterwards; starts a new session (its id is the `sid` of the ' +
          'access token). Sets the `refresh_token` (httpOnly, Path=/api/v1/auth), `logged_in=1` and `beta_access=1` cookies ' +
          '(Max-Age 90 days). 401 INVALID_NONCE / INVALID_MESSAGE / INVALID_SIGNATURE; every attempt consumes the nonce. ' +
          '10/min per client address (malformed requests count; a refused (429) attempt does not consume its nonce).',
        body: WalletSignInBodySchema,
        response: { 201: SignInResponseSchema, ...problemResponses(400, 401, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const limit = limitOf(request);
      await refuseInvalid(request, reply, limit);
      const binding = settle(reply, limit, await takeNonce(deps, request.body.nonce, limit));
      const session = await signInWithWallet(deps, request.body, binding, seenFrom(request));
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
          'Verified against IDP_JWKS_URL when set (IDP_ISSUER and IDP_AUDIENCE are then required and checked), else by ' +
          'calling IDP_USERINFO_URL. The account is found by (issuer, sub) exactly and lives at a synthetic EVM address ' +
          '(EIP-55 of the last 20 bytes of keccak256("idp:<issuer>:<sub>")); it is never merged with a wallet account or ' +
          'another identity: when that address belongs to another account, 409 ACCOUNT_CONFLICT. Same cookies and body as ' +
          'wallet sign-in. 401 INVALID_IDP_TOKEN when the provider rejects the token (or it holds characters a header ' +
          'cannot carry); 503 when the provider is unreachable or not configured. 10/min per client address.',
        body: IdpSignInBodySchema,
        response: { 201: SignInResponseSchema, ...problemResponses(400, 401, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const session = await signInWithIdp(deps, request.body, seenFrom(request));
      setSessionCookies(reply, config, session.refreshToken);
      return reply.code(201).send({ accessToken: session.accessToken, user: session.user });
    },
  );

  /**
   * docs/decisions.md §3.6: 120 refreshes a minute per client address, across all
   * tokens (random tokens must not be free to try), before the per-token limit.
   * A refusal leaves the cookies alone (§10.4).
   */
  const perAddress = async (request: FastifyRequest, reply: FastifyReply) => {
    const hit = await app.limiter.hit(`refresh-address:${request.clientKey}`, MINUTE, REFRESH_PER_ADDRESS);
    if (hit.current > REFRESH_PER_ADDRESS) applyHit(reply, REFRESH_PER_ADDRESS, hit);
  };

  app.post(
    '/refresh',
    {
      onRequest: perAddress,
      config: {
        public: true,
        rateLimit: {
          max: 60,
          timeWindow: MINUTE,
          // After body parsing, so a body-borne token is keyed too; keyed by the
          // token's hash (docs/api-contract.md §8), whatever address presents it.
          hook: 'preHandler',
          keyGenerator: (request: FastifyRequest) => {
            const { token } = presentedRefreshToken(request);
            return token ? `rt:${hashToken(token)}` : `ip:${request.clientKey}`;
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
          'used and a successor in the same session is issued (90-day sliding expiry) in one atomic statement: of two ' +
          'concurrent refreshes with one token exactly one succeeds. Presenting a used token ends its whole session on ' +
          'every instance (401 REFRESH_TOKEN_REUSED), unless REFRESH_REUSE_GRACE_SECONDS (default 0) is set and the token ' +
          'was rotated less than that many seconds ago while its successor is still unused: then 200 with that same ' +
          'successor. Ending a session and rotating one of its tokens are serialised: no token minted by a rotation that ' +
          'raced a revocation stays usable. Unknown, expired or revoked: 401 INVALID_REFRESH_TOKEN; every such failure ' +
          'clears the three cookies. A cookie refresh needs a trusted origin: `Origin` one of CORS_ORIGINS or the ' +
          "service's own (never `null`); without `Origin`, `Sec-Fetch-Site` absent, `none`, `same-origin` or `same-site`; " +
          'otherwise 403 ORIGIN_NOT_ALLOWED with nothing rotated and the cookies left as they are. The body carries ' +
          '`refreshToken` only for a body refresh; a cookie refresh sets it as the cookie only, out of reach of page ' +
          'script. Both set the new cookies. 60/min per token and 120/min per client address (a 429 leaves the cookies).',
        body: RefreshBodySchema,
        response: { 200: RefreshResponseSchema, ...problemResponses(400, 401, 403, 429, 503) },
      },
    },
    async (request, reply) => {
      const { token, fromCookie } = presentedRefreshToken(request);
      if (fromCookie && token !== undefined && !cookieRefreshAllowed(config, originInfo(request))) {
        throw new AppError(403, 'ORIGIN_NOT_ALLOWED', 'A cookie refresh must come from an allowed origin');
      }
      try {
        const out = await refreshSession(deps, token, seenFrom(request));
        setSessionCookies(reply, config, out.refreshToken);
        return fromCookie ? { accessToken: out.accessToken, user: out.user } : out;
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
        description:
          'Ends every session of the user (all refresh families, all devices) and clears the three cookies. Within 2 s, on ' +
          'every instance, access tokens of those sessions get 401 SESSION_REVOKED and their sockets are disconnected.',
        response: { 204: z.null().describe('Signed out'), ...problemResponses(401, 503) },
      },
    },
    async (request, reply) => {
      await logout(deps, request.user.id);
      clearSessionCookies(reply, config);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/sessions',
    {
      schema: {
        operationId: 'listSessions',
        tags: ['auth'],
        summary: "List the caller's sessions",
        description:
          'The live sessions (one per sign-in; refreshes keep it) of the caller, most recently used first. `current` marks ' +
          'the session of the access token used; a token issued before sessions existed belongs to none. `userAgent` and ' +
          '`ip` are as seen at the last sign-in or refresh (null when unknown).',
        response: { 200: SessionListSchema, ...problemResponses(401, 503) },
      },
    },
    async (request) => listSessions(deps, request.user),
  );

  app.delete(
    '/sessions/:id',
    {
      schema: {
        operationId: 'endSession',
        tags: ['auth'],
        summary: 'End one session',
        description:
          "Ends the session (the caller's current one too: the response then clears the three cookies). Within 2 s, on " +
          'every instance, its access tokens get 401 SESSION_REVOKED and its sockets receive `auth:revoked` and are ' +
          "disconnected; the user's other sessions are untouched. Another user's, unknown, malformed or already ended id: " +
          '404 NOT_FOUND.',
        params: SessionParamsSchema,
        response: { 204: z.null().describe('Ended'), ...problemResponses(401, 404, 503) },
      },
    },
    async (request, reply) => {
      const { current } = await endSession(deps, request.user, request.params.id);
      if (current) clearSessionCookies(reply, config);
      return reply.code(204).send(null);
    },
  );

  app.delete(
    '/sessions',
    {
      schema: {
        operationId: 'endOtherSessions',
        tags: ['auth'],
        summary: 'End every other session',
        description:
          'Ends every session of the caller but the current one (all of them when the access token predates sessions), ' +
          'with the same reach as ending one. Answers how many were ended.',
        response: { 200: RevokedCountSchema, ...problemResponses(401, 503) },
      },
    },
    async (request) => endOtherSessions(deps, request.user),
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
          'or used-up keys. 5/min per client address.',
        body: ActivateKeyBodySchema,
        response: { 200: ActivateKeyResponseSchema, ...problemResponses(400, 401, 429, 503) },
      },
    },
    async (request, reply) => {
      let userId: string | undefined;
      const auth = request.headers.authorization;
      if (auth !== undefined) {
        const token = bearerToken(auth);
        if (!token) throw unauthorized('The Authorization header must be "Bearer <token>"');
        userId = app.verifyAccessToken(token).id;
      }
      await activateBetaKey(deps, { key: request.body.key, userId });
      setBetaCookie(reply, config);
      return { betaAccess: true as const };
    },
  );
};
