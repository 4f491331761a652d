import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';

/**
 * compose.yaml is checked here because no Docker engine runs in CI: it must
 * be a valid Compose file (the Compose Specification's own JSON schema,
 * vendored in tests/fixtures, see compose-spec.NOTICE.md) and have the
 * scale-out shape docs/operations.md promises.
 */
const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const compose: any = parse(read('compose.yaml'), { merge: true });
const nginx = read('deploy/nginx.conf');

/** Compose's interpolation, enough for this file: ${VAR}, ${VAR:-default}, ${VAR:?message}. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{([A-Z0-9_]+)(?::?([-?])([^}]*))?\}/g, (_m, name: string, op: string | undefined, arg: string) => {
    if (env[name] !== undefined && env[name] !== '') return env[name];
    if (op === '?') throw new Error(`${name} is required: ${arg}`);
    return op === '-' ? arg : '';
  });
}

const instances = () =>
  Object.entries(compose.services as Record<string, any>).filter(([, s]) => s.build === '.' || s.build?.context === '.');

function inSubnet(address: string, cidr: string): boolean {
  const [net, bits] = cidr.split('/');
  const toInt = (a: string) => a.split('.').reduce((n, o) => (n << 8) + Number(o), 0) >>> 0;
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return (toInt(address) & mask) === (toInt(net) & mask);
}

describe('compose.yaml', () => {
  it('is a valid Compose file (Compose Specification schema)', () => {
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    // Ajv's default dialect is draft-07, the schema's; its https spelling of the meta-schema URI is not registered.
    const { $schema: _dialect, ...schema } = JSON.parse(read('tests/fixtures/compose-spec.json'));
    const validate = ajv.compile(schema);
    const ok = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it('runs PostgreSQL, Redis and two instances of the service built from the Dockerfile', () => {
    expect(compose.services.postgres.image).toMatch(/^postgres:/);
    expect(compose.services.redis.image).toMatch(/^redis:/);
    const apis = instances();
    expect(apis.map(([name]) => name)).toEqual(['api-1', 'api-2']);
    for (const [, s] of apis) {
      expect(s.environment.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//);
      expect(s.environment.REDIS_URL).toBe('redis://redis:6379');
      expect(s.environment.NODE_ENV).toBe('production');
      expect(s.depends_on.postgres.condition).toBe('service_healthy');
      expect(s.depends_on.redis.condition).toBe('service_healthy');
    }
    // One signing key for all instances, and it must come from the operator.
    expect(new Set(apis.map(([, s]) => s.environment.JWT_SECRET)).size).toBe(1);
    expect(() => interpolate(apis[0][1].environment.JWT_SECRET, {})).toThrow(/JWT_SECRET is required/);
  });

  it('gives the instances an environment the service accepts', () => {
    for (const [, s] of instances()) {
      const env = Object.fromEntries(
        Object.entries(s.environment as Record<string, string>).map(([k, v]) => [
          k,
          interpolate(String(v), { JWT_SECRET: 'compose-test-secret-compose-test-secret-0123' }),
        ]),
      );
      // TRUST_PROXY's address-list form (docs/decisions.md §10.1) is checked against the proxy below.
      const { TRUST_PROXY: _trustProxy, ...rest } = env;
      expect(() => loadConfig(rest)).not.toThrow();
      expect(loadConfig(rest).databaseKind).toBe('postgres');
    }
  });

  it('puts the instances behind a proxy whose fixed address is their TRUST_PROXY', () => {
    const proxy = compose.services.proxy;
    expect(proxy.image).toMatch(/^nginx:/);
    expect(proxy.volumes).toContain('./deploy/nginx.conf:/etc/nginx/conf.d/default.conf:ro');
    const address: string = proxy.networks.backend.ipv4_address;
    expect(isIP(address)).toBe(4);
    expect(inSubnet(address, compose.networks.backend.ipam.config[0].subnet)).toBe(true);
    for (const [name, s] of instances()) {
      expect(s.environment.TRUST_PROXY).toBe(address);
      expect(s.networks).toContain('backend');
      expect(proxy.depends_on[name].condition).toBe('service_healthy');
    }
  });

  it('proxies every instance with WebSocket upgrade and X-Forwarded-For', () => {
    for (const [name] of instances()) expect(nginx).toMatch(new RegExp(`^\\s*server ${name}:3000;`, 'm'));
    expect(nginx).toMatch(/proxy_http_version 1\.1;/);
    expect(nginx).toMatch(/proxy_set_header Upgrade \$http_upgrade;/);
    expect(nginx).toMatch(/proxy_set_header Connection \$connection_upgrade;/);
    expect(nginx).toMatch(/map \$http_upgrade \$connection_upgrade \{[^}]*default upgrade;/);
    expect(nginx).toMatch(/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/);
    // Socket.IO's long-polling fallback needs a session to stay on one instance.
    expect(nginx).toMatch(/^\s*ip_hash;/m);
  });

  it('drops unknown hosts at a default server and names the sign-in host (decisions §10.7)', () => {
    const servers = nginx.split(/^server \{/m).slice(1);
    const fallback = servers.find((b) => /listen 80 default_server;/.test(b));
    expect(fallback).toBeDefined();
    expect(fallback).toMatch(/return 444;/);
    expect(fallback).not.toMatch(/proxy_pass/);
    const api = servers.find((b) => /proxy_pass http:\/\/api;/.test(b))!;
    expect(api).not.toMatch(/default_server/);
    const names = /server_name ([^;]+);/.exec(api)![1].split(/\s+/);
    for (const [, s] of instances()) {
      const domain = interpolate(String(s.environment.SIGN_IN_DOMAIN), {});
      expect(names).toContain(domain.replace(/:\d+$/, ''));
      expect(interpolate(String(s.environment.SIGN_IN_URI), {})).toMatch(new RegExp(`^https?://${domain}$`));
    }
  });

  it('keeps secrets and dependencies out of the Docker build context (.dockerignore)', () => {
    const lines = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of ['.data', 'node_modules', '.env', '.git']) expect(lines).toContain(entry);
  });
});
