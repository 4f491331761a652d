import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';

/** The only file that reads process.env, listens, handles signals and exits. */
async function main() {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`Invalid configuration: ${p}\n`);
      process.exit(1);
    }
    throw err;
  }

  const app = await buildApp(config);
  if (config.jwtSecretGenerated) {
    app.log.warn('JWT_SECRET is not set: using a random key for this process; tokens will not survive a restart');
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
