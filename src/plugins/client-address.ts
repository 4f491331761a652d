import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { addressKey, clientAddress, createTrustedProxies, peerIsTrustedProxy, type TrustedProxies } from '../lib/client-address.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The TRUST_PROXY list, parsed (docs/decisions.md §10.1); the realtime handshake uses it too. */
    trustedProxies: TrustedProxies;
  }
  interface FastifyRequest {
    /** The client's address (docs/decisions.md §10.1): never a value the client can choose. */
    readonly clientAddress: string;
    /** What per-IP limits count: the address, or its /64 for IPv6. */
    readonly clientKey: string;
    /** `https` or `http`: X-Forwarded-Proto when the peer is a trusted proxy, else the socket's own. */
    readonly clientProtocol: 'http' | 'https';
  }
}

const ADDRESS = Symbol('clientAddress');
type Cached = FastifyRequest & { [ADDRESS]?: string };

/**
 * Fastify's own `trustProxy` is left off: its address is the left-most
 * forwarded hop (client-written) or, with a hop count, the socket peer
 * (Fastify 5.12). Every per-IP limit reads `request.clientKey` instead.
 */
export const clientAddressPlugin = fp(
  async (app) => {
    const trusted = createTrustedProxies(app.config.TRUST_PROXY);
    app.decorate('trustedProxies', trusted);
    app.decorateRequest('clientAddress', {
      getter(this: FastifyRequest) {
        const self = this as Cached;
        return (self[ADDRESS] ??= clientAddress(this.raw.socket?.remoteAddress, this.headers['x-forwarded-for'], trusted));
      },
    });
    app.decorateRequest('clientKey', {
      getter(this: FastifyRequest) {
        return addressKey(this.clientAddress);
      },
    });
    app.decorateRequest('clientProtocol', {
      getter(this: FastifyRequest) {
        if (peerIsTrustedProxy(this.raw.socket?.remoteAddress, trusted)) {
          const proto = this.headers['x-forwarded-proto'];
          const first = (Array.isArray(proto) ? proto[0] : proto)?.split(',')[0]?.trim().toLowerCase();
          if (first === 'https' || first === 'http') return first;
        }
        return (this.raw.socket as { encrypted?: boolean } | undefined)?.encrypted ? 'https' : 'http';
      },
    });
  },
  { name: 'client-address', fastify: '5.x', dependencies: ['context'] },
);
