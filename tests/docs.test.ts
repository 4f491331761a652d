import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
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

  it('lists no internal route publicly; the whole document is behind the internal token (issue #34)', async () => {
    const pub = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(Object.keys(pub.paths).filter((p) => p.includes('/internal'))).toEqual([]);
    expect(pub.tags.map((x: { name: string }) => x.name)).not.toContain('internal');
    expect(pub.components.securitySchemes.internalToken).toBeUndefined();
    expect(JSON.stringify(pub)).not.toMatch(/INTERNAL_API_TOKEN|run-now|\/api\/v1\/internal/i);
    const yaml = await t.app.inject({ method: 'GET', url: '/docs/yaml' });
    expect(yaml.body).not.toContain('/api/v1/internal');

    expect((await t.app.inject({ method: 'GET', url: '/api/v1/internal/openapi.json' })).statusCode).toBe(401);
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/internal/openapi.json',
      headers: { authorization: 'Bearer internal-token-internal-token' },
    });
    expect(res.statusCode).toBe(200);
    const full = res.json();
    expect(full.paths['/api/v1/internal/jobs/{name}'].post).toBeDefined();
    expect(Object.keys(full.paths)).toEqual(expect.arrayContaining(Object.keys(pub.paths)));
    expect(full.paths['/api/v1/internal/openapi.json']).toBeUndefined();
    const result = await new Validator().validate(full);
    expect(result.errors ?? []).toEqual([]);
  });

  it('marks public routes with an empty security list and documents operations', async () => {
    const pub = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(pub.paths['/health/ready'].get.security).toEqual([]);
    expect(pub.paths['/health/ready'].get.operationId).toBe('healthReady');
    const doc = (
      await t.app.inject({
        method: 'GET',
        url: '/api/v1/internal/openapi.json',
        headers: { authorization: 'Bearer internal-token-internal-token' },
      })
    ).json();
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

  it('has no placeholder examples and no undescribed response; every JSON success has an example its schema accepts', async () => {
    // The whole document (the public one is a part of it).
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/internal/openapi.json',
      headers: { authorization: 'Bearer internal-token-internal-token' },
    });
    expect(res.body).not.toContain('9007199254740991');
    expect(res.body).not.toContain('Default Response');
    const doc = res.json();
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema({ ...doc, $id: 'https://docs.local/openapi.json' });
    const pointer = (parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
    let checked = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
          expect(response.description, `${method} ${path} ${status}`).toBeTruthy();
          if (!status.startsWith('2')) continue;
          for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, any>)) {
            expect(media.example, `${method} ${path} ${status} ${type}: example`).toBeDefined();
            const ref = `https://docs.local/openapi.json#/${pointer(['paths', path, method, 'responses', status, 'content', type, 'schema'])}`;
            const validate = ajv.compile({ $ref: ref });
            expect(validate(media.example), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
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
