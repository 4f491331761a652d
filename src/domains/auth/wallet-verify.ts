import { createHash } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { base58 } from '@scure/base';
import { getAddress, verifyMessage } from 'viem';
import type { Chain } from './schemas.js';

// Synchronous verification with node:crypto's SHA-512: faster than
// verifyAsync's WebCrypto digest (a promise and a thread-pool hop per hash).
// A worker-thread pool was tried too and lost: on a 2-vCPU machine the
// cross-thread wake-ups cost more than the verify they moved off the loop
// (tests/bench/RESULTS.md).
ed.hashes.sha512 = (message: Uint8Array) => new Uint8Array(createHash('sha512').update(message).digest());

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;
const HEX_SIGNATURE = /^0x[0-9a-fA-F]{128,130}$/;

function decodeBase58(s: string): Uint8Array | undefined {
  if (!BASE58.test(s)) return undefined;
  try {
    return base58.decode(s);
  } catch {
    return undefined;
  }
}

/**
 * The canonical form of an address for its chain, or undefined when it is
 * malformed: Solana = base58 of 32 bytes (re-encoded, so one spelling per key);
 * EVM = EIP-55 checksum of any-case hex (one account per address, whatever its case).
 */
export function normalizeAddress(chain: Chain, address: string): string | undefined {
  if (chain === 'evm') {
    if (!EVM_ADDRESS.test(address)) return undefined;
    return getAddress(address.toLowerCase());
  }
  const bytes = decodeBase58(address);
  if (!bytes || bytes.length !== 32) return undefined;
  return base58.encode(bytes);
}

/**
 * Solana detached signature over the UTF-8 bytes of the message. Strict RFC
 * 8032 (zip215: false): rejects non-canonical encodings and small-order keys,
 * which no honest wallet produces. Wrong lengths throw inside noble: false.
 */
export async function verifySolanaSignature(address: string, signature: string, message: string): Promise<boolean> {
  const pub = decodeBase58(address);
  const sig = decodeBase58(signature);
  if (!pub || !sig || pub.length !== 32 || sig.length !== 64) return false;
  try {
    return ed.verify(sig, new TextEncoder().encode(message), pub, { zip215: false });
  } catch {
    return false;
  }
}

/** EIP-191 personal_sign by an EOA (local recovery, no RPC). Malformed signatures: false. */
export async function verifyEvmSignature(address: string, signature: string, message: string): Promise<boolean> {
  if (!HEX_SIGNATURE.test(signature) || !EVM_ADDRESS.test(address)) return false;
  try {
    return await verifyMessage({ address: address as `0x${string}`, message, signature: signature as `0x${string}` });
  } catch {
    return false;
  }
}

export function verifyWalletSignature(chain: Chain, address: string, signature: string, message: string): Promise<boolean> {
  return chain === 'solana' ? verifySolanaSignature(address, signature, message) : verifyEvmSignature(address, signature, message);
}
