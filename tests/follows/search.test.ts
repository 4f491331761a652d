import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, FAST_VENUES, type TestApp } from '../helpers/app.js';
import { startFakeDataApi, type FakeDataApi } from '../fakes/venues/polymarket-data.js';
import { startFakeServer, type FakeServer } from '../fakes/server.js';
import { serveGammaProfiles, type FakeGammaProfiles } from '../fakes/venues/gamma-profiles.js';
import { expectProblem } from '../support/problem.js';

/** docs/decisions.md §18.1, §18.5: GET /api/v1/traders/search against the Data and Gamma fakes. */
const addr = (s: string) => `0x${createHash('sha1').update(`search-${s}`).digest('hex')}`;

const ALPHA = addr('alpha'); // OVERALL/ALL rank 2
const ALPINE = addr('alpine'); // OVERALL/ALL rank 1
const ALTO = addr('alto'); // only on a POLITICS board: ranked, no OVERALL/ALL rank
const VENUE_ONLY = addr('venue-only');
const EOA = addr('signer');
const RANKED_EOA = addr('ranked-signer');

let data: FakeDataApi;
let gammaServer: FakeServer;
let gamma: FakeGammaProfiles;
let t: TestApp;

async function search(q: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/traders/search?q=${encodeURIComponent(q)}` });
  return res;
}
const gammaCalls = (path: string) => gammaServer.requests.filter((r) => r.path === path).length;

beforeAll(async () => {
  data = await startFakeDataApi();
  for (const c of ['OVERALL', 'POLITICS', 'SPORTS', 'CRYPTO'])
    for (const p of ['DAY', 'WEEK', 'MONTH', 'ALL']) {
      const rows =
        c === 'POLITICS'
          ? [{ proxyWallet: ALTO, userName: 'Alto Trader', vol: 5, pnl: 5, profileImage: 'https://x" onerror=alert(1)' }]
          : [
              { proxyWallet: ALPINE, userName: 'Alpine', vol: 10, pnl: 900, profileImage: 'https://img.example/alpine.png' },
              { proxyWallet: ALPHA, userName: 'alphaDog', vol: 9, pnl: 800, verifiedBadge: true },
            ];
      data.setBoard(c, p, 'PNL', rows);
      data.setBoard(c, p, 'VOL', rows);
    }
  gammaServer = await startFakeServer();
  gamma = serveGammaProfiles(gammaServer);
  gamma.add({ proxyWallet: VENUE_ONLY, name: 'Alpaca', profileImage: 'https://img.example/alpaca.png' });
  gamma.add({ proxyWallet: ALPHA, name: 'alphaDog' }); // also ours: listed once, as ours
  gamma.add({ proxyWallet: addr('nameless'), name: '', pseudonym: 'Alpine-Goat' });
  gamma.add({ proxyWallet: addr('account'), name: 'Signer Account' });
  gamma.addEoa(EOA, addr('account'));
  // Issue #34: venue avatars reach clients' <img src> only as well-formed https URLs.
  gamma.add({ proxyWallet: addr('xss-host'), name: 'Xss Host', profileImage: 'https://x" onerror=alert(1)' });
  gamma.add({ proxyWallet: addr('xss-path'), name: 'Xss Path', profileImage: 'https://img.example/a.png" onerror="alert(1)' });
  gamma.add({ proxyWallet: addr('xss-http'), name: 'Xss Http', profileImage: 'http://img.example/a.png' });
  gamma.add({ proxyWallet: addr('xss-js'), name: 'Xss Js', profileImage: 'javascript:alert(1)//https://x' });
  gamma.addEoa(RANKED_EOA, ALPHA);
  for (let i = 0; i < 14; i++) gamma.add({ proxyWallet: addr(`many-${i}`), name: `Zeta ${i}` });
  t = await buildTestApp({ POLYMARKET_DATA_API_URL: data.url, POLYMARKET_GAMMA_API_URL: gammaServer.url }, { venueClients: FAST_VENUES });
  expect((await t.app.jobs.run('leaderboard-sync')).ok).toBe(true);
});
afterAll(async () => {
  await t?.close();
  await data?.close();
  await gammaServer?.close();
});

describe('GET /api/v1/traders/search', () => {
  it('lists our ranked traders first by OVERALL/ALL rank (null last), then the venue profiles minus duplicates, skipping null entries', async () => {
    const res = await search('AL');
    expect(res.statusCode).toBe(200);
    const { traders } = res.json();
    expect(traders.map((x: any) => x.walletAddress)).toEqual([ALPINE, ALPHA, ALTO, VENUE_ONLY, addr('nameless')]);
    expect(traders[0]).toEqual({
      walletAddress: ALPINE,
      displayName: 'Alpine',
      avatarUrl: 'https://img.example/alpine.png',
      isKol: false,
      rank: 1,
    });
    expect(traders[1]).toMatchObject({ displayName: 'alphaDog', isKol: true, rank: 2 });
    expect(traders[2]).toMatchObject({ displayName: 'Alto Trader', rank: null });
    expect(traders[3]).toEqual({
      walletAddress: VENUE_ONLY,
      displayName: 'Alpaca',
      avatarUrl: 'https://img.example/alpaca.png',
      isKol: false,
      rank: null,
    });
    // No venue name: the address; no image: null.
    expect(traders[4]).toEqual({
      walletAddress: addr('nameless'),
      displayName: addr('nameless'),
      avatarUrl: null,
      isKol: false,
      rank: null,
    });
  });

  it('passes venue avatars on only as normalised https URLs, else none (issue #34)', async () => {
    const { traders } = (await search('xss')).json();
    const by = new Map(traders.map((x: any) => [x.displayName, x.avatarUrl]));
    expect(Object.fromEntries(by)).toEqual({
      'Xss Host': null,
      'Xss Path': 'https://img.example/a.png%22%20onerror=%22alert(1)',
      'Xss Http': null,
      'Xss Js': null,
    });
    // A leaderboard row's hostile image gives way to the identicon.
    const alto = (await search('Alto')).json().traders.find((x: any) => x.walletAddress === ALTO);
    expect(alto.avatarUrl).toMatch(/^https:\/\/api\.dicebear\.com\//);
  });

  it('matches our traders by address prefix too, and at most 10 in all', async () => {
    const byPrefix = (await search(ALPHA.slice(0, 12).toUpperCase())).json();
    expect(byPrefix.traders[0]).toMatchObject({ walletAddress: ALPHA, rank: 2 });
    const many = (await search('zeta')).json();
    expect(many.traders).toHaveLength(10);
    expect(many.traders.every((x: any) => x.rank === null)).toBe(true);
  });

  it('caches the venue search 10 minutes per q', async () => {
    gammaServer.reset();
    await search('Alpac');
    await search('alpac');
    expect(gammaCalls('/public-search')).toBe(1);
  });

  it('resolves a signer address (EOA) to its account wallet; a ranked account comes with its rank', async () => {
    const eoa = (await search(EOA.toUpperCase().replace('0X', '0x'))).json();
    expect(eoa.traders).toEqual([
      { walletAddress: addr('account'), displayName: 'Signer Account', avatarUrl: null, isKol: false, rank: null },
    ]);
    const ranked = (await search(RANKED_EOA)).json();
    expect(ranked.traders).toEqual([expect.objectContaining({ walletAddress: ALPHA, displayName: 'alphaDog', rank: 2 })]);
    // An account wallet itself answers itself.
    const account = (await search(VENUE_ONLY)).json();
    expect(account.traders).toEqual([expect.objectContaining({ walletAddress: VENUE_ONLY, displayName: 'Alpaca' })]);
  });

  it('an address that is neither a known account nor a signer gives our matches only (200, possibly [])', async () => {
    const res = await search(addr('nobody'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ traders: [] });
    expect((await search(ALPINE)).json().traders.map((x: any) => x.walletAddress)).toEqual([ALPINE]);
  });

  it('a venue failure answers our matches only, never a 5xx', async () => {
    gammaServer.down(true, 503);
    try {
      const res = await search('alp-fresh-query'.slice(0, 3) + 'in');
      expect(res.statusCode).toBe(200);
      expect(res.json().traders.map((x: any) => x.walletAddress)).toEqual([ALPINE]);
      const addrRes = await search(addr('unknown-while-down'));
      expect(addrRes.statusCode).toBe(200);
      expect(addrRes.json()).toEqual({ traders: [] });
    } finally {
      gammaServer.down(false);
    }
  });

  it('q must be 2–100 characters: else 400 problem+json', async () => {
    expectProblem(await search('a'), 400, 'VALIDATION_ERROR');
    expectProblem(await search(' a '), 400, 'VALIDATION_ERROR');
    expectProblem(await search('x'.repeat(101)), 400, 'VALIDATION_ERROR');
    expectProblem(await t.app.inject({ method: 'GET', url: '/api/v1/traders/search' }), 400, 'VALIDATION_ERROR');
    expect((await search('x'.repeat(100))).statusCode).toBe(200);
  });
});
