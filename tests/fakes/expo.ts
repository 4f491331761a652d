import { randomUUID } from 'node:crypto';
import { startFakeServer, type FakeServer } from './server.js';

/**
 * A fake Expo push service speaking the real wire format
 * (docs: push-notifications/sending-notifications):
 *  POST /--/api/v2/push/send         body: message or array of ≤ 100 → { data: tickets[] } in order
 *  POST /--/api/v2/push/getReceipts  body: { ids } → { data: { [id]: receipt } } (unknown ids omitted)
 * Tokens in `unregistered` get a DeviceNotRegistered ticket; tokens in
 * `failOnReceipt` get an ok ticket whose receipt says DeviceNotRegistered;
 * `ticketErrors` gives a token any other ticket error (MessageTooBig,
 * MessageRateExceeded, InvalidCredentials, …). `faults` makes a share of the
 * send requests answer 5xx or hang (a timeout on the caller's side); neither
 * accepts its messages. Every accepted message is recorded with its time, and
 * the most send requests ever in flight at once is kept (docs/decisions.md §13.2).
 */
export interface SentMessage {
  to: string;
  title?: string;
  body?: string;
  data?: Record<string, unknown>;
}

export interface ExpoFaults {
  /** Share of send requests answered 500–503 (0–1). */
  serverErrorRate?: number;
  /** Share of send requests that hang `hangMs` and then answer 504. */
  timeoutRate?: number;
  hangMs?: number;
  /** Every send request takes this long to answer (so requests overlap). */
  latencyMs?: number;
}

export interface FakeExpo {
  server: FakeServer;
  /** Every accepted message with its acceptance time (Date.now()). */
  accepted: Array<{ to: string; notificationId: unknown; at: number }>;
  /** Per-token ticket errors: token → Expo error code. */
  ticketErrors: Map<string, string>;
  faults: ExpoFaults;
  /** Send requests in flight now, and the most at once. */
  inFlight: { now: number; peak: number };
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
    accepted: [] as Array<{ to: string; notificationId: unknown; at: number }>,
    ticketErrors: new Map<string, string>(),
    faults: {} as ExpoFaults,
    inFlight: { now: 0, peak: 0 },
  };
  const tooMany = (n: number) => ({
    status: 400,
    body: {
      errors: [
        { code: 'PUSH_TOO_MANY_NOTIFICATIONS', message: `You are trying to send more than 100 push notifications in one request (${n}).` },
      ],
    },
  });

  server.on('POST', '/--/api/v2/push/send', async (req) => {
    state.inFlight.now++;
    state.inFlight.peak = Math.max(state.inFlight.peak, state.inFlight.now);
    try {
      return await send(req);
    } finally {
      state.inFlight.now--;
    }
  });
  const send = async (req: { body: unknown }) => {
    // Every request waits a turn, so requests sent together overlap here as they would at Expo.
    await new Promise((r) => setImmediate(r));
    const f = state.faults;
    if (f.latencyMs) await new Promise((r) => setTimeout(r, f.latencyMs));
    const roll = Math.random();
    if (f.serverErrorRate && roll < f.serverErrorRate) {
      return { status: 500 + Math.floor(Math.random() * 4), body: { errors: [{ code: 'INTERNAL_SERVER_ERROR', message: 'fault' }] } };
    }
    if (f.timeoutRate && roll < (f.serverErrorRate ?? 0) + f.timeoutRate) {
      await new Promise((r) => setTimeout(r, f.hangMs ?? 15_000));
      return { status: 504, body: { errors: [{ code: 'GATEWAY_TIMEOUT', message: 'fault' }] } };
    }
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
      const code = state.ticketErrors.get(m.to);
      if (code) return { status: 'error', message: `fake ${code}`, details: { error: code } };
      const id = randomUUID();
      state.tickets.set(id, m.to);
      state.accepted.push({ to: m.to, notificationId: m.data?.notificationId, at: Date.now() });
      return { status: 'ok', id };
    });
    return { body: { data } };
  };

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
      state.accepted.length = 0;
      state.ticketErrors.clear();
      for (const k of Object.keys(state.faults)) delete state.faults[k as keyof ExpoFaults];
      state.inFlight.peak = state.inFlight.now;
    },
    close: () => server.close(),
  };
}
