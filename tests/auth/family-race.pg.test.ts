import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { buildTestApp, createTestDb, type TestApp } from '../helpers/app.js';
import { parseSetCookies, signIn, solanaWallet } from '../support/users.js';

/**
 * docs/decisions.md §10.2 on PostgreSQL, with real concurrency: an attacker
 * holding a stolen token rotates it back-to-back (on one instance) while the
 * victim's reuse, or logout, is answered (by another instance on the same
 * database). Once the victim's request has answered, no rotation the
 * attacker starts may succeed, and the attacker's newest token is dead.
 */
let db: Awaited<ReturnType<typeof createTestDb>>;
let attackerSide: TestApp;
let victimSide: TestApp;

beforeAll(async () => {
  db = await createTestDb();
  const keyPrefix = `pbtest:${randomBytes(6).toString('hex')}:`;
  attackerSide = await buildTestApp({}, { db, keyPrefix });
  victimSide = await buildTestApp({}, { db, keyPrefix });
});
afterAll(async () => {
  await victimSide?.close();
  await attackerSide?.close();
  await db?.close();
});

const TRIALS = 30;
let ipCounter = 0;
// A client address per request keeps the 120/min per-address limit out of the way.
const ip = () => `198.18.${(++ipCounter >> 8) & 255}.${ipCounter & 255}`;
const refresh = (t: TestApp, refreshToken: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refreshToken }, remoteAddress: ip() });
const tick = () => new Promise((r) => setImmediate(r));

/**
 * One trial: the attacker rotates in a loop; after it has done `head` rotations
 * the victim's request is sent. Returns the escapes: attacker rotations that
 * started after the victim's answer and still succeeded, plus the newest token
 * still refreshing at the end.
 */
async function trial(victimRequest: (s: { refreshToken: string; accessToken: string }) => Promise<{ statusCode: number }>) {
  const res = await signIn(attackerSide.app, await solanaWallet());
  const original = parseSetCookies(res).refresh_token.value;
  const accessToken = res.json().accessToken as string;
  // The theft: the attacker rotates first, so the victim's copy is now a used token.
  const first = await refresh(attackerSide, original);
  expect(first.statusCode).toBe(200);
  let latest = first.json().refreshToken as string;

  let answered = false;
  let rotations = 0;
  let escapes = 0;
  const head = Math.floor(Math.random() * 4);
  const attacker = (async () => {
    let after = 0;
    for (;;) {
      const startedAfter = answered;
      const r = await refresh(attackerSide, latest);
      if (r.statusCode !== 200) return;
      latest = r.json().refreshToken;
      rotations++;
      if (startedAfter) {
        escapes++;
        if (++after >= 5) return;
      }
    }
  })();
  while (rotations < head) await tick();
  const victim = await victimRequest({ refreshToken: original, accessToken });
  answered = true;
  await attacker;
  const last = await refresh(attackerSide, latest);
  return { victimStatus: victim.statusCode, escapes: escapes + (last.statusCode === 200 ? 1 : 0) };
}

describe('family revocation vs concurrent rotation (PostgreSQL)', () => {
  it(`reuse detection: zero escapes in ${TRIALS} trials`, async () => {
    let escapes = 0;
    for (let i = 0; i < TRIALS; i++) {
      const r = await trial((s) => refresh(victimSide, s.refreshToken));
      expect(r.victimStatus).toBe(401);
      escapes += r.escapes;
    }
    expect(escapes).toBe(0);
  }, 120_000);

  it(`logout: zero escapes in ${TRIALS} trials`, async () => {
    let escapes = 0;
    for (let i = 0; i < TRIALS; i++) {
      const r = await trial((s) =>
        victimSide.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { authorization: `Bearer ${s.accessToken}` } }),
      );
      expect(r.victimStatus).toBe(204);
      escapes += r.escapes;
    }
    expect(escapes).toBe(0);
  }, 120_000);

  it('two concurrent rotations of one token on two instances: exactly one wins, the family never forks', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await signIn(attackerSide.app, await solanaWallet());
      const token = parseSetCookies(res).refresh_token.value;
      const results = await Promise.all([refresh(attackerSide, token), refresh(victimSide, token), refresh(attackerSide, token)]);
      expect(results.filter((r) => r.statusCode === 200)).toHaveLength(1);
      for (const r of results.filter((x) => x.statusCode !== 200)) expect(r.json().code).toBe('REFRESH_TOKEN_REUSED');
      // The winner's successor died with the family: reuse ends the session.
      const winner = results.find((r) => r.statusCode === 200)!;
      expect((await refresh(victimSide, winner.json().refreshToken)).statusCode).toBe(401);
    }
  }, 60_000);
});
