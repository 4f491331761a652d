import { describe, expect, it } from 'vitest';
import { buildTestApp } from './helpers/app.js';
import { createDb } from '../src/db/index.js';

describe('health against a PostgreSQL server that is down', () => {
  it('ready → 503 naming the database when it is unreachable', async () => {
    const down = await createDb('postgres://postgres@127.0.0.1:1/none');
    const d = await buildTestApp({}, { db: down, redis: undefined });
    const res = await d.app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
    expect(res.headers['retry-after']).toBeDefined();
    const body = res.json();
    expect(body).toMatchObject({ status: 503, code: 'UNAVAILABLE', database: 'down' });
    expect(body.detail).toContain('database');
    await d.close();
    await down.close();
  });
});
