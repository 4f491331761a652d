/**
 * `npm run client:pack-check` (CI): the package a consumer installs works, alone.
 * Packs the client workspace (`client/`, whose `prepack` builds it), installs the
 * tarball into a fresh project (from npm's local cache where it can), fails when
 * that installs more than MAX_PACKAGES packages (the client's own runtime
 * dependencies are openapi-fetch and socket.io-client, never the server's),
 * type-checks a small strict TypeScript file against `@predict-backend/client`
 * with the library checks on (a misspelt channel must not compile), compiles
 * it, and runs it against a live server. Exits 1 on any
 * failure with the step that failed. Its temporary directory (tarball, project,
 * node_modules) is removed however it ends: success, a failed step, an
 * exception, or SIGINT/SIGTERM.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildApp } from '../src/app.js';
import { testConfig } from '../src/config.js';

const CLIENT = fileURLToPath(new URL('../client', import.meta.url));
/** The most packages installing the client may bring into an app (itself included). */
const MAX_PACKAGES = 30;
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

const SMOKE = `import { createApiClient, unwrap, ApiError, Realtime, type AuthEvent, type Channel, type paths, type TokenStorage } from '@predict-backend/client';

declare const process: { argv: string[] };
type Live = paths['/health/live']['get']['responses'][200]['content']['application/json'];

let kept: string | null = null;
const storage: TokenStorage = { get: () => kept, set: (token) => void (kept = token) };
const client = createApiClient({ baseUrl: process.argv[2], mode: 'token', storage });
const seen: AuthEvent[] = [];
const stop = client.session.onAuthStateChange((event) => seen.push(event));
client.session.on('signedIn', ({ user, restored }) => void [user.id, restored]);
const restored = await client.session.restore();
stop();
const channels: Channel[] = ['market:pm-1', 'monitor:leaderboard', 'user:notifications'];
// @ts-expect-error a misspelt channel does not compile
const typo: Channel = 'markets:pm-1';
const live: Live = await unwrap(client.api.GET('/health/live'));
const page = await unwrap(client.api.GET('/api/v1/events', { params: { query: { limit: 2 } } }));
let missing = 0;
try {
  await unwrap(client.api.GET('/api/v1/events/{slug}', { params: { path: { slug: 'no-such-event' } } }));
} catch (err) {
  if (err instanceof ApiError) missing = err.status;
}
console.log(JSON.stringify({ live: live.status, events: Array.isArray(page.events), missing, realtime: typeof Realtime, restored, seen, channels: channels.length + (typo ? 0 : 1) }));
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2023', 'DOM'],
    types: [],
    strict: true,
    skipLibCheck: false,
    outDir: 'out',
  },
  files: ['smoke.ts'],
};

/** A step that failed, already reported: the script ends with exit code 1 after cleaning up. */
class StepFailed extends Error {}

async function step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
  process.stdout.write(`client package: ${name}\n`);
  try {
    return await fn();
  } catch (err) {
    const e = err as { stdout?: Buffer | string; stderr?: Buffer | string; message: string };
    process.stderr.write(`client package: ${name} FAILED\n${String(e.stdout ?? '')}${String(e.stderr ?? '')}${e.message}\n`);
    throw new StepFailed(name);
  }
}

const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: 'pipe', timeout: 300_000 });

const work = mkdtempSync(join(tmpdir(), 'pb-client-pack-'));
const removeWork = () => rmSync(work, { recursive: true, force: true, maxRetries: 3 });
// Whatever ends the process (process.exit anywhere, an uncaught error), the directory goes with it.
process.on('exit', removeWork);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    removeWork();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}
let app: Awaited<ReturnType<typeof buildApp>> | undefined;
try {
  const tarball = await step('npm pack the client workspace (prepack builds it)', () => {
    const [info] = JSON.parse(run('npm', ['pack', '--json', '--silent', '--pack-destination', work], CLIENT)) as Array<{
      filename: string;
      files: Array<{ path: string }>;
    }>;
    const files = info.files.map((f) => f.path);
    for (const needed of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/schema.d.ts']) {
      if (!files.includes(needed)) throw new Error(`the package lacks ${needed}; it has: ${files.join(', ')}`);
    }
    const stray = files.filter((f) => !f.startsWith('dist/') && f !== 'package.json' && f !== 'README.md');
    if (stray.length > 0) throw new Error(`unexpected files in the package: ${stray.join(', ')}`);
    return join(work, info.filename);
  });

  const project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'client-smoke', private: true, type: 'module' }, null, 2));
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  writeFileSync(join(project, 'smoke.ts'), SMOKE);

  await step('npm install the tarball into a fresh project (prefer the local cache)', () =>
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', tarball], project),
  );
  await step(`the install brings at most ${MAX_PACKAGES} packages`, () => {
    const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    const installed = Object.keys(lock.packages).filter((p) => p !== '');
    process.stdout.write(
      `client package: ${installed.length} packages: ${installed.map((p) => p.replace(/^.*node_modules\//, '')).join(', ')}\n`,
    );
    if (installed.length > MAX_PACKAGES) throw new Error(`${installed.length} packages installed, more than ${MAX_PACKAGES}`);
  });
  await step('type-check and compile a consumer (strict, skipLibCheck off)', () =>
    run(process.execPath, [TSC, '-p', 'tsconfig.json'], project),
  );

  // Built only now: the synchronous steps above stall this process's event loop for
  // seconds, which the overload guard would (rightly) answer with 503 for a moment.
  app = await buildApp(testConfig({ JWT_SECRET: 'client-pack-check-secret-0123456789abcdef' }), { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  // Asynchronously: the server answers from this very process.
  const out = await step('call a running server through the installed client', async () => {
    const r = await promisify(execFile)(process.execPath, ['out/smoke.js', `http://127.0.0.1:${port}`], { cwd: project, timeout: 60_000 });
    return r.stdout;
  });
  const got = JSON.parse(out.trim()) as Record<string, unknown>;
  const want = { live: 'ok', events: true, missing: 404, realtime: 'function', restored: null, seen: [], channels: 3 };
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    process.stderr.write(`client package: unexpected answer ${out.trim()}, expected ${JSON.stringify(want)}\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`client package: ok ${out.trim()}\n`);
  }
} catch (err) {
  if (!(err instanceof StepFailed))
    process.stderr.write(`client package: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
} finally {
  await app?.close().catch(() => {});
  removeWork();
}
