import { generateKeyPairSync, randomInt, sign as edSign } from 'node:crypto';
import { base58 } from '@scure/base';
import autocannon from 'autocannon';

/**
 * Load generator for the auth benchmark, run in its own process (never in
 * the server's). autocannon drives the sockets (a far cheaper client than
 * fetch on a machine whose two cores the client shares with the service,
 * PostgreSQL and Redis); its request hooks express the flows:
 * - sign-in: GET nonce (a fresh keypair per flow) → sign → POST wallet;
 * - refresh: each request presents a live token and hands the one it gets
 *   back to the next request (a shared pool: a connection may pick up any
 *   family's latest token, never a used one).
 * Signing uses node:crypto's ed25519, independent of the server's
 * @noble/ed25519 verifier. Prints one JSON line of results.
 */
interface Args {
  url: string;
  mode: 'signin' | 'refresh';
  connections: number;
  durationSec: number;
  warmupSec: number;
  tokens?: string[];
  /** Sign the bare nonce instead of the SIWS message of the nonce answer. */
  bareNonce?: boolean;
}

interface Ctx {
  address?: string;
  sign?: (m: string) => string;
  nonce?: string;
  message?: string;
  xff?: string;
  t0?: number;
  token?: string;
}

const args = JSON.parse(process.argv[2]) as Args;
const ip = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

function wallet() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const x = publicKey.export({ format: 'jwk' }).x!;
  return {
    address: base58.encode(Buffer.from(x, 'base64url')),
    sign: (m: string) => base58.encode(edSign(null, Buffer.from(m, 'utf8'), privateKey)),
  };
}

const start = performance.now();
const warmEnd = start + args.warmupSec * 1000;
let ok = 0;
let failed = 0;
let firstMeasured = 0;
let lastMeasured = 0;
const latencies: number[] = [];

function record(good: boolean, t0: number) {
  const t1 = performance.now();
  if (t0 < warmEnd) return;
  if (!firstMeasured) firstMeasured = t0;
  lastMeasured = t1;
  if (good) ok++;
  else failed++;
  latencies.push(t1 - t0);
}

const json = { 'content-type': 'application/json' };

const signInRequests: autocannon.Request[] = [
  {
    method: 'GET',
    setupRequest: (req, context) => {
      const ctx = context as Ctx;
      const w = wallet();
      ctx.address = w.address;
      ctx.sign = w.sign;
      ctx.xff = ip(); // TRUST_PROXY=127.0.0.1 on the bench server: many clients, not one over its per-IP limits
      ctx.t0 = performance.now();
      return { ...req, path: `/api/v1/auth/wallet/nonce?chain=solana&address=${w.address}`, headers: { 'x-forwarded-for': ctx.xff } };
    },
    onResponse: (status, body, context) => {
      const ctx = context as Ctx;
      if (status === 200) {
        const answer = JSON.parse(body) as { nonce: string; message: string };
        ctx.nonce = answer.nonce;
        // docs/decisions.md §10.7: sign the domain-bound SIWS message (the default), or the bare nonce (`bareNonce`).
        ctx.message = args.bareNonce ? undefined : answer.message;
      } else record(false, ctx.t0!);
    },
  },
  {
    method: 'POST',
    path: '/api/v1/auth/wallet',
    setupRequest: (req, context) => {
      const ctx = context as Ctx;
      if (!ctx.nonce) return req; // the nonce request failed (counted): the POST is answered 400 and not counted
      const signed = ctx.message ?? ctx.nonce;
      const body = JSON.stringify({
        address: ctx.address,
        chain: 'solana',
        signature: ctx.sign!(signed),
        nonce: ctx.nonce,
        message: ctx.message,
      });
      return { ...req, headers: { ...json, 'x-forwarded-for': ctx.xff! }, body };
    },
    onResponse: (status, _body, context) => {
      const ctx = context as Ctx;
      if (ctx.nonce) record(status === 201, ctx.t0!);
    },
  },
];

// Refresh: live tokens not currently in flight.
const pool = [...(args.tokens ?? [])];
const refreshRequests: autocannon.Request[] = [
  {
    method: 'POST',
    path: '/api/v1/auth/refresh',
    setupRequest: (req, context) => {
      const ctx = context as Ctx;
      ctx.token = pool.pop();
      ctx.t0 = performance.now();
      // Many clients (the 120/min per-address refresh limit is not what this measures).
      return { ...req, headers: { ...json, 'x-forwarded-for': ip() }, body: JSON.stringify({ refreshToken: ctx.token ?? 'pool-ran-dry' }) };
    },
    onResponse: (status, body, context) => {
      const ctx = context as Ctx;
      const good = status === 200;
      if (good) pool.push((JSON.parse(body) as { refreshToken: string }).refreshToken);
      record(good, ctx.t0!);
    },
  },
];

await autocannon({
  url: args.url,
  connections: args.connections,
  duration: args.warmupSec + args.durationSec,
  requests: args.mode === 'signin' ? signInRequests : refreshRequests,
});

const secs = (lastMeasured - firstMeasured) / 1000;
latencies.sort((a, b) => a - b);
const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0) * 10) / 10;
process.stdout.write(JSON.stringify({ ok, failed, perSec: Math.round(ok / secs), p50: pct(0.5), p99: pct(0.99) }) + '\n');
