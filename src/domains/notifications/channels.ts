import type { NotificationChannel } from '../../lib/notify-types.js';
import { pushChannel } from '../push/channel.js';
import { messengerChannel } from '../messenger/channel.js';

/** The room a client's `user:notifications` subscription joins; owned by the realtime domain. */
export { userNotificationsChannel } from '../realtime/channels.js';

/**
 * Every out-of-app delivery channel of the notify path. notify() writes one
 * outbox row per element and the delivery worker resolves rows by `name`, so
 * adding a channel (e.g. the messenger) is appending one element here.
 */
export const deliveryChannels: NotificationChannel[] = [pushChannel, messengerChannel];
