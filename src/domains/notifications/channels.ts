import type { NotificationChannel } from '../../lib/notify-types.js';
import { pushChannel } from '../push/channel.js';
import { messengerChannel } from '../messenger/channel.js';

/**
 * The Socket.IO room of a user's notification stream. The realtime plugin maps
 * a client's `user:notifications` subscription to exactly this name.
 */
export const userNotificationsChannel = (userId: string) => `user:${userId}:notifications`;

/**
 * Every out-of-app delivery channel of the notify path. notify() writes one
 * outbox row per element and the delivery worker resolves rows by `name`, so
 * adding a channel (e.g. the messenger) is appending one element here.
 */
export const deliveryChannels: NotificationChannel[] = [pushChannel, messengerChannel];
