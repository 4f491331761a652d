import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { rows, type DbHandle } from '../src/db/index.js';
import { jsonbValue } from '../src/lib/jsonb.js';
import { createTestDb } from './helpers/app.js';

// src/lib/jsonb.ts against PostgreSQL's own jsonb (postgres-js or PGlite, whichever the suite runs on).
let h: DbHandle;
beforeAll(async () => {
  h = await createTestDb();
});
afterAll(async () => h?.close());

describe('jsonbValue: a value as jsonb gives it back', () => {
  it('orders keys as jsonb does (shortest first, then bytewise, non-ASCII by UTF-8 bytes), nested too', async () => {
    const values: unknown[] = [
      { orderId: 'o-9', a: 1, nested: { zz: true, b: [1, { yy: 1, x: 2 }] } },
      { B: 1, a: 2, _: 3, Z: 4, aa: 5, ab: 6, é: 7, ee: 8, '\u{1F600}': 9, '\uff5e': 10, '~': 11 },
      { eventSlug: 's', marketId: 'm', result: 'yes', from: 0.53, to: 0.1 + 0.2, title: 'A — B 62¢ …' },
      [{ b: 1, a: null }, 'x', 3.5, false, []],
    ];
    for (const v of values) {
      const [row] = await rows<{ j: string }>(h.db, sql`select (${JSON.stringify(v)}::jsonb)::text as j`);
      expect(JSON.stringify(jsonbValue(v))).toBe(JSON.stringify(JSON.parse(row.j)));
    }
  });

  it('drops what JSON drops, applies toJSON, and turns non-finite numbers into null', () => {
    const at = new Date('2026-01-02T03:04:05.678Z');
    expect(jsonbValue({ u: undefined, f: () => 1, at, n: Number.NaN, l: [undefined, Infinity] })).toEqual({
      n: null,
      l: [null, null],
      at: '2026-01-02T03:04:05.678Z',
    });
  });
});
