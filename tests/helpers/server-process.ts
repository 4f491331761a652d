import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const TEST_JWT_SECRET = 'test-secret-test-secret-test-secret-0123456789';

/** tsx's loader by absolute URL, so a process can run from another working directory. */
export const TSX_LOADER = import.meta.resolve('tsx');

/**
 * Runs `src/server.ts` the way `npm start` does, with exactly the env given
 * (plus PATH/HOME, metrics off and a fixed JWT_SECRET unless given; an
 * undefined value removes the variable). `cwd` other than the repository
 * isolates `.env` and `.data/`.
 */
export function startServer(env: Record<string, string | undefined>, opts: { cwd?: string } = {}): ChildProcess & { output: () => string } {
  const merged: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    LOG_LEVEL: 'info',
    METRICS_PORT: '0',
    JWT_SECRET: TEST_JWT_SECRET,
    // Hot markets off unless a test points it at its fake: a spawned server never reaches the venue.
    POLYMARKET_MARKET_WS_URL: '',
    ...env,
  };
  const child = spawn(process.execPath, ['--import', TSX_LOADER, fileURLToPath(new URL('../../src/server.ts', import.meta.url))], {
    cwd: opts.cwd ?? ROOT,
    env: Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}

export async function waitForExit(child: ChildProcess, timeoutMs = 30_000): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return code as number | null;
}

export async function waitForHttp(url: string, timeoutMs = 45_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await fetch(url);
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms: ${String(last)}`);
}
