import { z } from 'zod';
import { UpstreamError } from '../../lib/http.js';
import { venueGet, type VenueClient } from '../clients.js';
import { httpsUrl } from '../../lib/safe-url.js';

/**
 * Polymarket Gamma trader lookup (docs/venues.md "What we call", §8 C1, C2):
 * `GET /public-search?q=Q&search_profiles=true&limit_per_type=10` (profiles
 * may hold `null` entries; a profile has `proxyWallet`, never `address`) and
 * `GET /public-profile?address=A` (a signer address, EOA, answers with its
 * account wallet; 404 = not a user).
 */
export interface VenueProfile {
  /** The account (proxy) wallet, lower-case. */
  walletAddress: string;
  /** The venue's `name`; '' when it has none. */
  name: string;
  /** null when there is none. */
  avatarUrl: string | null;
  verified: boolean;
}

const optText = z
  .string()
  .nullish()
  .transform((v) => v?.trim() ?? '');

const ProfileSchema = z.object({
  proxyWallet: z.string().regex(/^0x[a-fA-F0-9]{40}$/),
  name: optText,
  profileImage: optText,
  verifiedBadge: z
    .boolean()
    .nullish()
    .transform((v) => v ?? false),
});

function toProfile(p: z.infer<typeof ProfileSchema>): VenueProfile {
  return {
    walletAddress: p.proxyWallet.toLowerCase(),
    name: p.name,
    avatarUrl: httpsUrl(p.profileImage),
    verified: p.verifiedBadge,
  };
}

export const PROFILE_SEARCH_LIMIT = 10;

/** The venue's profiles matching `q`, in the venue's order; `null` entries and malformed profiles are left out. */
export async function searchVenueProfiles(client: Pick<VenueClient, 'baseUrl' | 'http'>, q: string): Promise<VenueProfile[]> {
  const body = await venueGet(client, '/public-search', { q, search_profiles: true, limit_per_type: PROFILE_SEARCH_LIMIT });
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new UpstreamError('Gamma /public-search did not answer an object', 200, client.baseUrl + '/public-search');
  }
  const list = (body as { profiles?: unknown }).profiles;
  if (!Array.isArray(list)) return []; // absent or null: no profiles
  const out: VenueProfile[] = [];
  for (const item of list) {
    const r = ProfileSchema.safeParse(item);
    if (r.success) out.push(toProfile(r.data));
  }
  return out;
}

/** The profile of `address` (an account wallet or a signer address); `null` when the venue knows no such user (404). */
export async function getVenueProfile(client: Pick<VenueClient, 'baseUrl' | 'http'>, address: string): Promise<VenueProfile | null> {
  let body: unknown;
  try {
    body = await venueGet(client, '/public-profile', { address });
  } catch (err) {
    if (err instanceof UpstreamError && err.status === 404) return null;
    throw err;
  }
  const r = ProfileSchema.safeParse(body);
  if (!r.success) throw new UpstreamError('Gamma /public-profile answered a malformed profile', 200, client.baseUrl + '/public-profile');
  return toProfile(r.data);
}
