import { createRequire } from 'node:module';
import closeWithGrace from 'close-with-grace';
import { buildApp, loggerOptions } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { loadDevEnv } from './lib/dev-env.js';
import { settleTickObjectShape } from './lib/tick-shape.js';

/** pino-pretty is a development dependency: the production image has none. */
function hasPinoPretty(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/** The only file that reads process.env, listens, handles signals and exits. */
async function main() {
  // Before anything else runs: keeps Node's own per-request ticks on V8's fast path (src/lib/tick-shape.ts).
  settleTickObjectShape();
  const dev = loadDevEnv(process.env);
  let config;
  try {
    config = loadConfig(dev.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`Invalid configuration: ${p}\n`);
      process.exit(1);
    }
    throw err;
  }

  // Human-readable logs for a developer at a terminal; JSON lines everywhere else.
  const pretty = !config.isProduction && process.stdout.isTTY === true && hasPinoPretty();
  const app = await buildApp(config, { logger: loggerOptions(config, { pretty }) });
  if (dev.envFile) app.log.info({ file: dev.envFile }, 'read variables from .env (the environment wins)');
  if (dev.jwtSecretFile) {
    app.log.info({ file: dev.jwtSecretFile }, 'JWT_SECRET is not set: using the development key kept in .data (never used in production)');
  } else if (config.jwtSecretGenerated) {
    app.log.warn('JWT_SECRET is not set: using a random key for this process; tokens will not survive a restart');
  }
  if (config.isProduction && config.SIGN_IN_BARE_NONCE) {
    app.log.warn(
      'SIGN_IN_BARE_NONCE=true in production: a signature over the bare nonce names no domain, so a phishing page can relay it (docs/decisions.md §10.7)',
    );
  }
  if (config.databaseKind === 'pglite') {
    app.log.info({ database: config.DATABASE_URL }, 'using the embedded PGlite database (single instance)');
  }
  if (!config.REDIS_URL) app.log.info('REDIS_URL not set: in-process stores (single instance only)');

  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'fatal error, shutting down');
    else app.log.info({ signal }, 'shutting down: draining requests');
    await app.close();
  });

  await app.listen({ port: config.PORT, host: config.HOST });
}

main().catch((err) => {
  process.stderr.write(`Failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
