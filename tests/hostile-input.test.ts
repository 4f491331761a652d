import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { sql } from 'drizzle-orm';
import { users } from '../drizzle/index.js';
import { buildTestApp, type TestApp } from './helpers/app.js';

/**
 * Property-based hostile input over every route of the OpenAPI document:
 * no 5xx other than 503 UNAVAILABLE from an absent upstream, problem+json on
 * every 4xx, and no database change on rejected requests. Inputs include
 * __proto__ keys, huge numbers, deep nesting, 10k-character strings, and
 * bodies that are not valid UTF-8.
 */
const INTERNAL = 'internal-token-internal-token-0000';
let t: TestApp;
let bearer: string;
/** A validly signed token whose user was deleted (decisions §3: 401, never a 5xx). */
let goneBearer: string;
/** Answers by status over the whole run (issue 34: the tally shows 0 × 5xx other than 503). */
const tally = new Map<number, number>();
type Op = { method: string; path: string; params: string[]; query: string[]; hasBody: boolean };
const ops: Op[] = [];

beforeAll(async () => {
  t = await buildTestApp({
    INTERNAL_API_TOKEN: INTERNAL,
    MESSENGER_WEBHOOK_SECRET: 'hook-secret',
    MESSENGER_BOT_TOKEN: '1:test',
    MESSENGER_BOT_USERNAME: 'test_bot',
    // Upstreams that do not answer: routes that need them must say 503, never 500.
    IDP_USERINFO_URL: 'http://127.0.0.1:1/userinfo',
    POLYMARKET_DATA_API_URL: 'http://127.0.0.1:1',
    POLYMARKET_GAMMA_API_URL: 'http://127.0.0.1:1',
    POLYMARKET_CLOB_API_URL: 'http://127.0.0.1:1',
    KALSHI_API_URL: 'http://127.0.0.1:1',
    PUSH_API_URL: 'http://127.0.0.1:1',
    MESSENGER_API_URL: 'http://127.0.0.1:1',
  });
  const [u] = await t.db.db
    .insert(users)
    .values({ chain: 'evm', walletAddress: '0x000000000000000000000000000000000000dEaD', authMethod: 'wallet' })
    .returning();
  bearer = t.app.signAccessToken({ id: u.id, walletAddress: u.walletAddress, chain: 'evm' });
  const [gone] = await t.db.db
    .insert(users)
    .values({ chain: 'evm', walletAddress: '0x000000000000000000000000000000000000bEEF', authMethod: 'wallet' })
    .returning();
  goneBearer = t.app.signAccessToken({ id: gone.id, walletAddress: gone.walletAddress, chain: 'evm' });
  await t.db.db.delete(users).where(sql`${users.id} = ${gone.id}`);
  const doc = t.app.swagger() as {
    paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }>; requestBody?: unknown }>>;
  };
  for (const [path, item] of Object.entries(doc.paths)) {
    if (path.startsWith('/docs')) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const ps = op.parameters ?? [];
      ops.push({
        method: method.toUpperCase(),
        path,
        params: ps.filter((p) => p.in === 'path').map((p) => p.name),
        query: ps.filter((p) => p.in === 'query').map((p) => p.name),
        hasBody: Boolean(op.requestBody),
      });
    }
  }
});
afterAll(async () => t?.close());

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constant('x'.repeat(10_000)),
  fc.constantFrom(
    '',
    ' ',
    '%',
    '_',
    "'; drop table users; --",
    '../../etc/passwd',
    '\u0000',
    '😀',
    '%00',
    '__proto__',
    'constructor',
    'NaN',
    '-1',
    '1e309',
    '0x',
    'null',
    'true',
    '[]',
    '{}',
  ),
  fc.integer().map(String),
  fc.double().map(String),
);

const leaf = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0, -0, 2 ** 64),
  fc.boolean(),
  fc.constant(null),
);

const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'prototype')), tie('value'), { maxKeys: 5 }),
})).value;

/** Nested objects n deep, written as text (JSON.stringify itself would overflow the stack). */
const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

const rawBodies = fc.oneof(
  hostileJson.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.constant(Buffer.from('{"__proto__": {"admin": true}, "constructor": {"prototype": {"x": 1}}}')),
  fc.constant(Buffer.from(deep(5_000))),
  fc.constant(Buffer.from(deep(60_000))),
  fc.constant(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d])), // invalid UTF-8 inside a JSON string
  fc.constant(Buffer.from('{"a": 1e99999, "b": -1e99999, "c": 123456789012345678901234567890}')),
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
);

async function rowCounts(): Promise<string> {
  const tables = await t.db.rows<{ tablename: string }>(
    sql`select tablename from pg_tables where schemaname = 'public' order by tablename`,
  );
  const parts = tables.map((x) => `select '${x.tablename}' as t, count(*)::int as n from "${x.tablename}"`);
  const rows = await t.db.rows<{ t: string; n: number }>(sql.raw(parts.join(' union all ')));
  return JSON.stringify(rows.sort((a, b) => a.t.localeCompare(b.t)));
}

describe('hostile input on every route', () => {
  it('finds the routes to attack', () => {
    expect(ops.length).toBeGreaterThanOrEqual(3);
  });

  it('never answers 5xx (but 503 UNAVAILABLE), always problem+json on 4xx, and changes nothing when it refuses', async () => {
    const request = fc.record({
      opIndex: fc.nat(),
      params: fc.array(hostileString, { minLength: 4, maxLength: 4 }),
      query: fc.dictionary(
        fc.oneof(
          fc.constantFrom(
            'limit',
            'offset',
            'cursor',
            'sort',
            'period',
            'search',
            'type',
            'read',
            'status',
            'range',
            'markets',
            'chain',
            'address',
            '__proto__',
          ),
          hostileString,
        ),
        hostileString,
        { maxKeys: 4 },
      ),
      body: rawBodies,
      auth: fc.constantFrom('user', 'internal', 'none', 'garbage', 'gone'),
      contentType: fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'text/plain',
        'application/x-www-form-urlencoded',
      ),
    });
    const out = await fc.check(
      fc.asyncProperty(request, async (r) => {
        const op = ops[r.opIndex % ops.length];
        let url = op.path;
        op.params.forEach((name, i) => {
          url = url.replace(`{${name}}`, encodeURIComponent(r.params[i] || 'x'));
        });
        const q = new URLSearchParams();
        for (const name of op.query) if (r.query[name] !== undefined) q.set(name, r.query[name]);
        for (const [k, v] of Object.entries(r.query)) if (!op.query.includes(k)) q.set(k, v);
        const headers: Record<string, string> = {};
        if (r.auth === 'user') headers.authorization = `Bearer ${bearer}`;
        if (r.auth === 'internal') headers.authorization = `Bearer ${INTERNAL}`;
        if (r.auth === 'garbage') headers.authorization = 'Bearer ' + 'a'.repeat(300);
        if (r.auth === 'gone') headers.authorization = `Bearer ${goneBearer}`;
        if (op.path.includes('messenger-bot/webhook')) headers['x-telegram-bot-api-secret-token'] = 'hook-secret';
        const withBody = op.method !== 'GET' && op.method !== 'DELETE' ? true : op.hasBody;
        if (withBody) headers['content-type'] = r.contentType;
        const before = await rowCounts();
        const res = await t.app.inject({
          method: op.method as 'GET',
          url: url + (q.size ? `?${q}` : ''),
          headers,
          ...(withBody ? { payload: r.body } : {}),
        });
        const where = `${op.method} ${url.slice(0, 120)} → ${res.statusCode} ${res.body.slice(0, 200)}`;
        tally.set(res.statusCode, (tally.get(res.statusCode) ?? 0) + 1);
        if (res.statusCode >= 500) {
          expect(res.statusCode, where).toBe(503);
          expect(res.json().code, where).toBe('UNAVAILABLE');
        }
        if (res.statusCode >= 400) {
          expect(res.headers['content-type'], where).toMatch(/^application\/problem\+json/);
          const body = res.json();
          expect(typeof body.code, where).toBe('string');
          expect(body.status, where).toBe(res.statusCode);
          expect(await rowCounts(), where).toBe(before);
        }
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 300), endOnFailure: true },
    );
    // Report the failing request briefly (counterexamples hold 10k-character strings).
    if (out.failed) {
      const err = out.errorInstance as Error | undefined;
      throw new Error(`after ${out.numRuns} runs: ${(err?.message ?? 'property failed').slice(0, 1500)}`);
    }
    expect(out.numRuns).toBeGreaterThan(0);
    const byStatus = Object.fromEntries([...tally].sort(([a], [b]) => a - b));
    console.log(`hostile-input tally over ${ops.length} operations, ${out.numRuns} requests: ${JSON.stringify(byStatus)}`);
    expect([...tally.keys()].filter((s) => s >= 500 && s !== 503)).toEqual([]);
  }, 300_000);
});
