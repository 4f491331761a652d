import { load, loadTable, startApp, startBaseline, writeSection } from './harness.js';

/**
 * The webhook's hot paths next to a bare route answering the same body:
 * a retried (duplicate) update costs the secret check and one
 * INSERT … ON CONFLICT DO NOTHING in a transaction; a body that is not an
 * update costs the secret check only. (New updates add the command's own
 * queries and the Telegram reply, which depends on Telegram.)
 */
export default async function run() {
  const secret = 'bench-webhook-secret_0123456789abcdef';
  const app = await startApp({ MESSENGER_WEBHOOK_SECRET: secret, MESSENGER_BOT_USERNAME: 'BenchBot' });
  const base = await startBaseline(JSON.stringify({ ok: true }));
  const headers = { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': secret };
  const update = JSON.stringify({
    update_id: 1,
    message: { message_id: 1, date: 0, from: { id: 1, is_bot: false }, chat: { id: 1, type: 'private' }, text: '/status' },
  });
  try {
    // Consume update 1 once so the load below is all retries.
    await fetch(`${app.url}/api/v1/messenger-bot/webhook`, { method: 'POST', headers, body: update });
    const baseline = await load('bare Fastify, same answer', `${base.url}/x`, { durationSec: 3 });
    const dup = await load('webhook: duplicate update_id', `${app.url}/api/v1/messenger-bot/webhook`, {
      method: 'POST',
      headers,
      body: update,
      durationSec: 3,
    });
    const junk = await load('webhook: body without update_id', `${app.url}/api/v1/messenger-bot/webhook`, {
      method: 'POST',
      headers,
      body: '{"hello":1}',
      durationSec: 3,
    });
    const bad = await load('webhook: wrong secret (401)', `${app.url}/api/v1/messenger-bot/webhook`, {
      method: 'POST',
      headers: { ...headers, 'x-telegram-bot-api-secret-token': 'wrong' },
      body: update,
      durationSec: 3,
    });
    await writeSection(
      'Messenger webhook',
      loadTable([baseline, dup, junk, bad], baseline) + '\n\nThe 401 row counts as non-2xx by design.',
    );
  } finally {
    await base.close();
    await app.close();
  }
}
