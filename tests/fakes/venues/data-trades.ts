import type { FakeAnswer, FakeRequest } from '../server.js';

/**
 * The market-scoped half of the fake Data API's v1 `GET /trades` (docs/venues.md §8 B1), as
 * big-trade alerts call it: `market` (comma list of condition ids; exclusive with `eventId`),
 * `filterType` `CASH`|`TOKENS` with `filterAmount` ≥ 0 (both or neither; CASH compares
 * `size × price`), `takerOnly` (default true: rows marked `_maker` are left out), `side`,
 * `limit` 0..10000 (default 100; larger values are clamped), `offset` 0..10000 (past it: 400).
 * A bare array of camelCase rows, newest first; the `_maker` marker is never sent.
 * User-scoped requests (`user=`) are the other half, in polymarket-data.ts.
 */
export interface MarketTradesState {
  /** Wire rows (`tradeRow` builds one), any market; malformed ones are served as given. */
  trades: Record<string, unknown>[];
}

const bad = (error: string): FakeAnswer => ({ status: 400, body: { error } });

/** True when the request is market- or event-scoped (this module answers it). */
export function isMarketTradesRequest(req: FakeRequest): boolean {
  return req.query.has('market') || req.query.has('eventId');
}

export function answerMarketTrades(state: MarketTradesState, req: FakeRequest): FakeAnswer {
  const q = req.query;
  if (q.has('market') && q.has('eventId')) return bad('market and eventId are mutually exclusive');
  const markets = new Set(
    (q.get('market') ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  if (q.has('market') && markets.size === 0) return bad('market must be a comma-separated list of condition ids');
  const filterType = q.get('filterType');
  const filterAmountRaw = q.get('filterAmount');
  if ((filterType === null) !== (filterAmountRaw === null)) return bad('filterType and filterAmount must be provided together');
  if (filterType !== null && filterType !== 'CASH' && filterType !== 'TOKENS') return bad('filterType must be CASH or TOKENS');
  const filterAmount = filterAmountRaw === null ? 0 : Number(filterAmountRaw);
  if (!Number.isFinite(filterAmount) || filterAmount < 0) return bad('filterAmount must be a number >= 0');
  const takerOnly = q.get('takerOnly') ?? 'true';
  if (takerOnly !== 'true' && takerOnly !== 'false') return bad('takerOnly must be a boolean');
  const side = q.get('side');
  if (side !== null && side !== 'BUY' && side !== 'SELL') return bad('side must be BUY or SELL');
  const limitRaw = q.get('limit') ?? '100';
  const offsetRaw = q.get('offset') ?? '0';
  if (!/^\d+$/.test(limitRaw)) return bad('limit must be an integer >= 0');
  if (!/^\d+$/.test(offsetRaw) || Number(offsetRaw) > 10_000) return bad('offset must be between 0 and 10000');
  const limit = Math.min(Number(limitRaw), 10_000);
  const offset = Number(offsetRaw);
  const eventId = q.get('eventId');
  const rows = state.trades.filter((r) => {
    if (!r || typeof r !== 'object') return true;
    if (markets.size > 0 && !markets.has(String(r.conditionId).toLowerCase())) return false;
    if (eventId !== null && String(r._eventId) !== eventId) return false;
    if (takerOnly === 'true' && r._maker === true) return false;
    if (side !== null && r.side !== side) return false;
    if (filterType === 'CASH' && !(Number(r.size) * Number(r.price) >= filterAmount)) return false;
    if (filterType === 'TOKENS' && !(Number(r.size) >= filterAmount)) return false;
    return true;
  });
  const sorted = [...rows].sort((x, y) => Number(y?.timestamp ?? 0) - Number(x?.timestamp ?? 0));
  const body = sorted.slice(offset, offset + limit).map((r) => {
    if (!r || typeof r !== 'object') return r;
    const { _maker: _m, _eventId: _e, ...wire } = r;
    return wire;
  });
  return { body };
}

/** A v1 trade row as the venue sends it (docs/venues.md §8 B1): every field, camelCase, `timestamp` unix seconds. */
export function tradeRow(p: {
  conditionId: string;
  size: number;
  price: number;
  timestamp: number;
  side?: 'BUY' | 'SELL';
  outcome?: string;
  proxyWallet?: string;
  asset?: string;
  transactionHash?: string;
  title?: string;
  maker?: boolean;
}): Record<string, unknown> {
  return {
    proxyWallet: p.proxyWallet ?? '0x00000000000000000000000000000000000000aa',
    side: p.side ?? 'BUY',
    asset: p.asset ?? '1234567890',
    conditionId: p.conditionId,
    size: p.size,
    price: p.price,
    timestamp: p.timestamp,
    title: p.title ?? 'A market',
    slug: 'a-market',
    icon: '',
    eventSlug: 'an-event',
    outcome: p.outcome ?? 'Yes',
    outcomeIndex: p.outcome === 'No' ? 1 : 0,
    name: '',
    pseudonym: 'Big-Whale',
    bio: '',
    profileImage: '',
    profileImageOptimized: '',
    transactionHash: p.transactionHash ?? `0x${p.timestamp.toString(16).padStart(64, '0')}`,
    ...(p.maker ? { _maker: true } : {}),
  };
}
