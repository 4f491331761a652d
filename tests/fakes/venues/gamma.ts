import type { FakeRequest, FakeServer } from '../server.js';
import type { GeneratedPolymarket } from './generate.js';

/**
 * A fake Polymarket Gamma API enforcing what docs/venues.md §3 says the
 * venue does:
 * - `GET /events/keyset`: `{ events, next_cursor }`; `limit` 1..100 (default
 *   20, larger clamped to 100); `after_cursor` continues (`cursor=` and
 *   `next_cursor=` are ignored: page 1 again); `order` camelCase (snake_case
 *   → 422), `ascending` (default true), `closed` (default false); `offset` →
 *   422; `next_cursor` only on a full page, so the last page may be empty;
 *   events nest all their markets, closed ones and placeholders included.
 * - `GET /events` (deprecated offset listing): bare array, `limit` clamped to
 *   100, `offset` above 2000 → 422 `{"type":"validation error","error":"offset too large, …"}`.
 * - `GET /events/{id}` and `/events/slug/{slug}`: one event, 404 when unknown.
 * Rows come from `state.events` (raw wire rows, malformed ones allowed) and
 * `state.generated` (a lazy catalogue of the real size, generate.ts).
 * `state.overlap = k` repeats the last k events of a page at the start of the
 * next (what paging by a moving order does), and any order other than `id`
 * pages by position, so a change between pages duplicates or skips rows as
 * on the venue.
 * Shapes the venues' SDKs accept and our parser must too (docs/venues.md
 * "What we call"): `state.emptyCursorAtEnd` sends `next_cursor: ""` on the
 * last page instead of leaving it out; `state.nullWhenEmpty` answers an empty
 * page with `events: null`. Rows may carry numbers as decimal strings and
 * `positionIds` as a JSON-encoded string (sdkShapes below; the generated
 * catalogue has them at a steady rate).
 */
export interface GammaState {
  events: any[];
  generated?: GeneratedPolymarket;
  overlap?: number;
  emptyCursorAtEnd?: boolean;
  nullWhenEmpty?: boolean;
}

/** The whole catalogue in `order=id&ascending=false` order: generated ids above explicit ones. */
interface View {
  count: number;
  id(k: number): string;
  row(k: number): any;
  /** A numeric sort key of row k, cheap for generated rows. */
  key(k: number, order: string): number;
}

function view(state: GammaState): View {
  const explicit = state.events
    .filter((e) => e && typeof e === 'object')
    .map((e, n) => ({ e, n }))
    .sort((a, b) => idNum(b.e.id) - idNum(a.e.id) || a.n - b.n)
    .map((x) => x.e);
  const g = state.generated;
  const gc = g?.count ?? 0;
  return {
    count: gc + explicit.length,
    id: (k) => (k < gc ? g!.idOf(gc - 1 - k) : String(explicit[k - gc].id)),
    row: (k) => (k < gc ? g!.event(gc - 1 - k) : explicit[k - gc]),
    key: (k, order) =>
      k < gc && order === 'volume24hr' ? g!.volume24hr(gc - 1 - k) : sortKey(order, k < gc ? g!.event(gc - 1 - k) : explicit[k - gc]),
  };
}

function idNum(id: unknown): number {
  const n = typeof id === 'string' || typeof id === 'number' ? Number(id) : NaN;
  return Number.isFinite(n) ? n : -1;
}

const closedOf = (e: any) => e?.closed === true;

function sortKey(order: string, e: any): number {
  const v = Number(e?.[order]);
  return Number.isFinite(v) ? v : 0;
}

const encode = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
function decode(c: string): any {
  try {
    return JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

const invalid = (error: string) => ({ status: 422, body: { type: 'validation error', error } });

/** Positions of the catalogue in the requested order (id desc natively; other fields sorted, ties by id desc). */
function ordered(v: View, order: string, ascending: boolean): (k: number) => number {
  if (order === 'id') return ascending ? (k) => v.count - 1 - k : (k) => k;
  const keys = Array.from({ length: v.count }, (_, k) => ({ k, key: v.key(k, order) }));
  keys.sort((a, b) => (ascending ? a.key - b.key : b.key - a.key) || a.k - b.k);
  return (k) => keys[k].k;
}

const CAMEL_ORDERS = new Set(['id', 'volume24hr', 'volume', 'volumeNum', 'liquidity', 'endDate', 'startDate', 'createdAt', 'competitive']);

function keyset(state: GammaState, req: FakeRequest) {
  const q = req.query;
  if (q.has('offset')) return invalid('offset is not supported on keyset pagination, use after_cursor');
  const order = q.get('order') ?? 'id';
  if (!CAMEL_ORDERS.has(order)) return invalid(`invalid order field: ${order}`);
  const limitRaw = q.get('limit');
  const limit = limitRaw === null ? 20 : Math.min(100, Number(limitRaw));
  if (!Number.isInteger(limit) || limit < 1) return invalid('limit must be a positive integer');
  const asc = q.get('ascending');
  const ascending = asc === null ? true : asc === 'true';
  const closed = q.get('closed') === 'true';
  const v = view(state);
  const at = ordered(v, order, ascending);
  const cur = q.get('after_cursor');
  let pos = 0;
  if (cur) {
    const c = decode(cur);
    if (!c || typeof c.p !== 'number' || c.o !== order) return invalid('invalid after_cursor');
    pos = c.p;
    // order=id is a true keyset: resume after the last id served, wherever it now sits.
    if (order === 'id' && typeof c.id === 'string') {
      const last = idNum(c.id);
      let lo = 0;
      let hi = v.count;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const idm = idNum(v.id(at(mid)));
        if (ascending ? idm <= last : idm >= last) lo = mid + 1;
        else hi = mid;
      }
      pos = lo;
    }
    pos = Math.max(0, pos - (state.overlap ?? 0));
  }
  const events: any[] = [];
  let k = pos;
  for (; k < v.count && events.length < limit; k++) {
    const e = v.row(at(k));
    if (closedOf(e) === closed) events.push(e);
  }
  const body: { events: any[] | null; next_cursor?: string } = { events };
  if (events.length === limit) body.next_cursor = encode({ o: order, p: k, id: String(events[events.length - 1]?.id) });
  else if (state.emptyCursorAtEnd) body.next_cursor = '';
  if (events.length === 0 && state.nullWhenEmpty) body.events = null;
  return { body };
}

/**
 * `GET /markets/keyset` (docs/venues.md §8 C3) for `order=id&ascending=false`:
 * every market of the catalogue (explicit events', then the generated ones),
 * newest id first, each carrying its parent in `events: [{ id, slug, title }]`;
 * `closed` (default false) filters markets by their own flag; `after_cursor`
 * resumes below the last id served; `next_cursor` only on a full page.
 */
function marketsKeyset(state: GammaState, req: FakeRequest) {
  const q = req.query;
  if (q.has('offset')) return invalid('offset is not supported on keyset pagination, use after_cursor');
  const order = q.get('order') ?? 'id';
  if (order !== 'id' || q.get('ascending') !== 'false') return invalid('this fake lists markets by order=id&ascending=false only');
  const limitRaw = q.get('limit');
  const limit = limitRaw === null ? 20 : Math.min(100, Number(limitRaw));
  if (!Number.isInteger(limit) || limit < 1) return invalid('limit must be a positive integer');
  const closed = q.get('closed') === 'true';
  const cur = q.get('after_cursor');
  const below = cur ? decode(cur)?.below : undefined;
  if (cur && typeof below !== 'string') return invalid('invalid after_cursor');
  const withParent = (m: any, e: any) => ({ ...m, events: [{ id: String(e.id), slug: e.slug, title: e.title }] });
  const explicit = state.events
    .filter((e) => e && typeof e === 'object' && Array.isArray(e.markets))
    .flatMap((e) => e.markets.filter((m: any) => m && typeof m === 'object').map((m: any) => ({ m, e })))
    .sort((a, b) => idNum(b.m.id) - idNum(a.m.id));
  const g = state.generated;
  const out: any[] = [];
  const limitId = below === undefined ? Infinity : Number(below);
  let x = explicit.findIndex((r) => idNum(r.m.id) < limitId);
  if (x < 0) x = explicit.length;
  // Generated market ids are consecutive, ascending with j: start below the cursor.
  const base = g && g.marketCount > 0 ? idNum(g.marketAt(0).market.id) : 0;
  let j = g ? Math.min(g.marketCount - 1, limitId === Infinity ? Infinity : limitId - base - 1) : -1;
  while (out.length < limit && (x < explicit.length || j >= 0)) {
    const gen = j >= 0 ? g!.marketAt(j) : undefined;
    const ex = explicit[x];
    let pick: { m: any; e: any };
    if (gen && (!ex || idNum(gen.market.id) > idNum(ex.m.id))) {
      pick = { m: gen.market, e: gen.event };
      j--;
    } else {
      pick = ex;
      x++;
    }
    if ((pick.m.closed === true) === closed) out.push(withParent(pick.m, pick.e));
  }
  const body: { markets: any[]; next_cursor?: string } = { markets: out };
  if (out.length === limit) body.next_cursor = encode({ below: String(out[out.length - 1].id) });
  return { body };
}

function legacyList(state: GammaState, req: FakeRequest) {
  const q = req.query;
  const limit = Math.min(Number(q.get('limit') ?? 20), 100);
  const offset = Number(q.get('offset') ?? 0);
  if (offset > 2000) return invalid('offset too large, use /events/keyset for deeper pagination');
  const v = view(state);
  const order = q.get('order');
  const at = order ? ordered(v, order, q.get('ascending') === 'true') : (k: number) => k;
  const rows: any[] = [];
  let skipped = 0;
  for (let k = 0; k < v.count && rows.length < limit; k++) {
    const e = v.row(at(k));
    if (q.get('active') === 'true' && e.active === false) continue;
    if (q.get('closed') === 'false' && closedOf(e)) continue;
    if (q.get('closed') === 'true' && !closedOf(e)) continue;
    if (skipped++ < offset) continue;
    rows.push(e);
  }
  return { body: rows, headers: { deprecation: 'true', sunset: 'Fri, 01 May 2026 00:00:00 GMT', warning: '299 - "use /events/keyset"' } };
}

function findEvent(state: GammaState, pred: (e: any) => boolean, id?: string): any {
  const i = id !== undefined ? state.generated?.indexOf(id) : undefined;
  if (i !== undefined) return state.generated!.event(i);
  return state.events.find((e) => e && pred(e));
}

export function serveGamma(server: FakeServer, state: GammaState): void {
  server.on('GET', '/events', (req) => legacyList(state, req));
  server.on('GET', '/events/:id', (req) => {
    const e = findEvent(state, (x) => x.id === req.params.id, req.params.id);
    return e ? { body: e } : { status: 404, body: { type: 'not found error', error: 'event not found' } };
  });
  server.on('GET', '/events/slug/:slug', (req) => {
    const m = /^generated-event-(\d+)$/.exec(req.params.slug);
    const gen = m && state.generated && Number(m[1]) < state.generated.count ? state.generated.event(Number(m[1])) : undefined;
    const e = gen ?? state.events.find((x) => x && x.slug === req.params.slug);
    return e ? { body: e } : { status: 404, body: { type: 'not found error', error: 'event not found' } };
  });
  // Registered last so it is matched before `/events/:id`.
  server.on('GET', '/events/keyset', (req) => keyset(state, req));
  server.on('GET', '/markets/keyset', (req) => marketsKeyset(state, req));
}

/** Wire-format Gamma market (JSON-encoded string arrays, string volume). */
export function gammaMarket(id: string, question: string, yes: number, volume: number, extra: Record<string, unknown> = {}) {
  const no = Math.round((1 - yes) * 1000) / 1000;
  return {
    id,
    question,
    conditionId: `0x${id.padStart(64, '0')}`,
    slug: question
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .slice(0, 60),
    outcomes: '["Yes", "No"]',
    outcomePrices: JSON.stringify([String(yes), String(no)]),
    clobTokenIds: JSON.stringify([`${id}1111111111111111111111`, `${id}2222222222222222222222`]),
    volume: String(volume),
    volumeNum: volume,
    volume24hr: Math.round(volume * 5) / 100,
    endDate: '2029-12-31T12:00:00Z',
    oneDayPriceChange: 0.01,
    liquidity: '1000.5',
    liquidityNum: 1000.5,
    active: true,
    closed: false,
    acceptingOrders: true,
    enableOrderBook: true,
    bestBid: yes - 0.005,
    bestAsk: yes + 0.005,
    lastTradePrice: yes,
    ...extra,
  };
}

/**
 * A market as some SDK fixtures and captures show it (docs/venues.md "What we
 * call"): `bestBid`/`bestAsk`/`lastTradePrice`/`volumeNum`/`volume24hr`/
 * `spread` as decimal strings, `positionIds` as a JSON-encoded string (here on
 * a market that is not `version: "v2"`, where it is not even used).
 */
export function sdkShapes(market: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = { ...market };
  for (const k of ['bestBid', 'bestAsk', 'lastTradePrice', 'volumeNum', 'volume24hr', 'spread', 'liquidityNum', 'oneDayPriceChange'])
    if (typeof out[k] === 'number') out[k] = String(out[k]);
  if (out.version !== 'v2') out.positionIds = JSON.stringify(['0x' + 'ab'.repeat(32)]);
  return out;
}

export function gammaEvent(id: string, slug: string, title: string, markets: any[], extra: Record<string, unknown> = {}) {
  const volume = markets.reduce((s, m) => s + (Number(m.volumeNum) || 0), 0);
  return {
    id,
    ticker: slug,
    slug,
    title,
    description: `${title} — resolution rules.`,
    startDate: '2025-03-01T00:00:00Z',
    endDate: '2029-12-31T12:00:00Z',
    createdAt: '2025-02-27T16:20:31.112Z',
    image: `https://polymarket-upload.s3.us-east-2.amazonaws.com/${slug}.png`,
    icon: `https://polymarket-upload.s3.us-east-2.amazonaws.com/${slug}-icon.png`,
    active: true,
    closed: false,
    archived: false,
    liquidity: 20579.7452,
    volume,
    volume24hr: volume / 10,
    negRisk: false,
    commentCount: 0,
    markets,
    tags: [{ id: '21', label: 'Crypto', slug: 'crypto' }],
    ...extra,
  };
}

/** `groups` events of `perGroup` markets each (bench and pagination tests). */
export function generateGammaEvents(groups: number, perGroup: number, seed = 1): any[] {
  const out: any[] = [];
  let r = seed;
  const rnd = () => (r = (r * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let g = 0; g < groups; g++) {
    const eid = String(100000 + g);
    const markets = [];
    for (let k = 0; k < perGroup; k++) {
      const mid = String(5000000 + g * perGroup + k);
      markets.push(gammaMarket(mid, `Generated question ${g}-${k}?`, Math.round(rnd() * 980 + 10) / 1000, Math.round(rnd() * 1e6) / 100));
    }
    out.push(
      gammaEvent(eid, `generated-event-${g}`, `Generated event ${g}`, markets, {
        category: ['Politics', 'Sports', 'Crypto', 'Economics'][g % 4],
      }),
    );
  }
  return out;
}
