import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { eventGroups, markets } from '../../drizzle/index.js';
import type { DbHandle } from '../../src/db/index.js';
import type { HotMarketsPluginOptions } from '../../src/domains/events/hot-markets-plugin.js';

/**
 * Shared by the hot-market tests: timings shrunk from docs/decisions.md
 * §11.2's defaults (same mechanisms, faster clocks), and market rows.
 */
export const FAST: HotMarketsPluginOptions = {
  heartbeatMs: 150,
  entryTtlMs: 1_000,
  leaseTtlMs: 3_000,
  leaseRenewMs: 150,
  reconcileMs: 100,
  lingerMs: 300,
  flushMs: 30,
  ws: { pingMs: 150, silenceMs: 600, connectSpacingMs: 20, backoffMinMs: 50, backoffMaxMs: 200 },
};

/** The fake's PING deadline for these timings (the client PINGs every 150 ms; PGlite can stall the loop for a second). */
export const FAKE_PING_DEADLINE_MS = 3_000;

/** An open Polymarket market with a YES token (and its event group). */
export async function createPolymarketMarket(
  dbh: DbHandle,
  opts: { yesPrice?: number | null; venue?: 'polymarket' | 'kalshi'; status?: string } = {},
): Promise<{ id: string; token: string }> {
  const n = randomBytes(6).readUIntBE(0, 6);
  const venue = opts.venue ?? 'polymarket';
  const id = venue === 'polymarket' ? `pm-${n}` : `ks-T${n}`;
  const token = String(10n ** 20n + BigInt(n));
  const groupId = `${id}-g`;
  await dbh.db.insert(eventGroups).values({ id: groupId, venue, venueEventId: groupId, slug: groupId, title: `Group ${id}` });
  await dbh.db.insert(markets).values({
    id,
    eventGroupId: groupId,
    venue,
    venueMarketId: String(n),
    title: `Will ${id} happen?`,
    yesPrice: opts.yesPrice === undefined ? 0.5 : opts.yesPrice,
    volume: 1234,
    status: opts.status ?? 'active',
    yesTokenId: venue === 'polymarket' ? token : null,
  });
  return { id, token };
}

export async function storedMarket(dbh: DbHandle, id: string) {
  const [row] = await dbh.rows<{ yes_price: number | null; price_updated_at: string | Date | null; points: number }>(
    sql`select yes_price, price_updated_at, (select count(*)::int from price_history where market_id = ${id}) as points
        from markets where id = ${id}`,
  );
  return row;
}
