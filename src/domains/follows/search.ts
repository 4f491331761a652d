import { sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { DbHandle } from '../../db/index.js';
import type { VenueClient } from '../../venues/clients.js';
import { getVenueProfile, searchVenueProfiles, type VenueProfile } from '../../venues/polymarket/gamma-profiles.js';
import type { TraderHit, TraderSearchResult } from './schemas.js';

/**
 * GET /traders/search (docs/decisions.md §18.1, §18.5): our ranked traders
 * first, then the venue's profiles (docs/venues.md "What we call": Gamma
 * `/public-search`, `/public-profile` for a signer address), at most 10.
 */
export const SEARCH_LIMIT = 10;
/** docs/venues.md "What we call": search answers cached 10 minutes per `q`, profiles 24 hours. */
export const SEARCH_TTL_MS = 10 * 60_000;
export const PROFILE_TTL_MS = 24 * 60 * 60_000;
const CACHE_ENTRIES = 2_000;

const ADDRESS = /^0x[0-9a-f]{40}$/;

/** A small TTL cache of venue answers, in-flight lookups shared (one venue call per key at a time). */
export interface VenueLookupCache<T> {
  get(key: string, load: () => Promise<T>): Promise<T>;
}

export function createLookupCache<T>(ttlMs: number, now: () => number = Date.now, max = CACHE_ENTRIES): VenueLookupCache<T> {
  const done = new Map<string, { at: number; value: T }>();
  const inflight = new Map<string, Promise<T>>();
  return {
    get(key, load) {
      const hit = done.get(key);
      if (hit && now() - hit.at < ttlMs) return Promise.resolve(hit.value);
      const pending = inflight.get(key);
      if (pending) return pending;
      const p = load()
        .then((value) => {
          done.delete(key);
          done.set(key, { at: now(), value });
          // Oldest first in a Map: drop the oldest beyond the cap.
          while (done.size > max) done.delete(done.keys().next().value!);
          return value;
        })
        .finally(() => inflight.delete(key));
      inflight.set(key, p);
      return p;
    },
  };
}

export interface SearchState {
  searches: VenueLookupCache<VenueProfile[]>;
  profiles: VenueLookupCache<VenueProfile | null>;
}

export function createSearchState(now?: () => number): SearchState {
  return { searches: createLookupCache(SEARCH_TTL_MS, now), profiles: createLookupCache(PROFILE_TTL_MS, now) };
}

export interface SearchDeps {
  dbh: DbHandle;
  log: FastifyBaseLogger;
  /** The Gamma client (its limiter is the process's). */
  gamma: Pick<VenueClient, 'baseUrl' | 'http'>;
  state: SearchState;
}

interface RankedRow {
  wallet_address: string;
  display_name: string;
  avatar_url: string | null;
  is_kol: boolean;
  rank: number | string | null;
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Traders on any current board whose display name or address starts with
 * `prefix` (case-insensitive), or exactly the wallets `exact`: by their
 * OVERALL / ALL rank (PnL, descending; ties by address), then address.
 */
async function selectRanked(dbh: DbHandle, where: { prefix?: string; exact?: string[] }, limit: number): Promise<TraderHit[]> {
  const conds = [];
  if (where.prefix !== undefined) {
    const p = `${escapeLike(where.prefix)}%`;
    conds.push(sql`e.display_name ilike ${p} escape '\\' or e.wallet_address like lower(${p}) escape '\\'`);
  }
  if (where.exact?.length) conds.push(sql`e.wallet_address in (select jsonb_array_elements_text(${JSON.stringify(where.exact)}::jsonb))`);
  if (conds.length === 0) return [];
  const found = await dbh.rows<RankedRow>(sql`
    with cur as (select category, period, snapshot_id from leaderboard_current),
    overall as (
      select e.wallet_address, row_number() over (order by -e.pnl, e.wallet_address) as rank
      from leaderboard_entries e
      where e.snapshot_id = (select snapshot_id from cur where category = 'OVERALL' and period = 'ALL')
    ),
    hits as (
      select distinct on (e.wallet_address) e.wallet_address, e.display_name, e.avatar_url, e.is_kol
      from leaderboard_entries e join cur c on c.snapshot_id = e.snapshot_id
      where ${sql.join(
        conds.map((c) => sql`(${c})`),
        sql` or `,
      )}
      order by e.wallet_address, (c.category = 'OVERALL' and c.period = 'ALL') desc, c.category, c.period
    )
    select h.wallet_address, h.display_name, h.avatar_url, h.is_kol, o.rank
    from hits h left join overall o on o.wallet_address = h.wallet_address
    order by o.rank asc nulls last, h.wallet_address
    limit ${limit}`);
  return found.map((r) => ({
    walletAddress: r.wallet_address,
    displayName: r.display_name.trim() || r.wallet_address,
    avatarUrl: r.avatar_url || null,
    isKol: r.is_kol,
    rank: r.rank === null ? null : Number(r.rank),
  }));
}

const venueHit = (p: VenueProfile): TraderHit => ({
  walletAddress: p.walletAddress,
  displayName: p.name || p.walletAddress,
  avatarUrl: p.avatarUrl,
  isKol: p.verified,
  rank: null,
});

/**
 * Our matches, then the venue's. A venue failure (or a slow venue) leaves
 * the venue's part out: the answer is then our matches only, never an error.
 * An address `q` is resolved with `/public-profile`: a signer address (EOA)
 * gives its account wallet, listed as ours when ranked, else as the venue's.
 */
export async function searchTraders(deps: SearchDeps, rawQ: string): Promise<TraderSearchResult> {
  const q = rawQ.trim();
  const lower = q.toLowerCase();
  const ours = await selectRanked(deps.dbh, { prefix: q }, SEARCH_LIMIT);
  const listed = new Set(ours.map((t) => t.walletAddress));
  const out = [...ours];
  const add = (hit: TraderHit) => {
    if (out.length >= SEARCH_LIMIT || listed.has(hit.walletAddress)) return;
    listed.add(hit.walletAddress);
    out.push(hit);
  };

  try {
    if (ADDRESS.test(lower)) {
      const profile = await deps.state.profiles.get(lower, () => getVenueProfile(deps.gamma, lower));
      if (profile && !listed.has(profile.walletAddress)) {
        const [ranked] = await selectRanked(deps.dbh, { exact: [profile.walletAddress] }, 1);
        if (ranked) {
          // The account is ours: it goes with our matches, in rank order.
          out.push(ranked);
          listed.add(ranked.walletAddress);
          out.sort(byRank);
          out.splice(SEARCH_LIMIT);
        } else add(venueHit(profile));
      }
    } else if (out.length < SEARCH_LIMIT) {
      const profiles = await deps.state.searches.get(lower, () => searchVenueProfiles(deps.gamma, q));
      for (const p of profiles) add(venueHit(p));
    }
  } catch (err) {
    deps.log.warn({ err, q: q.slice(0, 100) }, 'trader search: the venue lookup failed; answering our matches only');
  }
  return { traders: out };
}

function byRank(a: TraderHit, b: TraderHit): number {
  const ra = a.rank ?? Infinity;
  const rb = b.rank ?? Infinity;
  return ra - rb || (a.walletAddress < b.walletAddress ? -1 : a.walletAddress > b.walletAddress ? 1 : 0);
}
