import { ApiError, toApiError } from './errors.js';

export type Chain = 'solana' | 'evm';

export interface SessionUser {
  id: string;
  walletAddress: string;
  chain: string;
  username?: string | null;
  avatarUrl?: string | null;
}

/** Where a mobile app keeps the refresh token (SecureStore, Keychain, …). */
export interface TokenStorage {
  get(): string | null | undefined | Promise<string | null | undefined>;
  set(token: string | null): void | Promise<void>;
}

export interface SessionOptions {
  /** Origin of the API, e.g. https://api.example.com (no trailing slash). */
  baseUrl: string;
  /**
   * 'cookie' (browsers): the refresh token lives in the httpOnly cookie; requests use credentials: 'include'.
   * 'token' (mobile, Node): the refresh token is kept in `storage` and sent in the refresh body.
   */
  mode: 'cookie' | 'token';
  storage?: TokenStorage;
  /** Called once when the session ends because a refresh failed (docs/api-contract.md §5.7: log the user out). */
  onLoggedOut?: () => void;
  fetch?: typeof fetch;
}

/**
 * The access token lives in memory only (docs/api-contract.md §5.4). On a 401 every failing
 * call shares one refresh (single flight), retries once on success, and the
 * session ends with one onLoggedOut call on failure (docs/api-contract.md §5.7).
 */
export class Session {
  private accessToken: string | null = null;
  private refreshing: Promise<string | null> | null = null;
  private loggedOut = false;
  user: SessionUser | null = null;
  private readonly doFetch: typeof fetch;

  constructor(private readonly opts: SessionOptions) {
    if (opts.mode === 'token' && !opts.storage) throw new Error('token mode needs a storage adapter');
    this.doFetch = opts.fetch ?? ((...a) => fetch(...a));
  }

  get token(): string | null {
    return this.accessToken;
  }

  get signedIn(): boolean {
    return this.accessToken !== null;
  }

  private url(path: string) {
    return this.opts.baseUrl.replace(/\/$/, '') + path;
  }

  private credentials(): RequestCredentials {
    return this.opts.mode === 'cookie' ? 'include' : 'omit';
  }

  private async postJson(path: string, body: unknown, headers: Record<string, string> = {}) {
    return this.doFetch(this.url(path), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body ?? {}),
      credentials: this.credentials(),
    });
  }

  /** Token mode: the sign-in answer carries the refresh token only as a cookie; keep it where readable. */
  private async keepRefreshFromCookie(res: Response) {
    if (this.opts.mode !== 'token') return;
    const h = res.headers as Headers & { getSetCookie?: () => string[] };
    const cookies = h.getSetCookie?.() ?? (res.headers.get('set-cookie') ?? '').split(/,(?=\s*\w+=)/);
    for (const c of cookies) {
      const m = /^\s*refresh_token=([^;]+)/.exec(c);
      if (m && m[1]) await this.opts.storage!.set(decodeURIComponent(m[1]));
    }
  }

  private async startSession(res: Response): Promise<SessionUser> {
    if (!res.ok) throw await toApiError(res);
    const body = (await res.json()) as { accessToken: string; user: SessionUser; refreshToken?: string };
    this.accessToken = body.accessToken;
    this.user = body.user;
    this.loggedOut = false;
    if (this.opts.mode === 'token') {
      if (body.refreshToken) await this.opts.storage!.set(body.refreshToken);
      else await this.keepRefreshFromCookie(res);
    }
    return body.user;
  }

  /**
   * Wallet sign-in (docs/api-contract.md §5.2): nonce, sign locally, submit. `signMessage` gets the
   * nonce string and returns the signature (base58 for Solana, 0x hex for EVM),
   * so any wallet library plugs in.
   */
  async signInWithWallet(input: {
    address: string;
    chain: Chain;
    signMessage: (message: string) => string | Promise<string>;
    referralCode?: string;
  }): Promise<SessionUser> {
    const q = new URLSearchParams({ address: input.address, chain: input.chain });
    const nonceRes = await this.doFetch(this.url(`/api/v1/auth/wallet/nonce?${q}`), { credentials: this.credentials() });
    if (!nonceRes.ok) throw await toApiError(nonceRes);
    const { nonce } = (await nonceRes.json()) as { nonce: string };
    const signature = await input.signMessage(nonce);
    const body: Record<string, string> = { address: input.address, chain: input.chain, signature, nonce };
    if (input.referralCode) body.referralCode = input.referralCode;
    return this.startSession(await this.postJson('/api/v1/auth/wallet', body));
  }

  /** Identity-provider sign-in with the provider's OAuth access token. */
  async signInWithIdp(idpAccessToken: string): Promise<SessionUser> {
    return this.startSession(await this.postJson('/api/v1/auth/idp', { accessToken: idpAccessToken }));
  }

  /** One refresh shared by every caller that asks while it is in flight. Resolves null when the session ended. */
  refresh(): Promise<string | null> {
    if (!this.refreshing) {
      this.refreshing = this.doRefresh().finally(() => {
        this.refreshing = null;
      });
    }
    return this.refreshing;
  }

  private async doRefresh(): Promise<string | null> {
    let body: Record<string, string> = {};
    if (this.opts.mode === 'token') {
      const stored = await this.opts.storage!.get();
      if (stored) body = { refreshToken: stored };
    }
    let res: Response;
    try {
      res = await this.postJson('/api/v1/auth/refresh', body);
    } catch {
      return this.accessToken; // network trouble is not a logout; the caller's request fails as it is
    }
    if (res.status === 429 || res.status >= 500) return null;
    if (!res.ok) {
      await this.end();
      return null;
    }
    const out = (await res.json()) as { accessToken: string; refreshToken: string; user: SessionUser };
    this.accessToken = out.accessToken;
    this.user = { ...this.user, ...out.user };
    if (this.opts.mode === 'token') await this.opts.storage!.set(out.refreshToken);
    return out.accessToken;
  }

  private async end() {
    this.accessToken = null;
    this.user = null;
    if (this.opts.mode === 'token') await this.opts.storage!.set(null);
    if (!this.loggedOut) {
      this.loggedOut = true;
      this.opts.onLoggedOut?.();
    }
  }

  /** Logs out everywhere (every refresh token of the user) and clears local state. */
  async logout(): Promise<void> {
    if (this.accessToken) {
      await this.doFetch(this.url('/api/v1/auth/logout'), {
        method: 'POST',
        headers: { authorization: `Bearer ${this.accessToken}` },
        credentials: this.credentials(),
      }).catch(() => undefined);
    }
    this.accessToken = null;
    this.user = null;
    this.loggedOut = true;
    if (this.opts.mode === 'token') await this.opts.storage!.set(null);
  }

  /**
   * fetch with the bearer token; on 401 one shared refresh and one retry.
   * Used as openapi-fetch's fetch, so every typed call gets the 401 contract.
   */
  authorizedFetch = async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    const base = input instanceof Request ? input : new Request(input, init);
    const send = (token: string | null) => {
      const req = base.clone();
      const headers = new Headers(req.headers);
      if (token) headers.set('authorization', `Bearer ${token}`);
      return this.doFetch(new Request(req, { headers, credentials: this.credentials() }));
    };
    const usedToken = this.accessToken;
    const first = await send(usedToken);
    if (first.status !== 401 || this.loggedOut) return first;
    // Another call may have refreshed while this one was in flight: use its token.
    const token = this.accessToken && this.accessToken !== usedToken ? this.accessToken : await this.refresh();
    if (!token) return first;
    return send(token);
  };
}

export { ApiError };
