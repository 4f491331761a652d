import type { Config } from '../../config.js';
import { requestJson } from '../../lib/http.js';

/**
 * A small adapter for the Expo push HTTP API. expo-server-sdk is not used: it
 * reads its base URL from process.env.EXPO_BASE_URL once, when the module
 * loads, so it cannot be pointed at PUSH_API_URL per app (and this service
 * reads the environment only in server.ts).
 */
export const EXPO_SEND_PATH = '/--/api/v2/push/send';
export const EXPO_RECEIPTS_PATH = '/--/api/v2/push/getReceipts';
/** Expo accepts at most 100 messages per send request and we chunk receipt ids by 300. */
export const EXPO_SEND_BATCH = 100;
export const EXPO_RECEIPT_BATCH = 300;

export interface ExpoMessage {
  to: string;
  title?: string;
  body?: string;
  data?: Record<string, unknown>;
  sound?: 'default' | null;
  priority?: 'default' | 'normal' | 'high';
}

export type ExpoTicket =
  { status: 'ok'; id: string } | { status: 'error'; message?: string; details?: { error?: string; [k: string]: unknown } };

export type ExpoReceipt = { status: 'ok' } | { status: 'error'; message?: string; details?: { error?: string; [k: string]: unknown } };

function headers(config: Config): Record<string, string> {
  const h: Record<string, string> = { 'accept-encoding': 'gzip, deflate' };
  if (config.PUSH_ACCESS_TOKEN) h.authorization = `Bearer ${config.PUSH_ACCESS_TOKEN}`;
  return h;
}

export function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * One send request (≤ 100 messages), one attempt (the delivery ledger owns
 * retries and their backoff); tickets come back in request order. Throws
 * UpstreamError on a whole-request failure.
 */
export async function sendExpoBatch(config: Config, messages: ExpoMessage[], opts: { timeoutMs?: number } = {}): Promise<ExpoTicket[]> {
  if (messages.length > EXPO_SEND_BATCH) throw new Error(`at most ${EXPO_SEND_BATCH} messages per Expo request`);
  const res = await requestJson<{ data?: ExpoTicket[] }>(config.PUSH_API_URL + EXPO_SEND_PATH, {
    method: 'POST',
    headers: headers(config),
    json: messages,
    attempts: 1,
    timeoutMs: opts.timeoutMs ?? 10_000,
  });
  const tickets = Array.isArray(res?.data) ? res.data : [];
  if (tickets.length !== messages.length) {
    throw new Error(`Expo answered ${tickets.length} tickets for ${messages.length} messages`);
  }
  return tickets;
}

/** Receipts for ticket ids (≤ 300); ids Expo does not know (yet, or purged) are absent. */
export async function getExpoReceipts(config: Config, ids: string[]): Promise<Record<string, ExpoReceipt>> {
  const res = await requestJson<{ data?: Record<string, ExpoReceipt> }>(config.PUSH_API_URL + EXPO_RECEIPTS_PATH, {
    method: 'POST',
    headers: headers(config),
    json: { ids },
    attempts: 2,
    timeoutMs: 10_000,
  });
  return res?.data && typeof res.data === 'object' ? res.data : {};
}
