import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP server for fakes of external services. Routes are matched
 * on method and pathname (`:param` segments allowed); every request is
 * recorded with its arrival time (so tests can check request budgets);
 * `failNext(n, status)` makes the next n requests fail to exercise retries
 * and outages; `intercept(fn)` lets a fake answer before its routes (rate
 * limits, throttles).
 */
export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
  rawBody: string;
  params: Record<string, string>;
  /** Arrival time, `performance.now()` milliseconds. */
  at: number;
}

export type FakeHandler = (
  req: FakeRequest,
) =>
  | { status?: number; body?: unknown; headers?: Record<string, string>; raw?: string }
  | Promise<{ status?: number; body?: unknown; headers?: Record<string, string>; raw?: string }>;

export type FakeAnswer = { status?: number; body?: unknown; headers?: Record<string, string>; raw?: string };

export interface FakeServer {
  url: string;
  requests: FakeRequest[];
  on(method: string, path: string, handler: FakeHandler): void;
  /** Runs before the routes (after outages and scripted failures); an answer ends the request there. */
  intercept(fn: ((req: FakeRequest) => FakeAnswer | undefined | Promise<FakeAnswer | undefined>) | undefined): void;
  failNext(count: number, status?: number, body?: unknown): void;
  /**
   * The next request answers `status` (429 or 503) with `Retry-After: seconds`;
   * until that has elapsed every request is refused the same way (with the
   * seconds left) and also recorded in `early`: a client that honours the
   * venue's Retry-After sends none (docs/venues.md "What we call").
   */
  retryAfter(seconds: number, status?: number): void;
  /** Requests that arrived while a Retry-After was still running. */
  early: FakeRequest[];
  /** Every request answers `status` until cleared with down(false). */
  down(on: boolean, status?: number): void;
  reset(): void;
  close(): Promise<void>;
}

export async function startFakeServer(): Promise<FakeServer> {
  const routes: Array<{ method: string; parts: string[]; handler: FakeHandler }> = [];
  const requests: FakeRequest[] = [];
  let failures: Array<{ status: number; body: unknown }> = [];
  let outage: number | undefined;
  let interceptor: ((req: FakeRequest) => FakeAnswer | undefined | Promise<FakeAnswer | undefined>) | undefined;
  const early: FakeRequest[] = [];
  let retryArmed: { seconds: number; status: number } | undefined;
  let retryHold: { until: number; status: number } | undefined;

  const match = (parts: string[], path: string): Record<string, string> | undefined => {
    const segs = path.split('/');
    if (segs.length !== parts.length) return undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++) {
      if (parts[i].startsWith(':')) params[parts[i].slice(1)] = decodeURIComponent(segs[i]);
      else if (parts[i] !== segs[i]) return undefined;
    }
    return params;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const at = performance.now();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBody = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      body = undefined;
    }
    const u = new URL(req.url ?? '/', 'http://fake');
    const rec: FakeRequest = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      body,
      rawBody,
      params: {},
      at,
    };
    requests.push(rec);
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}, raw?: string) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(raw ?? (payload === undefined ? '' : JSON.stringify(payload)));
    };
    if (outage !== undefined) return send(outage, { error: 'unavailable' });
    if (retryHold && at < retryHold.until) {
      early.push(rec);
      const left = String(Math.ceil((retryHold.until - at) / 1000));
      return send(retryHold.status, { error: 'too many requests' }, { 'retry-after': left });
    }
    if (retryArmed) {
      const { seconds, status } = retryArmed;
      retryArmed = undefined;
      retryHold = { until: at + seconds * 1000, status };
      return send(status, { error: 'too many requests' }, { 'retry-after': String(seconds) });
    }
    const f = failures.shift();
    if (f) return send(f.status, f.body);
    if (interceptor) {
      const out = await interceptor(rec);
      if (out) return send(out.status ?? 200, out.body, out.headers, out.raw);
    }
    for (const r of routes) {
      if (r.method !== rec.method) continue;
      const params = match(r.parts, rec.path);
      if (!params) continue;
      rec.params = params;
      try {
        const out = await r.handler(rec);
        return send(out.status ?? 200, out.body, out.headers, out.raw);
      } catch (err) {
        return send(500, { error: String(err) });
      }
    }
    send(404, { error: 'not found' });
  };
  const server: Server = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    on(method, path, handler) {
      routes.unshift({ method: method.toUpperCase(), parts: path.split('/'), handler });
    },
    intercept(fn) {
      interceptor = fn;
    },
    early,
    retryAfter(seconds, status = 429) {
      retryArmed = { seconds, status };
    },
    failNext(count, status = 500, body = { error: 'internal error' }) {
      for (let i = 0; i < count; i++) failures.push({ status, body });
    },
    down(on, status = 503) {
      outage = on ? status : undefined;
    },
    reset() {
      requests.length = 0;
      early.length = 0;
      failures = [];
      outage = undefined;
      retryArmed = undefined;
      retryHold = undefined;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
