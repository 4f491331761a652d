import { describe, expect, it } from 'vitest';
import { createLeaderboardCache, invalidateLeaderboardCache, keepPage } from '../../src/domains/leaderboard/service.js';

describe('leaderboard page cache', () => {
  it('is bounded by a byte budget as well as a count; the oldest pages leave first', () => {
    const cache = createLeaderboardCache({ maxPages: 1_000, maxBytes: 10_000 });
    for (let i = 0; i < 20; i++) keepPage(cache, `p${i}`, 'x'.repeat(3_000));
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
    expect(cache.bytes).toBe([...cache.pages.values()].reduce((n, p) => n + p.length, 0));
    expect(cache.pages.has('p19')).toBe(true);
    expect(cache.pages.has('p0')).toBe(false);
    keepPage(cache, 'huge', 'y'.repeat(20_000));
    expect(cache.pages.has('huge')).toBe(false);
    keepPage(cache, 'p19', 'z'.repeat(10)); // replacing a page accounts for the old body
    expect(cache.bytes).toBe([...cache.pages.values()].reduce((n, p) => n + p.length, 0));
    invalidateLeaderboardCache(cache);
    expect(cache.bytes).toBe(0);

    const counted = createLeaderboardCache({ maxPages: 2, maxBytes: 1_000_000 });
    for (const k of ['a', 'b', 'c']) keepPage(counted, k, k);
    expect([...counted.pages.keys()]).toEqual(['b', 'c']);
  });
});
