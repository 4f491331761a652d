import { ApiError, toApiError } from './errors.js';
import type { paths } from './schema.js';

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
  /**
   * Cookie mode: coordinates refreshes between the tabs of one browser so that two tabs never
   * present one refresh cookie at once (that would be a reuse and end the session). Defaults to
   * the Web Locks API (`navigator.locks`) where the platform has it; pass your own elsewhere.
   */
  refreshLock?: RefreshLock;
}

/**
 * Auth-state events (like supabase-js's `onAuthStateChange`), each with its payload:
 * - `signedIn`: a wallet or identity-provider sign-in succeeded, or `restore()` brought a stored
 *   session back on app start (`restored: true`);
 * - `refreshed`: a new access token was obtained (before it expired, after a 401, or for a socket);
 * - `signedOut`: the session is over: `logout()` (`reason: 'logout'`), ending the current session
 *   with `endSession()` (`'ended'`), or a refresh the server refused because the session is no
 *   longer valid (`'expired'`: also the case that calls `onLoggedOut`).
 */
export interface AuthEvents {
  signedIn: { user: SessionUser; restored: boolean };
  refreshed: { user: SessionUser | null };
  signedOut: { reason: 'logout' | 'ended' | 'expired' };
}
export type AuthEvent = keyof AuthEvents;

/** What a refresh request came back with. */
type Rotation =
  | { kind: 'ok'; accessToken: string; refreshToken?: string; user: SessionUser }
  | { kind: 'dead' } // the server refused the refresh token: the session is over
  | { kind: 'busy'; res: Response } // 429, 403 ORIGIN_NOT_ALLOWED, 5xx: the session may still be good
  | { kind: 'offline'; err: unknown };

/** Runs `fn` while holding a lock shared by every tab (or process) that refreshes this session. */
export type RefreshLock = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

/** One of the caller's sessions (docs/decisions.md §10.5), as the OpenAPI document defines it. */
export type SessionInfo = paths['/api/v1/auth/sessions']['get']['responses'][200]['content']['application/json']['sessions'][number];

function webLocks(): RefreshLock | undefined {
  const locks = (globalThis as { navigator?: { locks?: { request: <T>(name: string, fn: () => Promise<T>) => Promise<T> } } }).navigator
    ?.locks;
  return locks ? (name, fn) => locks.request(name, fn) : undefined;
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
  private readonly listeners: { [E in AuthEvent]: Set<(payload: AuthEvents[E]) => void> } = {
    signedIn: new Set(),
    refreshed: new Set(),
    signedOut: new Set(),
  };

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

  /** Listens to an auth-state event; returns the function that stops listening. */
  on<E extends AuthEvent>(event: E, listener: (payload: AuthEvents[E]) => void): () => void {
    const set = this.listeners[event] as Set<(payload: AuthEvents[E]) => void>;
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * One listener for every auth-state event, with the user as it stands after it (null once
   * signed out); returns the function that stops listening.
   */
  onAuthStateChange(listener: (event: AuthEvent, user: SessionUser | null) => void): () => void {
    const offs = (['signedIn', 'refreshed', 'signedOut'] as const).map((e) => this.on(e, () => listener(e, this.user)));
    return () => offs.forEach((off) => off());
  }

  private emit<E extends AuthEvent>(event: E, payload: AuthEvents[E]) {
    for (const listener of [...(this.listeners[event] as Set<(payload: AuthEvents[E]) => void>)]) {
      try {
        listener(payload);
      } catch (err) {
        // A failing listener must not undo the session change; report it like an event handler's error.
        setTimeout(() => {
          throw err;
        });
      }
    }
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
    this.emit('signedIn', { user: body.user, restored: false });
    return body.user;
  }

  /**
   * Brings back the session of an earlier app run, on app start: token mode from the refresh
   * token in `storage`, cookie mode from the refresh cookie. Resolves the user (and raises
   * `signedIn` with `restored: true`), or null when there is no session to restore (nothing
   * stored, or the server no longer accepts it: the stored token is then cleared; neither
   * `onLoggedOut` nor `signedOut` is raised, since this run was never signed in). Throws an
   * `ApiError` on 429, 403 `ORIGIN_NOT_ALLOWED` or 5xx, and the network error when the server
   * cannot be reached: the stored session is kept, so the app can try again later.
   */
  async restore(): Promise<SessionUser | null> {
    if (this.accessToken && this.user) return this.user;
    if (this.opts.mode === 'token' && !(await this.opts.storage!.get())) return null;
    const r = await this.locked(() => this.rotate());
    switch (r.kind) {
      case 'ok':
        await this.adopt(r);
        this.loggedOut = false;
        this.emit('signedIn', { user: r.user, restored: true });
        return this.user;
      case 'dead':
        if (this.opts.mode === 'token') await this.opts.storage!.set(null);
        return null;
      case 'busy':
        throw await toApiError(r.res);
      case 'offline':
        throw r.err;
    }
  }

  /**
   * Wallet sign-in (docs/api-contract.md §5.2, docs/decisions.md §10.7): nonce, sign locally, submit.
   * `signMessage` gets the text to sign: the server's domain-bound `message` (Sign-In with
   * Ethereum / Solana) when it sends one, else the bare nonce; it returns the signature (base58
   * for Solana, 0x hex for EVM), so any wallet library plugs in.
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
    const { nonce, message } = (await nonceRes.json()) as { nonce: string; message?: string };
    const signature = await input.signMessage(message ?? nonce);
    const body: Record<string, string> = { address: input.address, chain: input.chain, signature, nonce };
    if (message !== undefined) body.message = message;
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

  private doRefresh(): Promise<string | null> {
    return this.locked(() => this.refreshOnce());
  }

  /**
   * Cookie mode: the refresh cookie is shared by every tab of the browser. Two tabs
   * presenting it at once would be a reuse (the session ends), so the request runs under
   * a lock all tabs share; the next tab then presents the cookie the first one rotated.
   */
  private locked<T>(run: () => Promise<T>): Promise<T> {
    const lock = this.opts.mode === 'cookie' ? (this.opts.refreshLock ?? webLocks()) : undefined;
    return lock ? lock(`pb-refresh:${this.opts.baseUrl}`, run) : run();
  }

  /** One `POST /auth/refresh` with the stored token (token mode) or the cookie, classified. */
  private async rotate(): Promise<Rotation> {
    let body: Record<string, string> = {};
    if (this.opts.mode === 'token') {
      const stored = await this.opts.storage!.get();
      if (stored) body = { refreshToken: stored };
    }
    let res: Response;
    try {
      res = await this.postJson('/api/v1/auth/refresh', body);
    } catch (err) {
      return { kind: 'offline', err };
    }
    // 429, 5xx and 403 ORIGIN_NOT_ALLOWED leave the session (and its cookies) as they are.
    if (res.status === 429 || res.status === 403 || res.status >= 500) return { kind: 'busy', res };
    if (!res.ok) return { kind: 'dead' };
    // A cookie refresh answers without `refreshToken` (docs/decisions.md §3.6): it lives in the cookie only.
    const out = (await res.json()) as { accessToken: string; refreshToken?: string; user: SessionUser };
    return { kind: 'ok', ...out };
  }

  private async adopt(r: Extract<Rotation, { kind: 'ok' }>) {
    this.accessToken = r.accessToken;
    this.user = { ...this.user, ...r.user };
    if (this.opts.mode === 'token' && r.refreshToken) await this.opts.storage!.set(r.refreshToken);
  }

  private async refreshOnce(): Promise<string | null> {
    const r = await this.rotate();
    switch (r.kind) {
      case 'offline':
        return this.accessToken; // network trouble is not a logout; the caller's request fails as it is
      case 'busy':
        return null;
      case 'dead':
        await this.end();
        return null;
      case 'ok':
        await this.adopt(r);
        this.emit('refreshed', { user: this.user });
        return r.accessToken;
    }
  }

  private async end() {
    this.accessToken = null;
    this.user = null;
    if (this.opts.mode === 'token') await this.opts.storage!.set(null);
    if (!this.loggedOut) {
      this.loggedOut = true;
      this.opts.onLoggedOut?.();
      this.emit('signedOut', { reason: 'expired' });
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
    const wasIn = this.accessToken !== null || this.user !== null;
    this.accessToken = null;
    this.user = null;
    this.loggedOut = true;
    if (this.opts.mode === 'token') await this.opts.storage!.set(null);
    if (wasIn) this.emit('signedOut', { reason: 'logout' });
  }

  /** The caller's live sessions, most recently used first (docs/decisions.md §10.5). */
  async listSessions(): Promise<SessionInfo[]> {
    const res = await this.authorizedFetch(this.url('/api/v1/auth/sessions'));
    if (!res.ok) throw await toApiError(res);
    return ((await res.json()) as { sessions: SessionInfo[] }).sessions;
  }

  /** Ends one session; ending the current one signs this client out too. */
  async endSession(id: string): Promise<void> {
    const current = this.accessToken ? currentSid(this.accessToken) === id : false;
    const res = await this.authorizedFetch(this.url(`/api/v1/auth/sessions/${encodeURIComponent(id)}`), { method: 'DELETE' });
    if (!res.ok) throw await toApiError(res);
    if (current) {
      this.accessToken = null;
      this.user = null;
      this.loggedOut = true;
      if (this.opts.mode === 'token') await this.opts.storage!.set(null);
      this.emit('signedOut', { reason: 'ended' });
    }
  }

  /** Ends every session but this one; resolves how many were ended. */
  async endOtherSessions(): Promise<number> {
    const res = await this.authorizedFetch(this.url('/api/v1/auth/sessions'), { method: 'DELETE' });
    if (!res.ok) throw await toApiError(res);
    return ((await res.json()) as { revoked: number }).revoked;
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

/** The `sid` claim of an access token (its session), read without verifying: only to compare ids. */
function currentSid(accessToken: string): string | undefined {
  try {
    const part = accessToken.split('.')[1] ?? '';
    const json = atob(
      part
        .replace(/-/g, '+')
        .replace(/_/g, '/')
        .padEnd(Math.ceil(part.length / 4) * 4, '='),
    );
    const sid = (JSON.parse(json) as { sid?: unknown }).sid;
    return typeof sid === 'string' ? sid : undefined;
  } catch {
    return undefined;
  }
}

export { ApiError };
