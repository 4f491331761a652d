import type { FakeServer } from '../server.js';

/**
 * Polymarket Gamma trader lookup (docs/venues.md §8 C1, C2) on a Gamma fake's server:
 * - `GET /public-search?q=Q&search_profiles=true&limit_per_type=N` →
 *   `{ events, tags, profiles, pagination: { hasMore, totalResults } }`;
 *   `q` required (422 otherwise); profiles are those whose `name` or
 *   `pseudonym` contains `q` (case-insensitive), at most `limit_per_type`
 *   per page (`page` 1-based), and, as live, the list holds JSON `null`
 *   entries (one after every `nullEvery` profiles); profiles carry
 *   `proxyWallet`, never `address`; without `search_profiles=true` no
 *   profiles are listed.
 * - `GET /public-profile?address=A` (`^0x[a-fA-F0-9]{40}$`, else 422): the
 *   profile of an account wallet or of a signer address (EOA) registered
 *   with `addEoa`, answered with the account's `proxyWallet`; unknown → 404.
 */
export interface GammaProfile {
  proxyWallet: string;
  name: string;
  pseudonym?: string;
  displayUsernamePublic?: boolean;
  profileImage?: string;
  bio?: string;
  xUsername?: string;
  verifiedBadge?: boolean;
}

export interface FakeGammaProfiles {
  add(profile: GammaProfile): void;
  /** `eoa` (a signer address) belongs to the account `proxyWallet`. */
  addEoa(eoa: string, proxyWallet: string): void;
  clear(): void;
  /** Insert a `null` after every n profiles of a search answer (default 2). */
  nullEvery: number;
}

export function serveGammaProfiles(server: FakeServer): FakeGammaProfiles {
  const profiles: GammaProfile[] = [];
  const eoas = new Map<string, string>();
  const state: FakeGammaProfiles = {
    nullEvery: 2,
    add(p) {
      profiles.push({ displayUsernamePublic: true, ...p, proxyWallet: p.proxyWallet.toLowerCase() });
    },
    addEoa(eoa, proxyWallet) {
      eoas.set(eoa.toLowerCase(), proxyWallet.toLowerCase());
    },
    clear() {
      profiles.length = 0;
      eoas.clear();
    },
  };
  const invalid = (error: string) => ({ status: 422, body: { type: 'validation error', error } });

  server.on('GET', '/public-search', (req) => {
    const q = req.query.get('q');
    if (!q) return invalid('q is required');
    const limit = Number(req.query.get('limit_per_type') ?? 5);
    const page = Number(req.query.get('page') ?? 1);
    if (!Number.isInteger(limit) || limit < 1 || !Number.isInteger(page) || page < 1) return invalid('bad paging');
    const needle = q.toLowerCase();
    const found =
      req.query.get('search_profiles') === 'true'
        ? profiles.filter((p) => p.name.toLowerCase().includes(needle) || (p.pseudonym ?? '').toLowerCase().includes(needle))
        : [];
    const slice = found.slice((page - 1) * limit, page * limit).map(({ verifiedBadge: _v, xUsername: _x, ...p }) => p);
    const withNulls: Array<Record<string, unknown> | null> = [];
    slice.forEach((p, i) => {
      withNulls.push(p);
      if (state.nullEvery > 0 && (i + 1) % state.nullEvery === 0) withNulls.push(null);
    });
    return {
      body: {
        events: [],
        tags: [],
        profiles: withNulls,
        pagination: { hasMore: found.length > page * limit, totalResults: found.length },
      },
    };
  });

  server.on('GET', '/public-profile', (req) => {
    const address = req.query.get('address');
    if (!address || !/^0x[a-fA-F0-9]{40}$/.test(address)) return invalid('address must match ^0x[a-fA-F0-9]{40}$');
    const a = address.toLowerCase();
    const wallet = eoas.get(a) ?? a;
    const p = profiles.find((x) => x.proxyWallet === wallet);
    if (!p) return { status: 404, body: { type: 'not found error', error: 'profile not found' } };
    return {
      body: {
        $schema: 'https://gamma-api.polymarket.com/schemas/PublicProfileResponse.json',
        createdAt: '2025-10-13T19:31:36.489292Z',
        proxyWallet: p.proxyWallet,
        ...(p.profileImage ? { profileImage: p.profileImage } : {}),
        displayUsernamePublic: p.displayUsernamePublic ?? true,
        ...(p.bio ? { bio: p.bio } : {}),
        ...(p.pseudonym ? { pseudonym: p.pseudonym } : {}),
        name: p.name,
        users: [{ id: '3553565', creator: false, mod: false, communityMod: false }],
        ...(p.xUsername ? { xUsername: p.xUsername } : {}),
        verifiedBadge: p.verifiedBadge ?? false,
        takerTier: 2,
        takerTierName: 'Silver',
        weightedVolume: 89074.462449,
      },
    };
  });
  return state;
}
