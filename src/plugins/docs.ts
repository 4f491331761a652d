import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

const STATUS_DESCRIPTIONS: Record<string, string> = {
  '400': 'The request is not valid (VALIDATION_ERROR lists each field; INVALID_CURSOR; …)',
  '401': 'Missing or invalid credentials',
  '403': 'Forbidden',
  '404': 'Not found',
  '409': 'Conflict with the current state',
  '413': 'The body is too large',
  '429': 'Rate limited: see Retry-After and RateLimit-* headers',
  '500': 'Unexpected error; the body reveals nothing internal',
  '503': 'A required dependency is unavailable: see Retry-After',
};

const DESCRIPTION = `Backend of the prediction-market trading platform.

* Every route needs \`Authorization: Bearer <accessToken>\` unless its security list is empty (public).
* \`/api/v1/internal/*\` routes take \`Authorization: Bearer <INTERNAL_API_TOKEN>\` and exist only when that token is configured.
* Every error is RFC 9457 problem details (\`application/problem+json\`) with a stable \`code\`.
* Rate-limited routes answer 429 with \`Retry-After\` and \`RateLimit-Limit\`, \`RateLimit-Remaining\`, \`RateLimit-Reset\` (seconds).`;

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { description: 'Requests allowed in the window', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the window', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until a request is allowed again', schema: { type: 'integer' } },
};

function problemResponse(status: string, extraHeaders?: Record<string, unknown>) {
  return {
    description: STATUS_DESCRIPTIONS[status] ?? 'Error',
    ...(extraHeaders ? { headers: extraHeaders } : {}),
    content: { 'application/problem+json': { schema: PROBLEM_REF } },
  };
}

/**
 * What every operation in the document says, so the contract is explicit and
 * the OWASP lint holds: security per route kind; errors as problem+json; a 500
 * on every operation; a 400 wherever there is input to validate; 429 and
 * RateLimit-* headers on the routes the contract rate-limits.
 */
function decorateOperation(
  input: Record<string, unknown>,
  cfg: { public?: boolean; internal?: boolean; rateLimit?: unknown },
): Record<string, unknown> {
  const schema = { ...input };
  if (cfg.internal) schema.security = [{ internalToken: [] }];
  else if (cfg.public) schema.security = [];
  if (!schema.description && schema.summary) schema.description = schema.summary;
  const response = { ...((schema.response as Record<string, Record<string, unknown>> | undefined) ?? {}) };
  const limited = Boolean(cfg.rateLimit);
  const next: Record<string, unknown> = {};
  for (const [status, body] of Object.entries(response)) {
    const code = Number(status);
    if (code >= 400 && body && !('content' in body)) {
      const { description, ...rest } = body;
      next[status] = {
        description: (description as string | undefined) ?? STATUS_DESCRIPTIONS[status] ?? 'Error',
        ...(limited && code < 500 ? { headers: RATE_LIMIT_HEADERS } : {}),
        content: { 'application/problem+json': { schema: rest } },
      };
    } else if (limited && code < 300 && body && !('content' in body)) {
      const { description, ...rest } = body;
      next[status] = { description: (description as string | undefined) ?? 'OK', headers: RATE_LIMIT_HEADERS, content: { 'application/json': { schema: rest } } };
    } else next[status] = body;
  }
  const hasInput = Boolean(schema.body || schema.querystring || schema.params);
  if (hasInput && !next['400']) next['400'] = problemResponse('400');
  if (!cfg.public && !next['401']) next['401'] = problemResponse('401');
  if (limited && !next['429']) next['429'] = problemResponse('429', { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } }, ...RATE_LIMIT_HEADERS });
  if (!next['500']) next['500'] = problemResponse('500');
  schema.response = next;
  return schema;
}

/** OpenAPI 3.1 at /docs/json generated from the Zod route schemas; Swagger UI at /docs. */
export const docsPlugin = fp(
  async (app) => {
    // The reference and its assets are public.
    app.addHook('onRoute', (route) => {
      if (route.url === '/docs' || route.url.startsWith('/docs/')) route.config = { ...route.config, public: true };
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'Prediction-market trading platform API', version: '1.0.0', description: DESCRIPTION },
        servers: [{ url: '/', description: 'This service', 'x-internal': false } as never],
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
            internalToken: { type: 'http', scheme: 'bearer', description: 'INTERNAL_API_TOKEN' },
          },
        },
        security: [{ bearerAuth: [] }],
        tags: [
          { name: 'auth', description: 'Wallet and identity-provider sign-in, tokens' },
          { name: 'leaderboard', description: 'Trader leaderboard' },
          { name: 'events', description: 'Event groups, markets and charts' },
          { name: 'notifications', description: 'In-app notifications' },
          { name: 'alerts', description: 'Price alerts' },
          { name: 'push', description: 'Push devices and preferences' },
          { name: 'messenger', description: 'Telegram bot linking' },
          { name: 'internal', description: 'For the platform’s other services' },
          { name: 'health', description: 'Liveness and readiness' },
        ],
      },
      transform: (args) => {
        const out = jsonSchemaTransform(args);
        const route = args.route as { config?: { public?: boolean; internal?: boolean; rateLimit?: unknown } };
        const cfg = route.config ?? {};
        // A prefix's root route is served with and without the trailing slash; the
        // contract names it without (e.g. /api/v1/events), so the document does too.
        const url = out.url.length > 1 ? out.url.replace(/\/$/, '') : out.url;
        return { ...out, url, schema: decorateOperation(out.schema as Record<string, unknown>, cfg) } as never;
      },
      transformObject: jsonSchemaTransformObject,
    });
    await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  },
  { name: 'docs', fastify: '5.x' },
);
