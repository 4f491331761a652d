import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { loggerOptions } from '../src/app.js';
import { testConfig } from '../src/config.js';
import { serializeError } from '../src/lib/log-errors.js';
import { buildTestApp, type TestApp } from './helpers/app.js';

/** Database errors are logged by their query's shape, never its values (docs/decisions.md §3.11). */
const SECRET = 'ExponentPushToken[very-secret-value-42]';
const lines: string[] = [];
let t: TestApp;

beforeAll(async () => {
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  const logger = { ...(loggerOptions(testConfig({ LOG_LEVEL: 'info' })) as object), stream };
  t = await buildTestApp(
    {},
    {
      logger: logger as never,
      extend: (app: FastifyInstance) => {
        // A failing statement (500 path) and a refused value (400 path), each with the secret as a parameter.
        app.get('/api/v1/test/db-fails', { config: { public: true } }, async () => {
          await app.dbh.rows(sql`select * from no_such_table where token = ${SECRET}`);
          return {};
        });
        app.get('/api/v1/test/db-refuses', { config: { public: true } }, async () => {
          await app.dbh.rows(sql`select ${SECRET}::uuid as id`);
          return {};
        });
        app.get('/api/v1/test/db-conflict', { config: { public: true } }, async () => {
          // A plain table (this file has its own database): a temp table lives on one pooled connection only.
          await app.dbh.rows(sql`create table if not exists t_uq (token text primary key)`);
          await app.dbh.rows(sql`insert into t_uq (token) values (${SECRET}) on conflict do nothing`);
          await app.dbh.rows(sql`insert into t_uq (token) values (${SECRET})`);
          return {};
        });
      },
    },
  );
});
afterAll(async () => t?.close());

describe('database errors in the log', () => {
  it('a failing query is logged with its SQL and code, without its parameters', async () => {
    lines.length = 0;
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/db-fails' });
    expect(res.statusCode).toBe(500);
    const log = lines.join('');
    expect(log).toContain('no_such_table');
    expect(log).toContain('42P01');
    expect(log).not.toContain('very-secret-value');
  });

  it('a refused value (400) and a unique violation (500) never show the value either', async () => {
    lines.length = 0;
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/test/db-refuses' })).statusCode).toBe(400);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/test/db-conflict' })).statusCode).toBe(500);
    const log = lines.join('');
    expect(log).toContain('22P02');
    expect(log).toContain('23505');
    expect(log).not.toContain('very-secret-value');
  });

  it('the serializer keeps what locates the problem', () => {
    const cause = Object.assign(new Error('duplicate key value violates unique constraint "t_pkey"'), {
      code: '23505',
      constraint_name: 't_pkey',
      detail: `Key (token)=(${SECRET}) already exists.`,
    });
    const err = Object.assign(new Error(`Failed query: insert into t values ($1)\nparams: ${SECRET}`), {
      query: 'insert into t values ($1)',
      params: [SECRET],
      cause,
    });
    const out = serializeError(err);
    expect(JSON.stringify(out)).not.toContain('very-secret-value');
    expect(out).toMatchObject({ query: 'insert into t values ($1)', code: '23505', constraint_name: 't_pkey' });
    expect(out.message).toContain('Failed query: insert into t values ($1)');
    expect(out.message).toContain('t_pkey');
  });
});
