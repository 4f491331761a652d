import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { users } from '../../drizzle/index.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/** docs/decisions.md §3: a validly signed token whose user no longer exists is 401 UNAUTHORIZED, never a 5xx. */
let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ MESSENGER_BOT_TOKEN: '1:test', MESSENGER_BOT_USERNAME: 'test_bot' });
});
afterAll(async () => t?.close());

async function goneUserToken(): Promise<string> {
  const address = `0x${Math.random().toString(16).slice(2).padEnd(40, '0').slice(0, 40)}`;
  const [u] = await t.db.db.insert(users).values({ chain: 'evm', walletAddress: address, authMethod: 'wallet' }).returning();
  const token = t.app.signAccessToken({ id: u.id, walletAddress: u.walletAddress, chain: 'evm' });
  await t.db.db.delete(users).where(eq(users.id, u.id));
  return token;
}

describe('a token for a deleted user', () => {
  const writes: Array<{ method: 'POST' | 'PUT' | 'PATCH'; url: string; payload?: unknown }> = [
    { method: 'POST', url: '/api/v1/push/register', payload: { token: 'ExponentPushToken[deleted-user-0001]', platform: 'ios' } },
    { method: 'PUT', url: '/api/v1/push/preferences', payload: { enabled: false } },
    { method: 'PATCH', url: '/api/v1/push/preferences', payload: { enabled: false } },
    { method: 'POST', url: '/api/v1/messenger-bot/link' },
    { method: 'PUT', url: '/api/v1/follows/0x52908400098527886e0f7030069857d2e4169ee7' },
    { method: 'POST', url: '/api/v1/notifications/mark-all-read' },
  ];

  it('gets 401 UNAUTHORIZED on the write routes, never a 5xx', async () => {
    const token = await goneUserToken();
    const seen: string[] = [];
    for (const w of writes) {
      const res = await t.app.inject({
        method: w.method,
        url: w.url,
        headers: { authorization: `Bearer ${token}` },
        payload: w.payload as object,
      });
      if (res.statusCode === 404 && res.json().detail?.startsWith('No route')) continue; // a method this route does not have
      seen.push(w.url);
      expect(res.statusCode, `${w.method} ${w.url}: ${res.body}`).toBeLessThan(500);
      if (res.statusCode >= 400 && res.statusCode !== 404) expect(res.json().code, `${w.method} ${w.url}`).toBe('UNAUTHORIZED');
    }
    expect(seen.length).toBeGreaterThanOrEqual(4);
  });

  it('gets 401 UNAUTHORIZED where the write needs the user (push register)', async () => {
    const token = await goneUserToken();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/push/register',
      headers: { authorization: `Bearer ${token}` },
      payload: { token: 'ExponentPushToken[deleted-user-0002]', platform: 'android' },
    });
    expect(res.statusCode, res.body).toBe(401);
    expect(res.json().code).toBe('UNAUTHORIZED');
  });
});
