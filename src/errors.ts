import { STATUS_CODES } from 'node:http';
import { z } from 'zod';

/** Error codes of docs/decisions.md §2. Public contract: keep the names exactly. */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'INVALID_CURSOR'
  | 'INVALID_BETA_KEY'
  | 'UNAUTHORIZED'
  | 'INVALID_NONCE'
  | 'INVALID_SIGNATURE'
  | 'INVALID_IDP_TOKEN'
  | 'INVALID_REFRESH_TOKEN'
  | 'REFRESH_TOKEN_REUSED'
  | 'SESSION_REVOKED'
  | 'INVALID_MESSAGE'
  | 'ORIGIN_NOT_ALLOWED'
  | 'ACCOUNT_CONFLICT'
  | 'INVALID_WEBHOOK_SECRET'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'ALERT_LIMIT'
  | 'WATCHLIST_FULL'
  | 'FOLLOW_LIMIT'
  | 'CONFLICT'
  | 'JOB_RUNNING'
  | 'DELIVERY_NOT_FAILED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'UNAVAILABLE'
  | 'INTERNAL_ERROR';

export interface FieldError {
  path: string;
  message: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  errors?: FieldError[];
}

/** The one typed error services throw. Rendered as problem+json by the error handler. */
export class AppError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: ErrorCode,
    detail?: string,
    public readonly extra: { errors?: FieldError[]; headers?: Record<string, string | number> } = {},
  ) {
    super(detail ?? STATUS_CODES[status] ?? 'Error');
    this.name = 'AppError';
  }

  /** Fastify and its plugins read `statusCode`. */
  get statusCode(): number {
    return this.status;
  }
}

export const notFound = (what = 'Resource') => new AppError(404, 'NOT_FOUND', `${what} not found`);
export const unauthorized = (detail = 'A valid bearer access token is required') => new AppError(401, 'UNAUTHORIZED', detail);
export const unavailable = (detail = 'A required service is unavailable, try again shortly', retryAfter = 5) =>
  new AppError(503, 'UNAVAILABLE', detail, { headers: { 'retry-after': retryAfter } });
export const validationError = (errors: FieldError[], detail = 'The request is not valid') =>
  new AppError(400, 'VALIDATION_ERROR', detail, { errors });

export function problem(status: number, code: string, detail?: string, errors?: FieldError[]): Problem {
  const p: Problem = { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, code };
  if (detail !== undefined) p.detail = detail;
  if (errors && errors.length) p.errors = errors;
  return p;
}

/** Zod schema of the problem body, used in every route's response map (OpenAPI + serialisation). */
export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    code: z.string(),
    detail: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details (application/problem+json)' });

/** Response entries for the error statuses a route can send; spread into `schema.response`. */
export function problemResponses(...statuses: number[]) {
  const out: Record<number, typeof ProblemSchema> = {};
  for (const s of statuses) out[s] = ProblemSchema;
  return out;
}

/**
 * Whether err or any error in its `cause` chain (drivers and Drizzle wrap
 * the database's error) satisfies test. Cycles are not followed twice.
 */
export function someCause(err: unknown, test: (e: { code?: unknown; message?: unknown }) => boolean): boolean {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (test(e)) return true;
  }
  return false;
}
