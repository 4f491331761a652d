import { createHash } from 'node:crypto';
import { startFakeServer, type FakeRequest, type FakeServer } from '../server.js';
import { enforceBudget } from './budget.js';
import { answerMarketTrades, isMarketTradesRequest, type MarketTradesState } from './data-trades.js';

/**
 * A fake Polymarket Data API speaking the v1 wire format of docs/venues.md §1–2:
 * bare arrays, `rank` as a string, limit/offset paging with the venue's
 * bounds (leaderboard limit ≤ 50, offset ≤ 1000, `timePeriod` DAY when
 * omitted; positions limit ≤ 500, offset ≤ 10,000, size < 1 hidden unless
 * `sizeThreshold=0`, `redeemable=true` only resolved ones, losers included;
 * closed positions limit ≤ 50, offset ≤ 100,000, ordered
 * by `sortBy` (default `REALIZEDPNL`, the venue's: biggest wins first) and
 * `sortDirection` (default `DESC`); trades limit and offset ≤ 10,000).
 * Scripted rows are served as given, malformed ones included. Its throttle is the live one: HTTP 200 `{"error":"Too Many Requests"}`,
 * on demand (`throttleNext`) or past a budget (`setBudget`).
 * Users without scripted activity get deterministic synthetic activity
 * derived from their address, so a whole board can be enriched.
 */
export interface WireLeaderboardRow {
  rank?: string;
  proxyWallet: string;
  userName?: string;
  vol: number;
  pnl: number;
  profileImage?: string;
  xUsername?: string;
  verifiedBadge?: boolean;
  [k: string]: unknown;
}

export interface UserActivity {
  positions: Record<string, unknown>[];
  closed: Record<string, unknown>[];
  trades: Record<string, unknown>[];
}

export interface FakeDataApi {
  url: string;
  server: FakeServer;
  /** Sets the full ordering of one (category, timePeriod, orderBy); ranks are assigned in order. */
  setBoard(category: string, timePeriod: string, orderBy: 'PNL' | 'VOL', rows: Array<WireLeaderboardRow | Record<string, unknown>>): void;
  /** Every board (each category and time period) to these traders, ranked by PnL and by volume. */
  setEveryBoard(traders: readonly WireLeaderboardRow[]): void;
  setUser(address: string, activity: Partial<UserActivity>): void;
  /** Trades served to market-scoped `GET /trades?market=…` (data-trades.ts); push wire rows. */
  marketTrades: MarketTradesState;
  /** Requests matching the predicate answer 500 (e.g. one page of one board). */
  failWhen(pred: ((req: FakeRequest) => boolean) | undefined): void;
  /** The next `n` requests answer HTTP 200 `{"error":"Too Many Requests"}` (docs/venues.md §0). */
  throttleNext(n: number): void;
  /** Past `ratePerSec` (docs/venues.md's budget rule) requests get the throttle body; undefined lifts it. */
  setBudget(ratePerSec: number | undefined): void;
  close(): Promise<void>;
}

const bad = (error: string) => ({ status: 400, body: { error } });

/**
 * An open-position row of a market that resolved against the holder, never
 * redeemed (docs/venues.md §2a and "What we call", unredeemed losses): it
 * stays in `/positions` with `redeemable: true`, `curPrice` 0, value 0 and
 * the whole cost as cash PnL, until the trader redeems it.
 */
export function unredeemedLoser(
  wallet: string,
  asset: string,
  o: { size?: number; avgPrice?: number; endDate?: string; title?: string } = {},
): Record<string, unknown> {
  const size = o.size ?? 100;
  const avgPrice = o.avgPrice ?? 0.5;
  const initialValue = Math.round(size * avgPrice * 1e4) / 1e4;
  return {
    proxyWallet: wallet.toLowerCase(),
    asset,
    conditionId: `0x${createHash('sha256').update(asset).digest('hex')}`,
    size,
    avgPrice,
    initialValue,
    currentValue: 0,
    cashPnl: -initialValue,
    percentPnl: -100,
    totalBought: size,
    realizedPnl: 0,
    percentRealizedPnl: -100,
    curPrice: 0,
    redeemable: true,
    mergeable: false,
    title: o.title ?? `Lost market ${asset}`,
    slug: `lost-${asset}`,
    icon: '',
    eventId: '1',
    eventSlug: `lost-${asset}`,
    outcome: 'Yes',
    outcomeIndex: 0,
    oppositeOutcome: 'No',
    oppositeAsset: `${asset}9`,
    endDate: o.endDate ?? '2026-01-01',
    negativeRisk: false,
  };
}

/** `/closed-positions` sortBy values → the row field they order by (docs/venues.md §2b). */
const CLOSED_SORT: Record<string, string> = {
  REALIZEDPNL: 'realizedPnl',
  TITLE: 'title',
  PRICE: 'curPrice',
  AVGPRICE: 'avgPrice',
  TIMESTAMP: 'timestamp',
};

function intParam(q: URLSearchParams, name: string, def: number): number | undefined {
  const v = q.get(name);
  if (v === null) return def;
  return /^\d+$/.test(v) ? Number(v) : undefined;
}

/** Deterministic activity for an address without a script (numbers from its hash). */
export function syntheticActivity(address: string, nowSec = Math.floor(Date.now() / 1000)): UserActivity {
  const h = createHash('sha256').update(address.toLowerCase()).digest();
  const wallet = address.toLowerCase();
  const nClosed = h[0] % 5;
  const nTrades = h[1] % 4; // small range: plenty of ties on tradeCount
  const closed = Array.from({ length: nClosed }, (_, i) => {
    const avgPrice = 0.2 + (h[2 + i] % 60) / 100;
    const totalBought = 100 + h[8 + i] * 10;
    const won = h[14 + i] % 2 === 0;
    const curPrice = won ? 1 : 0;
    return {
      proxyWallet: wallet,
      asset: `${BigInt('0x' + h.subarray(i, i + 8).toString('hex'))}${i}`,
      conditionId: `0x${h.toString('hex')}`,
      avgPrice,
      totalBought,
      realizedPnl: Math.round(totalBought * (curPrice - avgPrice) * 100) / 100,
      curPrice,
      timestamp: nowSec - (h[20 + i] % 40) * 86_400 - 3600,
      title: `Market ${h[2 + i]}`,
      slug: `market-${h[2 + i]}`,
      icon: '',
      eventSlug: `market-${h[2 + i]}`,
      outcome: i % 2 ? 'No' : 'Yes',
      outcomeIndex: i % 2,
      oppositeOutcome: i % 2 ? 'Yes' : 'No',
      oppositeAsset: '1',
      endDate: '2026-01-01',
    };
  });
  const trades = Array.from({ length: nTrades }, (_, i) => ({
    proxyWallet: wallet,
    side: i % 2 ? 'SELL' : 'BUY',
    asset: '123',
    conditionId: `0x${h.toString('hex')}`,
    size: 10 + h[24 + i],
    price: (h[28 + i] % 99) / 100 + 0.01,
    timestamp: nowSec - i * 3600,
    title: `Market ${h[24 + i]}`,
    slug: 's',
    icon: '',
    eventSlug: 's',
    outcome: 'Yes',
    outcomeIndex: 0,
    name: '',
    pseudonym: 'Synthetic-Trader',
    bio: '',
    profileImage: '',
    profileImageOptimized: '',
    transactionHash: '0x22',
  }));
  return { positions: [], closed, trades };
}

export async function startFakeDataApi(): Promise<FakeDataApi> {
  const server = await startFakeServer();
  const boards = new Map<string, Record<string, unknown>[]>();
  const users = new Map<string, UserActivity>();
  const marketTrades: MarketTradesState = { trades: [] };
  let failPred: ((req: FakeRequest) => boolean) | undefined;
  const fail = (req: FakeRequest) => failPred?.(req) ?? false;
  let throttles = 0;
  const THROTTLE = { status: 200, body: { error: 'Too Many Requests' } };
  const throttled = () => (throttles > 0 ? (throttles--, true) : false);

  const activity = (q: URLSearchParams): UserActivity | undefined => {
    const user = q.get('user');
    if (!user || !/^0x[a-fA-F0-9]{40}$/.test(user)) return undefined;
    return users.get(user.toLowerCase()) ?? syntheticActivity(user);
  };

  server.on('GET', '/v1/leaderboard', (req) => {
    if (throttled()) return THROTTLE;
    if (fail(req)) return { status: 500, body: { error: 'internal error' } };
    const q = req.query;
    const limit = intParam(q, 'limit', 25);
    const offset = intParam(q, 'offset', 0);
    if (limit === undefined || limit < 1 || limit > 50) return bad('limit must be between 1 and 50');
    if (offset === undefined || offset > 1000) return bad('offset must be between 0 and 1000');
    const key = `${q.get('category') ?? 'OVERALL'}|${q.get('timePeriod') ?? 'DAY'}|${q.get('orderBy') ?? 'PNL'}`;
    return { body: (boards.get(key) ?? []).slice(offset, offset + limit) };
  });
  server.on('GET', '/positions', (req) => {
    if (throttled()) return THROTTLE;
    if (fail(req)) return { status: 500, body: { error: 'internal error' } };
    const a = activity(req.query);
    if (!a) return bad('user is required');
    const limit = intParam(req.query, 'limit', 100);
    const offset = intParam(req.query, 'offset', 0);
    if (limit === undefined || limit > 500) return bad('limit must be between 0 and 500');
    if (offset === undefined || offset > 10_000) return bad('offset must be between 0 and 10000');
    const threshold = Number(req.query.get('sizeThreshold') ?? 1);
    const redeemableOnly = req.query.get('redeemable') === 'true';
    return {
      body: a.positions
        .filter((p) => Number(p.size) >= threshold && (!redeemableOnly || p.redeemable === true))
        .slice(offset, offset + limit),
    };
  });
  server.on('GET', '/closed-positions', (req) => {
    if (throttled()) return THROTTLE;
    if (fail(req)) return { status: 500, body: { error: 'internal error' } };
    const a = activity(req.query);
    if (!a) return bad('user is required');
    const limit = intParam(req.query, 'limit', 10);
    const offset = intParam(req.query, 'offset', 0);
    if (limit === undefined || limit > 50) return bad('limit must be between 0 and 50');
    if (offset === undefined || offset > 100_000) return bad('offset must be between 0 and 100000');
    const sortBy = req.query.get('sortBy') ?? 'REALIZEDPNL';
    const dir = req.query.get('sortDirection') ?? 'DESC';
    const field = CLOSED_SORT[sortBy];
    if (!field) return bad('sortBy must be one of REALIZEDPNL, TITLE, PRICE, AVGPRICE, TIMESTAMP');
    if (dir !== 'ASC' && dir !== 'DESC') return bad('sortDirection must be ASC or DESC');
    const sign = dir === 'ASC' ? 1 : -1;
    const sorted = [...a.closed].sort((x, y) => {
      const [u, v] = [x[field], y[field]];
      return sign * (typeof u === 'string' || typeof v === 'string' ? String(u).localeCompare(String(v)) : Number(u) - Number(v));
    });
    return { body: sorted.slice(offset, offset + limit) };
  });
  server.on('GET', '/trades', (req) => {
    if (throttled()) return THROTTLE;
    if (fail(req)) return { status: 500, body: { error: 'internal error' } };
    if (isMarketTradesRequest(req)) return answerMarketTrades(marketTrades, req);
    const a = activity(req.query);
    if (!a) return { body: [] };
    const limit = intParam(req.query, 'limit', 100);
    const offset = intParam(req.query, 'offset', 0);
    if (limit === undefined || limit > 10_000) return bad('limit must be between 0 and 10000');
    if (offset === undefined || offset > 10_000) return bad('offset must be between 0 and 10000');
    return { body: [...a.trades].sort((x, y) => Number(y.timestamp) - Number(x.timestamp)).slice(offset, offset + limit) };
  });

  const setBoard: FakeDataApi['setBoard'] = (category, timePeriod, orderBy, rows) => {
    boards.set(
      `${category}|${timePeriod}|${orderBy}`,
      rows.map((r, i) => ({ rank: String(i + 1), userName: '', profileImage: '', xUsername: '', verifiedBadge: false, ...r })),
    );
  };

  return {
    url: server.url,
    server,
    marketTrades,
    setBoard,
    setEveryBoard(traders) {
      for (const category of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO']) {
        for (const period of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
          setBoard(
            category,
            period,
            'PNL',
            [...traders].sort((a, b) => b.pnl - a.pnl),
          );
          setBoard(
            category,
            period,
            'VOL',
            [...traders].sort((a, b) => b.vol - a.vol),
          );
        }
      }
    },
    setUser(address, a) {
      users.set(address.toLowerCase(), { positions: a.positions ?? [], closed: a.closed ?? [], trades: a.trades ?? [] });
    },
    failWhen(pred) {
      failPred = pred;
    },
    throttleNext(n) {
      throttles = n;
    },
    setBudget(rate) {
      enforceBudget(server, rate, 'data-200-error');
    },
    close: () => server.close(),
  };
}
