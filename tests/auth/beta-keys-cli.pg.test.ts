import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createTestDb } from '../helpers/app.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { nextIp } from '../support/users.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
let db: Awaited<ReturnType<typeof createTestDb>>;
let t: TestApp;
beforeAll(async () => {
  db = await createTestDb();
  t = await buildTestApp({}, { db });
});
afterAll(async () => {
  await t?.close();
  await db?.close();
});

describe('npm run beta-keys -- create (a real process on the same database)', () => {
  it('prints one key per line; each is redeemable its number of uses', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/cli/beta-keys.ts', 'create', '--count', '3', '--uses', '2'],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: 'silent' },
        timeout: 60_000,
      },
    );
    const keys = stdout.trim().split('\n');
    expect(keys).toHaveLength(3);
    for (const key of keys) {
      for (const expected of [200, 200, 400]) {
        const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/activate-key', payload: { key }, remoteAddress: nextIp() });
        expect(res.statusCode).toBe(expected);
      }
    }
  });

  it('exits 2 with the usage on bad arguments', async () => {
    const err = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/beta-keys.ts', 'create', '--count', 'zero'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: db.url },
      timeout: 60_000,
    }).catch((e: { code: number; stderr: string }) => e);
    expect((err as { code: number }).code).toBe(2);
    expect((err as { stderr: string }).stderr).toMatch(/usage: npm run beta-keys/);
  });
});
