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
 * request, so they are computed once. src/app.ts sets them from the one
 * onRequest hook every request runs (with the request id and the closing
 * guard): a hook of their own cost a hook runner step per request.
 */
export function securityHeaders(production: boolean): { api: Record<string, string>; docs: Record<string, string> } {
  const api: Record<string, string> = {
    // Nothing in an API response may load, run or be framed.
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
    'cross-origin-resource-policy': 'same-site',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
  };
  // HSTS only makes sense when the service is reached over HTTPS (production behind TLS).
  if (production) api['strict-transport-security'] = 'max-age=31536000; includeSubDomains';
  // The documentation UI loads its own scripts and styles: no CSP there.
  const { 'content-security-policy': _csp, ...docs } = api;
  return { api, docs };
}
