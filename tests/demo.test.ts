import { io, type Socket } from 'socket.io-client';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDb } from './helpers/app.js';
import { PG_URL } from './helpers/env.js';
import { fetchWhenReady, startNpmScript, waitForExit, waitForOutput } from './helpers/server-process.js';

/**
 * `npm run demo` as a user runs it (issue #20): offline on loopback fakes, it
 * prints the URLs and a demo user's token as soon as the API listens, before
 * the first leaderboard sync is in (issue 35: a banner in seconds, the data
 * filling in live), then serves events and a leaderboard
 * with profiles and history, and sends that user a notification on
 * `user:notifications` every few seconds through the real notify path.
 */
let demo: ReturnType<typeof startNpmScript> | undefined;
let socket: Socket | undefined;
afterAll(() => {
  socket?.close();
  demo?.kill('SIGKILL');
});

const json = async (url: string, init: RequestInit = {}) => {
  const res = await fetchWhenReady(url, init, 60_000);
  expect(res.status, url).toBe(200);
  return res.json();
};

describe('npm run demo', () => {
  it('prints its URLs and token, serves populated data, and notifies the demo user over Socket.IO', async () => {
    // On PostgreSQL the demo gets a database of its own; otherwise its default, an in-memory PGlite.
    let databaseUrl = 'pglite:memory';
    if (PG_URL) {
      const db = await createTestDb();
      databaseUrl = db.url;
      await db.close();
    }
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    // A job still running at SIGTERM (enrichment, on a busy machine) is waited for rather than cut off.
    demo = startNpmScript('demo', {
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      REDIS_URL: undefined,
      INTERNAL_API_TOKEN: undefined,
      SHUTDOWN_TIMEOUT_MS: '60000',
    });

    const spawned = Date.now();
    await waitForOutput(demo, /filling in/, 240_000);
    const out = demo.output();
    const token = /access token\s+(\S+)/.exec(out)![1];
    // The banner comes first and the data after it: no waiting for the first syncs.
    const bannerAfter = Date.now() - spawned;
    expect(out).not.toMatch(/Demo data filled in/);
    expect(out).not.toMatch(/"job":"leaderboard-sync"[^\n]*job finished/);
    const base0 = `http://127.0.0.1:${port}`;
    expect((await fetchWhenReady(`${base0}/api/v1/events`)).status).toBe(200); // the API already serves
    const filledLine = (await waitForOutput(demo, /Demo data filled in after ([\d.]+) s/, 240_000))[0];
    process.stdout.write(`demo: banner after ${(bannerAfter / 1000).toFixed(1)} s (spawn included); ${filledLine}\n`);
    const url = (label: string) => new RegExp(`^\\s+${label}\\s+(http\\S+)`, 'm').exec(out)?.[1];
    const base = `http://127.0.0.1:${port}`;
    expect(url('API')).toBe(`${base}/api/v1/events`);
    expect(url('docs')).toBe(`${base}/docs`);
    expect(url('asyncapi')).toBe(`${base}/docs/asyncapi.json`);
    expect(url('socket')).toBe(base);
    const internal = /^\s+internal\s+(\S+)/m.exec(out)?.[1];
    expect(internal).toBeDefined();

    // Events from the bundled sample data.
    const events = await json(url('API')!);
    expect(events.total).toBeGreaterThan(0);
    expect(events.events.length).toBeGreaterThan(0);

    // A leaderboard with profiles and history.
    const board = await json(`${base}/api/v1/leaderboard?period=ALL`);
    expect(board.traders.length).toBeGreaterThan(10);
    const trader = board.traders[0].walletAddress as string;
    const profile = await json(`${base}/api/v1/leaderboard/${trader}?period=ALL`);
    expect(profile.walletAddress).toBe(trader);
    expect(typeof profile.totalTrades).toBe('number');
    const history = await json(`${base}/api/v1/leaderboard/${trader}/history?days=90`);
    expect(history.points.length).toBeGreaterThanOrEqual(4);
    // Any other address is read from the fake Data API on demand, never from the network.
    const other = await json(`${base}/api/v1/leaderboard/0x00000000000000000000000000000000000000aa`);
    expect(other.walletAddress).toBe('0x00000000000000000000000000000000000000aa');

    // The docs it points at.
    expect((await json(url('asyncapi')!)).asyncapi).toBe('3.0.0');
    expect((await fetchWhenReady(`${url('docs')}/`)).status).toBe(200);
    const jobs = (await json(`${base}/api/v1/internal/jobs`, { headers: { authorization: `Bearer ${internal}` } })).jobs;
    expect(jobs.map((j: { name: string }) => j.name)).toContain('leaderboard-sync');

    // The signed-in demo user: its token works on the API and on the socket.
    const auth = { authorization: `Bearer ${token}` };
    expect((await fetchWhenReady(`${base}/api/v1/notifications`, { headers: auth })).status).toBe(200);
    const s = io(url('socket'), { transports: ['websocket'], auth: { token }, reconnection: false });
    socket = s;
    const notification = new Promise<any>((resolve) => s.on('notification', resolve));
    const ack = await new Promise<any>((resolve, reject) => {
      s.on('connect_error', reject);
      s.emit('subscribe', { channel: 'user:notifications' }, resolve);
    });
    // The user stream acks with its latest seq (docs/decisions.md §12.3).
    expect(ack).toMatchObject({ ok: true, seq: expect.any(Number) });
    const first = await Promise.race([
      notification,
      new Promise((_, reject) => setTimeout(() => reject(new Error('no notification within 15 s')), 15_000)),
    ]);
    expect(first).toMatchObject({ title: expect.stringMatching(/^Demo /), read: false });
    const listed = await json(`${base}/api/v1/notifications`, { headers: auth });
    expect(listed.notifications.some((n: { id: string }) => n.id === first.id)).toBe(true);

    s.close();
    demo.kill('SIGTERM');
    const code = await waitForExit(demo, 90_000);
    // It stops on SIGTERM. (0 once every in-flight job finished within SHUTDOWN_TIMEOUT_MS; on a
    // heavily loaded machine close-with-grace may cut a long enrichment run off with 1.)
    const shutdownLog = demo
      .output()
      .split('\n')
      .filter((l) => /demo: /.test(l))
      .join('\n');
    expect(code, shutdownLog).not.toBeNull();
    expect(shutdownLog).toContain('demo: shutting down');
  }, 360_000);
});
