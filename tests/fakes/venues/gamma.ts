import type { FakeServer } from '../server.js';

/**
 * A fake Polymarket Gamma API speaking the wire format of docs/venues.md §3:
 * GET /events (bare array, limit/offset, active/closed filters, ordered by
 * volume24hr desc) and GET /events/:id (one object, 404 when unknown).
 * `state.events` holds raw wire rows, so tests can put malformed ones in.
 */
export interface GammaState {
  events: any[];
}

export function serveGamma(server: FakeServer, state: GammaState): void {
  server.on('GET', '/events', (req) => {
    const q = req.query;
    const limit = Math.min(Number(q.get('limit') ?? 20), 500);
    const offset = Number(q.get('offset') ?? 0);
    let rows = state.events.filter((e) => e && typeof e === 'object');
    if (q.get('active') === 'true') rows = rows.filter((e) => e.active !== false);
    if (q.get('closed') === 'false') rows = rows.filter((e) => e.closed !== true);
    if (q.get('order') === 'volume24hr') {
      const dir = q.get('ascending') === 'true' ? 1 : -1;
      rows = rows
        .map((e, i) => ({ e, i }))
        .sort((a, b) => dir * ((Number(a.e.volume24hr) || 0) - (Number(b.e.volume24hr) || 0)) || a.i - b.i)
        .map((x) => x.e);
    }
    return { body: rows.slice(offset, offset + limit) };
  });
  server.on('GET', '/events/:id', (req) => {
    const e = state.events.find((x) => x && x.id === req.params.id);
    return e ? { body: e } : { status: 404, body: { type: 'not found error', error: 'event not found' } };
  });
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

export function gammaEvent(id: string, slug: string, title: string, markets: any[], extra: Record<string, unknown> = {}) {
  const volume = markets.reduce((s, m) => s + (Number(m.volumeNum) || 0), 0);
  return {
    id,
    ticker: slug,
    slug,
    title,
    description: `${title} — resolution rules.`,
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
