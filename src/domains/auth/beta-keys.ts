import type { DbHandle } from '../../db/index.js';
import { insertBetaKeys } from './queries.js';
import { generateBetaKey, hashToken } from './service.js';

/**
 * Mints `count` beta keys, each redeemable `uses` times, in one insert; only
 * their SHA-256 is stored, so the returned list is the only time they exist
 * in clear. Shared by `npm run beta-keys` and POST /api/v1/internal/beta-keys.
 */
export async function createBetaKeys(dbh: DbHandle, opts: { count: number; uses: number }): Promise<string[]> {
  const keys = Array.from({ length: opts.count }, generateBetaKey);
  await insertBetaKeys(dbh, keys.map(hashToken), opts.uses);
  return keys;
}
