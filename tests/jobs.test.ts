import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { jobRuns } from '../drizzle/index.js';
import type { JobDefinition } from '../src/jobs/types.js';
import { createDb, type DbHandle } from '../src/db/index.js';
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
    // The second call on `a` finds a's own run in progress: 409 at once (decisions §9).
    expect(results.map((r) => r.statusCode)).toEqual([200, 200, 409]);
    expect(results.slice(0, 2).map((r) => r.json().ok)).toEqual([true, true]);
    expect(maxActive).toBe(1);
    await a.close();
    await b.close();
  });
});

describe('run-now while the job runs elsewhere (decisions §9, issue 34)', () => {
  it('waits without holding a connection; a second call on the instance is 409 JOB_RUNNING at once', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held: JobDefinition = {
      name: 'held-elsewhere',
      schedule: '0 0 1 1 *',
      run: async () => {
        await gate;
        return { items: 3 };
      },
    };
    // On PostgreSQL the waiting instance gets a pool of two connections (a run takes two: its lock's and
    // its queries'): waiters that each held one would leave nothing for any other request.
    const small = t.db.kind === 'postgres' ? await createDb((t.db as DbHandle & { url: string }).url, { max: 2 }) : t.db;
    const a = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { db: t.db, jobs: [held] });
    const b = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { db: small, jobs: [held] });
    const post = (x: TestApp) => x.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/held-elsewhere', headers: auth });
    try {
      const first = post(a);
      for (let i = 0; i < 100 && !(await a.app.jobs.statuses()).find((j) => j.name === 'held-elsewhere')?.running; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const waiting = post(b);
      await new Promise((r) => setTimeout(r, 300));
      const others = await Promise.all(Array.from({ length: 11 }, () => post(b)));
      for (const res of others) {
        expect(res.statusCode, res.body).toBe(409);
        expect(res.json().code).toBe('JOB_RUNNING');
        expect(Date.parse(res.json().detail.match(/\d{4}-\d\d-\d\dT[\d:.]+Z/)[0])).not.toBeNaN();
      }
      // A request that needs the database still gets its answer while the run-now waits.
      const list = await Promise.race([
        b.app.inject({ method: 'GET', url: '/api/v1/internal/jobs', headers: auth }),
        new Promise<'stuck'>((r) => setTimeout(() => r('stuck'), 10_000)),
      ]);
      expect(list === 'stuck' ? 'stuck' : list.statusCode).toBe(200);
      release();
      expect((await first).json()).toMatchObject({ ok: true, items: 3 });
      expect((await waiting).json()).toMatchObject({ ok: true, items: 3 });
    } finally {
      release();
      await a.close();
      await b.close();
      if (small !== t.db) await small.close();
    }
  }, 60_000);
});

describe('job visibility (docs/decisions.md §15.2)', () => {
  const get = (app: TestApp, url: string, headers: Record<string, string> = auth) => app.app.inject({ method: 'GET', url, headers });
  type Status = Record<string, any>;
  const statusOf = async (app: TestApp, name: string): Promise<Status> =>
    (await get(app, '/api/v1/internal/jobs')).json().jobs.find((j: Status) => j.name === name);

  it('every job is listed with its schedule, even before its first run; JOBS=off → nextRunAt null', async () => {
    const d = await buildTestApp(
      { INTERNAL_API_TOKEN: TOKEN },
      { db: t.db, jobs: [...defs, { name: 'never-run', schedule: '0 0 1 1 *', run: async () => ({ items: 0 }) }] },
    );
    try {
      const never = await statusOf(d, 'never-run');
      expect(never).toEqual({ name: 'never-run', schedule: '0 0 1 1 *', running: false, nextRunAt: null, lastSuccessAt: null });
    } finally {
      await d.close();
    }
  });

  it('lastSuccessAt is when the last successful run finished; a failed last run keeps it and shows its error', async () => {
    const flaky: JobDefinition = {
      name: 'flaky',
      schedule: '0 0 1 1 *',
      run: async () => {
        if (flakyFails) throw new Error('upstream timed out');
        return { items: 3 };
      },
    };
    let flakyFails = false;
    const d = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { db: t.db, jobs: [flaky] });
    try {
      const good = (await d.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/flaky', headers: auth })).json();
      expect(await statusOf(d, 'flaky')).toMatchObject({ ok: true, items: 3, running: false, lastSuccessAt: good.finishedAt });
      flakyFails = true;
      const bad = (await d.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/flaky', headers: auth })).json();
      const status = await statusOf(d, 'flaky');
      expect(status).toMatchObject({
        ok: false,
        items: 0,
        error: 'upstream timed out',
        startedAt: bad.startedAt,
        lastSuccessAt: good.finishedAt,
      });
      expect(status.runningSince).toBeUndefined();
      expect((await statusOf(t, 'failing-job')).lastSuccessAt).toBeNull();
    } finally {
      await d.close();
    }
  });

  it('nextRunAt is when the schedule fires next (JOBS=on)', async () => {
    const d = await buildTestApp(
      { INTERNAL_API_TOKEN: TOKEN, JOBS: 'on' },
      { db: t.db, jobs: [{ name: 'yearly', schedule: '0 0 1 1 *', run: async () => ({ items: 0 }) }] },
    );
    try {
      await d.app.ready();
      const next = (await statusOf(d, 'yearly')).nextRunAt;
      // Midnight of the next 1 January, server time zone.
      expect(next).toBe(new Date(new Date().getFullYear() + 1, 0, 1).toISOString());
    } finally {
      await d.close();
    }
  });

  it('running is seen from another instance while a run holds the lock; its run row is `running`, then `succeeded`', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held: JobDefinition = {
      name: 'held',
      schedule: '0 0 1 1 *',
      run: async () => {
        await gate;
        return { items: 7 };
      },
    };
    const a = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { db: t.db, jobs: [held] });
    const b = await buildTestApp({ INTERNAL_API_TOKEN: TOKEN }, { db: t.db, jobs: [held] });
    try {
      const run = a.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/held', headers: auth });
      let status: Status = {};
      for (let i = 0; i < 100 && !status.runningSince; i++) {
        status = await statusOf(b, 'held');
        if (!status.runningSince) await new Promise((r) => setTimeout(r, 50));
      }
      expect(status).toMatchObject({ running: true, lastSuccessAt: null });
      expect(Date.parse(status.runningSince)).not.toBeNaN();
      const during = (await get(b, '/api/v1/internal/jobs/held/runs')).json();
      expect(during.runs[0]).toMatchObject({ name: 'held', state: 'running', finishedAt: null, startedAt: status.runningSince });
      release();
      const outcome = (await run).json();
      const after = await statusOf(b, 'held');
      expect(after).toMatchObject({ running: false, ok: true, items: 7, lastSuccessAt: outcome.finishedAt });
      expect(after.runningSince).toBeUndefined();
      const runs = (await get(b, '/api/v1/internal/jobs/held/runs')).json().runs;
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ state: 'succeeded', items: 7, startedAt: outcome.startedAt, finishedAt: outcome.finishedAt });
    } finally {
      release();
      await a.close();
      await b.close();
    }
  });

  it('a run its instance never finished is `abandoned`, not running', async () => {
    // What an instance killed mid-run leaves behind.
    await t.db.db.insert(jobRuns).values({ name: 'ok-job', instanceId: 'gone', startedAt: new Date() });
    const status = await statusOf(t, 'ok-job');
    expect(status.running).toBe(false);
    expect(status.runningSince).toBeUndefined();
    expect(status.ok).toBe(true);
    const runs = (await get(t, '/api/v1/internal/jobs/ok-job/runs')).json().runs;
    expect(runs[0]).toMatchObject({ instanceId: 'gone', state: 'abandoned', finishedAt: null });
    expect(runs.slice(1).every((r: Status) => r.state === 'succeeded')).toBe(true);
  });

  it('lists recent runs newest first, at most `limit`', async () => {
    for (let i = 0; i < 3; i++) await t.app.inject({ method: 'POST', url: '/api/v1/internal/jobs/ok-job', headers: auth });
    const all = (await get(t, '/api/v1/internal/jobs/ok-job/runs?limit=100')).json();
    expect(all.name).toBe('ok-job');
    expect(all.runs.length).toBeGreaterThanOrEqual(5);
    const starts = all.runs.map((r: Status) => Date.parse(r.startedAt));
    expect([...starts].sort((x, y) => y - x)).toEqual(starts);
    const two = (await get(t, '/api/v1/internal/jobs/ok-job/runs?limit=2')).json().runs;
    expect(two).toEqual(all.runs.slice(0, 2));
    expect((await get(t, '/api/v1/internal/jobs/ok-job/runs')).json().runs.length).toBe(Math.min(20, all.runs.length));
  });

  it('bad limit or unknown parameter → 400, unknown job → 404, no token → 401, all problem+json', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'since=yesterday']) {
      const res = await get(t, `/api/v1/internal/jobs/ok-job/runs?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.json().code).toBe('VALIDATION_ERROR');
    }
    const unknown = await get(t, '/api/v1/internal/jobs/nope/runs');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(unknown.json()).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect((await get(t, `/api/v1/internal/jobs/${'x'.repeat(65)}/runs`)).statusCode).toBe(400);
    const noToken = await get(t, '/api/v1/internal/jobs/ok-job/runs', {});
    expect(noToken.statusCode).toBe(401);
    expect(noToken.json().code).toBe('UNAUTHORIZED');
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
