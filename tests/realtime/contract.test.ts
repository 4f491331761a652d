import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { Channel as ClientChannel, RealtimeEvents as ClientEvents } from '../../client/src/index.js';
import type { EventsOf, PublishFn } from '../../src/domains/realtime/channels.js';
import { marketChannel, monitorChannel, userNotificationsChannel } from '../../src/domains/realtime/channels.js';
import { REALTIME_EVENTS, type AuthExpired, type RealtimeEvents, type ServerToClientEvents } from '../../src/domains/realtime/schemas.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

// The expectTypeOf and @ts-expect-error lines are checked by `tsc --noEmit` (CI), not at run time.
let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

describe('the realtime contract', () => {
  it('is in the OpenAPI document: every channel and event of REALTIME_EVENTS, each payload a component', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/docs/json' })).json();
    const section = doc['x-realtime'];
    const expected = Object.fromEntries(Object.entries(REALTIME_EVENTS).map(([c, events]) => [c, Object.keys(events).sort()]));
    expect(Object.fromEntries(Object.entries(section.channels).map(([c, events]) => [c, Object.keys(events as object).sort()]))).toEqual(
      expected,
    );
    expect(expected['monitor:leaderboard']).toEqual(['monitor:update']);
    const refs = [
      ...Object.values(section.channels).flatMap((events) => Object.values(events as Record<string, { $ref: string }>)),
      ...Object.values(section.socket as Record<string, { $ref: string }>),
    ].map((r) => r.$ref);
    expect(refs.length).toBeGreaterThanOrEqual(4);
    for (const ref of refs) expect(doc.components.schemas[ref.replace('#/components/schemas/', '')], ref).toBeDefined();
    expect(doc.components.schemas.MonitorUpdate).toMatchObject({
      required: expect.arrayContaining(['name', 'kind', 'syncedAt']),
      properties: { name: { enum: ['leaderboard'] }, kind: { enum: ['sync', 'enrich'] } },
    });
  });

  it('types publish(): channels, events and payloads outside the contract do not compile', () => {
    type Publish = Parameters<PublishFn>;
    expectTypeOf<EventsOf<`market:${string}`>>().toEqualTypeOf<RealtimeEvents['market:<marketId>']>();
    expectTypeOf<EventsOf<'monitor:leaderboard'>>().toEqualTypeOf<RealtimeEvents['monitor:leaderboard']>();
    expectTypeOf<EventsOf<`user:${string}:notifications`>>().toEqualTypeOf<RealtimeEvents['user:<userId>:notifications']>();
    expectTypeOf<Publish[0]>().toEqualTypeOf<`market:${string}` | 'monitor:leaderboard' | `user:${string}:notifications`>();
    const publish: PublishFn = () => {};
    const syncedAt = new Date().toISOString();
    publish(monitorChannel('leaderboard'), 'monitor:update', { name: 'leaderboard', kind: 'sync', syncedAt });
    // @ts-expect-error the monitor payload is { name, kind, syncedAt }
    publish(monitorChannel('leaderboard'), 'monitor:update', { type: 'leaderboard-sync', syncedAt });
    // @ts-expect-error only `monitor:leaderboard` carries events
    publish('monitor:leaderboard-sync', 'monitor:update', { name: 'leaderboard', kind: 'sync', syncedAt });
    // @ts-expect-error market channels carry market:update only
    publish(marketChannel('pm-1'), 'monitor:update', { name: 'leaderboard', kind: 'sync', syncedAt });
    // @ts-expect-error a notification needs every Notification field
    publish(userNotificationsChannel('u1'), 'notification', { id: 'n1' });
    // @ts-expect-error no event is defined on user:<id> yet
    publish(`user:u1`, 'position:update', {});
    expect(publish).toBeTypeOf('function');
  });

  it('gives the client every server event, with the same payload types (generated from the document)', () => {
    expectTypeOf<keyof ClientEvents>().toEqualTypeOf<keyof ServerToClientEvents>();
    expectTypeOf<ClientEvents['market:update']>().toEqualTypeOf<RealtimeEvents['market:<marketId>']['market:update']>();
    expectTypeOf<ClientEvents['monitor:update']>().toEqualTypeOf<RealtimeEvents['monitor:leaderboard']['monitor:update']>();
    expectTypeOf<ClientEvents['notification']>().toEqualTypeOf<RealtimeEvents['user:<userId>:notifications']['notification']>();
    expectTypeOf<ClientEvents['auth:expired']>().toEqualTypeOf<AuthExpired>();
    expect(Object.keys(REALTIME_EVENTS)).toHaveLength(3);
  });

  it("types the client's subscribe(): every channel of the contract, and a misspelt one does not compile", () => {
    // One client name per REALTIME_EVENTS key (the notifications stream is named without the user id).
    expectTypeOf<`market:${string}`>().toMatchTypeOf<ClientChannel>();
    expectTypeOf<'monitor:leaderboard'>().toMatchTypeOf<ClientChannel>();
    expectTypeOf<'user:notifications'>().toMatchTypeOf<ClientChannel>();
    expectTypeOf<'user:0b0e4a4e-5f8e-4a36-9d1c-2c3f7c8d9e10'>().toMatchTypeOf<ClientChannel>();
    expect(Object.keys(REALTIME_EVENTS).sort()).toEqual(['market:<marketId>', 'monitor:leaderboard', 'user:<userId>:notifications']);
    const subscribe = (channel: ClientChannel) => channel;
    // @ts-expect-error a misspelt channel
    subscribe('markets:pm-1');
    // @ts-expect-error a misspelt stream name
    subscribe('user:notification');
    // @ts-expect-error a misspelt monitor
    subscribe('monitor:leaderbord');
    expect(subscribe('user:notifications')).toBe('user:notifications');
  });
});
