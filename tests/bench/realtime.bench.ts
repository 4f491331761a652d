import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadavg } from 'node:os';
import { ROOT, startApp, writeSection } from './harness.js';

/**
 * Seed §8 at full size: 5,000 Socket.IO clients on one instance (default
 * limits, 20 per forwarded address), 500 of them subscribed to one market;
 * ROUNDS publishes through app.publish, each measured from publish to arrival
 * at every subscriber by a separate load-generator process on loopback.
 * Target: p99 under 100 ms. Also reports memory per idle connection.
 */
const CLIENTS = 5000;
const SUBSCRIBERS = 500;
const ROUNDS = 20;
const CHANNEL = 'market:pm-bench';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 100));
  }
  return process.memoryUsage();
};

type Msg = Record<string, number | string | number[]> & { type: string };

export default async function run() {
  const app = await startApp({ TRUST_PROXY: 'true' });
  const child = spawn('bash', ['-c', `ulimit -n 20000 && exec "${process.execPath}" --import tsx tests/bench/realtime-load.ts`], {
    cwd: ROOT,
    env: { ...process.env, URL: app.url, CLIENTS: String(CLIENTS), SUBSCRIBERS: String(SUBSCRIBERS), ROUNDS: String(ROUNDS), CHANNEL },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 240_000);
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const expect = async (type: string): Promise<Msg> => {
    for (;;) {
      const { value, done } = await lines.next();
      if (done) throw new Error(`load generator ended before "${type}"`);
      const msg = JSON.parse(value) as Msg;
      if (msg.type === 'error') throw new Error(String(msg.message));
      if (msg.type === type) return msg;
    }
  };
  const send = (msg: object) => child.stdin!.write(`${JSON.stringify(msg)}\n`);
  try {
    const before = await settle();
    const connected = await expect('connected');
    process.stdout.write(`connected ${JSON.stringify(connected)}\n`);
    const idle = await settle();
    const n = Number(connected.clients);
    const rssPer = (idle.rss - before.rss) / n;
    const heapPer = (idle.heapUsed - before.heapUsed) / n;

    send({ type: 'subscribe' });
    const subscribed = await expect('subscribed');
    const cpuStart = process.cpuUsage();
    const fanout: number[] = [];
    for (let seq = 0; seq < ROUNDS; seq++) {
      const t0 = performance.now();
      app.app.publish(CHANNEL, 'market:update', {
        marketId: 'pm-bench',
        yesPrice: 0.5 + seq / 1000,
        volume: 1_000_000,
        timestamp: new Date().toISOString(),
        seq,
        sentAt: performance.timeOrigin + performance.now(),
      });
      fanout.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 100));
    }
    fanout.sort((a, b) => a - b);
    const result = await expect('result');
    const cpu = process.cpuUsage(cpuStart);
    send({ type: 'quit' });
    const ms = (v: unknown) => Number(v).toFixed(1);
    const verdict = Number(result.p99) < 100 && result.received === result.expected ? 'yes' : 'NO';
    const md = [
      `${n} clients connected over WebSocket in ${connected.ms} ms (${connected.refused} refused), ${subscribed.ok} subscribed to \`${CHANNEL}\`; ${ROUNDS} publishes through \`app.publish\`, 100 ms apart. Load generator: a separate process on loopback (same 2-core box).`,
      '',
      '| measure | value |',
      '|---|---|',
      `| deliveries received / expected | ${result.received} / ${result.expected} |`,
      `| publish → arrival p50 / p90 / p99 / max (ms) | ${ms(result.p50)} / ${ms(result.p90)} / ${ms(result.p99)} / ${ms(result.max)} |`,
      `| p99 under 100 ms | ${verdict} |`,
      `| server-side fan-out (synchronous part of one publish to 500 sockets) median / max (ms) | ${ms(fanout[fanout.length >> 1])} / ${ms(fanout[fanout.length - 1])} |`,
      `| server CPU during the publishes (user+system ms) | ${Math.round((cpu.user + cpu.system) / 1000)} |`,
      `| memory per idle connection: RSS / JS heap (KiB) | ${(rssPer / 1024).toFixed(1)} / ${(heapPer / 1024).toFixed(1)} |`,
      `| server RSS with ${n} idle clients (MiB) | ${(idle.rss / 1048576).toFixed(0)} |`,
      `| machine load average (1 min) at the end | ${loadavg()[0].toFixed(1)} on 2 cores |`,
    ].join('\n');
    process.stdout.write(`${md}\n`);
    await writeSection('Realtime: 5,000 clients, one market fan-out to 500', md);
  } finally {
    clearTimeout(killer);
    child.kill('SIGKILL');
    await app.close();
  }
}
