import { z } from 'zod';

export const ChainSchema = z.enum(['solana', 'evm']).describe('`solana` or `evm`');
export type Chain = z.infer<typeof ChainSchema>;

// Lengths are generous upper bounds of the real formats (a Solana address is
// 32-44 base58 chars, an EVM one 42; signatures 87-88 base58 chars or 132 hex
// chars): anything longer is rejected before any work is done.
const Address = z.string().min(1).max(100).describe('Solana: base58 ed25519 public key; EVM: 0x + 40 hex, any case');

export const NonceQuerySchema = z.object({ address: Address, chain: ChainSchema }).strict();

export const NonceResponseSchema = z.object({
  nonce: z.string().describe('Sign exactly these UTF-8 bytes'),
  expiresAt: z.iso.datetime().describe('ISO 8601; the nonce is single use and lives 5 minutes'),
});

export const WalletSignInBodySchema = z
  .object({
    address: Address,
    chain: ChainSchema,
    signature: z
      .string()
      .min(1)
      .max(1000)
      .describe('Solana: base58 64-byte ed25519 signature; EVM: 0x-hex EIP-191 personal_sign signature'),
    nonce: z.string().min(1).max(128),
    referralCode: z.string().trim().min(1).max(64).optional().describe('Stored on first sign-up only; an unknown code never fails sign-in'),
  })
  .strict();

export const IdpSignInBodySchema = z
  .object({ accessToken: z.string().min(1).max(8192).describe("The identity provider's OAuth 2.0 access token") })
  .strict();

export const SessionUserSchema = z.object({
  id: z.string(),
  walletAddress: z.string(),
  chain: ChainSchema,
  username: z.string().nullable(),
  avatarUrl: z.string().nullable(),
});

export const SignInResponseSchema = z.object({
  accessToken: z.string().describe('HS256 JWT, 15 minutes'),
  user: SessionUserSchema,
});

export const RefreshBodySchema = z
  .object({
    refreshToken: z.string().min(1).max(256).optional().describe('For clients without cookies; otherwise the refresh_token cookie is used'),
  })
  .strict()
  .nullish();

export const RefreshResponseSchema = z.object({
  accessToken: z.string(),
  refreshToken: z.string().describe('The same new token as the refresh_token cookie'),
  user: z.object({ id: z.string(), walletAddress: z.string(), chain: ChainSchema }),
});

export const ActivateKeyBodySchema = z.object({ key: z.string().trim().min(1).max(128) }).strict();
export const ActivateKeyResponseSchema = z.object({ betaAccess: z.literal(true) });

export interface SessionUser {
  id: string;
  walletAddress: string;
  chain: Chain;
  username: string | null;
  avatarUrl: string | null;
}
