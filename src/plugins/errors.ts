import fp from 'fastify-plugin';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, problem, someCause, type FieldError, type Problem } from '../errors.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

export function sendProblem(reply: FastifyReply, body: Problem, headers: Record<string, string | number> = {}) {
  for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  // Sent as a string: route response schemas must not reshape an error body.
  return reply
    .code(body.status)
    .type(PROBLEM_CONTENT_TYPE)
    .serializer((p: unknown) => JSON.stringify(p))
    .send(body);
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'NOT_TAGGED_CALL',
]);

/** Connection-level failures of PostgreSQL or Redis: the request gets 503, not 500. */
export function isUnavailableError(err: unknown): boolean {
  return someCause(err, ({ code, message }) => {
    if (typeof code === 'string') {
      if (CONNECTION_ERROR_CODES.has(code)) return true;
      // SQLSTATE class 08 (connection exception), 57P01-57P03 (admin shutdown, crash, cannot connect now), 53300 (too many connections)
      if (/^08/.test(code) || /^57P0[1-3]$/.test(code) || code === '53300') return true;
    }
    return typeof message === 'string' && /Connection is closed|Stream isn't writeable|enableOfflineQueue/.test(message);
  });
}

/**
 * SQLSTATE class 22 (data exception: invalid text representation, NUL in
 * text, numeric out of range, …) can only come from input the schemas let
 * through; it is the client's request that is wrong, so 400, never 500.
 */
/**
 * A foreign-key violation against `users` (23503, "… is not present in table "users""): a
 * write on behalf of a user that no longer exists, whose signed token is still valid.
 */
export function isMissingUser(err: unknown): boolean {
  return someCause(err, (e) => {
    if (e.code !== '23503') return false;
    const x = e as { detail?: unknown; table_name?: unknown; message?: unknown };
    const text = `${typeof x.detail === 'string' ? x.detail : ''} ${typeof x.message === 'string' ? x.message : ''}`;
    return /table "users"/.test(text);
  });
}

export function isDataException(err: unknown): boolean {
  return someCause(err, ({ code }) => typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code));
}

function hasNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (!value || typeof value !== 'object' || depth > 64) return false;
  const obj = value as Record<string, unknown>;
  for (const k in obj) if (k.includes('\u0000') || hasNul(obj[k], depth + 1)) return true;
  return false;
}

function zodErrors(err: {
  validation: Array<{ instancePath?: string; message?: string; params?: unknown }>;
  validationContext?: string;
}): FieldError[] {
  return err.validation.map((v) => {
    const path = (v.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    return { path: path || err.validationContext || 'body', message: v.message ?? 'Invalid value' };
  });
}

function fastifyClientError(err: FastifyError): { status: number; code: string; detail: string } | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'PAYLOAD_TOO_LARGE', detail: 'The request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', detail: 'Send the body as application/json' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'VALIDATION_ERROR', detail: 'The JSON body is empty' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, code: 'VALIDATION_ERROR', detail: 'The body is not valid JSON' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, code: 'VALIDATION_ERROR', detail: 'Content-Length does not match the body' };
    default:
      break;
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
    return { status: 400, code: 'VALIDATION_ERROR', detail: 'The body is not valid JSON' };
  }
  const s = err.statusCode;
  if (typeof s === 'number' && s >= 400 && s < 500) {
    const code =
      s === 404
        ? 'NOT_FOUND'
        : s === 405
          ? 'METHOD_NOT_ALLOWED'
          : s === 413
            ? 'PAYLOAD_TOO_LARGE'
            : s === 415
              ? 'UNSUPPORTED_MEDIA_TYPE'
              : s === 429
                ? 'RATE_LIMITED'
                : s === 401
                  ? 'UNAUTHORIZED'
                  : 'VALIDATION_ERROR';
    return { status: s, code, detail: s === 400 ? 'The request is not valid' : err.message };
  }
  return undefined;
}

/**
 * One place turns every error into RFC 9457 problem+json (docs/decisions.md §2):
 * AppError, Zod validation, Fastify's own client errors, rate-limit errors,
 * database/Redis outages (503); anything else is logged and becomes a 500
 * whose body reveals nothing.
 */
export const errorsPlugin = fp(
  async (app) => {
    app.setErrorHandler((err: FastifyError | AppError | Error, request: FastifyRequest, reply: FastifyReply) => {
      if (err instanceof AppError) {
        if (err.status >= 500) request.log.warn({ err }, 'request failed: %s', err.code);
        return sendProblem(reply, problem(err.status, err.code, err.message, err.extra.errors), err.extra.headers);
      }
      if (hasZodFastifySchemaValidationErrors(err)) {
        const errors = zodErrors(err);
        return sendProblem(
          reply,
          problem(400, 'VALIDATION_ERROR', 'The request is not valid: ' + errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors),
        );
      }
      const fe = err as FastifyError;
      if (fe.validation) {
        const errors = zodErrors(fe as never);
        return sendProblem(reply, problem(400, 'VALIDATION_ERROR', 'The request is not valid', errors));
      }
      if (isResponseSerializationError(err)) {
        request.log.error({ err, issues: err.cause?.issues }, 'response did not match its schema');
        return sendProblem(reply, problem(500, 'INTERNAL_ERROR', 'An unexpected error occurred'));
      }
      const client = fastifyClientError(fe);
      if (client) return sendProblem(reply, problem(client.status, client.code, client.detail));
      if (isMissingUser(err)) {
        // docs/decisions.md §3: a validly signed token whose user was deleted since.
        return sendProblem(reply, problem(401, 'UNAUTHORIZED', 'The user of this access token no longer exists'));
      }
      if (isDataException(err)) {
        request.log.info({ err }, 'database refused a value from the request');
        return sendProblem(reply, problem(400, 'VALIDATION_ERROR', 'The request contains a value that cannot be stored or searched'));
      }
      if (isUnavailableError(err)) {
        request.log.warn({ err }, 'dependency unavailable');
        return sendProblem(reply, problem(503, 'UNAVAILABLE', 'A required service is unavailable, try again shortly'), {
          'retry-after': 5,
        });
      }
      request.log.error({ err }, 'unhandled error');
      return sendProblem(reply, problem(500, 'INTERNAL_ERROR', 'An unexpected error occurred'));
    });

    // PostgreSQL text cannot hold NUL characters: refuse them before any handler runs.
    app.addHook('preValidation', (request, reply, done) => {
      const part = hasNul(request.params) ? 'params' : hasNul(request.query) ? 'querystring' : hasNul(request.body) ? 'body' : undefined;
      if (part === undefined) return done();
      // A reply sent from a hook ends the request; done() is not called then.
      void sendProblem(
        reply,
        problem(400, 'VALIDATION_ERROR', 'The request contains a NUL character', [
          { path: part, message: 'must not contain NUL (\\u0000) characters' },
        ]),
      );
    });

    app.setNotFoundHandler((request, reply) =>
      sendProblem(reply, problem(404, 'NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0].slice(0, 200)}`)),
    );
  },
  { name: 'errors', fastify: '5.x', dependencies: [] },
);
