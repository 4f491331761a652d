import { describe, expect, it } from 'vitest';
import { addressKey, clientAddress, createTrustedProxies } from '../src/lib/client-address.js';

/** docs/decisions.md §10.1, the one function behind HTTP and Socket.IO limits. */
describe('clientAddress', () => {
  const lb = createTrustedProxies(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);

  it('is the socket peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress('::ffff:127.0.0.1', '198.51.100.7', createTrustedProxies([]))).toBe('127.0.0.1');
    expect(clientAddress('203.0.113.9', '198.51.100.7', undefined)).toBe('203.0.113.9');
    expect(clientAddress(undefined, '198.51.100.7', lb)).toBe('unknown');
  });

  it('is the peer when the peer is not a listed proxy (a client talking to us directly)', () => {
    expect(clientAddress('203.0.113.9', '198.51.100.7, 10.0.0.1', lb)).toBe('203.0.113.9');
  });

  it('walks from the right while the hops are trusted: the first untrusted one is the client', () => {
    // The client wrote "1.1.1.1" itself; the LB appended the real peer 198.51.100.7.
    expect(clientAddress('10.0.0.2', '1.1.1.1, 198.51.100.7', lb)).toBe('198.51.100.7');
    expect(clientAddress('127.0.0.1', '1.1.1.1, 198.51.100.7, 10.1.2.3', lb)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.2', ['1.1.1.1', '198.51.100.7, 10.9.9.9'], lb)).toBe('198.51.100.7');
  });

  it('rotating the left-most entries changes nothing', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 30; i++) seen.add(clientAddress('10.0.0.2', `192.0.2.${i}, 198.51.100.7`, lb));
    expect([...seen]).toEqual(['198.51.100.7']);
  });

  it('is the left-most entry when every hop is trusted, and the peer when there is no header', () => {
    expect(clientAddress('10.0.0.2', '10.0.0.5, 10.0.0.3', lb)).toBe('10.0.0.5');
    expect(clientAddress('10.0.0.2', undefined, lb)).toBe('10.0.0.2');
  });

  it('a non-IP entry ends the walk at the last valid address reached', () => {
    expect(clientAddress('10.0.0.2', 'garbage', lb)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', '198.51.100.7, garbage, 10.0.0.9', lb)).toBe('10.0.0.9');
    expect(clientAddress('10.0.0.2', '198.51.100.7, 1.2.3.4:80:90', lb)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', '[1.2.3.4]:80', lb)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', 'x'.repeat(16_000), lb)).toBe('10.0.0.2');
    expect(clientAddress('10.0.0.2', '127.1', lb)).toBe('10.0.0.2'); // not a strict dotted quad
    expect(clientAddress('10.0.0.2', ', ', lb)).toBe('10.0.0.2');
  });

  it('drops the port a proxy appended to a hop (IPv4 a.b.c.d:port, IPv6 [addr]:port)', () => {
    // Before: the hop with a port ended the walk and the proxy became the client.
    expect(clientAddress('10.0.0.2', '1.1.1.1, 198.51.100.7:5678', lb)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.2', '198.51.100.7, 10.0.0.9:443', lb)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.2', '[2001:db8::7]:5678', lb)).toBe('2001:db8::7');
    expect(clientAddress('10.0.0.2', '[2001:DB8::7]', lb)).toBe('2001:db8::7');
    expect(clientAddress('10.0.0.2', '[::ffff:198.51.100.7]:80', lb)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.2', '198.51.100.7, [fd00::3]:443', lb)).toBe('198.51.100.7');
    // A bare IPv6 address is not read as address:port.
    expect(clientAddress('10.0.0.2', '2001:db8::7:80', lb)).toBe('2001:db8::7:80');
  });

  it('counts IPv4-mapped IPv6 as IPv4, in the list and in the header', () => {
    expect(clientAddress('::ffff:10.0.0.2', '::ffff:198.51.100.7', lb)).toBe('198.51.100.7');
    expect(clientAddress('10.0.0.2', '::ffff:10.0.0.7, ::ffff:10.0.0.8', lb)).toBe('10.0.0.7');
    const mappedList = createTrustedProxies(['::ffff:192.0.2.1']);
    expect(clientAddress('192.0.2.1', '198.51.100.7', mappedList)).toBe('198.51.100.7');
  });

  it('handles IPv6 proxies and clients, shown in canonical form', () => {
    expect(clientAddress('fd00::1', '2001:DB8:0:0:0:0:0:1, fd12::2', lb)).toBe('2001:db8::1');
  });

  it('refuses list entries that are not addresses or ranges', () => {
    expect(() => createTrustedProxies(['10.0.0.0/8', 'nope'])).toThrow(/nope/);
    expect(() => createTrustedProxies(['10.0.0.0/40'])).toThrow();
  });
});

describe('addressKey (what per-IP limits count)', () => {
  it('is the address for IPv4 and the /64 for IPv6', () => {
    expect(addressKey('198.51.100.7')).toBe('198.51.100.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressKey('::ffff:198.51.100.7')).toBe('198.51.100.7');
  });
});
