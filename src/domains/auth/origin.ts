import type { Config } from '../../config.js';
import type { IssuedMessage } from './wallet-message.js';

/** What the origin rules read from a request: a few headers and how it reached us. */
export interface RequestOriginInfo {
  origin?: string;
  secFetchSite?: string;
  host?: string;
  /** `https` or `http` (X-Forwarded-Proto only from a trusted proxy). */
  protocol: 'http' | 'https';
}

const AUTHORITY =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

type OriginConfig = Pick<Config, 'CORS_ORIGINS' | 'SIGN_IN_DOMAIN' | 'SIGN_IN_URI'>;
type TargetConfig = OriginConfig & Pick<Config, 'HOST' | 'PORT'>;

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '*']);

/** `HOST:PORT` of the listener, 127.0.0.1 for a wildcard HOST, IPv6 literals bracketed. */
function listeningAuthority(config: Pick<Config, 'HOST' | 'PORT'>): string {
  const host = WILDCARD_HOSTS.has(config.HOST) ? '127.0.0.1' : config.HOST;
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${shown}:${config.PORT}`;
}

/**
 * The service's own origin (docs/decisions.md §10.4): the scheme and host of
 * SIGN_IN_URI when set, else of the request (`Host`, and X-Forwarded-Proto
 * from a trusted proxy). Undefined when the Host header is not a host.
 */
function ownOrigin(config: OriginConfig, req: RequestOriginInfo): string | undefined {
  if (config.SIGN_IN_URI) return new URL(config.SIGN_IN_URI).origin;
  const host = req.host?.toLowerCase();
  if (!host || !AUTHORITY.test(host)) return undefined;
  return new URL(`${req.protocol}://${host}`).origin;
}

const SAFE_FETCH_SITES = new Set(['none', 'same-origin', 'same-site']);

/**
 * docs/decisions.md §10.4: may a refresh that takes its token from the cookie
 * go ahead? The Origin must be listed in CORS_ORIGINS or be our own
 * (`Origin: null` never is); without an Origin, Sec-Fetch-Site must be absent
 * or say the request did not come from another site.
 */
export function cookieRefreshAllowed(config: OriginConfig, req: RequestOriginInfo): boolean {
  if (req.origin !== undefined) {
    if (req.origin === 'null') return false;
    let origin: string;
    try {
      origin = new URL(req.origin).origin;
    } catch {
      return false;
    }
    return config.CORS_ORIGINS.includes(origin) || origin === ownOrigin(config, req);
  }
  return req.secFetchSite === undefined || SAFE_FETCH_SITES.has(req.secFetchSite.toLowerCase());
}

/**
 * docs/decisions.md §10.7: the domain and URI of the ready-to-sign message.
 * SIGN_IN_DOMAIN / SIGN_IN_URI when set (one derives the other); else the
 * page the wallet is asked from, when its Origin is listed in CORS_ORIGINS;
 * else (production requires SIGN_IN_DOMAIN and SIGN_IN_URI) the listening
 * address over http. Never the request's Host or X-Forwarded-Host: a phishing
 * site could otherwise have us issue a message in its own name.
 */
export function messageTarget(config: TargetConfig, req: Pick<RequestOriginInfo, 'origin'>): IssuedMessage {
  if (config.SIGN_IN_DOMAIN || config.SIGN_IN_URI) {
    const uri = config.SIGN_IN_URI ?? `https://${config.SIGN_IN_DOMAIN}`;
    return { domain: config.SIGN_IN_DOMAIN ?? new URL(uri).host, uri };
  }
  if (req.origin !== undefined && config.CORS_ORIGINS.includes(req.origin)) {
    return { domain: new URL(req.origin).host, uri: req.origin };
  }
  const domain = listeningAuthority(config);
  return { domain, uri: `http://${domain}` };
}
