import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { jobRuns } from '../drizzle/index.js';
import type { JobDefinition } from '../src/jobs/types.js';
import { buildTestApp, type TestApp } from './helpers/app.js';

const TOKEN = 'internal-token-internal-token';
let calls = 0;
const defs: JobDefinition[] = [
  { name: 'ok-job', schedule: '0 0 1 1 *', run: async () => ({ items: ++calls }) },
  {
    name: 'failing-job',
    schedule: '0 0 1 1 *',
    run: async () => {
      throw new Error('venue answered 500');
    },
  },
];

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { jobs: defs });
});
afterAll(async () => t?.close());

const auth = { authorization: `Bearer ${TOKEN}` };

describe('internal job endpoints (docs/decisions.md §9)', () => {
  it('runs a job now and answers its outcome', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/ok-job', headers: auth });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ name: 'ok-job', ok: true, items: 1 });
    expect(Date.parse(body.startedAt)).toBeLessThanOrEqual(Date.parse(body.finishedAt));
    expect(body.error).toBeUndefined();
    const rows = await t.db.db.select().from(jobRuns).where(eq(jobRuns.name, 'ok-job'));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ ok: true, items: 1 });
  });

  it('a failing job → 200 with ok: false and the error', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/failing-job', headers: auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'failing-job', ok: false, items: 0, error: 'venue answered 500' });
  });

  it('lists the last run of each job', async () => {
    await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/ok-job', headers: auth });
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/internal/jobs', headers: auth });
    expect(res.statusCode).toBe(200);
    const jobs = res.json().jobs;
    expect(jobs.map((j: { name: string }) => j.name).sort()).toEqual(['failing-job', 'ok-job']);
    expect(jobs.find((j: { name: string }) => j.name === 'ok-job').items).toBe(2);
  });

  it('unknown job → 404; wrong or missing token → 401', async () => {
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/nope', headers: auth })).statusCode).toBe(404);
    const noToken = await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/ok-job' });
    expect(noToken.statusCode).toBe(401);
    expect(noToken.json().code).toBe('UNAUTHORIZED');
    const userJwt = t.app.signAccessToken({ id: 'u', walletAddress: 'w', chain: 'evm' });
    const wrong = await t.app.inject({
      method: 'POST',
      url: '/api/v1/internal/jobs/ok-job',
      headers: { authorization: `Bearer ${userJwt}` },
    });
    expect(wrong.statusCode).toBe(401);
  });

  it('concurrent run-now calls on one job never overlap', async () => {
    let active = 0;
    let maxActive = 0;
    const slow: JobDefinition = {
      name: 'slow',
      schedule: '0 0 1 1 *',
      run: async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setTimeout(r, 150));
        active--;
        return { items: 1 };
      },
    };
    const a = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { db: t.db, jobs: [slow] });
    const b = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { db: t.db, jobs: [slow] });
    const results = await Promise.all(
      [a, b, a].map((x) => x.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/slow', headers: auth })),
    );
    expect(results.map((r) => r.json().ok)).toEqual([true, true, true]);
    expect(maxActive).toBe(1);
    await a.close();
    await b.close();
  });
});

describe('internal tree without INTERNAL_API_TOKEN', () => {
  it('answers 404', async () => {
    const d = await buildTestApp({}, { db: t.db, jobs: defs });
    const res = await d.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/ok-job', headers: auth });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('NOT_FOUND');
    await d.close();
  });
});

describe('schedule', () => {
  it('JOBS=on runs each job once at start and records it', async () => {
    let ran = 0;
    const d = await buildTestApp(
      { JOBS: 'on' },
      { db: t.db, jobs: [{ name: 'startup', schedule: '0 0 1 1 *', run: async () => ({ items: ++ran }) }] },
    );
    for (let i = 0; i < 50 && ran === 0; i++) await new Promise((r) => setTimeout(r, 50));
    await d.close(); // waits for the run in flight
    expect(ran).toBe(1);
    const rows = await t.db.db.select().from(jobRuns).where(eq(jobRuns.name, 'startup'));
    expect(rows).toHaveLength(1);
    expect(rows[0].ok).toBe(true);
  });
});
