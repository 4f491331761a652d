import type { NotificationChannel } from '../notifications/types.js';
import { deliverPush } from './service.js';

/** The push (Expo) channel of the notify path. */
export const pushChannel: NotificationChannel = { name: 'push', deliver: deliverPush };
