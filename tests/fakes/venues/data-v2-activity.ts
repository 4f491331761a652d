import type { FakeAnswer, FakeRequest, FakeServer } from '../server.js';

/**
 * Polymarket Data API v2 `GET /v2/activity` (docs/venues.md §8 A, A8) on the
 * Data fake's server, as the venue serves it:
 * - `{ data: [...], pagination: { limit, offset, has_more, next_cursor } }`,
 *   snake_case rows, newest first (`sort_direction` DESC by default, ASC
 *   allowed), `next_cursor` null on the last page, `offset` cosmetic;
 * - `user` required (400), `offset` sent → 400 `invalid_request` naming it,
 *   `limit` 1..1000 (default 100; above the cap rejected), `sort_by` only
 *   TIMESTAMP; `start`/`end` unix seconds (start default: 3 years ago);
 * - one `type` per request: a repeated `type` key → 400 "duplicate field
 *   `type`", a comma list → 200 with the filter silently ignored (§8 F.5,
 *   what production does);
 * - the cursor carries only the seek anchor and the page size (the filters
 *   must be resent; a changed filter re-anchors silently);
 * - errors `{ error, code, retryable, trace_id, parameter? }`, `x-trace-id`
 *   on every answer, `cache-control: public, max-age=15`.
 * The Data budget is the server's (FakeDataApi.setBudget): it counts these
 * requests with the v1 ones.
 */
export interface ActivityRow {
  proxy_wallet: string;
  timestamp: number;
  condition_id: string;
  type: string;
  size: number | string;
  usdc_size: number | string;
  transaction_hash: string;
  price: number | string;
  token_id: string;
  side: string;
  outcome_index: number;
  title: string;
  slug: string;
  icon: string;
  event_slug: string;
  outcome: string;
  name: string;
  pseudonym: string;
  bio: string;
  profile_image: string;
  profile_image_optimized: string;
  [k: string]: unknown;
}

export interface FakeActivity {
  /** Adds rows to a wallet's activity (any order; served newest first). Malformed rows are served as given. */
  add(wallet: string, rows: Array<Partial<ActivityRow> & Record<string, unknown>>): void;
  clear(wallet?: string): void;
  /** The `/v2/activity` requests seen so far. */
  requests(): FakeRequest[];
}

/** A TRADE row with the fields the venue always sends, overridable. */
export function activityTrade(wallet: string, o: Partial<ActivityRow> & { timestamp: number }): ActivityRow {
  const size = Number(o.size ?? 10);
  const price = Number(o.price ?? 0.5);
  return {
    proxy_wallet: wallet.toLowerCase(),
    condition_id: `0x${'c'.repeat(64)}`,
    type: 'TRADE',
    size,
    usdc_size: Math.round(size * price * 1e6) / 1e6,
    transaction_hash: `0x${o.timestamp.toString(16).padStart(64, '0')}`,
    price,
    token_id: '1001',
    side: 'BUY',
    outcome_index: 0,
    title: 'A market',
    slug: 'a-market',
    icon: '',
    event_slug: 'an-event',
    outcome: 'Yes',
    name: '',
    pseudonym: 'Fake-Trader',
    bio: '',
    profile_image: '',
    profile_image_optimized: '',
    ...o,
  };
}

let traceCounter = 0;
const trace = () => `fake-${(++traceCounter).toString(16)}`;

function v2Error(status: number, code: string, error: string, parameter?: string): FakeAnswer {
  const t = trace();
  return {
    status,
    body: { error, code, retryable: status === 429 || status >= 500, trace_id: t, ...(parameter ? { parameter } : {}) },
    headers: { 'x-trace-id': t },
  };
}

const encode = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
function decode(c: string): { ts: number; sq: number; l: number; d: 'ASC' | 'DESC' } | undefined {
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
    return typeof v?.ts === 'number' && typeof v?.sq === 'number' && typeof v?.l === 'number' ? v : undefined;
  } catch {
    return undefined;
  }
}

const intOf = (v: string | null) => (v !== null && /^\d+$/.test(v) ? Number(v) : undefined);

export function serveDataV2Activity(server: FakeServer, opts: { now?: () => number } = {}): FakeActivity {
  const nowSec = () => Math.floor((opts.now?.() ?? Date.now()) / 1000);
  const byWallet = new Map<string, Array<Record<string, unknown> & { _sq: number }>>();
  let sq = 0;

  server.on('GET', '/v2/activity', (req) => {
    const q = req.query;
    if (q.has('offset')) return v2Error(400, 'invalid_request', 'offset is not supported: page with cursor', 'offset');
    const user = q.get('user');
    if (!user) return v2Error(400, 'invalid_request', 'user is required', 'user');
    if (!/^0x[a-fA-F0-9]{40}$/.test(user)) return v2Error(400, 'invalid_request', 'user must be a 0x address', 'user');
    const types = q.getAll('type');
    if (types.length > 1) return v2Error(400, 'invalid_request', 'duplicate field `type`', 'type');
    // A comma list is accepted and silently ignored (docs/venues.md §8 F.5).
    const type = types[0] !== undefined && !types[0].includes(',') ? types[0] : undefined;
    const sortBy = q.get('sort_by') ?? q.get('sortBy') ?? 'TIMESTAMP';
    if (sortBy !== 'TIMESTAMP')
      return v2Error(400, 'invalid_request', 'only sortBy=TIMESTAMP with sortDirection=DESC is supported', 'sort_by');
    const cursorText = q.get('cursor');
    const cursor = cursorText ? decode(cursorText) : undefined;
    if (cursorText && !cursor) return v2Error(400, 'invalid_request', 'cursor is not valid', 'cursor');
    const dir = (cursor?.d ?? q.get('sort_direction') ?? q.get('sortDirection') ?? 'DESC').toUpperCase();
    if (dir !== 'ASC' && dir !== 'DESC') return v2Error(400, 'invalid_request', 'sort_direction must be ASC or DESC', 'sort_direction');
    const limitText = q.get('limit');
    const limit = cursor ? cursor.l : limitText === null ? 100 : intOf(limitText);
    if (limit === undefined || limit < 1 || limit > 1000)
      return v2Error(400, 'invalid_request', 'limit must be between 1 and 1000', 'limit');
    const startText = q.get('start');
    const endText = q.get('end');
    const start = startText === null ? nowSec() - 3 * 365 * 86_400 : intOf(startText);
    const end = endText === null ? nowSec() + 86_400 : intOf(endText);
    if (start === undefined) return v2Error(400, 'invalid_request', 'start must be a unix timestamp', 'start');
    if (end === undefined) return v2Error(400, 'invalid_request', 'end must be a unix timestamp', 'end');
    const side = q.get('side');

    const sign = dir === 'ASC' ? 1 : -1;
    const rows = (byWallet.get(user.toLowerCase()) ?? [])
      .filter((r) => {
        const ts = Number(r.timestamp);
        if (!(ts >= start && ts <= end)) return false;
        if (type !== undefined && r.type !== type) return false;
        if (side !== null && r.side !== side) return false;
        return true;
      })
      .sort((a, b) => sign * (Number(a.timestamp) - Number(b.timestamp) || a._sq - b._sq));
    const after = cursor ? rows.filter((r) => sign * (Number(r.timestamp) - cursor.ts || r._sq - cursor.sq) > 0) : rows;
    const page = after.slice(0, limit);
    const hasMore = after.length > limit;
    const last = page[page.length - 1];
    const t = trace();
    return {
      body: {
        data: page.map(({ _sq, ...r }) => r),
        pagination: {
          limit,
          offset: rows.length - after.length,
          has_more: hasMore,
          next_cursor: hasMore && last ? encode({ ts: Number(last.timestamp), sq: last._sq, l: limit, d: dir }) : null,
        },
      },
      headers: { 'x-trace-id': t, 'cache-control': 'public, max-age=15' },
    };
  });

  return {
    add(wallet, rows) {
      const list = byWallet.get(wallet.toLowerCase()) ?? [];
      for (const r of rows) list.push({ ...r, _sq: ++sq });
      byWallet.set(wallet.toLowerCase(), list);
    },
    clear(wallet) {
      if (wallet === undefined) byWallet.clear();
      else byWallet.delete(wallet.toLowerCase());
    },
    requests: () => server.requests.filter((r) => r.path === '/v2/activity'),
  };
}
