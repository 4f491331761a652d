import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeVenues, type FakeVenues } from '../fakes/venues/index.js';
import { gammaEvent, gammaMarket } from '../fakes/venues/gamma.js';
import { kalshiEvent, kalshiMarket } from '../fakes/venues/kalshi.js';

/**
 * `Retry-After` as the venue asks (docs/venues.md "What we call"): no request
 * to that API before it elapses; a short one (≤ 10 s) is waited in full, a
 * longer one ends the run failed for that venue at once, keeping its last good
 * data, and the next run proceeds once it has passed. The fakes refuse every
 * request sent early and record it (`server.early`); FAST_VENUES caps backoff
 * at 200 ms, so a client that cuts the wait short is caught.
 */
const TOKEN = 'internal-token-internal-token';
const auth = { authorization: `Bearer ${TOKEN}` };

let venues: FakeVenues;
let t: TestApp;

const runNow = async (name: string) => (await t.app.inject({ method: 'POST', url: `/api/v1/internal/jobs/${name}`, headers: auth })).json();
const total = async () => (await t.app.inject({ method: 'GET', url: '/api/v1/events?limit=1' })).json().total as number;

beforeAll(async () => {
  venues = await startFakeVenues({
    gamma: [
      gammaEvent('800001', 'retry-one', 'Retry one', [gammaMarket('8000011', 'One?', 0.4, 10)]),
      gammaEvent('800002', 'retry-two', 'Retry two', [gammaMarket('8000021', 'Two?', 0.6, 10)]),
    ],
    kalshi: [kalshiEvent('KXRA-1', 'KXRA', 'A Kalshi group', 'Sports', [kalshiMarket('KXRA-1-A', 'KXRA-1', 'A', 0.4, 0.42, 0.41, 100)])],
  });
  t = await buildTestApp({ ...venues.env, INTERNAL_API_TOKEN: TOKEN }, { venueClients: FAST_VENUES });
});
afterAll(async () => {
  await t?.close();
  await venues?.close();
});

describe('Retry-After (docs/venues.md "What we call")', () => {
  it('a short Retry-After is waited in full, never cut to the backoff cap: the run succeeds', async () => {
    venues.gamma.reset();
    venues.gamma.retryAfter(2);
    const outcome = await runNow('events-sync');
    expect(outcome).toMatchObject({ name: 'events-sync', ok: true });
    expect(venues.gamma.early).toHaveLength(0);
    const [first, second] = venues.gamma.requests;
    expect(second.at - first.at).toBeGreaterThanOrEqual(2_000);
    expect(await total()).toBe(3);
  });

  it('a long Retry-After ends the run failed for that venue at once; the other venue syncs; the data stays', async () => {
    venues.gamma.reset();
    venues.kalshi.reset();
    venues.gamma.retryAfter(11, 503);
    const started = Date.now();
    const outcome = await runNow('events-sync');
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/Retry-After/);
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(venues.gamma.requests).toHaveLength(1);
    expect(venues.gamma.early).toHaveLength(0);
    expect(venues.kalshi.requests.length).toBeGreaterThan(0);
    expect(await total()).toBe(3);

    // The next run before it has passed sends nothing to that API.
    const again = await runNow('events-sync');
    expect(again.ok).toBe(false);
    expect(venues.gamma.requests).toHaveLength(1);
    expect(venues.gamma.early).toHaveLength(0);

    // Once it has passed, the next run proceeds.
    await new Promise((r) => setTimeout(r, Math.max(0, started + 11_500 - Date.now())));
    const after = await runNow('events-sync');
    expect(after).toMatchObject({ ok: true });
    expect(venues.gamma.early).toHaveLength(0);
    expect(venues.gamma.requests.length).toBeGreaterThan(1);
  }, 60_000);
});
