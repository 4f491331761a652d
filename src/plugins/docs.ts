import { STATUS_CODES } from 'node:http';
import fp from 'fastify-plugin';
import type { FastifyPluginAsync } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { addResponseExamples, dropSafeIntegerBounds } from './docs-examples.js';

const STATUS_DESCRIPTIONS: Record<string, string> = {
  '400': 'The request is not valid (VALIDATION_ERROR lists each field; INVALID_CURSOR; …)',
  '401': 'Missing or invalid credentials',
  '403': 'Forbidden',
  '404': 'Not found',
  '409': 'Conflict with the current state',
  '413': 'The body is too large',
  '429': 'Rate limited: see Retry-After and RateLimit-* headers',
  '500': 'Unexpected error; the body reveals nothing internal',
  '503': 'A required dependency is unavailable, or the service is overloaded and shedding load: see Retry-After',
};

const DESCRIPTION = `Backend of the prediction-market trading platform.

* Every route needs \`Authorization: Bearer <accessToken>\` unless its security list is empty (public). For local use, \`npm run token -- <address|userId>\` prints one to paste into "Authorize".
* Every error is RFC 9457 problem details (\`application/problem+json\`) with a stable \`code\`.
* Under overload any route but the health probes may answer 503 \`UNAVAILABLE\` with \`Retry-After\` at once, rather than queue the request.
* Rate-limited routes answer 429 with \`Retry-After\` and \`RateLimit-Limit\`, \`RateLimit-Remaining\`, \`RateLimit-Reset\` (seconds).
* Live updates: Socket.IO at \`/socket.io/\`, described by the AsyncAPI 3 document [/docs/asyncapi.json](/docs/asyncapi.json); the \`x-realtime\` section here lists each channel's events and their payload schemas.`;

/** Said only in the internal document (issue #34: the public one lists no internal route). */
const INTERNAL_NOTE =
  '\n\nThis is the internal document: it adds the `/api/v1/internal/*` routes, which take `Authorization: Bearer <INTERNAL_API_TOKEN>` ' +
  'and exist only when that token is configured. The public reference at `/docs/json` leaves them out.';

const INTERNAL_PREFIX = '/api/v1/internal';

/**
 * The document /docs serves to anyone: every route but the internal ones
 * (run-now, deliveries, beta keys, notifications from other services), their
 * tag, their security scheme and the schemas only they use (issue #34). The
 * whole document is GET /api/v1/internal/openapi.json, behind the internal token.
 */
export function publicDocument(full: Record<string, unknown>): Record<string, unknown> {
  const doc = structuredClone(full);
  doc.paths = Object.fromEntries(Object.entries((doc.paths ?? {}) as Json).filter(([p]) => !p.startsWith(INTERNAL_PREFIX)));
  doc.tags = ((doc.tags ?? []) as Array<{ name: string }>).filter((t) => t.name !== 'internal');
  const components = doc.components as Json | undefined;
  const schemes = components?.securitySchemes as Json | undefined;
  if (schemes) delete schemes.internalToken;
  if (components?.schemas) {
    const used = referencedSchemas(doc);
    components.schemas = Object.fromEntries(Object.entries(components.schemas as Json).filter(([name]) => used.has(name)));
  }
  return doc;
}

/** The whole document, internal routes included: what other services and operators read. */
function internalDocument(full: Record<string, unknown>): Record<string, unknown> {
  const doc = structuredClone(full);
  const info = doc.info as Json;
  info.description = `${String(info.description)}${INTERNAL_NOTE}`;
  return doc;
}

const PROBLEM_REF = { $ref: '#/components/schemas/Problem' };
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': {
    description: 'Requests allowed in the window',
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 1_000_000 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the window',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 1_000_000 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until a request is allowed again',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 86_400 },
  },
};
const RETRY_AFTER_HEADER = {
  'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 86_400 } },
};
/** Methods whose body Fastify parses even when the route declares none: a malformed JSON body is a 400. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** What an operation does, in the words of its summary (or description). */
const summaryOf = (schema: Record<string, unknown>): string =>
  typeof schema.summary === 'string' ? schema.summary : typeof schema.description === 'string' ? schema.description : 'done';

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
  cfg: { public?: boolean; internal?: boolean; rateLimit?: unknown; handlerRateLimit?: unknown },
  method: string,
): Record<string, unknown> {
  const schema = { ...input };
  if (cfg.internal) schema.security = [{ internalToken: [] }];
  // A public route may still name the credential it checks itself (a cookie, a webhook secret).
  else if (cfg.public && schema.security === undefined) schema.security = [];
  if (!schema.description && schema.summary) schema.description = schema.summary;
  const response = { ...((schema.response as Record<string, Record<string, unknown>> | undefined) ?? {}) };
  const limited = Boolean(cfg.rateLimit || cfg.handlerRateLimit);
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
      next[status] = {
        description: (description as string | undefined) ?? `${STATUS_CODES[code] ?? 'Success'}: ${summaryOf(schema)}`,
        headers: RATE_LIMIT_HEADERS,
        content: { 'application/json': { schema: rest } },
      };
    } else if (code < 300 && body && body.description === undefined) {
      // Described, never Swagger's "Default Response": the route's own summary, after the status.
      next[status] = {
        ...body,
        description: `${STATUS_CODES[code] ?? 'Success'}: ${summaryOf(schema)}`,
      };
    } else next[status] = body;
  }
  const hasInput = Boolean(schema.body || schema.querystring || schema.params) || BODY_METHODS.has(method);
  if (hasInput && !next['400']) next['400'] = problemResponse('400');
  if (!cfg.public && !next['401']) next['401'] = problemResponse('401');
  if (limited && !next['429']) next['429'] = problemResponse('429');
  // Every 429 (declared by the route or added above) says when to come back.
  if (next['429']) next['429'] = { ...next['429'], headers: { ...RETRY_AFTER_HEADER, ...RATE_LIMIT_HEADERS } };
  if (!next['500']) next['500'] = problemResponse('500');
  schema.response = next;
  return schema;
}

type Json = Record<string, unknown>;
const INT32 = 2 ** 31;

/** Every integer schema says int32 or int64 (int64 where its bounds, if any, exceed 32 bits). */
function addIntegerFormats(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(addIntegerFormats);
  if (!node || typeof node !== 'object') return;
  const s = node as Json;
  const isInteger = s.type === 'integer' || (Array.isArray(s.type) && s.type.includes('integer'));
  if (isInteger && s.format === undefined) {
    const min = (s.minimum ?? s.exclusiveMinimum) as number | undefined;
    const max = (s.maximum ?? s.exclusiveMaximum) as number | undefined;
    s.format = min !== undefined && max !== undefined && min >= -INT32 && max < INT32 ? 'int32' : 'int64';
  }
  for (const v of Object.values(s)) addIntegerFormats(v);
}

/** Names of components.schemas referenced from anywhere outside their own definition, transitively. */
function referencedSchemas(doc: Json): Set<string> {
  const schemas = ((doc.components as Json | undefined)?.schemas ?? {}) as Json;
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
        const name = v.slice('#/components/schemas/'.length);
        if (!used.has(name)) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(v);
    }
  };
  visit({ ...doc, components: { ...(doc.components as Json), schemas: {} } });
  return used;
}

/**
 * Document-wide finishing: the contract's paths have no trailing slash (the
 * router serves both; a prefix's '/' route is documented as the prefix), the
 * "…Input" copies of registered schemas that no request uses are dropped, and
 * integers carry a format.
 */
function finishDocument(input: Json): Json {
  const doc = structuredClone(input);
  const paths = (doc.paths ?? {}) as Json;
  doc.paths = Object.fromEntries(
    Object.entries(paths).map(([p, item]) => [p.length > 1 && p.endsWith('/') && !(p.slice(0, -1) in paths) ? p.slice(0, -1) : p, item]),
  );
  const components = doc.components as Json | undefined;
  if (components?.schemas) {
    const used = referencedSchemas(doc);
    components.schemas = Object.fromEntries(Object.entries(components.schemas as Json).filter(([name]) => used.has(name)));
  }
  dropSafeIntegerBounds(doc);
  addIntegerFormats(doc);
  addResponseExamples(doc);
  return doc;
}

export interface DocsOptions {
  /** Top-level `x-…` sections of the document (the realtime contract: `x-realtime`). */
  extensions?: Record<`x-${string}`, unknown>;
  /** The AsyncAPI document served at /docs/asyncapi.json (docs/decisions.md §15.4). */
  asyncapi?: Record<string, unknown>;
}

/** OpenAPI 3.1 at /docs/json generated from the Zod route schemas; Swagger UI at /docs; AsyncAPI at /docs/asyncapi.json. */
export const docsPlugin = fp<DocsOptions>(
  async (app, opts) => {
    // The reference and its assets are public.
    app.addHook('onRoute', (route) => {
      if (route.url === '/docs' || route.url.startsWith('/docs/')) route.config = { ...route.config, public: true };
    });
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'Prediction-market trading platform API', version: '1.0.0', description: DESCRIPTION },
        // Every environment (local, staging, production) serves its own copy of this document, so the one server is "here".
        servers: [
          {
            url: '/',
            description: 'This deployment: local, staging or production, whichever serves this document',
            'x-internal': false,
          } as never,
        ],
        components: {
          securitySchemes: {
            bearerAuth: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description:
                'The access token from sign-in or refresh: a JWS following the JWT best current practices of RFC8725 ' +
                '(HS256 only, the algorithm pinned on verification so `none` and algorithm swaps are refused; `exp` 15 minutes).',
            },
            internalToken: { type: 'http', scheme: 'bearer', description: 'INTERNAL_API_TOKEN' },
            refreshCookie: {
              type: 'apiKey',
              in: 'cookie',
              name: 'refresh_token',
              description: 'The HttpOnly refresh-token cookie set at sign-in (clients without cookies send it in the body instead)',
            },
            webhookSecret: {
              type: 'apiKey',
              in: 'header',
              name: 'X-Telegram-Bot-Api-Secret-Token',
              description: 'MESSENGER_WEBHOOK_SECRET, as registered with Telegram for the webhook',
            },
          },
        },
        security: [{ bearerAuth: [] }],
        ...opts.extensions,
        tags: [
          { name: 'auth', description: 'Wallet and identity-provider sign-in, tokens' },
          { name: 'leaderboard', description: 'Trader leaderboard' },
          { name: 'events', description: 'Event groups, markets and charts' },
          { name: 'notifications', description: 'In-app notifications' },
          { name: 'alerts', description: 'Price alerts' },
          { name: 'watchlist', description: 'Watched event groups and their lifecycle notifications' },
          { name: 'push', description: 'Push devices and preferences' },
          { name: 'messenger', description: 'Telegram bot linking' },
          { name: 'internal', description: 'For the platform’s other services' },
          { name: 'health', description: 'Liveness and readiness' },
        ],
      },
      transform: (args) => {
        const out = jsonSchemaTransform(args);
        const route = args.route as {
          method: string | string[];
          config?: { public?: boolean; internal?: boolean; rateLimit?: unknown; handlerRateLimit?: unknown };
        };
        const cfg = route.config ?? {};
        const method = String(Array.isArray(route.method) ? route.method[0] : route.method).toUpperCase();
        return { ...out, schema: decorateOperation(out.schema as Record<string, unknown>, cfg, method) };
      },
      transformObject: (args) => finishDocument(jsonSchemaTransformObject(args) as Json) as never,
    });
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      staticCSP: true,
      // /docs/json and /docs/yaml: the public document (no internal routes).
      transformSpecification: (spec) => publicDocument(spec as Json),
      transformSpecificationClone: false,
    });
    if (opts.asyncapi) {
      const body = JSON.stringify(opts.asyncapi);
      app.get('/docs/asyncapi.json', { schema: { hide: true } }, (_request, reply) => {
        reply.type('application/json; charset=utf-8').send(body);
      });
    }
  },
  { name: 'docs', fastify: '5.x', dependencies: [] },
);

/** GET /api/v1/internal/openapi.json (registered only while INTERNAL_API_TOKEN is set): the whole document. */
export const internalDocsRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    '/openapi.json',
    {
      config: { internal: true },
      schema: { hide: true },
    },
    async (_request, reply) => reply.type('application/json; charset=utf-8').send(internalDocument(app.swagger() as Json)),
  );
};
