import { randomBytes } from 'node:crypto';
import * as ed from '@noble/ed25519';
import { base58 } from '@scure/base';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { users } from '../../drizzle/index.js';
import type { Db } from '../../src/db/index.js';
import type { InjectedResponse } from './problem.js';

/** A users row and a bearer token for it. */
export interface TestUser {
  id: string;
  walletAddress: string;
  chain: 'evm';
  token: string;
  /** The headers that carry the token. */
  auth: { authorization: string };
}

/** A user row and an access token for it, with no sign-in flow (tests about what a user does, not how they sign in). */
export async function createUser(app: FastifyInstance, db: Db = app.db): Promise<TestUser> {
  const walletAddress = `0x${randomBytes(20).toString('hex')}`;
  const [row] = await db.insert(users).values({ chain: 'evm', walletAddress, authMethod: 'wallet' }).returning({ id: users.id });
  const user = { id: row.id, walletAddress, chain: 'evm' as const };
  const token = app.signAccessToken(user);
  return { ...user, token, auth: { authorization: `Bearer ${token}` } };
}

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

/** A distinct client address each call (keeps a test clear of per-IP limits). */
let ipCounter = 0;
export function nextIp(): string {
  ipCounter++;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

/**
 * An app in this process (reached with `app.inject`) or the base URL of a started server (reached
 * over HTTP; the client address goes as X-Forwarded-For, so the server must trust 127.0.0.1).
 */
export type Target = FastifyInstance | string;

interface Request {
  method: 'GET' | 'POST';
  url: string;
  query?: Record<string, string>;
  payload?: Record<string, unknown>;
  remoteAddress?: string;
  headers?: Record<string, string>;
}

async function send(target: Target, req: Request): Promise<InjectedResponse | LightMyRequestResponse> {
  if (typeof target !== 'string') return target.inject(req);
  const url = new URL(req.url, target);
  for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.set(k, v);
  const res = await fetch(url, {
    method: req.method,
    headers: {
      ...(req.remoteAddress ? { 'x-forwarded-for': req.remoteAddress } : {}),
      ...(req.payload ? { 'content-type': 'application/json' } : {}),
      ...req.headers,
    },
    body: req.payload ? JSON.stringify(req.payload) : undefined,
  });
  const body = await res.text();
  const headers: Record<string, unknown> = {};
  res.headers.forEach((value, name) => (headers[name] = value));
  headers['set-cookie'] = res.headers.getSetCookie();
  return { statusCode: res.status, headers, body, json: () => JSON.parse(body) };
}

/** GET /auth/wallet/nonce; fails unless it answers 200. */
export async function getNonce(app: Target, chain: string, address: string, remoteAddress?: string): Promise<string> {
  const res = await send(app, { method: 'GET', url: '/api/v1/auth/wallet/nonce', query: { chain, address }, remoteAddress });
  if (res.statusCode !== 200) throw new Error(`nonce: ${res.statusCode} ${res.body}`);
  return res.json().nonce;
}

/** POST /auth/wallet with the body as given. */
export function postWallet(
  app: FastifyInstance,
  body: Record<string, unknown>,
  remoteAddress?: string,
  headers?: Record<string, string>,
): Promise<LightMyRequestResponse>;
export function postWallet(
  app: Target,
  body: Record<string, unknown>,
  remoteAddress?: string,
  headers?: Record<string, string>,
): Promise<InjectedResponse>;
export function postWallet(app: Target, body: Record<string, unknown>, remoteAddress?: string, headers: Record<string, string> = {}) {
  return send(app, { method: 'POST', url: '/api/v1/auth/wallet', payload: body, remoteAddress, headers });
}

export interface SignInOptions {
  /** More fields of the POST /auth/wallet body (e.g. referralCode). */
  extra?: Record<string, unknown>;
  /** Headers of the POST (e.g. Origin, X-Client). */
  headers?: Record<string, string>;
  /** The client address of both requests; a fresh one by default. */
  ip?: string;
  /** Post the signature here instead (the nonce comes from `app`): a nonce issued by one instance, spent on another. */
  verifier?: Target;
}

/** The wallet sign-in (nonce, sign, POST /auth/wallet); returns the POST's answer, whatever it is. */
export function signIn(app: FastifyInstance, wallet: Wallet, opts?: SignInOptions): Promise<LightMyRequestResponse>;
export function signIn(app: Target, wallet: Wallet, opts?: SignInOptions): Promise<InjectedResponse>;
export async function signIn(app: Target, wallet: Wallet, opts: SignInOptions = {}): Promise<InjectedResponse> {
  const ip = opts.ip ?? nextIp();
  const nonce = await getNonce(app, wallet.chain, wallet.address, ip);
  const signature = await wallet.sign(nonce);
  const body = { address: wallet.address, chain: wallet.chain, signature, nonce, ...opts.extra };
  return postWallet(opts.verifier ?? app, body, ip, opts.headers);
}

export interface ParsedCookie {
  name: string;
  value: string;
  attrs: Record<string, string | true>;
}

/** The Set-Cookie headers of an answer, by cookie name. */
export function parseSetCookies(res: Pick<InjectedResponse, 'headers'>): Record<string, ParsedCookie> {
  const raw = res.headers['set-cookie'] as string | string[] | undefined;
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
