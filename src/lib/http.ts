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
    /** The upstream's `Retry-After` in ms when it was longer than we wait (the call gave up at once). */
    public readonly retryAfterMs?: number,
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
   * The API's Retry-After state, shared by every request to it (docs/venues.md
   * "What we call"): a 429 or 5xx with `Retry-After` holds every request until
   * it elapses, waited in full when it is at most `maxWaitMs`; a longer one
   * fails the request at once, and so does any request sent before it elapses.
   * Without a gate, `Retry-After` only sets the next backoff (capped at maxBackoffMs).
   */
  retryAfter?: RetryAfterGate;
  /**
   * Cancels the request, its limiter wait and its backoff (a job's run at shutdown,
   * docs/decisions.md §9): requestJson then rejects with the signal's reason, never retries.
   */
  signal?: AbortSignal;
}

/** One API's "no request before" instant, set from the venue's `Retry-After`. */
export interface RetryAfterGate {
  /** The longest wait honoured within a request (docs/venues.md: 10 s); longer gives the call up. */
  readonly maxWaitMs: number;
  /** Epoch ms before which nothing is sent to the API (0: no hold). */
  until: number;
}

/** docs/venues.md "What we call": a run waits a Retry-After of at most 10 s, else it ends failed for that venue. */
export const RETRY_AFTER_MAX_WAIT_MS = 10_000;

export function createRetryAfterGate(maxWaitMs = RETRY_AFTER_MAX_WAIT_MS): RetryAfterGate {
  return { maxWaitMs, until: 0 };
}

function heldTooLong(url: string, gate: RetryAfterGate, ms: number, body?: unknown): UpstreamError {
  return new UpstreamError(
    `${hostOf(url)} asked to wait ${Math.ceil(ms / 1000)} s (Retry-After), longer than ${gate.maxWaitMs / 1000} s: try again after it`,
    429,
    url,
    body,
    true,
    ms,
  );
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
    const gate = o.retryAfter;
    if (gate) {
      const held = gate.until - Date.now();
      if (held > gate.maxWaitMs) throw heldTooLong(url, gate, held, lastError?.body);
      if (held > 0) await sleepOrAbort(held, o.signal);
    }
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
        if (gate && wait !== undefined) {
          // The venue's own figure, never cut short: no request to this API before it elapses.
          gate.until = Math.max(gate.until, Date.now() + wait);
          if (wait > gate.maxWaitMs) throw heldTooLong(url, gate, wait, parsed);
        }
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
      // With a gate, a Retry-After is waited in full by the gate check above.
      const pause = gate && wait !== undefined ? 0 : Math.min(o.maxBackoffMs, wait ?? backoff * (0.5 + Math.random() / 2));
      if (pause > 0) await sleepOrAbort(pause, o.signal);
    }
  }
  throw lastError!;
}

function sleepOrAbort(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return sleep(ms, undefined, { signal }).catch((err: unknown) => {
    throw signal?.aborted ? abortReason(signal) : err;
  });
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
