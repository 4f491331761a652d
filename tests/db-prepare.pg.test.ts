import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { createDb, type DbHandle } from '../src/db/index.js';
import { createTestDb } from './helpers/app.js';

/**
 * src/db/index.ts `preparing`: drizzle's statements reach PostgreSQL as prepared statements (parsed
 * once per connection, one round trip each), not unnamed ones parsed twice per execution; long
 * parameter lists stay unprepared; `?prepare=false` in the URL turns it off (PgBouncer).
 * One connection per handle, so pg_prepared_statements shows what that connection holds.
 */
let url: string;
let owner: DbHandle;
const opened: DbHandle[] = [];
beforeAll(async () => {
  const t = await createTestDb();
  owner = t;
  url = t.url;
});
afterAll(async () => {
  for (const h of opened) await h.close();
  await owner?.close();
});

async function open(u: string) {
  const h = await createDb(u, { max: 1 });
  opened.push(h);
  return h;
}

const held = (h: DbHandle, marker: string) =>
  h.rows<{ n: number }>(sql`select count(*)::int as n from pg_prepared_statements where statement like ${`%${marker}%`}`);

describe('prepared statements', () => {
  it('a statement with parameters is prepared once and reused, in and out of transactions', async () => {
    const h = await open(url);
    for (let i = 0; i < 3; i++) expect(await h.rows(sql`select ${i}::int as probe_a`)).toEqual([{ probe_a: i }]);
    expect(await held(h, 'probe_a')).toEqual([{ n: 1 }]);
    const inTx = await h.db.transaction(async (tx) => {
      await h.rows(sql`select ${1}::int as probe_b`, tx);
      return h.rows<{ n: number }>(sql`select count(*)::int as n from pg_prepared_statements where statement like ${'%probe_b%'}`, tx);
    });
    expect(inTx).toEqual([{ n: 1 }]);
  });

  it('a statement with more than 64 parameters is not kept', async () => {
    const h = await open(url);
    const many = Array.from({ length: 65 }, (_, i) => sql`${i}::int`);
    const [row] = await h.rows<{ probe_c: number[] }>(sql`select array[${sql.join(many, sql`, `)}] as probe_c`);
    expect(row.probe_c).toHaveLength(65);
    expect(await held(h, 'probe_c')).toEqual([{ n: 0 }]);
  });

  it('?prepare=false in the URL turns preparing off', async () => {
    const u = new URL(url);
    u.searchParams.set('prepare', 'false');
    const h = await open(u.toString());
    expect(await h.rows(sql`select ${5}::int as probe_d`)).toEqual([{ probe_d: 5 }]);
    expect(await held(h, 'probe_d')).toEqual([{ n: 0 }]);
  });
});
