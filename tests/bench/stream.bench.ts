import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { io } from 'socket.io-client';
import { users } from '../../drizzle/index.js';
import { storeNotifications } from '../../src/domains/notifications/service.js';
import { startApp, writeSection } from './harness.js';

/**
 * Issue #18 performance: a client that missed 1,000 events of its
 * notifications stream resumes (`subscribe` with `lastSeq: 0`, docs/decisions.md
 * §12.3) and gets all of them; measured from the subscribe to the arrival of
 * the 1,000th event, and to the ack that follows the replay. Target: < 200 ms
 * to the last one. The client runs in this process (its decoding is counted
 * too, so the figure is on the conservative side).
 */
const MISSED = 1_000;
const ROUNDS = 10;

export default async function run() {
  const app = await startApp();
  try {
    const walletAddress = `0x${randomBytes(20).toString('hex')}`;
    const [u] = await app.db.db.insert(users).values({ chain: 'evm', walletAddress, authMethod: 'wallet' }).returning({ id: users.id });
    const token = app.app.signAccessToken({ id: u.id, walletAddress, chain: 'evm' });
    // 1,000 stored notifications (seq 1-1000), as the notify path stores them; nobody was listening.
    await app.db.db.transaction((tx) =>
      storeNotifications(
        app.app,
        tx,
        new Date(),
        Array.from({ length: MISSED }, (_, i) => ({
          userId: u.id,
          type: 'order_filled' as const,
          title: `Order ${i} filled`,
          message: 'Your limit order for 120 YES at 41¢ was filled',
          data: { orderId: `o-${i}`, marketId: 'pm-516710' },
        })),
      ),
    );

    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ');
    const lastMs: number[] = [];
    const ackMs: number[] = [];
    const cpuMs: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const socket = io(app.url, { transports: ['websocket'], forceNew: true, reconnection: false, auth: { token } });
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve);
        socket.once('connect_error', reject);
      });
      let count = 0;
      let last = 0;
      const started = performance.now();
      const cpu = process.cpuUsage();
      const done = new Promise<void>((resolve) =>
        socket.on('notification', (p: { seq: number }) => {
          count++;
          if (p.seq === MISSED) {
            last = performance.now() - started;
            const used = process.cpuUsage(cpu);
            cpuMs.push((used.user + used.system) / 1000);
            resolve();
          }
        }),
      );
      const ack = (await socket.timeout(10_000).emitWithAck('subscribe', { channel: 'user:notifications', lastSeq: 0 })) as {
        ok: boolean;
        seq: number;
      };
      const acked = performance.now() - started;
      await done;
      if (!ack.ok || ack.seq !== MISSED || count !== MISSED) throw new Error(`resume incomplete: ${JSON.stringify(ack)}, ${count} events`);
      lastMs.push(last);
      ackMs.push(acked);
      socket.close();
    }
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)];
    const fmt = (x: number) => x.toFixed(1);
    const rows = [
      '| measure | median ms | worst ms |',
      '|---|---|---|',
      `| subscribe → 1,000th replayed event | ${fmt(median(lastMs))} | ${fmt(Math.max(...lastMs))} |`,
      `| subscribe → ack \`{ ok: true, seq: 1000 }\` | ${fmt(median(ackMs))} | ${fmt(Math.max(...ackMs))} |`,
      `| CPU time of the process (server and client) to the 1,000th event | ${fmt(median(cpuMs))} | ${fmt(Math.max(...cpuMs))} |`,
    ];
    process.stdout.write(`${rows.join('\n')}\n`);
    await writeSection(
      'Notifications stream: resume of 1,000 missed events',
      `${rows.join('\n')}\n\n${ROUNDS} resumes from \`lastSeq: 0\` of a user with ${MISSED} stored events, each on a fresh socket; ` +
        `client in the same process. Target (issue #18): < 200 ms to the last one. Load average at the start: ${load}.`,
    );
  } finally {
    await app.close();
  }
}
