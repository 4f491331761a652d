import type { Config } from '../config.js';
import { buildUrl, createRetryAfterGate, requestJson, type RequestOptions } from '../lib/http.js';
import { createLaneLimiter, type LaneLimiter } from '../lib/lane-limiter.js';
import { APP_NAME, APP_VERSION } from '../lib/version.js';

/**
 * One HTTP client per venue API (Gamma, CLOB, Kalshi, Data), created once per
 * process (`createVenueClients(config)` in app.ts) and handed to every job and
 * on-demand path as a dependency, so they all share one rate limiter per API
 * (docs/venues.md "What we call": budgets, backoff, `User-Agent`).
 *
 * A `VenueClient` has the `{ baseUrl, http }` shape every adapter of
 * src/venues/ takes, so the older adapters (GammaOptions, KalshiOptions,
 * DataApi) accept one unchanged and go through the shared limiter too.
 */
export type VenueApi = 'gamma' | 'clob' | 'kalshi' | 'data';

/**
 * docs/venues.md "What we call": our budget per venue API, requests per second.
 * Data's 4 req/s is the whole Data API budget of the process: leaderboard,
 * enrichment, profiles on demand, followed traders and big trades all take
 * their turns from `clients.data.limiter`.
 */
export const VENUE_BUDGETS: Readonly<Record<VenueApi, number>> = { gamma: 5, clob: 5, kalshi: 5, data: 4 };

/**
 * Per-attempt timeouts: Gamma keyset pages reach ≈ 13 MB and Kalshi's
 * un-paged `GET /series` ≈ 19 MB (docs/venues.md §3, §5d).
 */
const TIMEOUT_MS: Readonly<Record<VenueApi, number>> = { gamma: 30_000, clob: 10_000, kalshi: 30_000, data: 10_000 };

export interface VenueClient {
  api: VenueApi;
  baseUrl: string;
  /** Options every request of this API uses: limiter, timeouts, retries, headers. */
  http: RequestOptions;
  /** The API's one limiter; `limiter.lane(name, share)` gives a caller a priority share of it (lane-limiter.ts). */
  limiter: LaneLimiter;
}

export type VenueClients = Readonly<Record<VenueApi, VenueClient>>;

export interface VenueClientOptions {
  /** Requests per second per API (tests raise them to run fast); defaults to VENUE_BUDGETS. */
  budgets?: Partial<Record<VenueApi, number>>;
  userAgent?: string;
  /** Attempts per request (default 4: the first and three retries). */
  attempts?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  timeoutMs?: Partial<Record<VenueApi, number>>;
  /** The longest `Retry-After` a request waits (default 10 s, docs/venues.md "What we call"); longer fails the call. */
  retryAfterMaxWaitMs?: number;
  fetchImpl?: typeof fetch;
  now?: () => number;
  sleep?: (ms: number) => Promise<unknown>;
}

/** docs/venues.md §0: the Data API's throttle is an HTTP 2xx whose JSON is an object with `error`. */
export function isDataApiThrottle(body: unknown): boolean {
  return body !== null && typeof body === 'object' && !Array.isArray(body) && 'error' in body;
}

export const DEFAULT_USER_AGENT = `${APP_NAME}/${APP_VERSION}`;

type VenueUrls = Pick<Config, 'POLYMARKET_GAMMA_API_URL' | 'POLYMARKET_CLOB_API_URL' | 'KALSHI_API_URL' | 'POLYMARKET_DATA_API_URL'>;

export function createVenueClients(config: VenueUrls, opts: VenueClientOptions = {}): VenueClients {
  const base: Record<VenueApi, string> = {
    gamma: config.POLYMARKET_GAMMA_API_URL,
    clob: config.POLYMARKET_CLOB_API_URL,
    kalshi: config.KALSHI_API_URL,
    data: config.POLYMARKET_DATA_API_URL,
  };
  const make = (api: VenueApi): VenueClient => {
    const rate = opts.budgets?.[api] ?? VENUE_BUDGETS[api];
    // A burst of half the rate leaves room for requests that reach the venue
    // a little later than they were granted (queueing, network), so the
    // venue never sees more than r × w + r in a window.
    const limiter = createLaneLimiter({ ratePerSec: rate, capacity: Math.max(1, Math.floor(rate / 2)), now: opts.now, sleep: opts.sleep });
    return {
      api,
      baseUrl: base[api].replace(/\/+$/, ''),
      limiter,
      http: {
        headers: { 'user-agent': opts.userAgent ?? DEFAULT_USER_AGENT },
        timeoutMs: opts.timeoutMs?.[api] ?? TIMEOUT_MS[api],
        attempts: opts.attempts ?? 4,
        backoffMs: opts.backoffMs ?? 500,
        maxBackoffMs: opts.maxBackoffMs ?? 8_000,
        fetchImpl: opts.fetchImpl,
        limiter,
        // One per API, like the limiter: a venue's Retry-After holds every caller of that API.
        retryAfter: createRetryAfterGate(opts.retryAfterMaxWaitMs),
        isThrottleBody: api === 'data' ? isDataApiThrottle : undefined,
      },
    };
  };
  return { gamma: make('gamma'), clob: make('clob'), kalshi: make('kalshi'), data: make('data') };
}

/**
 * `client` with its requests taken from the priority lane `name` of its
 * limiter: at most `share` of the API's budget, served before the other
 * callers (docs/venues.md "What we call": the follow poller's half of Data's
 * budget). The lane is created once per limiter and name.
 */
export function withPriorityShare(client: VenueClient, name: string, share: number): VenueClient {
  return { ...client, http: { ...client.http, limiter: client.limiter.lane(name, share) } };
}

/**
 * The same clients (same limiters, so the same budgets) with `signal` on every
 * request: a job's venue calls are cancelled when its run is aborted
 * (docs/decisions.md §9, shutdown).
 */
export function withSignal(clients: VenueClients, signal: AbortSignal): VenueClients {
  const bind = (c: VenueClient): VenueClient => ({ ...c, http: { ...c.http, signal } });
  return { gamma: bind(clients.gamma), clob: bind(clients.clob), kalshi: bind(clients.kalshi), data: bind(clients.data) };
}

/** GET `path` with `query` through the client's limiter and retry policy. */
export function venueGet(
  client: Pick<VenueClient, 'baseUrl' | 'http'>,
  path: string,
  query: Record<string, string | number | boolean | undefined> = {},
) {
  return requestJson<unknown>(buildUrl(client.baseUrl, path, query), client.http);
}
