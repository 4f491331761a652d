import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startOwnRedis, type OwnRedis } from '../helpers/services.js';
import { createUser } from '../support/users.js';
import { eventually } from '../support/eventually.js';
import { closeAll, listen, refusal, sleep } from './helpers.js';

/**
 * Issue #34: the handshake checks the token, then waits for the connection registry (Redis) before
 * the socket is registered. A session ended during that wait must not let the socket in.
 * A Redis of our own is paused (CLIENT PAUSE) to hold the handshake in that wait.
 */
describe('a session ended during the handshake', () => {
  let own: OwnRedis;
  let client: Redis;
  let admin: Redis;
  let t: TestApp;
  let url: string;
  beforeAll(async () => {
    own = await startOwnRedis();
    client = new Redis(own.url, { maxRetriesPerRequest: 1, enableOfflineQueue: true });
    admin = new Redis(own.url);
    t = await buildTestApp({ REDIS_URL: own.url }, { redis: client });
    url = await listen(t.app);
  }, 300_000);
  afterAll(async () => {
    closeAll();
    await t?.close();
    client?.disconnect();
    admin?.disconnect();
    await own?.stop();
  });

  it('refuses the socket with SESSION_REVOKED instead of admitting it', async () => {
    const userId = (await createUser(t.app)).id;
    const sid = randomUUID();
    const token = t.app.signAccessToken({ id: userId, walletAddress: `0x${'a'.repeat(40)}`, chain: 'evm', sid });
    // Sanity: the same kind of token connects while its session lives.
    expect(
      await refusal(url, {
        token: t.app.signAccessToken({ id: userId, walletAddress: `0x${'a'.repeat(40)}`, chain: 'evm', sid: randomUUID() }),
      }),
    ).toBe('CONNECTED');

    await admin.call('CLIENT', 'PAUSE', '20000', 'WRITE');
    try {
      const outcome = refusal(url, { token });
      // The handshake reached the registry and waits there (its engine connection is open).
      await eventually(async () => t.app.io.engine.clientsCount >= 1);
      await sleep(300);
      // The session ends now (what DELETE /auth/sessions/:id and reuse detection do).
      void t.app.sessionRevocations.revoke([sid]);
      expect(t.app.sessionRevocations.isRevoked(sid)).toBe(true);
      await admin.call('CLIENT', 'UNPAUSE');
      expect(await outcome).toBe('SESSION_REVOKED');
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
  }, 120_000);
});
