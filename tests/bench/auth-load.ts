import { generateKeyPairSync, randomInt, sign as edSign } from 'node:crypto';
import { base58 } from '@scure/base';

/**
 * Load generator for the auth benchmark, run in its own process (never in
 * the server's). Flows autocannon cannot express: a sign-in is GET nonce →
 * sign → POST wallet; a refresh chain presents the token the previous
 * refresh returned. Signing uses node:crypto's ed25519, independent of the
 * server's @noble/ed25519 verifier. Prints one JSON line of results.
 */
interface Args {
  url: string;
  mode: 'signin' | 'refresh';
  connections: number;
  durationSec: number;
  warmupSec: number;
  tokens?: string[];
}

const args = JSON.parse(process.argv[2]) as Args;
const ip = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

function wallet() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const x = publicKey.export({ format: 'jwk' }).x!;
  return { address: base58.encode(Buffer.from(x, 'base64url')), sign: (m: string) => base58.encode(edSign(null, Buffer.from(m, 'utf8'), privateKey)) };
}

async function signInOnce(): Promise<boolean> {
  const w = wallet();
  const xff = ip(); // TRUST_PROXY=true on the bench server: many clients, not one over its per-IP limits
  const n = await fetch(`${args.url}/api/v1/auth/wallet/nonce?chain=solana&address=${w.address}`, { headers: { 'x-forwarded-for': xff } });
  if (n.status !== 200) return (await n.arrayBuffer(), false);
  const { nonce } = (await n.json()) as { nonce: string };
  const r = await fetch(`${args.url}/api/v1/auth/wallet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': xff },
    body: JSON.stringify({ address: w.address, chain: 'solana', signature: w.sign(nonce), nonce }),
  });
  await r.arrayBuffer();
  return r.status === 201;
}

async function run() {
  const latencies: number[] = [];
  let ok = 0;
  let failed = 0;
  let measuring = false;
  const start = performance.now();
  const warmEnd = start + args.warmupSec * 1000;
  const end = warmEnd + args.durationSec * 1000;
  let measuredStart = warmEnd;

  const worker = async (i: number) => {
    let token = args.tokens?.[i];
    while (performance.now() < end) {
      const t0 = performance.now();
      let good: boolean;
      try {
        if (args.mode === 'signin') good = await signInOnce();
        else {
          const r = await fetch(`${args.url}/api/v1/auth/refresh`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ refreshToken: token }),
          });
          const body = (await r.json()) as { refreshToken?: string };
          good = r.status === 200;
          if (good) token = body.refreshToken;
        }
      } catch {
        good = false;
      }
      const t1 = performance.now();
      if (t1 >= warmEnd && t0 >= warmEnd) {
        if (!measuring) {
          measuring = true;
          measuredStart = t0;
        }
        if (good) ok++;
        else failed++;
        latencies.push(t1 - t0);
      }
      if (!good && args.mode === 'refresh') break; // a broken chain cannot continue
    }
  };
  await Promise.all(Array.from({ length: args.connections }, (_, i) => worker(i)));
  const secs = (Math.min(performance.now(), end) - measuredStart) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0) * 10) / 10;
  process.stdout.write(JSON.stringify({ ok, failed, perSec: Math.round(ok / secs), p50: pct(0.5), p99: pct(0.99) }) + '\n');
}

await run();
