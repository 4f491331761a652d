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
