import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import fastifyJwt from '@fastify/jwt';

/**
 * The bare route of `npm run bench`, in a process of its own: Fastify 5 with
 * no plugins, one GET route per captured response answering its exact bytes
 * and headers from memory. A route with `jwtSecret` first verifies the bearer
 * token as the service does (@fastify/jwt, HS256 pinned), so a bearer route is
 * compared with the cost of the verification it cannot skip.
 *
 * Usage: node --import tsx tests/bench/baseline-server.ts <spec.json>; prints
 * `listening <port>` on stdout. The spec: { routes: BaselineRoute[] }.
 */
export interface BaselineRoute {
  path: string;
  /**
   * The service's route pattern when it has parameters (`/api/v1/events/:slug`): the bare route is declared
   * the same way, so both pay Fastify's parametric routing and parameter decoding.
   */
  pattern?: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  jwtSecret?: string;
  /**
   * Verify as the service does since issue 21: remembering verified tokens (fast-jwt's cache,
   * src/domains/auth/guard.ts). Without it the bare route verifies every request in full.
   */
  jwtCache?: boolean;
}

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8')) as { routes: BaselineRoute[] };
const app = Fastify({ logger: false });
const secret = spec.routes.find((r) => r.jwtSecret)?.jwtSecret;
if (secret) {
  await app.register(fastifyJwt, { secret, verify: { algorithms: ['HS256'] } });
  const verify = { algorithms: ['HS256' as const], cache: 10_000 };
  await app.register(fastifyJwt, { secret, namespace: 'remembered', verify });
}
const remembered = () => (app.jwt as unknown as { remembered: { verify(token: string): unknown } }).remembered;

for (const r of spec.routes) {
  const { status, headers, body } = r;
  if (r.jwtSecret) {
    const jwt = r.jwtCache ? remembered() : app.jwt;
    app.get(r.pattern ?? r.path, (request, reply) => {
      const auth = request.headers.authorization;
      try {
        if (!auth?.startsWith('Bearer ')) throw new Error('no token');
        jwt.verify(auth.slice(7));
      } catch {
        reply.code(401).send('unauthorized');
        return;
      }
      reply.code(status).headers(headers).send(body);
    });
  } else {
    app.get(r.pattern ?? r.path, (_request, reply) => {
      reply.code(status).headers(headers).send(body);
    });
  }
}

await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
