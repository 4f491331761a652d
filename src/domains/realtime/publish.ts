import { EventEmitter } from 'node:events';
import fp from 'fastify-plugin';
import type { Published, PublishFn } from './channels.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The one way domains reach live clients: publish(channel, event, payload),
     * typed against the realtime contract. The realtime plugin forwards it to
     * Socket.IO rooms (across instances with Redis).
     */
    publish: PublishFn;
    /** In-process bus behind publish() (untyped transport); the realtime plugin and tests listen on it. */
    bus: EventEmitter<{ publish: [Published] }>;
  }
}

/**
 * `app.publish` and the bus behind it, registered before the domains that
 * publish (the realtime plugin, registered after them, listens on the bus).
 */
export const publishPlugin = fp(
  async (app) => {
    const bus = new EventEmitter<{ publish: [Published] }>();
    bus.setMaxListeners(0);
    app.decorate('bus', bus);
    const publish: PublishFn = (channel, event, payload) => {
      bus.emit('publish', { channel, event, payload });
    };
    app.decorate('publish', publish);
  },
  { name: 'publish', fastify: '5.x', dependencies: [] },
);
