import { readFileSync } from 'node:fs';
import { startFakeServer, type FakeServer } from '../server.js';
import { enforceBudget } from './budget.js';
import { serveGamma, type GammaState } from './gamma.js';
import { serveKalshi, type KalshiState } from './kalshi.js';
import { gammaBookOf, gammaPriceOf, serveClob, type ClobState } from './clob.js';
import { generateKalshi, generatePolymarket, type KalshiGenOptions, type PolymarketGenOptions } from './generate.js';

/**
 * The market-data venues as loopback fakes (Gamma, CLOB, Kalshi), used by
 * the tests, the benchmark and `npm run demo`. Each venue is its own server,
 * like the real base URLs; `env` points the app's config at them. The CLOB
 * answers from the Gamma fake's markets, so catalogue and prices agree.
 */
export interface FakeVenues {
  gamma: FakeServer & { state: GammaState };
  kalshi: FakeServer & { state: KalshiState };
  clob: FakeServer & { state: ClobState };
  env: Record<string, string>;
  close(): Promise<void>;
}

export interface FakeVenueOptions {
  /** Lazy catalogues of any size (the real ones: 22,000 / 80,000 and 12,000 / 110,000), served after the explicit rows. */
  generate?: { polymarket?: PolymarketGenOptions; kalshi?: KalshiGenOptions };
  /**
   * Request budgets the fakes enforce as their venues do (budget.ts): Kalshi
   * 429, Gamma and CLOB delay (Cloudflare). Off unless given: the venues'
   * own limits are far above our budgets, and a test passes ours to check them.
   */
  budgets?: { gamma?: number; clob?: number; kalshi?: number };
}

/** The bundled sample data (small JSON fixtures in sample-data/), deep-copied so callers may mutate it. */
export function loadSampleData(): { gamma: any[]; kalshi: any[] } {
  const read = (f: string) => JSON.parse(readFileSync(new URL(`./sample-data/${f}`, import.meta.url), 'utf8'));
  return { gamma: read('gamma-events.json'), kalshi: read('kalshi-events.json') };
}

export async function startFakeVenues(data: { gamma?: any[]; kalshi?: any[] } = {}, opts: FakeVenueOptions = {}): Promise<FakeVenues> {
  const [g, k, c] = await Promise.all([startFakeServer(), startFakeServer(), startFakeServer()]);
  const gamma = Object.assign(g, {
    state: {
      events: data.gamma ?? [],
      generated: opts.generate?.polymarket ? generatePolymarket(opts.generate.polymarket) : undefined,
    },
  });
  const kalshi = Object.assign(k, {
    state: {
      events: data.kalshi ?? [],
      generated: opts.generate?.kalshi ? generateKalshi(opts.generate.kalshi) : undefined,
    },
  });
  const clob = Object.assign(c, {
    state: { priceOf: gammaPriceOf(() => gamma.state), bookOf: gammaBookOf(() => gamma.state) },
  });
  serveGamma(gamma, gamma.state);
  serveKalshi(kalshi, kalshi.state);
  serveClob(clob, clob.state);
  if (opts.budgets?.gamma) enforceBudget(gamma, opts.budgets.gamma, 'delay');
  if (opts.budgets?.clob) enforceBudget(clob, opts.budgets.clob, 'delay');
  if (opts.budgets?.kalshi) enforceBudget(kalshi, opts.budgets.kalshi, 'kalshi-429');
  return {
    gamma,
    kalshi,
    clob,
    env: { POLYMARKET_GAMMA_API_URL: gamma.url, POLYMARKET_CLOB_API_URL: clob.url, KALSHI_API_URL: kalshi.url },
    async close() {
      await Promise.all([gamma.close(), kalshi.close(), clob.close()]);
    },
  };
}
