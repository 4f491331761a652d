import { load, loadTable, startApp, startBaseline, writeSection } from './harness.js';

/** The framework floor: our full plugin stack on GET /health/live next to a bare route with the same body. */
export default async function run() {
  const app = await startApp();
  const body = JSON.stringify({ status: 'ok' });
  const base = await startBaseline(body);
  try {
    const baseline = await load('bare Fastify, same body', `${base.url}/health/live`);
    const ours = await load('GET /health/live (full stack)', `${app.url}/health/live`);
    await writeSection('Foundation: request overhead', loadTable([baseline, ours], baseline));
  } finally {
    await base.close();
    await app.close();
  }
}
