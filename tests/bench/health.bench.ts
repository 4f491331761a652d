import { compare, comparisonTable, startApp, startBaseline, writeSection } from './harness.js';

/** The framework floor: our full plugin stack on GET /health/live next to a bare route with the same body. */
export default async function run() {
  const app = await startApp();
  const body = JSON.stringify({ status: 'ok' });
  const base = await startBaseline(body);
  try {
    const c = await compare(
      { name: 'bare Fastify, same body', url: `${base.url}/health/live` },
      { name: 'GET /health/live (full stack)', url: `${app.url}/health/live` },
    );
    await writeSection(
      'Foundation: request overhead',
      `${comparisonTable(c.base, [c])}\n\nMedian of ${c.rounds} alternating rounds of 5 s, 20 connections.`,
    );
  } finally {
    await base.close();
    await app.close();
  }
}
