import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import fp from 'fastify-plugin';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from '../config.js';
import { upstreamChannel, type UpstreamAttempt } from '../lib/http.js';

/** What the jobs plugin reports of each finished run. */
export interface FinishedJob {
  name: string;
  ok: boolean;
  startedAt: string;
  finishedAt: string;
  /** Venue rows skipped as malformed (an ok run that skipped some is degraded). */
  skipped?: number;
}

export interface Metrics {
  registry: Registry;
  /** Counts a finished job run (wired to the jobs plugin's onJobFinished). */
  jobFinished: (outcome: FinishedJob) => void;
  /** The metrics listener's port once it listens (after app.listen()). */
  listening(): Promise<number>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when METRICS_PORT is not 0 (docs/decisions.md §15.1). */
    metrics: Metrics | undefined;
  }
}

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const METHOD_INDEX: Record<string, number> = { GET: 0, POST: 1, PUT: 2, PATCH: 3, DELETE: 4, HEAD: 5, OPTIONS: 6 };
const OUTBOX_CHANNELS = ['push', 'messenger'];
/**
 * Every metric of this service starts with it (Prometheus naming: one
 * application prefix, base units, `_total` counters, timestamps in
 * `_timestamp_seconds`); prom-client's process and Node.js metrics keep their
 * standard names. deploy/grafana and deploy/prometheus use these names, and
 * tests/deploy.test.ts checks them against a scrape.
 */
export const METRIC_PREFIX = 'predict_';
const OUTBOX_STATUSES = ['pending', 'sent', 'skipped', 'failed'];

interface Cell {
  labels: { method: string; route: string; status: string };
  /** Observations per bucket (not cumulative); the last slot is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * http_request_duration_seconds. prom-client's Histogram checks and hashes
 * the label set on every observe(), even through a labelled child, which was
 * most of the metrics hook's cost per request; this one adds to a cell the
 * hook already holds and builds prom-client's exposition values only at
 * scrape time (registered as a custom metric: name, help, type, get()).
 */
class RequestHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly cells: Cell[] = [];
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: number[],
  ) {}
  cell(method: string, route: string, status: string): Cell {
    const c: Cell = { labels: { method, route, status }, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
    this.cells.push(c);
    return c;
  }
  observe(c: Cell, seconds: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && seconds > b[i]) i++;
    c.counts[i]++;
    c.sum += seconds;
    c.count++;
  }
  get() {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    for (const c of this.cells) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += c.counts[i];
        values.push({ labels: { le: this.bounds[i], ...c.labels }, value: acc, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { le: '+Inf', ...c.labels }, value: c.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { ...c.labels }, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...c.labels }, value: c.count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }
  reset(): void {
    for (const c of this.cells) {
      c.counts.fill(0);
      c.sum = 0;
      c.count = 0;
    }
  }
}

type WithContext = FastifyRequest & Record<symbol, { config?: { url?: string } } | undefined>;
let contextSymbol: symbol | null | undefined;

/**
 * The route pattern a request matched, or `unmatched`. `request.routeOptions`
 * builds a new 13-field object on every read (Fastify 5.12), which cost a
 * measurable share of a small response (tests/bench/RESULTS.md); the pattern
 * is read from the route context Fastify keeps on the request
 * (`Symbol(fastify.context)`, found once), falling back to routeOptions if a
 * Fastify release moves it.
 */
export function routePattern(request: FastifyRequest): string {
  if (contextSymbol === undefined)
    contextSymbol = Object.getOwnPropertySymbols(request).find((s) => s.description === 'fastify.context') ?? null;
  if (contextSymbol !== null) {
    const ctx = (request as WithContext)[contextSymbol];
    if (ctx !== undefined) return ctx.config?.url ?? 'unmatched';
  }
  return request.routeOptions.url ?? 'unmatched';
}

/** Names an upstream call by the configured base URL it starts with (longest first). */
function upstreamNamer(config: Config): (url: string) => string {
  const bases: Array<[string, string]> = (
    [
      [config.POLYMARKET_DATA_API_URL, 'polymarket-data'],
      [config.POLYMARKET_GAMMA_API_URL, 'polymarket-gamma'],
      [config.POLYMARKET_CLOB_API_URL, 'polymarket-clob'],
      [config.KALSHI_API_URL, 'kalshi'],
      [config.PUSH_API_URL, 'expo-push'],
      [config.MESSENGER_API_URL, 'telegram'],
      [config.IDP_USERINFO_URL, 'idp'],
      [config.IDP_JWKS_URL, 'idp'],
    ] as Array<[string | undefined, string]>
  )
    .filter((b): b is [string, string] => typeof b[0] === 'string' && b[0].length > 0)
    .sort((a, b) => b[0].length - a[0].length);
  return (url) => bases.find(([base]) => url.startsWith(base))?.[1] ?? 'other';
}

/**
 * Prometheus metrics (docs/decisions.md §15.1) on their own listener,
 * `METRICS_PORT` on `HOST`, path /metrics, never on the API port. Request
 * metrics are one callback-style onResponse hook keyed by the route pattern
 * (see routePattern(), never the raw URL, so cardinality stays bounded);
 * everything read from the database (data age, outbox, last job success,
 * pool use) is collected at scrape time, so requests pay nothing for it.
 */
export const metricsPlugin = fp(
  async (app) => {
    const { config } = app;
    const registry = new Registry();
    // Process metrics, event-loop lag (nodejs_eventloop_lag_*) and heap among them.
    collectDefaultMetrics({ register: registry });

    const httpDuration = new RequestHistogram(
      `${METRIC_PREFIX}http_request_duration_seconds`,
      'HTTP requests by method, route pattern and status code',
      HTTP_BUCKETS,
    );
    registry.registerMetric(httpDuration as never);
    const rateLimited = new Counter({
      name: `${METRIC_PREFIX}http_rate_limited_total`,
      help: 'Requests refused with 429 RATE_LIMITED, by route pattern',
      labelNames: ['route'] as const,
      registers: [registry],
    });

    // One cell per (route, method, status), found through two Map lookups.
    const cells = new Map<string, Map<number, Cell>>();
    const observe = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const route = routePattern(request);
      const status = reply.statusCode;
      let byRoute = cells.get(route);
      if (byRoute === undefined) {
        byRoute = new Map();
        cells.set(route, byRoute);
      }
      const key = status * 8 + (METHOD_INDEX[request.method] ?? 7);
      let cell = byRoute.get(key);
      if (cell === undefined) {
        cell = httpDuration.cell(request.method, route, String(status));
        byRoute.set(key, cell);
      }
      httpDuration.observe(cell, reply.elapsedTime / 1000);
      if (status === 429) rateLimited.labels(route).inc();
      done();
    };
    app.addHook('onResponse', observe);

    const jobRuns = new Counter({
      name: `${METRIC_PREFIX}job_runs_total`,
      help: 'Job runs finished on this instance, by job and outcome (success, degraded: ok but venue rows skipped as malformed, or failure)',
      labelNames: ['job', 'outcome'] as const,
      registers: [registry],
    });
    const jobSkipped = new Counter({
      name: `${METRIC_PREFIX}job_skipped_rows_total`,
      help: 'Venue rows job runs on this instance skipped as malformed (one event, market or board row each), by job',
      labelNames: ['job'] as const,
      registers: [registry],
    });
    const jobDuration = new Histogram({
      name: `${METRIC_PREFIX}job_duration_seconds`,
      help: 'Duration of job runs on this instance',
      labelNames: ['job'] as const,
      buckets: JOB_BUCKETS,
      registers: [registry],
    });
    // Jobs run on whichever instance holds their lock: the last success is read from job_runs.
    new Gauge({
      name: `${METRIC_PREFIX}job_last_success_timestamp_seconds`,
      help: 'When each job last finished successfully on any instance (Unix time)',
      labelNames: ['job'] as const,
      registers: [registry],
      async collect() {
        const rows = await safeRows<{ name: string; t: number }>(
          sql`select name, extract(epoch from max(finished_at))::float8 as t from job_runs where ok group by name`,
        );
        if (!rows) return;
        this.reset();
        for (const r of rows) this.labels(r.name).set(Number(r.t));
      },
    });

    const upstream = new Histogram({
      name: `${METRIC_PREFIX}upstream_request_duration_seconds`,
      help: 'HTTP requests to venues and other upstreams (each attempt), by API and status (HTTP status, timeout or network)',
      labelNames: ['api', 'status'] as const,
      buckets: UPSTREAM_BUCKETS,
      registers: [registry],
    });
    const nameOf = upstreamNamer(config);
    const onUpstream = (message: unknown) => {
      const a = message as UpstreamAttempt;
      upstream.labels(a.api ?? nameOf(a.url), String(a.status)).observe(a.seconds);
    };
    upstreamChannel.subscribe(onUpstream);
    app.addHook('onClose', async () => {
      upstreamChannel.unsubscribe(onUpstream);
    });

    // Data age as a last-update timestamp (Prometheus convention: alert on `time() - …`).
    new Gauge({
      name: `${METRIC_PREFIX}venue_data_last_update_timestamp_seconds`,
      help: 'When the freshest stored data per venue was written (Unix time): prices (markets.price_updated_at), events (event_groups.last_seen_at), leaderboard (last board switch)',
      labelNames: ['venue', 'data'] as const,
      registers: [registry],
      async collect() {
        const rows = await safeRows<{ venue: string; data: string; t: number | null }>(sql`
          select venue, 'prices' as data, extract(epoch from max(price_updated_at))::float8 as t from markets group by venue
          union all
          select venue, 'events', extract(epoch from max(last_seen_at))::float8 from event_groups group by venue
          union all
          select 'polymarket', 'leaderboard', extract(epoch from max(switched_at))::float8 from leaderboard_current`);
        if (!rows) return;
        this.reset();
        for (const r of rows) if (r.t !== null) this.labels(r.venue, r.data).set(Number(r.t));
      },
    });

    // Consecutive failures across instances: the "a job failed twice in a row" alert reads this.
    new Gauge({
      name: `${METRIC_PREFIX}job_consecutive_failures`,
      help: 'Finished runs of each job that failed since its last success, on any instance (from job_runs)',
      labelNames: ['job'] as const,
      registers: [registry],
      async collect() {
        const rows = await safeRows<{ name: string; n: number }>(sql`
          select name, count(*) filter (where ok = false and (last_ok is null or finished_at > last_ok))::int as n
          from (select name, ok, finished_at, max(finished_at) filter (where ok) over (partition by name) as last_ok
                from job_runs where finished_at is not null) runs
          group by name`);
        if (!rows) return;
        this.reset();
        for (const r of rows) this.labels(r.name).set(Number(r.n));
      },
    });

    new Gauge({
      name: `${METRIC_PREFIX}delivery_channel_paused`,
      help: 'Whether a delivery channel is paused (1), e.g. push after Expo InvalidCredentials, or not (0)',
      labelNames: ['channel'] as const,
      registers: [registry],
      async collect() {
        const rows = await safeRows<{ channel: string; paused: boolean }>(
          sql`select channel, paused_at is not null as paused from delivery_channels`,
        );
        if (!rows) return;
        this.reset();
        for (const c of OUTBOX_CHANNELS) this.labels(c).set(0);
        for (const r of rows) this.labels(r.channel).set(r.paused ? 1 : 0);
      },
    });

    new Gauge({
      name: `${METRIC_PREFIX}outbox_rows`,
      help: 'Notification delivery rows (the outbox) by channel and status',
      labelNames: ['channel', 'status'] as const,
      registers: [registry],
      async collect() {
        const rows = await safeRows<{ channel: string; status: string; n: number }>(
          sql`select channel, status, count(*)::int as n from notification_deliveries group by channel, status`,
        );
        if (!rows) return;
        this.reset();
        for (const c of OUTBOX_CHANNELS) for (const s of OUTBOX_STATUSES) this.labels(c, s).set(0);
        for (const r of rows) this.labels(r.channel, r.status).set(Number(r.n));
      },
    });

    new Gauge({
      name: `${METRIC_PREFIX}socketio_connections`,
      help: 'Socket.IO connections open on this instance',
      registers: [registry],
      collect() {
        // The realtime plugin is registered after this one; read it at scrape time.
        const io = (app as { io?: { engine?: { clientsCount: number } } }).io;
        this.set(io?.engine?.clientsCount ?? 0);
      },
    });

    new Gauge({
      name: `${METRIC_PREFIX}db_pool_max_connections`,
      help: 'Size of this instance’s database connection pool',
      registers: [registry],
      collect() {
        this.set(app.dbh.poolMax);
      },
    });
    {
      // postgres-js keeps its pool counters private; PostgreSQL knows this instance's
      // connections by their application_name (unique per instance, see plugins/db.ts).
      // Declared on PGlite too (no samples there), so dashboards name one set of families.
      new Gauge({
        name: `${METRIC_PREFIX}db_pool_connections`,
        help: 'This instance’s open PostgreSQL connections by state (active includes the scrape’s own query)',
        labelNames: ['state'] as const,
        registers: [registry],
        async collect() {
          if (app.dbh.kind !== 'postgres') return;
          const rows = await safeRows<{ active: number; idle: number }>(sql`
            select count(*) filter (where state = 'active')::int as active,
                   count(*) filter (where state is distinct from 'active')::int as idle
            from pg_stat_activity where application_name = current_setting('application_name')`);
          if (!rows?.[0]) return;
          this.labels('active').set(Number(rows[0].active));
          this.labels('idle').set(Number(rows[0].idle));
        },
      });
    }

    /** A scrape never fails because one query did: that metric keeps its last value. */
    async function safeRows<T>(query: ReturnType<typeof sql>): Promise<T[] | undefined> {
      try {
        return await app.dbh.rows<T>(query);
      } catch (err) {
        app.log.warn({ err }, 'metrics: a scrape-time query failed');
        return undefined;
      }
    }

    const server: Server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: metrics are at GET /metrics\n');
        return;
      }
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
        (err: unknown) => {
          app.log.error({ err }, 'metrics: scrape failed');
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics collection failed\n');
        },
      );
    });
    let resolvePort!: (port: number) => void;
    let rejectPort!: (err: Error) => void;
    const listeningPort = new Promise<number>((resolve, reject) => {
      resolvePort = resolve;
      rejectPort = reject;
    });
    listeningPort.catch(() => {}); // observed by listening() callers only

    // Bound when the API listens (buildApp itself never listens). A port in use
    // is logged and the API keeps serving: metrics are not worth an outage.
    app.addHook('onListen', (done) => {
      server.once('error', (err) => {
        app.log.error({ err }, `metrics: cannot listen on ${config.HOST}:${config.METRICS_PORT}`);
        rejectPort(err);
      });
      server.listen(config.METRICS_PORT, config.HOST, () => {
        const port = (server.address() as AddressInfo).port;
        app.log.info({ port }, `metrics at http://${config.HOST}:${port}/metrics`);
        resolvePort(port);
      });
      done();
    });
    app.addHook('onClose', async () => {
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    app.decorate('metrics', {
      registry,
      jobFinished: (outcome: FinishedJob) => {
        const skipped = outcome.skipped ?? 0;
        jobRuns.labels(outcome.name, !outcome.ok ? 'failure' : skipped > 0 ? 'degraded' : 'success').inc();
        if (skipped > 0) jobSkipped.labels(outcome.name).inc(skipped);
        const seconds = (Date.parse(outcome.finishedAt) - Date.parse(outcome.startedAt)) / 1000;
        if (Number.isFinite(seconds)) jobDuration.labels(outcome.name).observe(Math.max(0, seconds));
      },
      listening: () => listeningPort,
    } satisfies Metrics);
  },
  { name: 'metrics', fastify: '5.x', dependencies: ['context', 'db'] },
);
