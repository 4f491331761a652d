import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { buildTestApp } from './helpers/app.js';
import { startServer, waitForExit, waitForHttp } from './helpers/server-process.js';

describe('graceful shutdown', () => {
  it('finishes in-flight requests and accepts no new connections meanwhile', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    const t = await buildTestApp(
      {},
      {
        extend: (app) => {
          app.get('/api/v1/test/slow', { config: { public: true } }, async () => {
            entered();
            await gate;
            return { done: true };
          });
        },
      },
    );
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as { port: number };
    const inflight = fetch(`http://127.0.0.1:${port}/api/v1/test/slow`);
    await inHandler; // the request is in flight, inside its handler
    const closing = t.close();
    await new Promise((r) => setTimeout(r, 50));
    await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
    release();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ done: true });
    await closing;
  });

  let child: ReturnType<typeof startServer> | undefined;
  afterAll(() => child?.kill('SIGKILL'));

  it('SIGTERM stops the process with exit code 0', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    child = startServer({ PORT: String(port), DATABASE_URL: 'pglite:memory', JOBS: 'off' });
    const res = await waitForHttp(`http://127.0.0.1:${port}/health/ready`, 90_000);
    expect(res.status).toBe(200);
    child.kill('SIGTERM');
    expect(await waitForExit(child)).toBe(0);
    expect(child.output()).toContain('shutting down');
  }, 120_000);
});

describe('SIGTERM while jobs wait on a stalled venue (decisions §9, issue 34)', () => {
  let child: ReturnType<typeof startServer> | undefined;
  let venue: Server | undefined;
  afterAll(async () => {
    child?.kill('SIGKILL');
    venue?.closeAllConnections();
    await new Promise((r) => venue?.close(r));
  });

  it('aborts the running jobs and exits 0 within SHUTDOWN_TIMEOUT_MS', async () => {
    // Every venue API answers nothing, ever: each job's first venue call hangs.
    let asked!: () => void;
    const reached = new Promise<void>((r) => (asked = r));
    venue = createServer(() => asked());
    await new Promise<void>((r) => venue!.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(venue.address() as AddressInfo).port}`;
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    child = startServer({
      PORT: String(port),
      DATABASE_URL: 'pglite:memory',
      JOBS: 'on',
      SHUTDOWN_TIMEOUT_MS: '4000',
      POLYMARKET_GAMMA_API_URL: url,
      POLYMARKET_CLOB_API_URL: url,
      POLYMARKET_DATA_API_URL: url,
      KALSHI_API_URL: url,
    });
    expect((await waitForHttp(`http://127.0.0.1:${port}/health/live`, 90_000)).status).toBe(200);
    await reached; // a job is inside a venue call
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    child.kill('SIGTERM');
    const code = await waitForExit(child, 8_000);
    const ms = Date.now() - t0;
    expect(child.output()).not.toContain('killed by timeout');
    expect({ code, withinTimeout: ms < 4_000 }).toEqual({ code: 0, withinTimeout: true });
  }, 120_000);
});
