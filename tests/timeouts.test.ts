import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './helpers/app.js';

/**
 * docs/decisions.md §15.3: request bodies must arrive within 30 s and idle
 * keep-alive connections close after 72 s. A half-sent body used to hold a
 * connection open for minutes (no request timeout at all).
 */
let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(async () => t?.close());

describe('HTTP server timeouts', () => {
  it('bounds how long a request may take to arrive, and how long an idle keep-alive connection lives', () => {
    const server = t.app.server as import('node:http').Server & { connectionsCheckingInterval?: number };
    expect(server.requestTimeout).toBe(30_000);
    expect(server.headersTimeout).toBeLessThanOrEqual(30_000);
    expect(server.headersTimeout).toBeGreaterThan(0);
    expect(server.keepAliveTimeout).toBe(72_000);
    // Expired requests are looked for every few seconds, not every 30 (Node's default).
    expect(server.connectionsCheckingInterval).toBeLessThanOrEqual(5_000);
  });
});
