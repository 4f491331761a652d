/**
 * Deterministic, lazy catalogues for the venue fakes: event i (and its
 * markets) is built from (seed, i) when a page asks for it, so the real sizes
 * (docs/venues.md "Scale to design for": ≈ 22,000 Polymarket events / 80,000
 * markets, > 12,000 Kalshi events / 110,000 markets) cost a few arrays of
 * integers until they are read. Every quirk of "What we call" appears at a
 * steady rate: many-tag events, Yes/No and non-Yes/No outcomes, grouped
 * markets with `groupItemTitle`, placeholders, closed and resolved markets
 * nested in open events, untraded markets, wide spreads; Kalshi outcome
 * markets sharing one `title`, untraded strikes (bid 0 / ask 1 / last 0),
 * `initialized` and `finalized` nested markets, events whose series is
 * missing from `/series`, and a stale deprecated event `category`; the
 * shapes the SDKs accept (numbers as decimal strings, Protocol V2
 * `positionIds` as an array or a JSON-encoded string).
 * `patch(id, fn)` changes one generated event (close it, move a price).
 */

/** A 32-bit mix of (seed, i, salt): stable, cheap, well spread. */
export function mix(seed: number, i: number, salt = 0): number {
  let h = (seed ^ Math.imul(i + 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt + 1, 0xc2b2ae35)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}
const unit = (h: number) => h / 4294967296;

/**
 * Splits `total` markets over `count` events: every event gets one, the rest
 * go to events of positive weight in proportion, so the sum is exact.
 */
function distribute(count: number, total: number, weight: (i: number) => number): Int32Array {
  const start = new Int32Array(count + 1);
  const extra = Math.max(0, total - count);
  let w = 0;
  const cum = new Float64Array(count + 1);
  for (let i = 0; i < count; i++) {
    w += weight(i);
    cum[i + 1] = w;
  }
  for (let i = 0; i <= count; i++) start[i] = i + (w > 0 ? Math.floor((cum[i] * extra) / w) : 0);
  return start;
}

const iso = (sec: number) => new Date(sec * 1000).toISOString();
const dec = (n: number, places = 3) => String(Math.round(n * 10 ** places) / 10 ** places);

// ------------------------------------------------------------------ Polymarket

export const PM_TOKEN_BASE = 10n ** 76n;

export interface PolymarketGenOptions {
  events: number;
  markets: number;
  seed?: number;
  /** Gamma event ids are idBase + i (ascending with i, so `order=id&ascending=false` is i descending). */
  idBase?: number;
  marketIdBase?: number;
  nowSec?: number;
}

export interface GeneratedPolymarket {
  readonly count: number;
  readonly marketCount: number;
  idOf(i: number): string;
  /** Index of a generated event id, or undefined. */
  indexOf(id: string): number | undefined;
  /** The wire event (Gamma keyset/list shape, nested markets), patches applied. */
  event(i: number): any;
  /** Cheap sort keys, without building the event. */
  volume24hr(i: number): number;
  /** Which generated market a CLOB token belongs to. */
  tokenOwner(token: string): { event: number; market: number; side: 0 | 1 } | undefined;
  yesToken(globalMarket: number): string;
  patch(id: string, fn: (event: any) => void): void;
  /** Generated market j (0 ≤ j < marketCount; its id is ascending with j) and the event it belongs to. */
  marketAt(j: number): { market: any; event: any };
}

const PM_CATEGORY_TAGS: Array<[string, string]> = [
  ['Politics', 'politics'],
  ['Elections', 'elections'],
  ['Sports', 'sports'],
  ['Crypto', 'crypto'],
  ['Finance', 'finance'],
  ['Tech', 'tech'],
  ['Pop Culture', 'pop-culture'],
  ['Weather', 'weather'],
];
const PM_NOISE_TAGS: Array<[string, string]> = [
  ['Featured', 'featured'],
  ['Hide From New', 'hide-from-new'],
  ['Solana', 'solana'],
  ['Trump', 'trump'],
  ['NBA', 'nba'],
  ['Recurring', 'recurring'],
];
const PM_FEE_TYPES = ['sports_fees_v2', 'crypto_fees', 'politics_fees', 'general_fees', 'zero_fees', null];
const TEAM_PAIRS: Array<[string, string]> = [
  ['Ravens', 'Falcons'],
  ['Lakers', 'Celtics'],
  ['Arsenal', 'Chelsea'],
];
const NAMES = ['Alice Able', 'Bob Baker', 'Carol Chen', 'Dan Diaz', 'Eve Evans', 'Frank Fox', 'Gina Gray', 'Hugo Hart', 'Ivy Ito'];

export function generatePolymarket(o: PolymarketGenOptions): GeneratedPolymarket {
  const seed = o.seed ?? 1;
  const idBase = o.idBase ?? 2_000_000;
  const marketIdBase = o.marketIdBase ?? 20_000_000;
  const now = o.nowSec ?? Math.floor(Date.now() / 1000);
  // kind: 0–3 one Yes/No market, 4–5 grouped candidates, 6 Up/Down, 7 team outcomes, 8–9 grouped with placeholders and closed ones.
  const kind = (i: number) => mix(seed, i, 1) % 10;
  const grouped = (k: number) => k === 4 || k === 5 || k === 7 || k === 8 || k === 9;
  const starts = distribute(o.events, o.markets, (i) => (grouped(kind(i)) ? 1 + (mix(seed, i, 2) % 8) : 0));
  const patches = new Map<string, Array<(e: any) => void>>();

  const yesToken = (j: number) => String(PM_TOKEN_BASE + BigInt(j) * 2n);
  const noToken = (j: number) => String(PM_TOKEN_BASE + BigInt(j) * 2n + 1n);

  function market(i: number, j: number, local: number, n: number): any {
    const h = mix(seed, j, 3);
    const k = kind(i);
    const id = String(marketIdBase + j);
    let outcomes = ['Yes', 'No'];
    if (k === 6) outcomes = ['Up', 'Down'];
    if (k === 7 && local === 0) outcomes = TEAM_PAIRS[h % TEAM_PAIRS.length];
    const p = 0.03 + unit(h) * 0.94;
    const volume = h % 11 === 0 ? 0 : Math.round(unit(mix(seed, j, 4)) * 5e7) / 100;
    const m: any = {
      id,
      question: k === 6 ? `Bitcoin Up or Down - slot ${i}` : `Generated question ${i}-${local}?`,
      conditionId: `0x${id.padStart(64, '0')}`,
      slug: `generated-market-${j}`,
      startDate: iso(now - (mix(seed, j, 5) % 400) * 86_400),
      endDate: iso(now + (1 + (mix(seed, j, 9) % 60)) * 86_400),
      outcomes: JSON.stringify(outcomes),
      outcomePrices: JSON.stringify([dec(p), dec(1 - p)]),
      clobTokenIds: JSON.stringify([yesToken(j), noToken(j)]),
      volume: String(volume),
      volumeNum: volume,
      volume24hr: Math.round(volume * 5) / 100,
      liquidity: '1000.5',
      liquidityNum: 1000.5,
      active: true,
      closed: false,
      acceptingOrders: true,
      enableOrderBook: true,
      feeType: PM_FEE_TYPES[mix(seed, i, 6) % PM_FEE_TYPES.length],
    };
    if (n > 1 && grouped(k))
      m.groupItemTitle =
        k === 7 && local > 0 ? `Over ${local + 0.5}` : NAMES[local % NAMES.length] + (local >= NAMES.length ? ` ${local}` : '');
    if (volume === 0) {
      // Untraded: no book, no trade (Gamma leaves the fields out).
    } else if (h % 7 === 0) {
      // Wide spread: the display price is the last trade.
      Object.assign(m, {
        bestBid: Math.max(0.01, p - 0.15),
        bestAsk: Math.min(0.99, p + 0.15),
        spread: 0.3,
        lastTradePrice: Number(dec(p)),
      });
    } else {
      const half = 0.005 * (1 + (h % 3));
      Object.assign(m, {
        bestBid: Number(dec(p - half)),
        bestAsk: Number(dec(p + half)),
        spread: Number(dec(2 * half)),
        lastTradePrice: Number(dec(p)),
      });
    }
    // The venue's own change of the first outcome over 24 h (absent on untraded markets).
    if (volume > 0) m.oneDayPriceChange = Number(dec((unit(mix(seed, j, 10)) - 0.5) * 0.2));
    if (k >= 8 && n > 2 && local === n - 1)
      Object.assign(m, { active: false, closed: false, outcomePrices: '["0", "0"]', volume: '0', volumeNum: 0 });
    if (k >= 8 && n > 2 && local === n - 2) {
      const yes = h % 2 === 0;
      Object.assign(m, { closed: true, umaResolutionStatus: 'resolved', outcomePrices: yes ? '["1", "0"]' : '["0", "1"]' });
      delete m.bestBid;
      delete m.bestAsk;
    }
    // What the SDKs accept, at a steady rate (docs/venues.md "What we call"): Protocol V2 markets whose
    // tokens are in `positionIds` (an array or a JSON-encoded string), V1 markets that carry an unused
    // JSON-string `positionIds`, and numbers sent as decimal strings.
    const q = mix(seed, j, 9);
    if (q % 13 === 0) Object.assign(m, { version: 'v2', positionIds: q % 2 ? [yesToken(j), noToken(j)] : m.clobTokenIds });
    else if (q % 13 === 1) Object.assign(m, { version: 'v1', positionIds: JSON.stringify(['0x' + 'ab'.repeat(32)]) });
    if (q % 7 === 3)
      for (const k of ['bestBid', 'bestAsk', 'lastTradePrice', 'volumeNum', 'volume24hr', 'spread'])
        if (typeof m[k] === 'number') m[k] = String(m[k]);
    return m;
  }

  function tags(i: number): any[] {
    const h = mix(seed, i, 7);
    const out: Array<[string, string]> = [];
    for (let t = 0; t < PM_NOISE_TAGS.length; t++) if ((h >>> t) & 1) out.push(PM_NOISE_TAGS[t]);
    // One event in 13 has no category tag (feeType decides); one in 17 has nothing that says (OTHER).
    if (h % 13 !== 0 && h % 17 !== 0) out.push(PM_CATEGORY_TAGS[(h >>> 8) % PM_CATEGORY_TAGS.length]);
    if (h % 5 === 0) out.push(['Crypto', 'crypto']);
    // Tags are unordered on the venue: rotate them.
    const r = out.length ? (h >>> 20) % out.length : 0;
    return [...out.slice(r), ...out.slice(0, r)].map(([label, slug], n) => ({ id: String(100 + ((h + n) % 900)), label, slug }));
  }

  const api: GeneratedPolymarket = {
    count: o.events,
    marketCount: o.markets,
    idOf: (i) => String(idBase + i),
    indexOf(id) {
      if (!/^\d+$/.test(id)) return undefined;
      const i = Number(id) - idBase;
      return i >= 0 && i < o.events ? i : undefined;
    },
    volume24hr: (i) => Math.round(unit(mix(seed, i, 8)) * 1e7) / 100,
    event(i) {
      const n = starts[i + 1] - starts[i];
      const markets = [];
      for (let local = 0; local < n; local++) markets.push(market(i, starts[i] + local, local, n));
      const id = String(idBase + i);
      const e: any = {
        id,
        ticker: `generated-event-${i}`,
        slug: `generated-event-${i}`,
        title: `Generated event ${i}`,
        description: `Generated event ${i}: resolution rules.`,
        startDate: iso(now - 90 * 86_400),
        endDate: iso(now + 30 * 86_400),
        createdAt: iso(now - 91 * 86_400 - (mix(seed, i, 18) % (300 * 86_400))),
        image: `https://polymarket-upload.s3.us-east-2.amazonaws.com/generated-${i}.png`,
        icon: `https://polymarket-upload.s3.us-east-2.amazonaws.com/generated-${i}-icon.png`,
        active: true,
        closed: false,
        archived: false,
        liquidity: 20579.7452,
        volume: markets.reduce((s, m) => s + Number(m.volumeNum), 0),
        volume24hr: api.volume24hr(i),
        negRisk: kind(i) === 4 || kind(i) === 5,
        commentCount: 0,
        markets,
        tags: tags(i),
      };
      for (const fn of patches.get(id) ?? []) fn(e);
      return e;
    },
    marketAt(j) {
      const owner = api.tokenOwner(yesToken(j))!;
      const e = api.event(owner.event);
      return { event: e, market: e.markets[j - starts[owner.event]] };
    },
    tokenOwner(token) {
      if (!/^\d{77}$/.test(token)) return undefined;
      const rel = BigInt(token) - PM_TOKEN_BASE;
      if (rel < 0n || rel >= BigInt(o.markets) * 2n) return undefined;
      const j = Number(rel / 2n);
      // Binary search for the event holding market j.
      let lo = 0;
      let hi = o.events - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid] <= j) lo = mid;
        else hi = mid - 1;
      }
      return { event: lo, market: j, side: Number(rel % 2n) as 0 | 1 };
    },
    yesToken,
    patch(id, fn) {
      patches.set(id, [...(patches.get(id) ?? []), fn]);
    },
  };
  return api;
}

// ---------------------------------------------------------------------- Kalshi

export interface KalshiGenOptions {
  events: number;
  markets: number;
  /** Series in `/series` (the venue has ≈ 9–13k). */
  series?: number;
  seed?: number;
  nowSec?: number;
}

export interface GeneratedKalshi {
  readonly count: number;
  readonly marketCount: number;
  readonly seriesCount: number;
  tickerOf(i: number): string;
  indexOf(eventTicker: string): number | undefined;
  event(i: number): any;
  /** The generated market with this ticker, or undefined. */
  market(ticker: string): any;
  series(s: number): any;
  /** Seconds since epoch of the event's last metadata update. */
  updatedSec(i: number): number;
  patch(eventTicker: string, fn: (event: any) => void): void;
  /** Marks an event updated now (it shows up after a `min_updated_ts` watermark). */
  touch(eventTicker: string, sec: number): void;
}

/** docs/venues.md §5d: the series categories seen on the venue. */
export const KALSHI_SERIES_CATEGORIES = [
  'Politics',
  'Elections',
  'Sports',
  'Crypto',
  'Economics',
  'Financials',
  'Climate and Weather',
  'Entertainment',
  'Science and Technology',
  'Companies',
  'World',
  'Health',
  'Social',
  'Mentions',
  'Transportation',
  'Commodities',
  'Energy',
  'Exotics',
];
const OUTCOME_SETS = [['Home', 'Draw', 'Away'], NAMES];
const d4 = (n: number) => Math.min(1, Math.max(0, n)).toFixed(4);

export function generateKalshi(o: KalshiGenOptions): GeneratedKalshi {
  const seed = o.seed ?? 1;
  const seriesCount = o.series ?? Math.max(1, Math.round(o.events / 2));
  const now = o.nowSec ?? Math.floor(Date.now() / 1000);
  const starts = distribute(o.events, o.markets, (i) => 1 + (mix(seed, i, 11) % 16));
  const patches = new Map<string, Array<(e: any) => void>>();
  const touched = new Map<string, number>();
  // One event in 29 names a series that `/series` does not list (category OTHER).
  const seriesOf = (i: number) => (mix(seed, i, 12) % 29 === 0 ? 'KXORPHAN' : `KXS${mix(seed, i, 13) % seriesCount}`);
  const tickerOf = (i: number) => `${seriesOf(i)}-E${i}`;

  function market(i: number, eventTicker: string, title: string, local: number, n: number): any {
    const j = starts[i] + local;
    const h = mix(seed, j, 14);
    const outcomes = OUTCOME_SETS[mix(seed, i, 15) % OUTCOME_SETS.length];
    const sub = n > 1 ? (local < outcomes.length ? outcomes[local] : `Above ${40 + local}°`) : title;
    const p = 0.02 + unit(h) * 0.96;
    const m: any = {
      ticker: `${eventTicker}-M${local}`,
      event_ticker: eventTicker,
      market_type: 'binary',
      // Outcome markets share the event's title; the outcome is in yes_sub_title (docs/venues.md "Titles").
      title,
      yes_sub_title: sub,
      no_sub_title: sub,
      created_time: iso(now - 61 * 86_400 - (mix(seed, j, 20) % (200 * 86_400))),
      updated_time: iso(now - 3600),
      open_time: iso(now - 60 * 86_400 - (mix(seed, j, 20) % (200 * 86_400))),
      close_time: iso(now + (1 + (mix(seed, j, 21) % 90)) * 86_400),
      latest_expiration_time: iso(now + 31 * 86_400),
      expected_expiration_time: null,
      settlement_timer_seconds: 1800,
      status: 'active',
      yes_bid_dollars: d4(p - 0.01),
      yes_bid_size_fp: '100.00',
      yes_ask_dollars: d4(p + 0.01),
      yes_ask_size_fp: '100.00',
      no_bid_dollars: d4(1 - p - 0.01),
      no_ask_dollars: d4(1 - p + 0.01),
      last_price_dollars: d4(p),
      previous_yes_bid_dollars: d4(p - 0.01),
      previous_yes_ask_dollars: d4(p + 0.01),
      previous_price_dollars: d4(p - (unit(mix(seed, j, 19)) - 0.5) * 0.1),
      volume_fp: `${(h % 100_000) + 1}.00`,
      volume_24h_fp: `${h % 1000}.00`,
      open_interest_fp: '1000.00',
      notional_value_dollars: '1.0000',
      liquidity_dollars: '0.0000',
      result: '',
      can_close_early: true,
      expiration_value: '',
      rules_primary: `If ${sub}, resolves to Yes.`,
      rules_secondary: '',
      price_level_structure: 'linear_cent',
      price_ranges: [{ start: '0.0000', end: '1.0000', step: '0.0100' }],
      fractional_trading_enabled: false,
    };
    if (local > 0 && h % 4 === 0) {
      // Untraded strike: an empty book reads bid 0 / ask 1, and last 0 with no volume (docs/venues.md §5e).
      Object.assign(m, {
        yes_bid_dollars: '0.0000',
        yes_ask_dollars: '1.0000',
        last_price_dollars: '0.0000',
        volume_fp: '0.00',
        volume_24h_fp: '0.00',
        yes_bid_size_fp: '',
      });
    } else if (local > 0 && h % 9 === 1) {
      Object.assign(m, { status: 'initialized' });
    } else if (local > 0 && h % 9 === 2) {
      const yes = h % 2 === 0;
      Object.assign(m, {
        status: 'finalized',
        result: yes ? 'yes' : 'no',
        settlement_value_dollars: yes ? '1.0000' : '0.0000',
        settlement_ts: iso(now - 86_400),
      });
    }
    return m;
  }

  const api: GeneratedKalshi = {
    count: o.events,
    marketCount: o.markets,
    seriesCount,
    tickerOf,
    indexOf(ticker) {
      const m = /-E(\d+)$/.exec(ticker);
      if (!m) return undefined;
      const i = Number(m[1]);
      return i < o.events && tickerOf(i) === ticker ? i : undefined;
    },
    updatedSec: (i) => touched.get(tickerOf(i)) ?? now - 86_400 - (mix(seed, i, 16) % (30 * 86_400)),
    event(i) {
      const ticker = tickerOf(i);
      const n = starts[i + 1] - starts[i];
      const title = `Generated Kalshi event ${i}`;
      const markets = [];
      for (let local = 0; local < n; local++) markets.push(market(i, ticker, title, local, n));
      const e: any = {
        event_ticker: ticker,
        series_ticker: seriesOf(i),
        title,
        sub_title: `Generated sub title ${i}`,
        collateral_return_type: '',
        mutually_exclusive: n > 1,
        // Deprecated and often wrong: never the source of our category.
        category: 'Politics',
        strike_date: null,
        strike_period: null,
        settlement_sources: [{ name: 'Generated', url: 'https://example.com' }],
        last_updated_ts: iso(api.updatedSec(i)),
        markets,
      };
      for (const fn of patches.get(ticker) ?? []) fn(e);
      return e;
    },
    market(ticker) {
      const m = /^(.*-E(\d+))-M(\d+)$/.exec(ticker);
      if (!m) return undefined;
      const i = api.indexOf(m[1]);
      if (i === undefined) return undefined;
      return api.event(i).markets.find((x: any) => x.ticker === ticker);
    },
    series(s) {
      const category = KALSHI_SERIES_CATEGORIES[mix(seed, s, 17) % KALSHI_SERIES_CATEGORIES.length];
      return {
        ticker: `KXS${s}`,
        frequency: 'daily',
        title: `Generated series ${s}`,
        category,
        categories: [category],
        tags: [],
        settlement_sources: [{ name: 'Generated', url: 'https://example.com' }],
        contract_url: 'https://example.com/contract.pdf',
        contract_terms_url: 'https://example.com/terms.pdf',
        fee_type: ['quadratic', 'quadratic_with_maker_fees', 'quadratic_with_combo_maker_fees', 'flat'][s % 4],
        fee_multiplier: 1,
        additional_prohibitions: [],
        last_updated_ts: iso(now - 86_400),
      };
    },
    patch(ticker, fn) {
      patches.set(ticker, [...(patches.get(ticker) ?? []), fn]);
    },
    touch(ticker, sec) {
      touched.set(ticker, sec);
    },
  };
  return api;
}
