import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../src/db/index.js';
import { runMigrations } from '../src/db/migrate.js';
import { buildTestApp, type TestApp } from './helpers/app.js';
import { startOwnPostgres, type OwnPostgres } from './helpers/services.js';

const TOKEN = 'internal-token-internal-token';

describe('PostgreSQL restarted mid-load', () => {
  let pg: OwnPostgres;
  let db: DbHandle;
  let t: TestApp;
  beforeAll(async () => {
    pg = await startOwnPostgres();
    db = await createDb(pg.url, { max: 4 });
    await runMigrations(db);
    t = await buildTestApp(
      { INTERNAL_API_TOKEN: TOKEN },
      { db, redis: undefined, jobs: [{ name: 'noop', schedule: '0 0 1 1 *', run: async () => ({ items: 0 }) }] },
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await db?.close();
    pg?.destroy();
  });

  it('answers 503 problem+json while it is down, then serves again without a restart', async () => {
    const hit = () => t.app.inject({ method: 'GET', url: '/api/v1/internal/jobs', headers: { authorization: `Bearer ${TOKEN}` } });
    expect((await hit()).statusCode).toBe(200);

    pg.stop('immediate');
    const during = [];
    for (let i = 0; i < 20; i++) during.push(await hit());
    for (const r of during) {
      expect(r.statusCode).toBe(503);
      expect(r.headers['content-type']).toMatch(/problem\+json/);
      expect(r.json()).toMatchObject({ status: 503, code: 'UNAVAILABLE' });
      expect(r.headers['retry-after']).toBeDefined();
    }
    const ready = await t.app.inject({ method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().database).toBe('down');

    pg.start();
    let recovered = false;
    for (let i = 0; i < 100 && !recovered; i++) {
      const r = await hit();
      expect([200, 503]).toContain(r.statusCode); // never a 500
      recovered = r.statusCode === 200;
      if (!recovered) await new Promise((res) => setTimeout(res, 200));
    }
    expect(recovered).toBe(true);
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);
  }, 60_000);
});
