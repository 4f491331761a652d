import { describe, expect, it } from 'vitest';
import { parseChannel, userNotificationsChannel } from '../../src/domains/realtime/channels.js';
import { resolveSubscribe, resolveUnsubscribe } from '../../src/domains/realtime/service.js';

const alice = { id: '3f1c2a9e-0d4b-4a7e-9c1f-1a2b3c4d5e6f', walletAddress: '0xabc', chain: 'evm' as const };

describe('channel names', () => {
  it('parses the four channel forms and nothing else', () => {
    expect(parseChannel('market:pm-512357')).toEqual({ kind: 'market', room: 'market:pm-512357' });
    expect(parseChannel('monitor:events-sync')).toEqual({ kind: 'monitor', room: 'monitor:events-sync' });
    expect(parseChannel(`user:${alice.id}`)).toEqual({ kind: 'user', userId: alice.id, room: `user:${alice.id}` });
    expect(parseChannel('user:notifications')).toEqual({ kind: 'notifications' });
    for (const bad of [
      'market',
      'market:',
      'market:-x',
      'market:a b',
      'markets:x',
      'monitor:Caps',
      `user:${alice.id}:notifications`,
      'user:a_b',
      '',
    ])
      expect(parseChannel(bad), bad).toBeUndefined();
  });

  it('maps user:notifications to the caller’s own room, the one the notifications domain publishes to', () => {
    expect(resolveSubscribe('user:notifications', alice)).toEqual({ ok: true, room: userNotificationsChannel(alice.id) });
    expect(resolveSubscribe('user:notifications', undefined)).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(resolveSubscribe('user:someone-else', alice)).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(resolveSubscribe('market:pm-1', undefined)).toEqual({ ok: true, room: 'market:pm-1' });
    expect(resolveSubscribe('nope', alice)).toMatchObject({ ok: false, code: 'INVALID_CHANNEL' });
    expect(resolveUnsubscribe('user:notifications', alice.id)).toEqual({ ok: true, room: userNotificationsChannel(alice.id) });
    expect(resolveUnsubscribe('user:notifications', undefined)).toEqual({ ok: true, room: undefined });
  });
});
