import type { NotificationChannel } from '../../lib/notify-types.js';
import { deliverPush } from './service.js';

/** The push (Expo) channel of the notify path. */
export const pushChannel: NotificationChannel = { name: 'push', deliver: deliverPush };
