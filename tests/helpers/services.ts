import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/net.js';
import { eventually } from '../support/eventually.js';

/**
 * Throwaway PostgreSQL and Redis servers of a test's own, on free loopback
 * ports, so fault tests can stop and restart real servers without touching
 * the ones the rest of the suite (or a developer) uses.
 */

export interface OwnRedis {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let proc: ChildProcess | undefined;
  const ping = async () => {
    const { Redis } = await import('ioredis');
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    r.on('error', () => {});
    try {
      await r.connect();
      return (await r.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      r.disconnect();
    }
  };
  const start = async () => {
    proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await eventually(ping, { timeoutMs: 10_000, intervalMs: 100, what: 'redis-server up' });
  };
  const stop = async () => {
    if (!proc || proc.exitCode !== null) return;
    const p = proc;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    });
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, start, stop };
}

export interface OwnPostgres {
  url: string;
  stop(mode?: 'immediate' | 'fast'): void;
  start(): void;
  destroy(): void;
}

/** initdb + pg_ctl as the postgres user when running as root (PostgreSQL refuses to run as root). */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pbt-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { stdio: 'pipe' })
      : execFileSync(cmd, args, { stdio: 'pipe' });
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`;
  const start = () => run('pg_ctl', ['-D', data, '-o', opts, '-w', '-t', '30', '-l', join(dir, 'log'), 'start']);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    stop: (mode = 'immediate') => {
      run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
    },
    destroy: () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        /* already stopped */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
