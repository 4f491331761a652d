import { z } from 'zod';

const address = z
  .string()
  .max(42)
  .regex(/^0x[a-fA-F0-9]{40}$/, 'must be an EVM address: 0x followed by 40 hex digits');

const EXAMPLE_WALLET = '0x51698a47f840a242abc2ca0351371c7ffac41842';

export const FollowParamsSchema = z.object({
  address: address.meta({ description: "The trader's account wallet, any case (stored lower-case)", example: EXAMPLE_WALLET }),
});

export const TraderSearchQuerySchema = z
  .object({
    q: z.string().trim().min(2).max(100).meta({
      description: 'A name prefix or an address (0x + 40 hex: an account wallet or its signer address), 2–100 characters',
      example: '00grin',
    }),
  })
  .strict();

export const TraderHitSchema = z
  .object({
    walletAddress: z.string().meta({ description: 'The account wallet (what GET /leaderboard/{address} takes), lower-case' }),
    displayName: z.string().meta({ description: "The trader's name, else the address" }),
    avatarUrl: z.string().nullable().meta({ description: 'null when there is none' }),
    isKol: z.boolean(),
    rank: z
      .number()
      .int()
      .min(1)
      .nullable()
      .meta({ description: 'Rank on the OVERALL / ALL board (PnL, descending); null when not ranked there' }),
  })
  .meta({ id: 'TraderSearchHit' });
export type TraderHit = z.infer<typeof TraderHitSchema>;

export const TraderSearchResultSchema = z.object({ traders: z.array(TraderHitSchema).max(10) }).meta({
  id: 'TraderSearchResult',
  examples: [
    {
      traders: [
        {
          walletAddress: EXAMPLE_WALLET,
          displayName: '00gringo00',
          avatarUrl: null,
          isKol: false,
          rank: 1,
        },
        {
          walletAddress: '0x322f041810cee536293dcb4c99fc23b3a766940a',
          displayName: '00grinder',
          avatarUrl: 'https://example.com/profile.png',
          isKol: false,
          rank: null,
        },
      ],
    },
  ],
});
export type TraderSearchResult = z.infer<typeof TraderSearchResultSchema>;

export const FollowSchema = z
  .object({
    walletAddress: z.string(),
    followedAt: z.string().meta({ description: 'ISO 8601; a repeated follow answers the stored time' }),
  })
  .meta({ id: 'Follow', examples: [{ walletAddress: EXAMPLE_WALLET, followedAt: '2026-11-26T21:30:00.000Z' }] });
export type Follow = z.infer<typeof FollowSchema>;

export const FollowedTraderSchema = z
  .object({
    walletAddress: z.string(),
    displayName: z.string().meta({ description: "The trader's name (leaderboard, else the venue's fills), else the address" }),
    avatarUrl: z.string().nullable(),
    followedAt: z.string().meta({ description: 'ISO 8601' }),
    lastTradeAt: z.string().nullable().meta({ description: 'The newest fill seen for the trader (ISO 8601); null before the first' }),
  })
  .meta({ id: 'FollowedTrader' });
export type FollowedTrader = z.infer<typeof FollowedTraderSchema>;

export const FollowListSchema = z.object({ traders: z.array(FollowedTraderSchema).max(100) }).meta({
  id: 'FollowList',
  examples: [
    {
      traders: [
        {
          walletAddress: EXAMPLE_WALLET,
          displayName: '00gringo00',
          avatarUrl: null,
          followedAt: '2026-11-26T21:30:00.000Z',
          lastTradeAt: '2026-11-26T21:41:17.000Z',
        },
      ],
    },
  ],
});
export type FollowList = z.infer<typeof FollowListSchema>;
