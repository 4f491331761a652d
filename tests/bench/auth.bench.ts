import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import * as ed from '@noble/ed25519';
import { base58 } from '@scure/base';
import { ROOT, startApp, writeSection } from './harness.js';
import { verifySolanaSignature } from '../../src/domains/auth/wallet-verify.js';

/**
 * Auth throughput against the real stack (PostgreSQL + Redis when set):
 * full Solana sign-in (nonce + verify + user upsert + token issue) compared
 * with the raw single-core @noble/ed25519 verify rate measured in this run,
 * and refresh-token rotation throughput.
 */
interface Flow {
  ok: number;
  failed: number;
  perSec: number;
  p50: number;
  p99: number;
}

function runLoad(args: Record<string, unknown>): Promise<Flow> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'tests/bench/auth-load.ts'), JSON.stringify(args)],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
      (err, stdout) => (err ? reject(new Error(err.message, { cause: err })) : resolve(JSON.parse(stdout.trim().split('\n').at(-1)!))),
    ),
  );
}

/** Sequential verifies of one valid signature for `ms`: what one core does with nothing else to do. */
async function rawVerifyRate(ms: number, verify: () => Promise<boolean>): Promise<number> {
  for (let i = 0; i < 50; i++) await verify(); // warm-up (JIT, precomputes)
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    if (!(await verify())) throw new Error('verify failed');
    n++;
  }
  return Math.round(n / ((performance.now() - start) / 1000));
}

const SIGNIN_CLIENTS = 16;
const ROUNDS = 3;

export default async function run() {
  const { secretKey, publicKey } = await ed.keygenAsync();
  const msg = 'Gx7aVbQ3Jm2kLpR9sT4uWyZ1cD5eF8hN';
  const sig = await ed.signAsync(new TextEncoder().encode(msg), secretKey);
  // The service's module set this already (wallet-verify.ts); the same here, explicitly.
  ed.hashes.sha512 = (m: Uint8Array) => new Uint8Array(createHash('sha512').update(m).digest());
  const verifyAsync = () => ed.verifyAsync(sig, new TextEncoder().encode(msg), publicKey, { zip215: false });
  const verifySync = async () => ed.verify(sig, new TextEncoder().encode(msg), publicKey, { zip215: false });
  const address = base58.encode(publicKey);
  const sigB58 = base58.encode(sig);
  /**
   * The reference: the faster of noble's verifyAsync (WebCrypto SHA-512) and
   * its synchronous verify with node:crypto's SHA-512 (what the service runs),
   * so the ratio is never flattered by a slow baseline.
   */
  const rawNoble = async (ms: number) => {
    const a = await rawVerifyRate(ms, verifyAsync);
    const s = await rawVerifyRate(ms, verifySync);
    return { async: a, sync: s, best: Math.max(a, s) };
  };
  const raw0 = await rawNoble(3000);
  const rawOurs = await rawVerifyRate(3000, () => verifySolanaSignature(address, sigB58, msg));

  const app = await startApp({ TRUST_PROXY: '127.0.0.1' });
  try {
    // Rounds of (raw verify rate, then sign-in flat out) on this noisy shared machine: the ratio is the median of
    // the per-round ratios, each against the raw rate measured just before it.
    const rounds: Array<{ raw: number; signin: Flow; ratio: number }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      const raw = i === 0 ? raw0.best : (await rawNoble(1500)).best;
      const flow = await runLoad({ url: app.url, mode: 'signin', connections: SIGNIN_CLIENTS, durationSec: 5, warmupSec: 1 });
      rounds.push({ raw, signin: flow, ratio: flow.perSec / raw });
    }
    const mid = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(ROUNDS / 2)];
    const signin = mid.signin;

    // Refresh chains: one session per connection, each refresh presenting the token the previous one returned.
    const connections = 16;
    const tokens: string[] = [];
    for (let i = 0; i < connections + 0; i++) {
      const { secretKey: sk, publicKey: pk } = await ed.keygenAsync();
      const addr = base58.encode(pk);
      const xff = `192.168.${i >> 8}.${i & 255}`;
      const nonceRes = await fetch(`${app.url}/api/v1/auth/wallet/nonce?chain=solana&address=${addr}`, {
        headers: { 'x-forwarded-for': xff },
      });
      const { nonce } = (await nonceRes.json()) as { nonce: string };
      const signature = base58.encode(await ed.signAsync(new TextEncoder().encode(nonce), sk));
      const res = await fetch(`${app.url}/api/v1/auth/wallet`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': xff },
        body: JSON.stringify({ address: addr, chain: 'solana', signature, nonce }),
      });
      const cookie = res.headers.getSetCookie().find((c) => c.startsWith('refresh_token='))!;
      tokens.push(cookie.split(';')[0].slice('refresh_token='.length));
    }
    const refresh = await runLoad({ url: app.url, mode: 'refresh', connections, durationSec: 5, warmupSec: 1, tokens });

    const ratio = mid.ratio.toFixed(2);
    const md = [
      '| measurement | per second | p50 ms | p99 ms | failed | note |',
      '|---|---|---|---|---|---|',
      `| raw @noble/ed25519 verifyAsync (WebCrypto SHA-512), one core, sequential | ${raw0.async} | | | | ${raw0.async === raw0.best ? 'the reference' : ''} |`,
      `| raw @noble/ed25519 verify (node:crypto SHA-512), one core, sequential | ${raw0.sync} | | | | ${raw0.sync === raw0.best ? 'the reference' : ''} |`,
      `| our verifySolanaSignature (base58 decode + verify), one core | ${rawOurs} | | | | ${(rawOurs / raw0.best).toFixed(2)} of raw |`,
      `| full Solana sign-in (GET nonce + POST wallet), ${SIGNIN_CLIENTS} clients, median round | ${signin.perSec} | ${signin.p50} | ${signin.p99} | ${signin.failed} | **${ratio} of raw verify** (target ≥ 0.50) |`,
      `| refresh rotation (POST refresh, body token), ${connections} clients | ${refresh.perSec} | ${refresh.p50} | ${refresh.p99} | ${refresh.failed} | target ≥ 1,500/s |`,
      '',
      `Sign-in rounds (raw verify/s → sign-ins/s = ratio): ${rounds.map((r) => `${r.raw} → ${r.signin.perSec} = ${r.ratio.toFixed(2)}`).join('; ')}; the table shows the median round. ` +
        'Load comes from autocannon in a separate process (request hooks carry the flows: nonce → sign → POST; each refresh presents the token the last one returned). ' +
        'Sign-in creates a new user per request (fresh keypair, signed with node:crypto in a separate load process); ' +
        'each one is two HTTP requests, two Redis round trips (each the rate-limit hit fused with the nonce SET or GETDEL in one script), one ed25519 verify and ' +
        'one SQL statement (user upsert + refresh-token insert). A refresh is one rate-limit hit, one SQL statement ' +
        '(claim + successor insert) and one HS256 signature.',
    ].join('\n');
    await writeSection('Auth: sign-in and refresh', md);
    process.stdout.write(`${md}\n`);
  } finally {
    await app.close();
  }
}
