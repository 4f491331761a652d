import { afterAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { loggerOptions } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { buildTestApp, type TestApp } from './helpers/app.js';

/**
 * The access log is opt-in (LOG_REQUESTS, src/lib/request-log.ts); errors are
 * logged with their request id either way, through a request logger built on
 * first use.
 */
const apps: TestApp[] = [];
afterAll(async () => {
  for (const t of apps) await t.close();
});

async function appWithLog(env: Record<string, string>) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const logger = { ...(loggerOptions(testConfig({ LOG_LEVEL: 'info' })) as object), stream };
  const t = await buildTestApp(env, {
    logger: logger as never,
    extend: (app: FastifyInstance) => {
      app.get('/api/v1/test/fails', { config: { public: true } }, async () => {
        throw new Error('boom');
      });
    },
  });
  apps.push(t);
  return { t, lines };
}

describe('request logging', () => {
  it('writes no line per request by default, and logs an error with the request id', async () => {
    const { t, lines } = await appWithLog({});
    const ok = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'quiet-1' } });
    expect(ok.statusCode).toBe(200);
    expect(lines.filter((l) => l.reqId === 'quiet-1')).toEqual([]);

    const failed = await t.app.inject({ method: 'GET', url: '/api/v1/test/fails', headers: { 'x-request-id': 'loud-1' } });
    expect(failed.statusCode).toBe(500);
    const errors = lines.filter((l) => l.reqId === 'loud-1');
    expect(errors.map((l) => l.msg)).toContain('unhandled error');
    expect(errors.find((l) => l.msg === 'unhandled error')?.level).toBe(50);
  });

  it('LOG_REQUESTS=on writes one "request completed" line per request, with its request id', async () => {
    const { t, lines } = await appWithLog({ LOG_REQUESTS: 'on' });
    const res = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'access-1' } });
    expect(res.statusCode).toBe(200);
    const mine = lines.filter((l) => l.reqId === 'access-1');
    expect(mine.map((l) => l.msg)).toEqual(['request completed']);
    expect(mine[0]).toMatchObject({ res: { statusCode: 200 }, req: { method: 'GET', url: '/health/live' } });
  });
});
