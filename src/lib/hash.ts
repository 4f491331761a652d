import { createHash, timingSafeEqual } from 'node:crypto';

/** SHA-256 as lowercase hex: how secrets we only compare (refresh tokens, keys, link codes) are stored. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * Constant-time equality of two secrets of any length: both sides are hashed
 * first, so neither their length nor their content leaks through timing.
 */
export function safeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
