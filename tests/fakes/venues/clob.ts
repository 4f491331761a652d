import type { FakeServer } from '../server.js';

/**
 * A fake Polymarket CLOB serving GET /prices-history (docs/venues.md §4a):
 * `{ history: [{ t, p }] }` with `t` in unix seconds. Histories come from
 * `state.history[tokenId]` or are synthesised deterministically (hourly, two
 * days) ending at `state.priceOf(tokenId)` when given.
 */
export interface ClobState {
  history?: Record<string, Array<{ t: number; p: number }>>;
  priceOf?: (tokenId: string) => number | undefined;
  now?: () => number;
}

export function serveClob(server: FakeServer, state: ClobState): void {
  server.on('GET', '/prices-history', (req) => {
    const market = req.query.get('market');
    if (!market) return { status: 400, body: { error: 'market is required' } };
    const given = state.history?.[market];
    if (given) return { body: { history: given } };
    const now = Math.floor((state.now?.() ?? Date.now()) / 1000);
    const fidelity = Number(req.query.get('fidelity') ?? 1) * 60;
    let seed = [...market].reduce((s, c) => (s * 31 + c.charCodeAt(0)) % 2147483647, 11);
    const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    let p = state.priceOf?.(market) ?? 0.5;
    const history = [];
    for (let i = 0; i < 48; i++) {
      history.unshift({ t: Math.floor(now / fidelity) * fidelity - i * fidelity, p: Math.round(p * 1000) / 1000 });
      p = Math.min(0.98, Math.max(0.02, p + (rnd() - 0.5) * 0.04));
    }
    return { body: { history } };
  });
}

/** A price lookup over Gamma wire events: the "Yes" price of the market whose first token is `tokenId`. */
export function gammaPriceOf(events: () => any[]): (tokenId: string) => number | undefined {
  return (tokenId) => {
    for (const e of events()) {
      for (const m of e?.markets ?? []) {
        try {
          const tokens = JSON.parse(m.clobTokenIds);
          const i = tokens.indexOf(tokenId);
          if (i >= 0) return Number(JSON.parse(m.outcomePrices)[i]);
        } catch {
          /* malformed rows have no price */
        }
      }
    }
    return undefined;
  };
}
