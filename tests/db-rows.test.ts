import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { rows, type DbHandle } from '../src/db/index.js';
import { createTestDb } from './helpers/app.js';

// Runs on whichever driver the suite is in: postgres-js (DATABASE_URL) or PGlite.
let h: DbHandle;
beforeAll(async () => {
  h = await createTestDb();
});
afterAll(async () => h?.close());

describe('rows(db, query): the one raw-SQL helper', () => {
  it('returns the rows of a query', async () => {
    const out = await rows<{ n: number; s: string }>(h.db, sql`select n, 'x' || n as s from generate_series(1, 3) as n order by n`);
    expect(out).toEqual([
      { n: 1, s: 'x1' },
      { n: 2, s: 'x2' },
      { n: 3, s: 'x3' },
    ]);
  });

  it('runs inside a transaction, and a statement without a result returns []', async () => {
    const seen = await h.db.transaction(async (tx) => {
      expect(await rows(tx, sql`create temporary table rows_probe (v int) on commit drop`)).toEqual([]);
      expect(await rows(tx, sql`insert into rows_probe values (7), (8)`)).toEqual([]);
      return rows<{ v: number }>(tx, sql`select v from rows_probe order by v`);
    });
    expect(seen).toEqual([{ v: 7 }, { v: 8 }]);
  });

  it('the handle method is the same helper', async () => {
    expect(await h.rows<{ one: number }>(sql`select 1 as one`)).toEqual([{ one: 1 }]);
  });
});
