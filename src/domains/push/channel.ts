import { sql } from 'drizzle-orm';
import { createSemaphore, type Semaphore } from '../../lib/semaphore.js';
import { fingerprint } from '../notifications/delivery.js';
import type { NotificationChannel } from '../notifications/types.js';
import { deliverPushRows, type PushChannelOptions } from './service.js';

/**
 * The push (Expo) channel of the notify path, one per app: its request gate
 * (at most 6 in flight on this instance, docs/decisions.md §13.2) is shared
 * by every delivery run of the app.
 */
export function createPushChannel(opts: PushChannelOptions = {}): NotificationChannel & { gate: Semaphore } {
  const gate = createSemaphore(opts.maxInFlight ?? 6);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return {
    name: 'push',
    targetKind: 'device',
    targets: sql`select user_id, token as target from push_devices`,
    gate,
    deliver: (ctx, rows) => deliverPushRows(ctx, rows, { gate, timeoutMs, pausedBy: {} }),
    credentialHash: (config) => fingerprint(config.PUSH_ACCESS_TOKEN),
  };
}
