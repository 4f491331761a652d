import { randomUUID } from 'node:crypto';
import { startFakeServer, type FakeServer } from './server.js';

/**
 * A fake Expo push service speaking the real wire format
 * (docs: push-notifications/sending-notifications):
 *  POST /--/api/v2/push/send         body: message or array of ≤ 100 → { data: tickets[] } in order
 *  POST /--/api/v2/push/getReceipts  body: { ids } → { data: { [id]: receipt } } (unknown ids omitted)
 * Tokens in `unregistered` get a DeviceNotRegistered ticket; tokens in
 * `failOnReceipt` get an ok ticket whose receipt says DeviceNotRegistered.
 */
export interface SentMessage {
  to: string;
  title?: string;
  body?: string;
  data?: Record<string, unknown>;
}

export interface FakeExpo {
  server: FakeServer;
  url: string;
  /** Every message accepted by /send, in order. */
  messages: SentMessage[];
  /** Sizes of the /send requests. */
  batches: number[];
  unregistered: Set<string>;
  failOnReceipt: Set<string>;
  /** Tickets issued: id → token. */
  tickets: Map<string, string>;
  /** Tickets whose receipts are not ready yet (omitted from getReceipts). */
  pending: Set<string>;
  reset(): void;
  close(): Promise<void>;
}

export async function startFakeExpo(): Promise<FakeExpo> {
  const server = await startFakeServer();
  const state = {
    messages: [] as SentMessage[],
    batches: [] as number[],
    unregistered: new Set<string>(),
    failOnReceipt: new Set<string>(),
    tickets: new Map<string, string>(),
    pending: new Set<string>(),
  };
  const tooMany = (n: number) => ({
    status: 400,
    body: {
      errors: [
        { code: 'PUSH_TOO_MANY_NOTIFICATIONS', message: `You are trying to send more than 100 push notifications in one request (${n}).` },
      ],
    },
  });

  server.on('POST', '/--/api/v2/push/send', (req) => {
    const list = (Array.isArray(req.body) ? req.body : [req.body]) as SentMessage[];
    if (list.length > 100) return tooMany(list.length);
    if (list.some((m) => !m || typeof m.to !== 'string')) {
      return { status: 400, body: { errors: [{ code: 'VALIDATION_ERROR', message: '"to" is required' }] } };
    }
    state.batches.push(list.length);
    const data = list.map((m) => {
      state.messages.push(m);
      if (state.unregistered.has(m.to)) {
        return {
          status: 'error',
          message: `"${m.to}" is not a registered push notification recipient`,
          details: { error: 'DeviceNotRegistered', expoPushToken: m.to },
        };
      }
      const id = randomUUID();
      state.tickets.set(id, m.to);
      return { status: 'ok', id };
    });
    return { body: { data } };
  });

  server.on('POST', '/--/api/v2/push/getReceipts', (req) => {
    const ids = ((req.body as { ids?: unknown })?.ids ?? []) as string[];
    if (!Array.isArray(ids)) return { status: 400, body: { errors: [{ code: 'VALIDATION_ERROR', message: '"ids" must be an array' }] } };
    const data: Record<string, unknown> = {};
    for (const id of ids) {
      const token = state.tickets.get(id);
      if (!token || state.pending.has(id)) continue;
      data[id] = state.failOnReceipt.has(token)
        ? {
            status: 'error',
            message: `"${token}" is not a registered push notification recipient`,
            details: { error: 'DeviceNotRegistered' },
          }
        : { status: 'ok' };
    }
    return { body: { data } };
  });

  return {
    server,
    url: server.url,
    ...state,
    reset() {
      server.reset();
      state.messages.length = 0;
      state.batches.length = 0;
      state.unregistered.clear();
      state.failOnReceipt.clear();
      state.tickets.clear();
      state.pending.clear();
    },
    close: () => server.close(),
  };
}
