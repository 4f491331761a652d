import fp from 'fastify-plugin';

/**
 * Security headers for a JSON API: the set of the OWASP REST Security Cheat
 * Sheet ("Security headers") plus Referrer-Policy and
 * Cross-Origin-Resource-Policy. Helmet's document-only headers
 * (X-XSS-Protection, X-Download-Options, X-DNS-Prefetch-Control,
 * Origin-Agent-Cluster, X-Permitted-Cross-Domain-Policies,
 * Cross-Origin-Opener-Policy) change nothing for JSON responses and cost a
 * measurable share of a small response's server time, so they are not sent.
 * @fastify/helmet itself cost more server CPU per request than a whole bare
 * Fastify request (tests/bench/RESULTS.md); these values never change per
 * request, so they are computed once and set in one call.
 */
export const securityHeadersPlugin = fp<{ production: boolean }>(
  async (app, opts) => {
    const headers: Record<string, string> = {
      // Nothing in an API response may load, run or be framed.
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
      'cross-origin-resource-policy': 'same-site',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
    };
    // HSTS only makes sense when the service is reached over HTTPS (production behind TLS).
    if (opts.production) headers['strict-transport-security'] = 'max-age=31536000; includeSubDomains';
    const { 'content-security-policy': _csp, ...docsHeaders } = headers;
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(request.url.startsWith('/docs') ? docsHeaders : headers);
      done();
    });
  },
  { name: 'security-headers', fastify: '5.x' },
);
