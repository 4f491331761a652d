import { createHmac } from 'node:crypto';
import { AppError } from '../errors.js';
import { safeEqual } from './hash.js';

/**
 * Opaque, tamper-evident pagination cursors: base64url(JSON) + '.' + HMAC.
 * A cursor not issued by this service, or altered, is 400 INVALID_CURSOR.
 * `scope` binds a cursor to one listing (e.g. 'leaderboard') so one cannot be
 * replayed against another.
 */
export function encodeCursor(secret: string, scope: string, value: unknown): string {
  const payload = Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${payload}.${sign(secret, scope, payload)}`;
}

export function decodeCursor<T>(secret: string, scope: string, cursor: string): T {
  const invalid = () => new AppError(400, 'INVALID_CURSOR', 'The cursor was not issued by this service or was altered');
  const dot = cursor.indexOf('.');
  if (dot <= 0 || cursor.length > 2048) throw invalid();
  const payload = cursor.slice(0, dot);
  const mac = Buffer.from(cursor.slice(dot + 1), 'base64url');
  if (!safeEqual(mac, Buffer.from(sign(secret, scope, payload), 'base64url'))) throw invalid();
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as T;
  } catch {
    throw invalid();
  }
}

function sign(secret: string, scope: string, payload: string): string {
  return createHmac('sha256', secret).update(`cursor:${scope}:`).update(payload).digest('base64url');
}
