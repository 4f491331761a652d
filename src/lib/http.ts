import { channel } from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The small HTTP client every external adapter uses (venues, IdP, Expo,
 * Telegram): a per-attempt timeout, retries with exponential backoff and
 * jitter on network errors, 429 and 5xx (honouring Retry-After), and typed
 * errors that never carry the response body into logs or API answers.
 * Venue adapters add a shared rate limiter (awaited before every attempt)
 * and a throttle-body check (docs/venues.md "What we call": the Data API may
 * throttle with a 2xx whose JSON is an object with `error`).
 */
export class UpstreamError extends Error {
  /**
   * Only the origin of the URL that failed: paths and queries can carry
   * credentials (Telegram's /bot<token>/…), and errors end up in logs.
   */
  public readonly origin: string;
  constructor(
    message: string,
    /** HTTP status, or undefined for network errors and timeouts. */
    public readonly status: number | undefined,
    url: string,
    /** The upstream's parsed JSON body on HTTP errors, for adapters that read error codes. */
    public readonly body?: unknown,
    /** True when the upstream throttled us (429, or a 2xx throttle body), after all attempts. */
    public readonly throttled = false,
  ) {
    super(message);
    this.name = 'UpstreamError';
    let origin = 'upstream';
    try {
      origin = new URL(url).origin;
    } catch {
      /* not a URL */
    }
    this.origin = origin;
  }
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  /** JSON body. */
  json?: unknown;
  /** Milliseconds per attempt. */
  timeoutMs?: number;
  /** Attempts in all (1 = no retry). */
  attempts?: number;
  /** First backoff in ms; doubles each retry, with jitter, capped at maxBackoffMs. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** Statuses that are retried besides 429 and 5xx. */
  retryOn?: number[];
  fetchImpl?: typeof fetch;
  /** Awaited before every attempt, retries included: the shared budget of one venue API. */
  limiter?: RateLimiter;
  /**
   * Recognises a throttle sent as a successful answer (the Data API's HTTP 200
   * `{"error":"Too Many Requests"}`): such a body is retried like a 429, never returned.
   */
  isThrottleBody?: (body: unknown) => boolean;
  /** Names the upstream API in metrics; by default the metrics plugin names it from the configured base URLs. */
  api?: string;
  /**
   * Cancels the request, its limiter wait and its backoff (a job's run at shutdown,
   * docs/decisions.md §9): requestJson then rejects with the signal's reason, never retries.
   */
  signal?: AbortSignal;
}

/** Grants permission for one request; resolves when the caller may send it. */
export interface RateLimiter {
  acquire(): Promise<void>;
}

/** One HTTP attempt of requestJson, as published on {@link upstreamChannel}. */
export interface UpstreamAttempt {
  url: string;
  api: string | undefined;
  /** The HTTP status, or 'timeout' / 'network' when no response arrived. */
  status: number | 'timeout' | 'network';
  seconds: number;
}

/**
 * Every attempt is published here for whoever subscribes (the metrics
 * plugin, docs/decisions.md §15.1). Nothing is built while nobody listens.
 */
export const upstreamChannel = channel('predict-backend:upstream');

const DEFAULTS = { timeoutMs: 10_000, attempts: 3, backoffMs: 300, maxBackoffMs: 5_000 };

function retryAfterMs(h: string | null): number | undefined {
  if (!h) return undefined;
  const s = Number(h);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  const d = Date.parse(h);
  return Number.isFinite(d) ? Math.max(0, d - Date.now()) : undefined;
}

/** Requests `url` and returns the parsed JSON body; throws UpstreamError otherwise. */
export async function requestJson<T = unknown>(url: string, opts: RequestOptions = {}): Promise<T> {
  const o = { ...DEFAULTS, ...opts };
  const doFetch = o.fetchImpl ?? fetch;
  const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
  let body: string | undefined;
  if (o.json !== undefined) {
    body = JSON.stringify(o.json);
    headers['content-type'] ??= 'application/json';
  }
  let lastError: UpstreamError | undefined;
  for (let attempt = 1; attempt <= o.attempts; attempt++) {
    let wait: number | undefined;
    o.signal?.throwIfAborted();
    if (o.limiter) await abortable(o.limiter.acquire(), o.signal);
    const t0 = performance.now();
    try {
      const timeout = AbortSignal.timeout(o.timeoutMs);
      const signal = o.signal ? AbortSignal.any([o.signal, timeout]) : timeout;
      const res = await doFetch(url, { method: o.method ?? 'GET', headers, body, signal });
      const text = await res.text();
      if (upstreamChannel.hasSubscribers) {
        upstreamChannel.publish({
          url,
          api: o.api,
          status: res.status,
          seconds: (performance.now() - t0) / 1000,
        } satisfies UpstreamAttempt);
      }
      if (res.ok) {
        let parsed: unknown;
        try {
          parsed = text.length ? JSON.parse(text) : null;
        } catch {
          throw new UpstreamError(`${hostOf(url)} answered ${res.status} with a body that is not JSON`, res.status, url);
        }
        if (!o.isThrottleBody?.(parsed)) return parsed as T;
        lastError = new UpstreamError(
          `${hostOf(url)} throttled the request (${res.status} with an error body)`,
          res.status,
          url,
          parsed,
          true,
        );
      } else {
        let parsed: unknown;
        try {
          parsed = text.length ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        lastError = new UpstreamError(`${hostOf(url)} answered ${res.status}`, res.status, url, parsed, res.status === 429);
        const retryable = res.status === 429 || res.status >= 500 || (o.retryOn ?? []).includes(res.status);
        if (!retryable) throw lastError;
        wait = retryAfterMs(res.headers.get('retry-after'));
      }
    } catch (err) {
      if (o.signal?.aborted) throw abortReason(o.signal);
      if (err instanceof UpstreamError) {
        if (err !== lastError || !isRetryable(err, o.retryOn)) throw err;
      } else {
        const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError';
        if (upstreamChannel.hasSubscribers) {
          const status = timedOut ? 'timeout' : 'network';
          upstreamChannel.publish({ url, api: o.api, status, seconds: (performance.now() - t0) / 1000 } satisfies UpstreamAttempt);
        }
        lastError = new UpstreamError(
          timedOut ? `${hostOf(url)} did not answer within ${o.timeoutMs} ms` : `${hostOf(url)} is unreachable`,
          undefined,
          url,
        );
      }
    }
    if (attempt < o.attempts) {
      const backoff = Math.min(o.maxBackoffMs, o.backoffMs * 2 ** (attempt - 1));
      await sleep(Math.min(o.maxBackoffMs, wait ?? backoff * (0.5 + Math.random() / 2)), undefined, { signal: o.signal }).catch((err) => {
        throw o.signal?.aborted ? abortReason(o.signal) : err;
      });
    }
  }
  throw lastError!;
}

/** The error an aborted signal carries (its reason when that is an Error). */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('aborted');
}

/** `p`, or the signal's reason as soon as it aborts (the wait is abandoned, not the work behind it). */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

function isRetryable(err: UpstreamError, extra: number[] = []): boolean {
  return err.throttled || err.status === undefined || err.status === 429 || err.status >= 500 || extra.includes(err.status);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'upstream';
  }
}

/** Joins a base URL (no trailing slash) with a path and query parameters. */
export function buildUrl(base: string, path: string, query: Record<string, string | number | boolean | undefined> = {}): string {
  const u = new URL(base + path);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, String(v));
  return u.toString();
}
