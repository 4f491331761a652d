/**
 * TypeScript client of the API for the SPA, the mobile app and dashboards
 * (package `@predict-backend/client`, docs/client.md). No server-side imports:
 * fetch, openapi-fetch and socket.io-client only.
 *
 *   const client = createApiClient({ baseUrl, mode: 'cookie', onLoggedOut });
 *   client.session.on('signedOut', () => router.push('/login'));
 *   const user = (await client.session.restore()) ?? (await client.session.signInWithWallet({ address, chain: 'solana', signMessage }));
 *   const events = await unwrap(client.api.GET('/api/v1/events', { params: { query: { limit: 20 } } }));
 */
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';
import { Session, type SessionOptions } from './session.js';
import { Realtime, type RealtimeOptions } from './realtime.js';
import { ApiError } from './errors.js';

export { ApiError } from './errors.js';
export {
  Session,
  type SessionOptions,
  type TokenStorage,
  type SessionUser,
  type Chain,
  type SessionInfo,
  type RefreshLock,
  type AuthEvents,
  type AuthEvent,
} from './session.js';
export {
  Realtime,
  type RealtimeOptions,
  type RealtimeEvents,
  type ClientRaisedEvents,
  type Ack,
  type Channel,
  userChannel,
} from './realtime.js';
export type { paths, components } from './schema.js';

/** The query of `GET /api/v1/events`: `q`, `venue`, `sort`, `category`, `status`, `limit`, `offset`. */
export type EventListQuery = NonNullable<paths['/api/v1/events']['get']['parameters']['query']>;

export function createApiClient(opts: SessionOptions) {
  const session = new Session(opts);
  const api = createClient<paths>({ baseUrl: opts.baseUrl.replace(/\/$/, ''), fetch: session.authorizedFetch });
  return {
    api,
    session,
    /** Finding markets (docs/decisions.md §16): search and sort groups. Throws ApiError on a problem answer. */
    search: (query: EventListQuery = {}) => unwrap(api.GET('/api/v1/events', { params: { query } })),
    /** One market with its group (§16.3). */
    market: (id: string) => unwrap(api.GET('/api/v1/markets/{id}', { params: { path: { id } } })),
    /** The market's YES order book, best level first, `depth` 1–50 (§16.4). */
    book: (id: string, depth?: number) => unwrap(api.GET('/api/v1/markets/{id}/book', { params: { path: { id }, query: { depth } } })),
    /** Opens the live channels with this session's token. */
    realtime: (o: Partial<RealtimeOptions> = {}) => new Realtime(session, { url: opts.baseUrl, ...o }),
  };
}

/** Returns `data` of an openapi-fetch result, or throws the problem+json answer as an ApiError. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  const e = (error ?? {}) as { code?: string; detail?: string; errors?: ApiError['errors'] };
  const retry = Number(response.headers.get('retry-after'));
  throw new ApiError(
    response.status,
    e.code ?? 'HTTP_ERROR',
    e.detail,
    e.errors ?? [],
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}
