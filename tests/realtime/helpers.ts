import { randomUUID } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { io as connectClient, type Socket as ClientSocket, type ManagerOptions, type SocketOptions } from 'socket.io-client';
import type { FastifyInstance } from 'fastify';
import type { Ack, MarketUpdate, NotificationMessage } from '../../src/domains/realtime/schemas.js';

export const TEST_JWT_SECRET = 'test-secret-test-secret-test-secret-0123456789';

/** An access token as the auth domain signs it, with a chosen lifetime (ms) or secret. */
export function signToken(userId: string, opts: { expiresInMs?: number; secret?: string } = {}): string {
  const sign = createSigner({ key: opts.secret ?? TEST_JWT_SECRET, algorithm: 'HS256', expiresIn: opts.expiresInMs ?? 15 * 60_000 });
  return sign({ sub: userId, walletAddress: `0x${userId.replace(/-/g, '').slice(0, 32).padEnd(40, '0')}`, chain: 'evm' });
}

/** A `market:update` payload as price-sync publishes it. */
export function marketUpdate(marketId: string, yesPrice = 0.42): MarketUpdate {
  return { marketId, yesPrice, volume: 1000, timestamp: new Date().toISOString() };
}

/**
 * A `notification` payload as the notifications domain publishes it. `seq` defaults to 1: the
 * first event of a user with nothing stored (the stream hand-out puts a user's events in seq order).
 */
export function notificationMessage(id: string, extra: Partial<NotificationMessage> = {}): NotificationMessage {
  return {
    id,
    type: 'order_filled',
    title: 'Order filled',
    message: 'Your order was filled',
    read: false,
    data: { orderId: 'o1', marketId: 'pm-1' },
    createdAt: new Date().toISOString(),
    seq: 1,
    unreadCount: 1,
    ...extra,
  };
}

export function newUserId(): string {
  return randomUUID();
}

export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

export type Client = ClientSocket;

type ConnectOptions = Partial<ManagerOptions & SocketOptions> & { token?: unknown };

const open = new Set<ClientSocket>();

/** A connected client, or a rejection carrying the server's connect_error. */
export function connect(url: string, opts: ConnectOptions = {}): Promise<ClientSocket> {
  const { token, ...rest } = opts;
  const socket = connectClient(url, {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    timeout: 10_000,
    auth: token === undefined ? {} : { token },
    ...rest,
  });
  open.add(socket);
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('connect_error', (err: Error & { data?: unknown }) => {
      socket.close();
      open.delete(socket);
      reject(err);
    });
  });
}

/** The connect_error message (e.g. 'UNAUTHORIZED') of a refused connection. */
export async function refusal(url: string, opts: ConnectOptions = {}): Promise<string> {
  try {
    const s = await connect(url, opts);
    s.close();
    return 'CONNECTED';
  } catch (err) {
    return (err as Error).message;
  }
}

export function closeAll() {
  for (const s of open) s.close();
  open.clear();
}

export function ack(socket: ClientSocket, event: string, payload?: unknown): Promise<Ack> {
  return socket.timeout(5_000).emitWithAck(event, payload) as Promise<Ack>;
}

/** The next `event` on socket, or a rejection after ms. */
export function next<T = unknown>(socket: ClientSocket, event: string, ms = 5_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.off(event, on);
      reject(new Error(`no ${event} within ${ms} ms`));
    }, ms);
    const on = (payload: T) => {
      clearTimeout(timer);
      resolve(payload);
    };
    socket.once(event, on);
  });
}

/** Collects every `event` a socket receives, to assert later that something did NOT arrive. */
export function record(socket: ClientSocket, event: string): unknown[] {
  const seen: unknown[] = [];
  socket.on(event, (p: unknown) => seen.push(p));
  return seen;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
