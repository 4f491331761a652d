import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { buildTestApp, type TestApp } from './helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ INTERNAL_API_TOKEN: 'internal-token-internal-token' });
});
afterAll(async () => t?.close());

describe('OpenAPI', () => {
  it('/docs/json is a valid OpenAPI 3.1 document', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('marks public routes with an empty security list and documents operations', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(doc.paths['/health/ready'].get.security).toEqual([]);
    expect(doc.paths['/health/ready'].get.operationId).toBe('healthReady');
    expect(doc.paths['/api/v1/internal/jobs/{name}'].post.security).toEqual([{ internalToken: [] }]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    const responses = doc.paths['/api/v1/internal/jobs/{name}'].post.responses;
    expect(Object.keys(responses['404'].content)).toEqual(['application/problem+json']);
    const ref = responses['404'].content['application/problem+json'].schema.$ref as string;
    expect(doc.components.schemas[ref.split('/').pop()!].required).toContain('code');
    expect(Object.keys(responses['200'].content)).toEqual(['application/json']);
  });

  it('states what the OWASP lint checks: credentials, retry hints, integer formats, contract paths', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(doc.servers[0].description).toMatch(/local|staging|production/);
    expect(doc.components.securitySchemes.bearerAuth.description).toMatch(/RFC8725/);
    expect(doc.paths['/api/v1/auth/refresh'].post.security).toEqual([{ refreshCookie: [] }, {}]);
    expect(doc.components.securitySchemes.refreshCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'refresh_token' });
    const limited = doc.paths['/api/v1/auth/wallet'].post.responses;
    expect(Object.keys(limited['429'].headers)).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit-Limit', 'RateLimit-Reset']));
    expect(Object.keys(limited['201'].headers)).toEqual(expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Reset']));
    // Prefix routes appear as the contract's paths, and those paths are served.
    expect(doc.paths['/api/v1/events']).toBeDefined();
    expect(Object.keys(doc.paths).filter((p) => p.length > 1 && p.endsWith('/'))).toEqual([]);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/events' })).statusCode).toBe(200);
    const integers: unknown[] = [];
    JSON.stringify(doc, (_k, v) => {
      if (v && typeof v === 'object' && (v as { type?: unknown }).type === 'integer') integers.push(v);
      return v;
    });
    expect(integers.length).toBeGreaterThan(0);
    for (const i of integers) expect(['int32', 'int64']).toContain((i as { format?: string }).format);
    // No schema in components is left unreferenced.
    const text = JSON.stringify({ ...doc, components: { ...doc.components, schemas: {} } }) + JSON.stringify(doc.components.schemas);
    for (const name of Object.keys(doc.components.schemas)) expect(text).toContain(`"#/components/schemas/${name}"`);
  });

  it('/docs renders the interactive reference without a token', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.body).toMatch(/swagger/i);
    const js = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(js.statusCode).toBe(200);
  });
});
