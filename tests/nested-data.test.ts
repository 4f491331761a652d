import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { buildTestApp, type TestApp } from './helpers/app.js';
import { jsonDepth } from '../src/lib/json-depth.js';

/** Deeply nested `data` on the internal notify route is a 400, not a 500. */
const TOKEN = 'internal-token-internal-token';
let t: TestApp;
let userId: string;
beforeAll(async () => {
  t = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN });
  [{ id: userId }] = await t.db.rows<{ id: string }>(
    sql`insert into users (chain, wallet_address, auth_method) values ('evm', '0x00000000000000000000000000000000000000aa', 'wallet') returning id`,
  );
});
afterAll(async () => t?.close());

function nested(depth: number): string {
  let data = '{"marketId":"pm-1"}';
  for (let i = 1; i < depth; i++) data = `{"a":${data}}`;
  return data;
}

const notify = (data: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/internal/notifications',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    payload: `{"userId":"${userId}","type":"mission_completed","title":"t","message":"m","data":${data}}`,
  });

describe('POST /api/v1/internal/notifications with nested data', () => {
  it('accepts data nesting up to 16 levels', async () => {
    const res = await notify(nested(16));
    expect(res.statusCode, res.body).toBe(201);
  });

  it('refuses deeper data with 400 VALIDATION_ERROR naming `data` (it was a 500)', async () => {
    for (const depth of [17, 200, 5_000]) {
      const res = await notify(nested(depth));
      expect(res.statusCode, `${depth}: ${res.body.slice(0, 200)}`).toBe(400);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', errors: [expect.objectContaining({ path: 'data' })] });
    }
    const arrays = `{"list":${'['.repeat(3_000)}${']'.repeat(3_000)}}`;
    expect((await notify(arrays)).statusCode).toBe(400);
  });

  it('jsonDepth counts without recursion', () => {
    expect(jsonDepth(1)).toBe(0);
    expect(jsonDepth({ a: [1, { b: 2 }] })).toBe(3);
    expect(jsonDepth(JSON.parse(nested(50_000)))).toBe(50_000);
  });
});
