import { checkPushReceipts } from '../domains/push/service.js';
import type { JobDefinition } from './types.js';

/**
 * docs/decisions.md §6, §9: every 5 minutes, Expo receipts of the push
 * tickets at least 15 minutes old; DeviceNotRegistered removes the device.
 */
export const pushReceiptsJob: JobDefinition = {
  name: 'push-receipts',
  schedule: '*/5 * * * *',
  run: async (deps) => {
    const r = await checkPushReceipts(deps);
    return { items: r.checked };
  },
};
