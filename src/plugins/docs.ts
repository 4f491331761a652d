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
  '503': 'A required dependency is unavailable: see Retry-After',
};

const DESCRIPTION = `Backend of the prediction-market trading platform.

* Every route needs \`Authorization: Bearer <accessToken>\` unless its security list is empty (public).
* \`/api/v1/internal/*\` routes take \`Authorization: Bearer <INTERNAL_API_TOKEN>\` and exist only when that token is configured.
* Every error is RFC 9457 problem details (\`application/problem+json\`) with a stable \`code\`.
* Rate-limited routes answer 429 with \`Retry-After\` and \`RateLimit-Limit\`, \`RateLimit-Remaining\`, \`RateLimit-Reset\` (seconds).`;

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
        servers: [{ url: '/' }],
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
        const cfg = (args.route as { config?: { public?: boolean; internal?: boolean } }).config ?? {};
        const schema = { ...(out.schema as Record<string, unknown>) };
        if (cfg.internal) schema.security = [{ internalToken: [] }];
        else if (cfg.public) schema.security = [];
        // Errors are sent as application/problem+json (decisions.md §2): say so per status.
        const response = schema.response as Record<string, Record<string, unknown>> | undefined;
        if (response) {
          const next: Record<string, unknown> = {};
          for (const [status, body] of Object.entries(response)) {
            if (Number(status) >= 400 && body && !('content' in body)) {
              const { description, ...rest } = body;
              next[status] = {
                description: (description as string | undefined) ?? STATUS_DESCRIPTIONS[status] ?? 'Error',
                content: { 'application/problem+json': { schema: rest } },
              };
            } else next[status] = body;
          }
          schema.response = next;
        }
        return { ...out, schema } as never;
      },
      transformObject: jsonSchemaTransformObject,
    });
    await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  },
  { name: 'docs', fastify: '5.x' },
);
