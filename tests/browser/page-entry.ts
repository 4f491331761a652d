// Bundled for the browser by the test (esbuild): the client module plus a
// wallet to sign with, exposed on window for Playwright to drive.
import * as ed from '@noble/ed25519';
import { base58 } from '@scure/base';
import { createApiClient, unwrap, ApiError } from '../../client/src/index.js';

async function newWallet() {
  const { secretKey, publicKey } = await ed.keygenAsync();
  return {
    address: base58.encode(publicKey),
    sign: async (nonce: string) => base58.encode(await ed.signAsync(new TextEncoder().encode(nonce), secretKey)),
  };
}

(window as unknown as Record<string, unknown>).pb = { createApiClient, unwrap, ApiError, newWallet };
