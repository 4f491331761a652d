import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * The client address of docs/decisions.md §10.1, one function for HTTP and
 * Socket.IO. `X-Forwarded-For` is written by whoever sends the request: only
 * the hops our own load balancers appended can be believed, so the walk starts
 * at the socket peer and moves left only while the current address is one of
 * the TRUST_PROXY list. The first untrusted address is the client.
 */

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

/** A parsed TRUST_PROXY list: addresses and CIDR ranges. Empty = trust nobody. */
export interface TrustedProxies {
  readonly ranges: ReadonlyArray<[Addr, number]>;
}

/** Strict parse (Node's isIP: no `127.1`, no hex octets); IPv4-mapped IPv6 becomes IPv4. */
function parseIp(raw: string): Addr | undefined {
  const s = raw.trim();
  if (s === '' || isIP(s) === 0) return undefined;
  const a = ipaddr.parse(s);
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) return (a as ipaddr.IPv6).toIPv4Address();
  return a;
}

/**
 * One `X-Forwarded-For` hop. Some proxies append the peer with its port
 * (`1.2.3.4:5678`, `[2001:db8::1]:443`, issue #34): the port is dropped so the
 * hop still names the client instead of ending the walk at the proxy. A bare
 * IPv6 address keeps its colons (only the bracketed form carries a port).
 */
function parseHop(raw: string): Addr | undefined {
  const s = raw.trim();
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(s);
  if (v4) return parseIp(v4[1]);
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?$/.exec(s);
  if (v6) return isIP(v6[1]) === 6 ? parseIp(v6[1]) : undefined;
  return parseIp(s);
}

/** One entry of TRUST_PROXY: an address or a CIDR range; undefined when it is neither. */
export function parseProxyEntry(entry: string): [Addr, number] | undefined {
  const s = entry.trim();
  const slash = s.indexOf('/');
  if (slash < 0) {
    const a = parseIp(s);
    return a ? [a, a.kind() === 'ipv4' ? 32 : 128] : undefined;
  }
  const base = s.slice(0, slash);
  const bitsText = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText) || isIP(base) === 0) return undefined;
  const bits = Number(bitsText);
  const a = ipaddr.parse(base);
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return [(a as ipaddr.IPv6).toIPv4Address(), bits - 96];
  }
  if (bits > (a.kind() === 'ipv4' ? 32 : 128)) return undefined;
  return [a, bits];
}

export function createTrustedProxies(entries: readonly string[]): TrustedProxies {
  const ranges: [Addr, number][] = [];
  for (const e of entries) {
    const r = parseProxyEntry(e);
    if (!r) throw new Error(`not an IP address or CIDR range: ${e}`);
    ranges.push(r);
  }
  return { ranges };
}

function isTrusted(addr: Addr, trusted: TrustedProxies): boolean {
  for (const [range, bits] of trusted.ranges) {
    if (range.kind() === addr.kind() && addr.match(range, bits)) return true;
  }
  return false;
}

/** The canonical text of an address: dotted IPv4, RFC 5952 IPv6. */
function show(a: Addr): string {
  return a.toString();
}

/**
 * docs/decisions.md §10.1: the client address for a request that reached us
 * from `peer` carrying `forwardedFor`. Without trusted proxies it is the peer.
 * An entry that is not an IP address ends the walk at the last valid address
 * reached (so a forged `garbage` entry never becomes a limiter key); an
 * address with a port counts as the address.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: TrustedProxies | undefined,
): string {
  const start = peer === undefined ? undefined : parseIp(peer);
  if (!start) return 'unknown';
  if (!trusted || trusted.ranges.length === 0 || !isTrusted(start, trusted) || forwardedFor === undefined) return show(start);
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  const hops = header.split(',');
  let current = start;
  for (let i = hops.length - 1; i >= 0; i--) {
    const next = parseHop(hops[i]);
    if (!next) return show(current);
    current = next;
    if (!isTrusted(current, trusted)) return show(current);
  }
  return show(current); // every entry trusted: the left-most one
}

/** Whether the socket peer itself is one of the trusted proxies (then its X-Forwarded-Proto counts). */
export function peerIsTrustedProxy(peer: string | undefined, trusted: TrustedProxies | undefined): boolean {
  const a = peer === undefined ? undefined : parseIp(peer);
  return !!a && !!trusted && isTrusted(a, trusted);
}

/**
 * The key every per-IP limit counts under: an IPv4 address as is, an IPv6
 * address by its /64 (one subscriber's allocation; the rest of the address is
 * the client's to choose).
 */
export function addressKey(address: string): string {
  const a = parseIp(address);
  if (!a) return address;
  if (a.kind() === 'ipv4') return show(a);
  const parts = (a as ipaddr.IPv6).parts;
  return `${parts
    .slice(0, 4)
    .map((p) => p.toString(16))
    .join(':')}::/64`;
}

/**
 * The wider IPv6 networks a per-IP key belongs to, for ceilings above the /64
 * (a subscriber's /56 or a site's /48 holds 256 or 65,536 /64s): the /56 and
 * /48 of an IPv6 address or /64 key; none for IPv4.
 */
export function networkKeys(key: string): { net56: string; net48: string } | undefined {
  const a = parseIp(key.endsWith('/64') ? key.slice(0, -3) : key);
  if (!a || a.kind() !== 'ipv6') return undefined;
  const parts = (a as ipaddr.IPv6).parts;
  const hex = (p: number) => p.toString(16);
  return {
    net56: `${parts.slice(0, 3).map(hex).join(':')}:${hex(parts[3] & 0xff00)}::/56`,
    net48: `${parts.slice(0, 3).map(hex).join(':')}::/48`,
  };
}
