import { existsSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Real PostgreSQL when DATABASE_URL is a postgres:// URL (a database per test
// file, created for the run); the embedded PGlite otherwise. Tests that only
// make sense against a server (several processes on one database) are named
// *.pg.test.ts and run only in the first mode; likewise *.redis.test.ts need
// REDIS_URL (a file needing both is *.pg.redis.test.ts). They are left out of the run, never skipped; global-setup says
// which mode the run is in.
const onPostgres = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '');
const onRedis = Boolean(process.env.REDIS_URL);
// Real-browser tests (*.browser.test.ts) need Chromium (Debian's package; .ci/run installs it).
const hasChromium = existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium');

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    exclude: [
      'node_modules',
      ...(onPostgres ? [] : ['tests/**/*.pg.*test.ts']),
      ...(onRedis ? [] : ['tests/**/*.redis.*test.ts']),
      ...(hasChromium ? [] : ['tests/**/*.browser.test.ts']),
    ],
    globalSetup: ['tests/helpers/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 90_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});
