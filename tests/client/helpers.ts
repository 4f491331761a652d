import { createApiClient, type TokenStorage } from '../../client/src/index.js';
import { solanaWallet } from '../support/users.js';

let ipCounter = 10;

/**
 * fetch as one client machine: its own IP (X-Forwarded-For, from the trusted 127.0.0.1) for the
 * per-IP limits; counts refresh calls; `slowRefresh` holds every token refresh for that long (ms).
 */
export function clientFetch(opts: { slowRefresh?: number } = {}) {
  const ip = `198.51.100.${ipCounter++}`;
  const calls = { refresh: 0 };
  const f: typeof fetch = async (input, init) => {
    const req = new Request(input, init);
    if (new URL(req.url).pathname === '/api/v1/auth/refresh') {
      calls.refresh++;
      if (opts.slowRefresh) await new Promise((r) => setTimeout(r, opts.slowRefresh));
    }
    const headers = new Headers(req.headers);
    headers.set('x-forwarded-for', ip);
    return fetch(new Request(req, { headers }));
  };
  return { fetch: f, calls };
}

/** Token storage in memory (what a native app keeps in its keychain). */
export function memoryStorage(): TokenStorage & { value: string | null } {
  return {
    value: null,
    get() {
      return this.value;
    },
    set(v) {
      this.value = v;
    },
  };
}

/** A token-mode client of the app at `baseUrl`, signed in with a fresh Solana wallet. */
export async function signedInClient(baseUrl: string, opts: { slowRefresh?: number } = {}) {
  const c = createApiClient({ baseUrl, mode: 'token', storage: memoryStorage(), fetch: clientFetch(opts).fetch });
  const wallet = await solanaWallet();
  const user = await c.session.signInWithWallet({ address: wallet.address, chain: 'solana', signMessage: wallet.sign });
  return { c, user };
}
