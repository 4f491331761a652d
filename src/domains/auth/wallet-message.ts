import { createSiweMessage } from 'viem/siwe';
import type { Chain } from './schemas.js';

/**
 * Domain-bound wallet sign-in messages (docs/decisions.md §10.7): EIP-4361
 * (Sign-In with Ethereum) for `evm`, the Sign-In With Solana text for
 * `solana`. Building the EVM text is viem's createSiweMessage. Parsing is our
 * own strict line grammar for both: viem's parseSiweMessage matches its
 * suffix anywhere in the text and skips lines it does not know, and what a
 * wallet showed must be exactly what we check, so every line must be one of
 * the grammar's, in its order, and nothing may follow.
 */

export const SOLANA_CHAIN_ID = 'mainnet';
export const MESSAGE_VERSION = '1';

/** What the server put in the message it issued (and stores with the nonce). */
export interface IssuedMessage {
  domain: string;
  uri: string;
}

export interface SignInMessageFields {
  scheme?: string;
  domain: string;
  address: string;
  statement?: string;
  uri: string;
  version: string;
  chainId: string;
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
  notBefore?: string;
  requestId?: string;
  resources?: string[];
}

const ACCOUNT_WORD: Record<Chain, string> = { evm: 'Ethereum', solana: 'Solana' };

/** The ready-to-sign text the nonce route answers. */
export function buildSignInMessage(
  chain: Chain,
  input: { domain: string; uri: string; address: string; nonce: string; chainId: number; issuedAt: Date; expirationTime: Date },
): string {
  if (chain === 'evm') {
    return createSiweMessage({
      domain: input.domain,
      address: input.address as `0x${string}`,
      uri: input.uri,
      version: MESSAGE_VERSION,
      chainId: input.chainId,
      nonce: input.nonce,
      issuedAt: input.issuedAt,
      expirationTime: input.expirationTime,
    });
  }
  // Phantom's sign-in-with-solana layout (createSignInMessageText of @solana/wallet-standard-util).
  return [
    `${input.domain} wants you to sign in with your Solana account:`,
    input.address,
    '',
    `URI: ${input.uri}`,
    `Version: ${MESSAGE_VERSION}`,
    `Chain ID: ${SOLANA_CHAIN_ID}`,
    `Nonce: ${input.nonce}`,
    `Issued At: ${input.issuedAt.toISOString()}`,
    `Expiration Time: ${input.expirationTime.toISOString()}`,
  ].join('\n');
}

const HEADER = /^(?:([A-Za-z][A-Za-z0-9+.-]*):\/\/)?([^\s/]+) wants you to sign in with your (Ethereum|Solana) account:$/;
const FIELD_ORDER = ['URI', 'Version', 'Chain ID', 'Nonce', 'Issued At', 'Expiration Time', 'Not Before', 'Request ID'] as const;
const REQUIRED = new Set<string>(['URI', 'Version', 'Chain ID', 'Nonce', 'Issued At']);

/** The message's fields, or undefined when it is not exactly the chain's format. */
export function parseSignInMessage(chain: Chain, text: string): SignInMessageFields | undefined {
  if (text.includes('\r')) return undefined;
  const lines = text.split('\n');
  const header = HEADER.exec(lines[0] ?? '');
  if (!header || header[3] !== ACCOUNT_WORD[chain]) return undefined;
  const address = lines[1];
  if (!address || /\s/.test(address) || lines[2] !== '') return undefined;
  let i = 3;
  let statement: string | undefined;
  if (chain === 'evm') {
    // EIP-4361: address LF LF [statement LF] LF "URI: …"
    if (lines[3] === '') i = 4;
    else if (lines[4] === '') {
      statement = lines[3];
      i = 5;
    } else return undefined;
  } else if (lines[4] === '' && lines[3] !== undefined && lines[3] !== '') {
    // SIWS: address [LF LF statement] LF LF "URI: …"
    statement = lines[3];
    i = 5;
  }
  const fields = new Map<string, string>();
  let order = 0;
  let resources: string[] | undefined;
  for (; i < lines.length; i++) {
    const line = lines[i];
    if (line === 'Resources:') {
      resources = [];
      for (i++; i < lines.length; i++) {
        if (!lines[i].startsWith('- ') || lines[i].length === 2) return undefined;
        resources.push(lines[i].slice(2));
      }
      break;
    }
    const colon = line.indexOf(': ');
    if (colon < 0) return undefined;
    const name = line.slice(0, colon);
    const at = FIELD_ORDER.indexOf(name as (typeof FIELD_ORDER)[number], order);
    if (at < 0) return undefined; // unknown, repeated or out of order
    const value = line.slice(colon + 2);
    if (value === '' && name !== 'Request ID') return undefined;
    fields.set(name, value);
    order = at + 1;
  }
  for (const name of REQUIRED) if (!fields.has(name)) return undefined;
  return {
    scheme: header[1],
    domain: header[2],
    address,
    statement,
    uri: fields.get('URI')!,
    version: fields.get('Version')!,
    chainId: fields.get('Chain ID')!,
    nonce: fields.get('Nonce')!,
    issuedAt: fields.get('Issued At')!,
    expirationTime: fields.get('Expiration Time'),
    notBefore: fields.get('Not Before'),
    requestId: fields.get('Request ID'),
    resources,
  };
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** RFC 3339 date-time (EIP-4361's format) in ms, or NaN. */
export function parseDateTime(value: string): number {
  return DATE_TIME.test(value) ? Date.parse(value) : NaN;
}

const SKEW_MS = 60_000;

/**
 * Why the posted message does not match what was issued (a short reason for
 * the 401 detail), or undefined when it does. `normalize` gives the canonical
 * address of the chain (the message may spell it in any case).
 */
export function checkSignInMessage(
  m: SignInMessageFields,
  expected: {
    issued: IssuedMessage;
    address: string;
    nonce: string;
    chainId: string;
    nonceExpiresAt: number;
    now: number;
    normalize: (address: string) => string | undefined;
  },
): string | undefined {
  if (m.domain.toLowerCase() !== expected.issued.domain.toLowerCase()) return 'the domain is not the one this nonce was issued for';
  if (m.scheme !== undefined && `${m.scheme.toLowerCase()}:` !== new URL(expected.issued.uri).protocol) {
    return 'the scheme is not the one this nonce was issued for';
  }
  if (m.uri !== expected.issued.uri) return 'the URI is not the one this nonce was issued for';
  if (expected.normalize(m.address) !== expected.address) return 'the address is not the signing address';
  if (m.chainId !== expected.chainId) return `the chain id must be ${expected.chainId}`;
  if (m.nonce !== expected.nonce) return 'the nonce is not the presented nonce';
  if (m.version !== MESSAGE_VERSION) return `the version must be ${MESSAGE_VERSION}`;
  const issuedAt = parseDateTime(m.issuedAt);
  if (!(Math.abs(expected.now - issuedAt) <= SKEW_MS)) return 'Issued At must be within 60 s of now';
  if (m.expirationTime !== undefined) {
    const exp = parseDateTime(m.expirationTime);
    if (!(exp <= expected.nonceExpiresAt + SKEW_MS)) return "Expiration Time must not be later than the nonce's expiry";
    if (exp <= expected.now) return 'the message has expired';
  }
  if (m.notBefore !== undefined) {
    const nbf = parseDateTime(m.notBefore);
    if (!(nbf <= expected.now + SKEW_MS)) return 'the message is not valid yet (Not Before)';
  }
  return undefined;
}
