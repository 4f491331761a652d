import { z } from 'zod';

export const ChainSchema = z.enum(['solana', 'evm']).describe('`solana` or `evm`');
export type Chain = z.infer<typeof ChainSchema>;

// Lengths are generous upper bounds of the real formats (a Solana address is
// 32-44 base58 chars, an EVM one 42; signatures 87-88 base58 chars or 132 hex
// chars): anything longer is rejected before any work is done.
const Address = z.string().min(1).max(100).describe('Solana: base58 ed25519 public key; EVM: 0x + 40 hex, any case');

export const NonceQuerySchema = z.object({ address: Address, chain: ChainSchema }).strict();

export const NonceResponseSchema = z.object({
  nonce: z.string().describe('Single use; alphanumeric (base58)'),
  expiresAt: z.iso.datetime().describe('ISO 8601; the nonce is single use and lives 5 minutes'),
  message: z
    .string()
    .describe(
      'The ready-to-sign, domain-bound text (docs/decisions.md §10.7): EIP-4361 for `evm`, Sign-In With Solana for `solana`. ' +
        'Sign it and post it back as `message`.',
    ),
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
    message: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe(
        'The signed text: the `message` of the nonce answer, or one the client built in the same format (a statement is optional). ' +
          'Omitted: the signature is over the bare nonce (accepted while SIGN_IN_BARE_NONCE is true).',
      ),
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
  refreshToken: z
    .string()
    .optional()
    .describe('The new refresh token, only when the token was presented in the body; a cookie refresh sets it as the cookie only'),
  user: z.object({ id: z.string(), walletAddress: z.string(), chain: ChainSchema }),
});

export const SessionSchema = z.object({
  id: z.string().describe('The session id: the `sid` claim of its access tokens'),
  current: z.boolean().describe('The session of the access token making this request'),
  createdAt: z.iso.datetime().describe('Sign-in time, ISO 8601'),
  lastUsedAt: z.iso.datetime().describe('Last sign-in or refresh, ISO 8601'),
  expiresAt: z.iso.datetime().describe('Sliding expiry: last use + 90 days, ISO 8601'),
  userAgent: z.string().nullable().describe('As seen at the last sign-in or refresh; null when unknown'),
  ip: z.string().nullable().describe('Client address at the last sign-in or refresh; null when unknown'),
});

export const SessionListSchema = z.object({ sessions: z.array(SessionSchema) });
export const SessionParamsSchema = z.object({ id: z.string().max(100).describe('A session id from GET /auth/sessions') });
export const RevokedCountSchema = z.object({ revoked: z.number().int().describe('Sessions ended') });

export const ActivateKeyBodySchema = z.object({ key: z.string().trim().min(1).max(128) }).strict();
export const ActivateKeyResponseSchema = z.object({ betaAccess: z.literal(true) });

export interface SessionUser {
  id: string;
  walletAddress: string;
  chain: Chain;
  username: string | null;
  avatarUrl: string | null;
}
