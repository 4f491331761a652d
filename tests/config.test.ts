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
    expect(c.TRUST_PROXY).toEqual([]);
    expect(c.REFRESH_REUSE_GRACE_SECONDS).toBe(0);
    expect(c.SIGN_IN_CHAIN_ID).toBe(1);
    expect(c.SIGN_IN_BARE_NONCE).toBe(true);
    expect(c.SIGN_IN_DOMAIN).toBeUndefined();
    expect(c.CORS_ORIGINS).toEqual([]);
    expect(c.jwtSecretGenerated).toBe(true);
    expect(c.JWT_SECRET.length).toBeGreaterThanOrEqual(32);
    expect(c.PUSH_API_URL).toBe('https://exp.host');
    expect(c.MESSENGER_API_URL).toBe('https://api.telegram.org');
    expect(c.POLYMARKET_DATA_API_URL).toBe('https://data-api.polymarket.com');
    expect(c.KALSHI_API_URL).toBe('https://api.elections.kalshi.com/trade-api/v2');
    expect(c.LOG_LEVEL).toBe('info');
    expect(c.STREAM_KEEP_DAYS).toBe(7);
    expect(c.STREAM_KEEP_EVENTS).toBe(1000);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('POLYMARKET_MARKET_WS_URL: the venue by default, empty turns the feed off, only ws(s) URLs (docs/decisions.md §11.2)', () => {
    expect(loadConfig({}).POLYMARKET_MARKET_WS_URL).toBe('wss://ws-subscriptions-clob.polymarket.com/ws/market');
    expect(loadConfig({ POLYMARKET_MARKET_WS_URL: '' }).POLYMARKET_MARKET_WS_URL).toBe('');
    expect(loadConfig({ POLYMARKET_MARKET_WS_URL: '  ' }).POLYMARKET_MARKET_WS_URL).toBe('');
    // Used exactly as given: path and query are kept.
    expect(loadConfig({ POLYMARKET_MARKET_WS_URL: 'ws://127.0.0.1:9/ws/market?x=1' }).POLYMARKET_MARKET_WS_URL).toBe(
      'ws://127.0.0.1:9/ws/market?x=1',
    );
    expect(problemsOf({ POLYMARKET_MARKET_WS_URL: 'https://example.com/ws' })).toEqual([
      'POLYMARKET_MARKET_WS_URL: must be a ws(s) URL, or empty to turn the hot-market feed off (got "https://example.com/ws")',
    ]);
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
      TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1, fd00::/8',
      REFRESH_REUSE_GRACE_SECONDS: '10',
      SIGN_IN_DOMAIN: 'app.example.com',
      SIGN_IN_URI: 'https://app.example.com/',
      SIGN_IN_CHAIN_ID: '137',
      SIGN_IN_BARE_NONCE: 'false',
      JOBS: 'off',
      IDP_USERINFO_URL: 'https://idp.example.com/userinfo/',
      LOG_LEVEL: 'debug',
    });
    expect(c.PORT).toBe(8080);
    expect(c.databaseKind).toBe('postgres');
    expect(c.CORS_ORIGINS).toEqual(['https://a.example.com', 'https://b.example.com']);
    expect(c.TRUST_PROXY).toEqual(['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8']);
    expect(c.REFRESH_REUSE_GRACE_SECONDS).toBe(10);
    expect(c.SIGN_IN_DOMAIN).toBe('app.example.com');
    expect(c.SIGN_IN_URI).toBe('https://app.example.com');
    expect(c.SIGN_IN_CHAIN_ID).toBe(137);
    expect(c.SIGN_IN_BARE_NONCE).toBe(false);
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

  it('refuses TRUST_PROXY=true (it would trust the client-written header) and entries that are not addresses', () => {
    for (const value of ['true', 'TRUE', '1', 'on']) {
      const problems = problemsOf({ TRUST_PROXY: value });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^TRUST_PROXY: must list the load balancers/);
    }
    for (const value of ['10.0.0.0/33', '10.0.0.1,garbage', '127.1', '2001:db8::/129', '10.0.0.0/8/8']) {
      expect(problemsOf({ TRUST_PROXY: value })[0], value).toMatch(/^TRUST_PROXY: /);
    }
    for (const value of ['false', '', 'off']) expect(loadConfig({ TRUST_PROXY: value }).TRUST_PROXY).toEqual([]);
  });

  it('bounds REFRESH_REUSE_GRACE_SECONDS at 30 and checks the sign-in message settings', () => {
    expect(problemsOf({ REFRESH_REUSE_GRACE_SECONDS: '31' })[0]).toMatch(/^REFRESH_REUSE_GRACE_SECONDS: .*30/);
    expect(problemsOf({ REFRESH_REUSE_GRACE_SECONDS: '-1' })[0]).toMatch(/^REFRESH_REUSE_GRACE_SECONDS: /);
    expect(problemsOf({ SIGN_IN_DOMAIN: 'https://app.example.com' })[0]).toMatch(/^SIGN_IN_DOMAIN: /);
    expect(problemsOf({ SIGN_IN_URI: 'ftp://x' })[0]).toMatch(/^SIGN_IN_URI: /);
    expect(problemsOf({ SIGN_IN_CHAIN_ID: '0' })[0]).toMatch(/^SIGN_IN_CHAIN_ID: /);
    expect(loadConfig({ SIGN_IN_DOMAIN: 'localhost:5173' }).SIGN_IN_DOMAIN).toBe('localhost:5173');
  });

  it('keeps stream events for whole days and a count of events, 0 allowed (docs/decisions.md §12.1)', () => {
    const c = loadConfig({ STREAM_KEEP_DAYS: '0', STREAM_KEEP_EVENTS: '0' });
    expect([c.STREAM_KEEP_DAYS, c.STREAM_KEEP_EVENTS]).toEqual([0, 0]);
    expect(loadConfig({ STREAM_KEEP_DAYS: '30', STREAM_KEEP_EVENTS: '5000' })).toMatchObject({
      STREAM_KEEP_DAYS: 30,
      STREAM_KEEP_EVENTS: 5000,
    });
    expect(problemsOf({ STREAM_KEEP_DAYS: '-1' })[0]).toMatch(/^STREAM_KEEP_DAYS: /);
    expect(problemsOf({ STREAM_KEEP_DAYS: '1.5' })[0]).toMatch(/^STREAM_KEEP_DAYS: .*integer/);
    expect(problemsOf({ STREAM_KEEP_EVENTS: 'many' })[0]).toMatch(/^STREAM_KEEP_EVENTS: .*number/);
  });

  it('IDP_JWKS_URL needs explicit IDP_ISSUER and IDP_AUDIENCE (the userinfo default does not count)', () => {
    const problems = problemsOf({ IDP_JWKS_URL: 'https://idp.example.com/jwks', IDP_USERINFO_URL: 'https://idp.example.com/userinfo' });
    expect(problems.some((p) => p.startsWith('IDP_ISSUER:') && p.includes('IDP_JWKS_URL'))).toBe(true);
    expect(problems.some((p) => p.startsWith('IDP_AUDIENCE:') && p.includes('IDP_JWKS_URL'))).toBe(true);
    expect(problemsOf({ IDP_JWKS_URL: 'https://idp.example.com/jwks', IDP_ISSUER: 'https://idp.example.com/' })).toEqual([
      'IDP_AUDIENCE: is required when IDP_JWKS_URL is set',
    ]);
    const ok = loadConfig({ IDP_JWKS_URL: 'https://idp.example.com/jwks', IDP_ISSUER: 'https://idp.example.com/', IDP_AUDIENCE: 'api' });
    expect(ok.IDP_ISSUER).toBe('https://idp.example.com/');
  });

  it('production refuses http:// CORS origins, localhost included', () => {
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:3000', 'http://localhost']) {
      const problems = problemsOf({
        NODE_ENV: 'production',
        JWT_SECRET: 'x'.repeat(32),
        SIGN_IN_DOMAIN: 'app.example.com',
        SIGN_IN_URI: 'https://app.example.com',
        CORS_ORIGINS: `https://app.example.com,${origin}`,
      });
      expect(problems, origin).toHaveLength(1);
      expect(problems[0]).toMatch(/^CORS_ORIGINS: /);
    }
    expect(loadConfig({ NODE_ENV: 'development', CORS_ORIGINS: 'http://localhost:5173' }).CORS_ORIGINS).toEqual(['http://localhost:5173']);
  });

  it('production requires SIGN_IN_DOMAIN and SIGN_IN_URI and turns the bare nonce off by default (decisions §10.7)', () => {
    const base = { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32) };
    const problems = problemsOf(base);
    expect(problems.some((p) => p.startsWith('SIGN_IN_DOMAIN:') && p.includes('production'))).toBe(true);
    expect(problems.some((p) => p.startsWith('SIGN_IN_URI:') && p.includes('production'))).toBe(true);
    expect(problemsOf({ ...base, SIGN_IN_DOMAIN: 'app.example.com' })).toEqual(['SIGN_IN_URI: is required when NODE_ENV=production']);
    const prod = loadConfig({ ...base, SIGN_IN_DOMAIN: 'app.example.com', SIGN_IN_URI: 'https://app.example.com' });
    expect(prod.SIGN_IN_BARE_NONCE).toBe(false);
    expect(
      loadConfig({ ...base, SIGN_IN_DOMAIN: 'app.example.com', SIGN_IN_URI: 'https://app.example.com', SIGN_IN_BARE_NONCE: 'true' })
        .SIGN_IN_BARE_NONCE,
    ).toBe(true);
    expect(loadConfig({ NODE_ENV: 'development' }).SIGN_IN_BARE_NONCE).toBe(true);
  });

  it('COOKIE_DOMAIN must be a host name of two labels or more: no TLD, spaces or wildcards (issue 34)', () => {
    for (const bad of ['com', 'a b', '*.example.com', 'example..com', 'https://example.com']) {
      expect(
        problemsOf({ COOKIE_DOMAIN: bad }).some((p) => p.startsWith('COOKIE_DOMAIN:')),
        bad,
      ).toBe(true);
    }
    expect(loadConfig({ COOKIE_DOMAIN: 'example.com' }).COOKIE_DOMAIN).toBe('example.com');
    expect(loadConfig({ COOKIE_DOMAIN: 'api.example.co.uk' }).COOKIE_DOMAIN).toBe('api.example.co.uk');
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
