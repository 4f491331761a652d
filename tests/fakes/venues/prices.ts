import type { GammaState } from './gamma.js';
import type { KalshiState } from './kalshi.js';

/**
 * Moving a fake venue's prices where our price path reads them (docs/venues.md
 * "Prices"): the Gamma market's `bestBid`/`bestAsk`/`lastTradePrice` (the
 * CLOB fake's book and midpoints answer from them) and `outcomePrices`;
 * Kalshi's `yes_bid_dollars`/`yes_ask_dollars`/`last_price_dollars`. Tests,
 * the benchmark and `npm run demo` use these.
 */
const clamp = (p: number) => Math.min(0.99, Math.max(0.01, p));

/** Sets a Gamma wire market's yes price: a tight book around `p` and a last trade at `p`. */
export function setGammaYes(m: any, p: number, spread = 0.01): void {
  const yes = Math.round(clamp(p) * 10_000) / 10_000;
  Object.assign(m, {
    bestBid: Math.round((yes - spread / 2) * 10_000) / 10_000,
    bestAsk: Math.round((yes + spread / 2) * 10_000) / 10_000,
    lastTradePrice: yes,
    outcomePrices: JSON.stringify([String(yes), String(Math.round((1 - yes) * 10_000) / 10_000)]),
  });
}

/** Sets a Kalshi wire market's yes price: bid and ask `spread` apart around `p`, the last trade at `p`. */
export function setKalshiYes(m: any, p: number, spread = 0.02): void {
  const yes = clamp(p);
  m.last_price_dollars = yes.toFixed(4);
  m.yes_bid_dollars = Math.max(0, yes - spread / 2).toFixed(4);
  m.yes_ask_dollars = Math.min(1, yes + spread / 2).toFixed(4);
}

/** The yes price a Gamma wire market shows now (its book's midpoint, else its last trade). */
export function gammaYesOf(m: any): number {
  if (m.bestBid != null && m.bestAsk != null) return (Number(m.bestBid) + Number(m.bestAsk)) / 2;
  return Number(m.lastTradePrice ?? JSON.parse(m.outcomePrices)[0]);
}

/** One step of a small deterministic drift of every open market's price on both fakes (the demo's ticker). */
export function driftPrices(state: { gamma: GammaState; kalshi: KalshiState }, tick: number): void {
  for (const e of state.gamma.events) {
    for (const m of e?.markets ?? []) {
      if (m.closed === true || m.active === false) continue;
      setGammaYes(m, gammaYesOf(m) + Math.sin(tick + Number(m.id)) * 0.01);
    }
  }
  for (const e of state.kalshi.events) {
    for (const m of e?.markets ?? []) {
      if (m.status !== 'active') continue;
      setKalshiYes(m, Number(m.last_price_dollars) + Math.cos(tick + String(m.ticker).length) * 0.01);
    }
  }
}
