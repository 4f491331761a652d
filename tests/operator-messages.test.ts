import { afterAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp, loggerOptions } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { redactDatabaseUrl } from '../src/db/index.js';
import { serializeError } from '../src/lib/log-errors.js';

/** Issue #34: what an operator reads when the database or Redis fails must say what failed, and no secret. */

/** A port nothing listens on: bound, then closed. */
async function deadPort(): Promise<number> {
  const s: Server = createServer();
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  const port = (s.address() as { port: number }).port;
  s.close();
  await once(s, 'close');
  return port;
}

async function startError(databaseUrl: string): Promise<Error> {
  const app = await buildApp(testConfig({ DATABASE_URL: databaseUrl })).catch((err: unknown) => err as Error);
  if (!(app instanceof Error)) {
    await app.close();
    throw new Error('the app started');
  }
  return app;
}

describe('database errors at start', () => {
  it('a malformed DATABASE_URL names the database and never echoes its password', { timeout: 120_000 }, async () => {
    for (const url of ['postgres://app:Sup3rSecretPw@db.internal:99999/app', 'postgres://app:Sup3r/SecretPw@db.internal/app']) {
      const err = await startError(url);
      expect(err.message).toMatch(/database/i);
      expect(err.message).toContain('DATABASE_URL');
      expect(err.message).not.toContain('Sup3r');
      expect(JSON.stringify({ ...err, message: err.message, cause: String(err.cause) })).not.toContain('Sup3r');
    }
  });

  it('a database that refuses connections is named as the database, with the URL redacted', async () => {
    const port = await deadPort();
    const err = await startError(`postgres://app:Sup3rSecretPw@127.0.0.1:${port}/app`);
    expect(err.message).toMatch(/database/i);
    expect(err.message).toContain(`postgres://app:[redacted]@127.0.0.1:${port}/app`);
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(err.message).not.toContain('Sup3r');
  }, 120_000);

  it('redacts the password of any URL shape', () => {
    expect(redactDatabaseUrl('postgres://u:p@ss:w@rd@h:5432/d')).toBe('postgres://u:[redacted]@h:5432/d');
    expect(redactDatabaseUrl('postgresql://u@h/d?password=xyz&sslmode=require')).toBe(
      'postgresql://u@h/d?password=[redacted]&sslmode=require',
    );
    expect(redactDatabaseUrl('postgres://h/d')).toBe('postgres://h/d');
  });
});

describe('Redis errors in the log', () => {
  const lines: Array<{ level: number; msg: string; err?: { message: string } }> = [];
  let app: FastifyInstance | undefined;
  afterAll(async () => app?.close());

  it('a Redis outage is logged with its message, never as [object Object]', async () => {
    const port = await deadPort();
    const config = testConfig({ REDIS_URL: `redis://127.0.0.1:${port}`, LOG_LEVEL: 'warn' });
    const stream = { write: (line: string) => void lines.push(JSON.parse(line)) };
    app = await buildApp(config, { logger: { ...(loggerOptions(config) as object), stream } as never });
    await app.ready();
    for (let i = 0; i < 40 && !lines.some((l) => /ECONNREFUSED/.test(JSON.stringify(l))); i++) await new Promise((r) => setTimeout(r, 50));
    const redisLines = lines.filter((l) => l.level >= 40 && /redis/i.test(l.msg));
    expect(redisLines.length).toBeGreaterThan(0);
    for (const l of redisLines) {
      expect(JSON.stringify(l)).not.toContain('[object Object]');
      expect(l.err?.message).toMatch(/\w/);
    }
    expect(redisLines.some((l) => /ECONNREFUSED/.test(l.err?.message ?? ''))).toBe(true);
  }, 120_000);

  it('the err serializer reads a plain { message } and an AggregateError', () => {
    expect(serializeError({ message: 'connect ECONNREFUSED' } as Error).message).toBe('connect ECONNREFUSED');
    const agg = new AggregateError([new Error('connect ECONNREFUSED ::1:6379'), new Error('connect ECONNREFUSED 127.0.0.1:6379')], '');
    expect(serializeError(agg).message).toBe('connect ECONNREFUSED ::1:6379; connect ECONNREFUSED 127.0.0.1:6379');
  });
});
