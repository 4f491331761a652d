import { EventEmitter } from 'node:events';
import fp from 'fastify-plugin';

/** Stored data a job changed; per-instance read caches listen (src/domains/events, src/domains/leaderboard). */
export type DataTopic = 'events' | 'leaderboard';

/**
 * In-process signals, apart from the socket bus: a job emits `dataChanged`
 * after it writes, and the domain plugins drop their cached reads. They reach
 * this instance only; other instances' caches expire on their own TTL.
 */
export type Signals = EventEmitter<{
  dataChanged: [topic: DataTopic];
  /** A change to this user's notifications reached its stream, from this instance or another one (notifications/stream-hub.ts). */
  userStreamChanged: [userId: string];
  /** A `market:<id>` room of this instance got its first socket (open) or lost its last (the realtime layer; the hot-market registry listens). */
  marketRoom: [marketId: string, open: boolean];
}>;

declare module 'fastify' {
  interface FastifyInstance {
    /** Cache-invalidation and wiring signals inside this process (not sent to clients). */
    signals: Signals;
  }
}

export const signalsPlugin = fp(
  async (app) => {
    const signals: Signals = new EventEmitter();
    signals.setMaxListeners(0);
    app.decorate('signals', signals);
  },
  { name: 'signals', fastify: '5.x', dependencies: [] },
);
