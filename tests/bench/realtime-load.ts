/**
 * Load generator for realtime.bench.ts, run as its own process (never inside
 * the server's): opens CLIENTS Socket.IO clients over WebSocket on loopback,
 * subscribes SUBSCRIBERS of them to one market on request, and measures how
 * long each market:update takes from publish (the server's clock stamp) to
 * arrival. Talks to the parent with JSON lines: stdout out, stdin in.
 */
import { createInterface } from 'node:readline';
import { io, type Socket } from 'socket.io-client';

const url = process.env.URL!;
const clients = Number(process.env.CLIENTS ?? 5000);
const subscribers = Number(process.env.SUBSCRIBERS ?? 500);
const channel = process.env.CHANNEL ?? 'market:pm-bench';
const rounds = Number(process.env.ROUNDS ?? 20);
const batch = 100;
/** With TOKEN, the first SUBSCRIBERS sockets sign in with it (one user's stream); EVENT is what they time. */
const token = process.env.TOKEN;
const eventName = process.env.EVENT ?? 'market:update';
const now = () => performance.timeOrigin + performance.now();
const say = (msg: object) => process.stdout.write(`${JSON.stringify(msg)}\n`);

// A hard bound on the whole run: the parent also kills us, this is belt and braces.
setTimeout(
  () => {
    say({ type: 'error', message: 'load generator timed out' });
    process.exit(2);
  },
  Number(process.env.DEADLINE_MS ?? 180_000),
).unref();

const sockets: Socket[] = [];
const latencies: number[] = [];
const perRound = new Map<number, { first: number; last: number; count: number }>();
let refused = 0;

function open(i: number): Promise<void> {
  // 20 connections per forwarded address: the seed's per-IP limit holds (TRUST_PROXY on the server).
  const ip = `10.${(i >> 16) & 255}.${(Math.floor(i / 20) >> 8) & 255}.${Math.floor(i / 20) & 255}`;
  const s = io(url, {
    transports: ['websocket'],
    reconnection: false,
    forceNew: true,
    timeout: 30_000,
    extraHeaders: { 'x-forwarded-for': ip },
    ...(token !== undefined && i < subscribers ? { auth: { token } } : {}),
  });
  sockets.push(s);
  return new Promise((resolve) => {
    s.once('connect', () => resolve());
    s.once('connect_error', () => {
      refused++;
      resolve();
    });
  });
}

async function connectAll() {
  const started = now();
  for (let i = 0; i < clients; i += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, clients - i) }, (_, k) => open(i + k)));
  }
  say({ type: 'connected', clients: sockets.filter((s) => s.connected).length, refused, ms: Math.round(now() - started) });
}

async function subscribe() {
  const chosen = sockets.filter((s) => s.connected).slice(0, subscribers);
  for (const s of chosen) {
    s.on(eventName, (p: { seq: number; sentAt?: number; data?: { sentAt: number; round: number } }) => {
      const t = now();
      // market:update carries the stamps itself; a notification carries them in its data.
      const sentAt = p.sentAt ?? p.data!.sentAt;
      const round = p.data?.round ?? p.seq;
      latencies.push(t - sentAt);
      const r = perRound.get(round) ?? { first: t, last: t, count: 0 };
      r.first = Math.min(r.first, t);
      r.last = Math.max(r.last, t);
      r.count++;
      perRound.set(round, r);
      if (latencies.length === chosen.length * rounds) finish(chosen.length);
    });
  }
  const acks = await Promise.all(
    chosen.map((s) =>
      s
        .timeout(30_000)
        .emitWithAck('subscribe', { channel })
        .catch(() => ({ ok: false })),
    ),
  );
  say({ type: 'subscribed', ok: acks.filter((a) => (a as { ok: boolean }).ok).length });
  setTimeout(() => finish(chosen.length), Number(process.env.RECEIVE_TIMEOUT_MS ?? 30_000)).unref();
}

let done = false;
function finish(subscribed: number) {
  if (done) return;
  done = true;
  const sorted = [...latencies].sort((a, b) => a - b);
  const q = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN);
  say({
    type: 'result',
    expected: subscribed * rounds,
    received: latencies.length,
    p50: q(0.5),
    p90: q(0.9),
    p99: q(0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    rounds: [...perRound.values()].map((r) => r.count),
  });
}

const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  const msg = JSON.parse(line) as { type: string };
  if (msg.type === 'subscribe') void subscribe();
  if (msg.type === 'quit') {
    for (const s of sockets) s.close();
    process.exit(0);
  }
});

await connectAll();
