import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { startServer, waitForExit } from './helpers/server-process.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('has working defaults with nothing set (docs/decisions.md §1)', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(3000);
    expect(c.HOST).toBe('127.0.0.1');
    expect(c.DATABASE_URL).toBe('pglite:./.data/pglite');
    expect(c.databaseKind).toBe('pglite');
    expect(c.REDIS_URL).toBeUndefined();
    expect(c.NODE_ENV).toBe('development');
    expect(c.JOBS).toBe(true);
    expect(c.TRUST_PROXY).toBe(false);
    expect(c.CORS_ORIGINS).toEqual([]);
    expect(c.jwtSecretGenerated).toBe(true);
    expect(c.JWT_SECRET.length).toBeGreaterThanOrEqual(32);
    expect(c.PUSH_API_URL).toBe('https://exp.host');
    expect(c.MESSENGER_API_URL).toBe('https://api.telegram.org');
    expect(c.POLYMARKET_DATA_API_URL).toBe('https://data-api.polymarket.com');
    expect(c.KALSHI_API_URL).toBe('https://api.elections.kalshi.com/trade-api/v2');
    expect(c.LOG_LEVEL).toBe('info');
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('parses every variable', () => {
    const c = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u@db:5432/app',
      REDIS_URL: 'redis://cache:6379',
      JWT_SECRET: 'x'.repeat(32),
      JWT_SECRET_PREVIOUS: 'y'.repeat(32),
      CORS_ORIGINS: 'https://a.example.com, https://b.example.com/',
      TRUST_PROXY: 'true',
      JOBS: 'off',
      IDP_USERINFO_URL: 'https://idp.example.com/userinfo/',
      LOG_LEVEL: 'debug',
    });
    expect(c.PORT).toBe(8080);
    expect(c.databaseKind).toBe('postgres');
    expect(c.CORS_ORIGINS).toEqual(['https://a.example.com', 'https://b.example.com']);
    expect(c.TRUST_PROXY).toBe(true);
    expect(c.JOBS).toBe(false);
    expect(c.IDP_USERINFO_URL).toBe('https://idp.example.com/userinfo');
    expect(c.IDP_ISSUER).toBe('https://idp.example.com/userinfo'); // defaults to the userinfo URL
    expect(c.jwtSecretGenerated).toBe(false);
  });

  it('reports one clear line per bad variable', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      DATABASE_URL: 'mysql://x',
      REDIS_URL: 'http://x',
      JWT_SECRET: 'short',
      TRUST_PROXY: 'maybe',
      CORS_ORIGINS: 'not a url',
      LOG_LEVEL: 'loud',
    });
    expect(problems).toHaveLength(7);
    for (const name of ['PORT', 'DATABASE_URL', 'REDIS_URL', 'JWT_SECRET', 'TRUST_PROXY', 'CORS_ORIGINS', 'LOG_LEVEL']) {
      expect(problems.filter((p) => p.startsWith(`${name}:`))).toHaveLength(1);
    }
    // Secrets are never echoed back.
    expect(problems.join('\n')).not.toContain('short');
  });

  it('refuses unsafe production config', () => {
    const problems = problemsOf({ NODE_ENV: 'production', CORS_ORIGINS: 'http://app.example.com' });
    expect(problems.some((p) => p.startsWith('JWT_SECRET:') && p.includes('production'))).toBe(true);
    expect(problems.some((p) => p.startsWith('CORS_ORIGINS:'))).toBe(true);
  });

  it('stops the process with exit code 1 and a readable message', async () => {
    const child = startServer({ PORT: 'not-a-port', JWT_SECRET: 'tiny', DATABASE_URL: 'pglite:memory' });
    const code = await waitForExit(child);
    expect(code).toBe(1);
    const lines = child
      .output()
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('Invalid configuration:'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^Invalid configuration: PORT: /);
    expect(lines[1]).toMatch(/^Invalid configuration: JWT_SECRET: .*32/);
  });
});
