import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { parseProxyEntry } from './lib/client-address.js';

/**
 * The environment, parsed once. Every variable of docs/decisions.md §1 (plus a few
 * operational knobs documented in docs/configuration.md) lives here; nothing else in the
 * code base reads process.env except src/server.ts, which hands it to us.
 */

const emptyToUndefined = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

const optionalString = z.preprocess(emptyToUndefined, z.string().optional());

const httpUrl = (name: string) =>
  z.preprocess(
    emptyToUndefined,
    z
      .string()
      .refine((v) => {
        try {
          const u = new URL(v);
          return u.protocol === 'http:' || u.protocol === 'https:';
        } catch {
          return false;
        }
      }, `${name} must be an http(s) URL`)
      .transform((v) => v.replace(/\/+$/, '')),
  );

/** A boolean variable without a fixed default: undefined when unset (the default depends on others). */
const optionalBool = z.preprocess(
  emptyToUndefined,
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], {
      message: 'must be one of true, false, 1, 0, yes, no, on, off',
    })
    .optional()
    .transform((v) => (v === undefined ? undefined : ['true', '1', 'yes', 'on'].includes(v))),
);

const bool = (def: boolean) =>
  z.preprocess(
    emptyToUndefined,
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], {
        message: 'must be one of true, false, 1, 0, yes, no, on, off',
      })
      .optional()
      .transform((v) => (v === undefined ? def : ['true', '1', 'yes', 'on'].includes(v))),
  );

const port = (def: number) =>
  z.preprocess(
    emptyToUndefined,
    z.coerce
      .number({ message: 'must be a number' })
      .int('must be an integer')
      .min(0, 'must be between 0 and 65535')
      .max(65535, 'must be between 0 and 65535')
      .default(def),
  );

const databaseUrl = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .default('pglite:./.data/pglite')
    .refine(
      (v) => (v.startsWith('pglite:') ? v.length > 'pglite:'.length : /^postgres(ql)?:\/\/.+/.test(v)),
      'must be postgres://…, postgresql://…, pglite:<dir> or pglite:memory',
    ),
);

const redisUrl = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .refine((v) => /^rediss?:\/\/.+/.test(v), 'must be redis://… or rediss://…')
    .optional(),
);

/**
 * docs/decisions.md §1 / §10.1: `false` or a comma list of the load balancers'
 * addresses and CIDR ranges. `true` would trust the client's own header and is
 * refused, as is any entry that is not an address or range.
 */
const trustProxy = z.preprocess(
  emptyToUndefined,
  z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      if (v === undefined || ['false', '0', 'no', 'off'].includes(v.trim().toLowerCase())) return;
      if (['true', '1', 'yes', 'on'].includes(v.trim().toLowerCase())) {
        ctx.addIssue({
          code: 'custom',
          message: 'must list the load balancers (addresses or CIDR ranges such as 10.0.0.0/8,127.0.0.1): true would trust any client',
        });
        return;
      }
      const bad = v
        .split(',')
        .map((e) => e.trim())
        .filter((e) => !parseProxyEntry(e));
      if (bad.length > 0)
        ctx.addIssue({
          code: 'custom',
          message: `must be false or a comma list of IP addresses or CIDR ranges; not one: ${bad[0].slice(0, 60)}`,
        });
    })
    .transform((v) =>
      v === undefined || ['false', '0', 'no', 'off'].includes(v.trim().toLowerCase())
        ? ([] as string[])
        : v
            .split(',')
            .map((e) => e.trim())
            .filter(Boolean),
    ),
);

/** An RFC 3986 authority: host (name, IPv4 or [IPv6]) and an optional port. */
const AUTHORITY =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

const secret = (name: string) => z.preprocess(emptyToUndefined, z.string().min(32, `${name} must be at least 32 characters`).optional());

const EnvSchema = z
  .object({
    NODE_ENV: z.preprocess(
      emptyToUndefined,
      z.enum(['development', 'production', 'test'], { message: 'must be development, production or test' }).default('development'),
    ),
    PORT: port(3000),
    HOST: z.preprocess(emptyToUndefined, z.string().default('127.0.0.1')),
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    JWT_SECRET: secret('JWT_SECRET'),
    JWT_SECRET_PREVIOUS: secret('JWT_SECRET_PREVIOUS'),
    // A cookie Domain of a TLD, or one with spaces or wildcards, would make every sign-in fail (or leak the cookie).
    COOKIE_DOMAIN: z.preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(
          /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/,
          'must be a host name of two labels or more, such as example.com (no scheme, port, spaces or wildcards)',
        )
        .optional(),
    ),
    CORS_ORIGINS: z.preprocess(
      emptyToUndefined,
      z
        .string()
        .optional()
        .transform((v) =>
          v
            ? v
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean)
            : [],
        )
        .refine(
          (list) =>
            list.every((o) => {
              try {
                const u = new URL(o);
                return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === o.replace(/\/$/, '');
              } catch {
                return false;
              }
            }),
          'must be a comma-separated list of origins such as https://app.example.com (scheme, host and optional port only)',
        )
        .transform((list) => list.map((o) => o.replace(/\/$/, ''))),
    ),
    TRUST_PROXY: trustProxy,
    JOBS: bool(true),
    LOG_LEVEL: z.preprocess(
      emptyToUndefined,
      z
        .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
          message: 'must be one of fatal, error, warn, info, debug, trace, silent',
        })
        .default('info'),
    ),
    // One info line per request (off: request metrics count every request; errors are logged either way).
    LOG_REQUESTS: bool(false),
    POLYMARKET_DATA_API_URL: httpUrl('POLYMARKET_DATA_API_URL').default('https://data-api.polymarket.com'),
    POLYMARKET_GAMMA_API_URL: httpUrl('POLYMARKET_GAMMA_API_URL').default('https://gamma-api.polymarket.com'),
    POLYMARKET_CLOB_API_URL: httpUrl('POLYMARKET_CLOB_API_URL').default('https://clob.polymarket.com'),
    KALSHI_API_URL: httpUrl('KALSHI_API_URL').default('https://api.elections.kalshi.com/trade-api/v2'),
    // docs/decisions.md §1, §11.2: used exactly as given; empty turns the hot-market feed off.
    POLYMARKET_MARKET_WS_URL: z
      .string()
      .default('wss://ws-subscriptions-clob.polymarket.com/ws/market')
      .transform((v) => v.trim())
      .refine((v) => {
        if (v === '') return true;
        try {
          const u = new URL(v);
          return u.protocol === 'ws:' || u.protocol === 'wss:';
        } catch {
          return false;
        }
      }, 'POLYMARKET_MARKET_WS_URL must be a ws(s) URL, or empty to turn the hot-market feed off'),
    // docs/decisions.md §11.2: groups always tracked (refreshed every 60 s), ranked by stored 24 h volume.
    PRICE_TRACK_TOP: z.preprocess(
      emptyToUndefined,
      z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(0).max(100_000, 'must be at most 100000').default(500),
    ),
    IDP_USERINFO_URL: httpUrl('IDP_USERINFO_URL').optional(),
    IDP_JWKS_URL: httpUrl('IDP_JWKS_URL').optional(),
    IDP_ISSUER: optionalString,
    IDP_AUDIENCE: optionalString,
    PUSH_API_URL: httpUrl('PUSH_API_URL').default('https://exp.host'),
    PUSH_ACCESS_TOKEN: optionalString,
    MESSENGER_API_URL: httpUrl('MESSENGER_API_URL').default('https://api.telegram.org'),
    MESSENGER_BOT_TOKEN: optionalString,
    MESSENGER_WEBHOOK_SECRET: z.preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,256}$/, 'must be 1-256 characters of A-Z a-z 0-9 _ - (Telegram secret_token rule)')
        .optional(),
    ),
    MESSENGER_BOT_USERNAME: optionalString,
    // docs/decisions.md §13.3: messages per second per bot (Telegram's limit for bulk messages is 25;
    // a bot with paid broadcasts may go higher).
    MESSENGER_MAX_PER_SECOND: z.preprocess(
      emptyToUndefined,
      z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(1).max(1000, 'must be at most 1000').default(25),
    ),
    INTERNAL_API_TOKEN: z.preprocess(emptyToUndefined, z.string().min(16, 'INTERNAL_API_TOKEN must be at least 16 characters').optional()),
    REFRESH_REUSE_GRACE_SECONDS: z.preprocess(
      emptyToUndefined,
      z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(0).max(30, 'must be at most 30').default(0),
    ),
    SIGN_IN_DOMAIN: z.preprocess(
      emptyToUndefined,
      z.string().regex(AUTHORITY, 'must be a host with an optional port, such as app.example.com').optional(),
    ),
    SIGN_IN_URI: httpUrl('SIGN_IN_URI').optional(),
    SIGN_IN_CHAIN_ID: z.preprocess(
      emptyToUndefined,
      z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(1, 'must be a positive EIP-155 chain id').default(1),
    ),
    // docs/decisions.md §10.7: `true` outside production, `false` with NODE_ENV=production (resolved in loadConfig).
    SIGN_IN_BARE_NONCE: optionalBool,
    // docs/decisions.md §12.1: how long a user's stream events are kept for resume (whichever keeps more).
    STREAM_KEEP_DAYS: z.preprocess(
      emptyToUndefined,
      z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(0, 'must be 0 or more').default(7),
    ),
    STREAM_KEEP_EVENTS: z.preprocess(
      emptyToUndefined,
      z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(0, 'must be 0 or more').default(1000),
    ),
    // docs/decisions.md §15.1: Prometheus metrics on their own listener; 0 turns them off.
    METRICS_PORT: port(9464),
    // docs/decisions.md §15.3: refuse requests with 503 past the event-loop delay or heap limit.
    OVERLOAD_GUARD: bool(true),
    SHUTDOWN_TIMEOUT_MS: z.preprocess(
      emptyToUndefined,
      z.coerce.number({ message: 'must be a number' }).int().min(100, 'must be at least 100').default(10_000),
    ),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production') {
      if (!env.JWT_SECRET) {
        ctx.addIssue({ code: 'custom', path: ['JWT_SECRET'], message: 'is required when NODE_ENV=production' });
      }
      // docs/decisions.md §10.7: the message's domain is never taken from the request in production.
      for (const name of ['SIGN_IN_DOMAIN', 'SIGN_IN_URI'] as const) {
        if (!env[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'is required when NODE_ENV=production' });
      }
      if (env.CORS_ORIGINS.some((o) => o.startsWith('http://'))) {
        ctx.addIssue({
          code: 'custom',
          path: ['CORS_ORIGINS'],
          message: 'must list only https:// origins when NODE_ENV=production (cookies are SameSite=None; Secure)',
        });
      }
    }
    // docs/decisions.md §10.8: a JWKS-verified token is only ours if its issuer and audience say so.
    if (env.IDP_JWKS_URL) {
      for (const name of ['IDP_ISSUER', 'IDP_AUDIENCE'] as const) {
        if (!env[name]) ctx.addIssue({ code: 'custom', path: [name], message: 'is required when IDP_JWKS_URL is set' });
      }
    }
    if (env.JWT_SECRET && env.JWT_SECRET_PREVIOUS && env.JWT_SECRET === env.JWT_SECRET_PREVIOUS) {
      ctx.addIssue({ code: 'custom', path: ['JWT_SECRET_PREVIOUS'], message: 'must differ from JWT_SECRET' });
    }
  });

type Env = z.output<typeof EnvSchema>;

/** The names of every variable the config reads (.env.example must list them all). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

export type Config = Readonly<
  Omit<Env, 'JWT_SECRET' | 'SIGN_IN_BARE_NONCE'> & {
    JWT_SECRET: string;
    SIGN_IN_BARE_NONCE: boolean;
    /** true when JWT_SECRET was generated for this process (development only). */
    jwtSecretGenerated: boolean;
    isProduction: boolean;
    /** 'postgres' for postgres:// URLs, 'pglite' for pglite:<dir|memory>. */
    databaseKind: 'postgres' | 'pglite';
  }
>;

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses an environment object (never process.env directly) into a frozen Config. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = issue.path.join('.') || 'environment';
      const msg = issue.message.startsWith(name) ? issue.message.slice(name.length).trim() : issue.message;
      const shown = env[name];
      const value = shown === undefined || /SECRET|TOKEN/.test(name) ? '' : ` (got "${String(shown).slice(0, 60)}")`;
      return `${name}: ${msg}${value}`;
    });
    throw new ConfigError(problems);
  }
  const e = parsed.data;
  const jwtSecretGenerated = !e.JWT_SECRET;
  return Object.freeze({
    ...e,
    JWT_SECRET: e.JWT_SECRET ?? randomBytes(48).toString('base64url'),
    IDP_ISSUER: e.IDP_ISSUER ?? e.IDP_USERINFO_URL,
    SIGN_IN_BARE_NONCE: e.SIGN_IN_BARE_NONCE ?? e.NODE_ENV !== 'production',
    jwtSecretGenerated,
    isProduction: e.NODE_ENV === 'production',
    databaseKind: e.DATABASE_URL.startsWith('pglite:') ? 'pglite' : 'postgres',
  });
}

/** A config for tests and tools: defaults plus overrides, no process.env. */
export function testConfig(overrides: Record<string, string | undefined> = {}): Config {
  // METRICS_PORT off: many apps share one test process; the metrics tests pick a port.
  // POLYMARKET_MARKET_WS_URL off: tests never reach the venue; the hot-market tests point it at their fake.
  return loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: 'pglite:memory',
    JOBS: 'off',
    LOG_LEVEL: 'silent',
    METRICS_PORT: '0',
    POLYMARKET_MARKET_WS_URL: '',
    ...overrides,
  });
}
