import { freePort } from './support/net.js';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '../src/lib/http.js';
import { buildTestApp, type TestApp } from './helpers/app.js';
import { startFakeServer, type FakeServer } from './fakes/server.js';
import { connect, listen, newUserId, signToken } from './realtime/helpers.js';

const INTERNAL = 'internal-token-internal-token';

/** The value of one sample of the exposition text, or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

let t: TestApp;
let venue: FakeServer;
let api: string;
let metricsUrl: string;

async function scrape(): Promise<string> {
  const res = await fetch(metricsUrl);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

beforeAll(async () => {
  venue = await startFakeServer();
  venue.on('GET', '/events', () => ({ body: [] }));
  venue.on('GET', '/missing', () => ({ status: 404, body: { error: 'not found' } }));
  const port = await freePort();
  t = await buildTestApp(
    { METRICS_PORT: String(port), INTERNAL_API_TOKEN: INTERNAL, POLYMARKET_GAMMA_API_URL: venue.url },
    {
      jobs: [
        {
          name: 'calls-venue',
          schedule: '0 0 1 1 *',
          run: async (deps) => {
            await requestJson(`${deps.config.POLYMARKET_GAMMA_API_URL}/events?limit=1`);
            await requestJson(`${deps.config.POLYMARKET_GAMMA_API_URL}/missing`).catch(() => undefined);
            return { items: 1 };
          },
        },
        {
          name: 'always-fails',
          schedule: '0 0 1 1 *',
          run: async () => {
            throw new Error('boom');
          },
        },
      ],
    },
  );
  api = await listen(t.app);
  const metricsPort = await t.app.metrics!.listening();
  expect(metricsPort).toBe(port);
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
});

afterAll(async () => {
  await t?.close();
  await venue?.close();
});

describe('metrics (docs/decisions.md §15.1)', () => {
  it('serves /metrics on its own listener, never on the API port', async () => {
    expect((await fetch(`${api}/metrics`)).status).toBe(404);
    const other = await fetch(metricsUrl.replace('/metrics', '/other'));
    expect(other.status).toBe(404);
    const text = await scrape();
    // Default process metrics include the event-loop lag.
    expect(sample(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
  });

  it('times HTTP requests by route pattern and status, never by raw URL', async () => {
    const unmatched = { method: 'GET', route: 'unmatched', status: '404' };
    const before = sample(await scrape(), 'predict_http_request_duration_seconds_count', unmatched) ?? 0;
    expect((await fetch(`${api}/health/live`)).status).toBe(200);
    expect((await fetch(`${api}/api/v1/events/no-such-event-slug-xyz`)).status).toBe(404);
    expect((await fetch(`${api}/api/v1/nothing-here-abc`)).status).toBe(404);
    const text = await scrape();
    expect(sample(text, 'predict_http_request_duration_seconds_count', { method: 'GET', route: '/health/live', status: '200' })).toBe(1);
    expect(
      sample(text, 'predict_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/events/:slug', status: '404' }),
    ).toBe(1);
    expect(sample(text, 'predict_http_request_duration_seconds_count', unmatched)).toBe(before + 1);
    expect(text).not.toContain('no-such-event-slug-xyz');
    expect(text).not.toContain('nothing-here-abc');
  });

  it('counts rate-limit refusals by route', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${api}/api/v1/auth/activate-key`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key: 'beta_not-a-real-key' }),
      });
      statuses.push(res.status);
    }
    expect(statuses.at(-1)).toBe(429);
    const text = await scrape();
    expect(sample(text, 'predict_http_rate_limited_total', { route: '/api/v1/auth/activate-key' })).toBe(
      statuses.filter((s) => s === 429).length,
    );
  });

  it('counts job runs, failures, durations and the last success; venue calls by API and status', async () => {
    const run = (name: string) =>
      fetch(`${api}/api/v1/internal/jobs/${name}`, { method: 'POST', headers: { authorization: `Bearer ${INTERNAL}` } }).then((r) =>
        r.json(),
      );
    expect((await run('calls-venue')).ok).toBe(true);
    expect((await run('always-fails')).ok).toBe(false);
    const text = await scrape();
    expect(sample(text, 'predict_job_runs_total', { job: 'calls-venue', outcome: 'success' })).toBe(1);
    expect(sample(text, 'predict_job_runs_total', { job: 'always-fails', outcome: 'failure' })).toBe(1);
    expect(sample(text, 'predict_job_duration_seconds_count', { job: 'calls-venue' })).toBe(1);
    const lastSuccess = sample(text, 'predict_job_last_success_timestamp_seconds', { job: 'calls-venue' });
    expect(lastSuccess).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(sample(text, 'predict_job_last_success_timestamp_seconds', { job: 'always-fails' })).toBeUndefined();
    expect(sample(text, 'predict_job_consecutive_failures', { job: 'always-fails' })).toBe(1);
    expect(sample(text, 'predict_job_consecutive_failures', { job: 'calls-venue' })).toBe(0);
    expect((await run('always-fails')).ok).toBe(false);
    expect(sample(await scrape(), 'predict_job_consecutive_failures', { job: 'always-fails' })).toBe(2);
    expect(sample(text, 'predict_upstream_request_duration_seconds_count', { api: 'polymarket-gamma', status: '200' })).toBe(1);
    expect(sample(text, 'predict_upstream_request_duration_seconds_count', { api: 'polymarket-gamma', status: '404' })).toBe(1);
    expect(text).not.toContain(venue.url);
  });

  it('reads data age per venue and the outbox at scrape time', async () => {
    await t.db.rows(sql`
      insert into event_groups (id, venue, venue_event_id, slug, title, last_seen_at)
      values ('pm-metrics-1', 'polymarket', 'metrics-1', 'metrics-1', 'Metrics', now() - interval '120 seconds')`);
    await t.db.rows(sql`
      insert into markets (id, event_group_id, venue, venue_market_id, title, yes_price, price_updated_at)
      values ('pm-metrics-m1', 'pm-metrics-1', 'polymarket', 'metrics-m1', 'Metrics market', 0.5, now() - interval '30 seconds')`);
    const [user] = await t.db.rows<{ id: string }>(sql`
      insert into users (chain, wallet_address, auth_method) values ('evm', '0x00000000000000000000000000000000000000aa', 'wallet')
      returning id`);
    const [n] = await t.db.rows<{ id: string }>(sql`
      insert into notifications (user_id, type, title, message) values (${user.id}, 'system', 'Hi', 'Hello') returning id`);
    await t.db.rows(sql`insert into notification_deliveries (notification_id, channel, status) values (${n.id}, 'push', 'failed')`);

    const text = await scrape();
    const now = Date.now() / 1000;
    const prices = now - sample(text, 'predict_venue_data_last_update_timestamp_seconds', { venue: 'polymarket', data: 'prices' })!;
    expect(prices).toBeGreaterThanOrEqual(29);
    expect(prices).toBeLessThan(600);
    const events = now - sample(text, 'predict_venue_data_last_update_timestamp_seconds', { venue: 'polymarket', data: 'events' })!;
    expect(events).toBeGreaterThanOrEqual(119);
    expect(sample(text, 'predict_delivery_channel_paused', { channel: 'push' })).toBe(0);
    expect(sample(text, 'predict_outbox_rows', { channel: 'push', status: 'failed' })).toBe(1);
    expect(sample(text, 'predict_outbox_rows', { channel: 'messenger', status: 'pending' })).toBe(0);
  });

  it('reports Socket.IO connections and the database pool', async () => {
    const socket = await connect(api, { token: signToken(newUserId()) });
    try {
      const text = await scrape();
      expect(sample(text, 'predict_socketio_connections')).toBe(1);
      expect(sample(text, 'predict_db_pool_max_connections')).toBe(t.db.poolMax);
      if (t.db.kind === 'postgres') expect(sample(text, 'predict_db_pool_connections', { state: 'active' })).toBeGreaterThanOrEqual(1);
    } finally {
      socket.close();
    }
  });
});

describe('METRICS_PORT=0', () => {
  it('turns metrics off: no listener, no hook', async () => {
    const off = await buildTestApp({ METRICS_PORT: '0' }, { db: t.db });
    try {
      expect(off.app.metrics).toBeUndefined();
      expect(off.app.printPlugins()).not.toContain('metrics');
    } finally {
      await off.close();
    }
  });
});
