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

/**
 * Runs an ES module script (TypeScript imports allowed, paths relative to the repository) in a fresh Node
 * process with `nodeArgs` before tsx's loader and exactly PATH plus `env`; resolves with its exit code and
 * its stdout and stderr together.
 */
export async function runScript(
  script: string,
  opts: { env?: Record<string, string>; nodeArgs?: string[] } = {},
): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', TSX_LOADER, '--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const [code] = await once(child, 'exit');
  return { code: code as number | null, out };
}

export async function waitForExit(child: ChildProcess, timeoutMs = 30_000): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return code as number | null;
}

/**
 * Runs `npm run <script>` in the repository with exactly the env given (plus
 * PATH/HOME, metrics off and a fixed JWT_SECRET unless given; an undefined
 * value removes the variable). The scripts `exec` node, so a signal to this
 * process reaches the program.
 */
export function startNpmScript(script: string, env: Record<string, string | undefined>): ChildProcess & { output: () => string } {
  const merged: Record<string, string | undefined> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    LOG_LEVEL: 'info',
    METRICS_PORT: '0',
    JWT_SECRET: TEST_JWT_SECRET,
    ...env,
  };
  const child = spawn('npm', ['run', '--silent', script], {
    cwd: ROOT,
    env: Object.fromEntries(Object.entries(merged).filter((e): e is [string, string] => e[1] !== undefined)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}

/** Resolves with the first match of `pattern` in the process's output, or rejects after `timeoutMs` or when it exits. */
export async function waitForOutput(
  child: ChildProcess & { output: () => string },
  pattern: RegExp,
  timeoutMs = 60_000,
): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = child.output().match(pattern);
    if (m) return m;
    if (child.exitCode !== null)
      throw new Error(`exited with ${child.exitCode} before printing ${pattern}:\n${child.output().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`${pattern} not printed within ${timeoutMs} ms:\n${child.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * fetch, retried while the server is not listening yet or answers 503: the
 * overload guard refuses requests while a busy start-up (migrations on the
 * embedded database, first job runs) still lags the event loop.
 */
export async function fetchWhenReady(url: string, init: RequestInit = {}, timeoutMs = 45_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url, init);
      if (res.status !== 503) return res;
      last = `503 ${await res.text()}`;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer (other than 503) within ${timeoutMs} ms: ${String(last)}`);
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
