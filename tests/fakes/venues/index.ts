import { readFileSync } from 'node:fs';
import { startFakeServer, type FakeServer } from '../server.js';
import { serveGamma, type GammaState } from './gamma.js';
import { serveKalshi, type KalshiState } from './kalshi.js';
import { gammaPriceOf, serveClob, type ClobState } from './clob.js';

/**
 * The market-data venues as loopback fakes (Gamma, CLOB, Kalshi), used by
 * the tests, the benchmark and `npm run demo`. Each venue is its own server,
 * like the real base URLs; `env` points the app's config at them.
 */
export interface FakeVenues {
  gamma: FakeServer & { state: GammaState };
  kalshi: FakeServer & { state: KalshiState };
  clob: FakeServer & { state: ClobState };
  env: Record<string, string>;
  close(): Promise<void>;
}

/** The bundled sample data (small JSON fixtures in sample-data/), deep-copied so callers may mutate it. */
export function loadSampleData(): { gamma: any[]; kalshi: any[] } {
  const read = (f: string) => JSON.parse(readFileSync(new URL(`./sample-data/${f}`, import.meta.url), 'utf8'));
  return { gamma: read('gamma-events.json'), kalshi: read('kalshi-events.json') };
}

export async function startFakeVenues(data: { gamma?: any[]; kalshi?: any[] } = {}): Promise<FakeVenues> {
  const [g, k, c] = await Promise.all([startFakeServer(), startFakeServer(), startFakeServer()]);
  const gamma = Object.assign(g, { state: { events: data.gamma ?? [] } });
  const kalshi = Object.assign(k, { state: { events: data.kalshi ?? [] } });
  const clob = Object.assign(c, { state: { priceOf: gammaPriceOf(() => gamma.state.events) } });
  serveGamma(gamma, gamma.state);
  serveKalshi(kalshi, kalshi.state);
  serveClob(clob, clob.state);
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
