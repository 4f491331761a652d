import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './helpers/app.js';

let t: TestApp;

beforeAll(async () => {
  // A heap limit of one byte: the first sample (10 ms after start) puts the process under pressure.
  t = await buildTestApp({}, { overload: { maxHeapUsedBytes: 1, sampleInterval: 10 } });
});
afterAll(async () => {
  await t?.close();
});

/** Waits (up to 10 s) for the sampler to have seen the pressure, then answers that response. */
async function refused(url: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await t.app.inject({ method: 'GET', url });
    if (res.statusCode === 503 || Date.now() > deadline) return res;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('overload protection (docs/decisions.md §15.3)', () => {
  it('refuses requests early with 503 UNAVAILABLE problem+json and Retry-After', async () => {
    const res = await refused('/api/v1/events');
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(res.headers['retry-after']).toBe('5');
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(res.json()).toMatchObject({ status: 503, code: 'UNAVAILABLE', title: 'Service Unavailable' });
  });

  it('refuses before authentication and validation run', async () => {
    const res = await refused('/api/v1/notifications?limit=not-a-number');
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('UNAVAILABLE');
  });

  it('keeps the health probes answering', async () => {
    expect((await refused('/api/v1/events')).statusCode).toBe(503);
    const live = await t.app.inject({ method: 'GET', url: '/health/live' });
    expect(live.statusCode).toBe(200);
    const ready = await t.app.inject({ method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().status).toBe('ok');
  });
});
