import { describe, expect, it } from 'vitest';
import {
  createLeaderboardCache,
  finishPage,
  invalidateLeaderboardCache,
  keepPage,
  type ReadDeps,
} from '../../src/domains/leaderboard/service.js';

describe('leaderboard page cache', () => {
  it('is bounded by a byte budget as well as a count (each page counted twice: as read and as sent); the oldest pages leave first', () => {
    const cache = createLeaderboardCache({ maxPages: 1_000, maxBytes: 10_000 });
    for (let i = 0; i < 20; i++) keepPage(cache, `p${i}`, 'x'.repeat(1_500));
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
    expect(cache.bytes).toBe([...cache.pages.values()].reduce((n, p) => n + 2 * p.body.length, 0));
    expect(cache.pages.has('p19')).toBe(true);
    expect(cache.pages.has('p0')).toBe(false);
    expect(cache.pages.size).toBe(3);
    keepPage(cache, 'huge', 'y'.repeat(6_000)); // 12,000 counted: over the whole budget
    expect(cache.pages.has('huge')).toBe(false);
    keepPage(cache, 'p19', 'z'.repeat(10)); // replacing a page accounts for the old body
    expect(cache.bytes).toBe([...cache.pages.values()].reduce((n, p) => n + 2 * p.body.length, 0));
    invalidateLeaderboardCache(cache);
    expect(cache.bytes).toBe(0);

    const counted = createLeaderboardCache({ maxPages: 2, maxBytes: 1_000_000 });
    for (const k of ['a', 'b', 'c']) keepPage(counted, k, k);
    expect([...counted.pages.keys()]).toEqual(['b', 'c']);
  });

  it('keeps a page with its freshness appended until the freshness changes (decisions.md §11.4)', () => {
    const cache = createLeaderboardCache();
    let now = Date.parse('2026-11-26T12:00:00Z');
    const switchedAt = new Date(now - 60_000);
    cache.pointers = { at: now, map: new Map([['OVERALL|7D', { snapshotId: 1, version: 0, switchedAt } as never]]), lastSyncFailed: false };
    const deps = { cache, clock: () => new Date(now) } as unknown as ReadDeps;
    const page = keepPage(cache, 'k', '{"traders":[],"nextCursor":null}');
    const input = { category: 'OVERALL', period: '7D' } as const;

    const first = finishPage(deps, input, page);
    expect(JSON.parse(first.body.toString())).toEqual({ traders: [], nextCursor: null, syncedAt: switchedAt.toISOString(), stale: false });
    expect(first.lastModified).toBe(switchedAt.toUTCString());
    expect(finishPage(deps, input, page)).toBe(first); // kept: not rebuilt per request

    now += 30 * 60_000; // the board turns stale: rebuilt
    const later = finishPage(deps, input, page);
    expect(later).not.toBe(first);
    expect(JSON.parse(later.body.toString())).toMatchObject({ stale: true });
    expect(finishPage(deps, { category: 'OVERALL', period: '30D' }, page)).toMatchObject({
      syncedMs: null,
      stale: true,
      lastModified: undefined,
    });
  });
});
