import * as ed from '@noble/ed25519';
import { base58 } from '@scure/base';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

/** An independent Solana wallet: a fresh ed25519 keypair. */
export async function solanaWallet() {
  const { secretKey, publicKey } = await ed.keygenAsync();
  return {
    chain: 'solana' as const,
    address: base58.encode(publicKey),
    sign: async (message: string) => base58.encode(await ed.signAsync(new TextEncoder().encode(message), secretKey)),
  };
}

/** An independent EVM wallet: a fresh secp256k1 key, personal_sign (EIP-191). */
export function evmWallet() {
  const account = privateKeyToAccount(generatePrivateKey());
  return {
    chain: 'evm' as const,
    address: account.address as string,
    sign: (message: string) => account.signMessage({ message }),
  };
}

export type Wallet = Awaited<ReturnType<typeof solanaWallet>> | ReturnType<typeof evmWallet>;

export async function getNonce(app: FastifyInstance, chain: string, address: string, remoteAddress?: string): Promise<string> {
  const res = await app.inject({ method: 'GET', url: '/api/v1/auth/wallet/nonce', query: { chain, address }, remoteAddress });
  if (res.statusCode !== 200) throw new Error(`nonce: ${res.statusCode} ${res.body}`);
  return res.json().nonce;
}

export function postWallet(
  app: FastifyInstance,
  body: Record<string, unknown>,
  remoteAddress?: string,
  headers: Record<string, string> = {},
) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/wallet', payload: body, remoteAddress, headers });
}

/** Nonce + sign + POST /auth/wallet from a distinct IP each time (keeps clear of per-IP limits). */
let ipCounter = 0;
export function nextIp(): string {
  ipCounter++;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

export async function signIn(
  app: FastifyInstance,
  wallet: Wallet,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  const ip = nextIp();
  const nonce = await getNonce(app, wallet.chain, wallet.address, ip);
  const signature = await wallet.sign(nonce);
  const res = await postWallet(app, { address: wallet.address, chain: wallet.chain, signature, nonce, ...extra }, ip, headers);
  return res;
}

export interface ParsedCookie {
  name: string;
  value: string;
  attrs: Record<string, string | true>;
}

export function parseSetCookies(res: LightMyRequestResponse): Record<string, ParsedCookie> {
  const raw = res.headers['set-cookie'];
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const out: Record<string, ParsedCookie> = {};
  for (const line of list) {
    const [pair, ...attrParts] = line.split(';').map((s) => s.trim());
    const i = pair.indexOf('=');
    const name = pair.slice(0, i);
    const attrs: Record<string, string | true> = {};
    for (const a of attrParts) {
      const j = a.indexOf('=');
      if (j === -1) attrs[a.toLowerCase()] = true;
      else attrs[a.slice(0, j).toLowerCase()] = a.slice(j + 1);
    }
    out[name] = { name, value: pair.slice(i + 1), attrs };
  }
  return out;
}

export { expectProblem } from '../support/problem.js';
