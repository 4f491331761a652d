import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../support/net.js';

/**
 * A real browser (Debian's Chromium through playwright-core) on a page served
 * from another port of an allowed origin: wallet sign-in with credentials,
 * the cookies a page can and cannot see, refresh from the cookie alone, and
 * CORS refusing an origin that is not listed.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let t: TestApp;
let api: string;
let allowedPage: { url: string; server: Server };
let otherPage: { url: string; server: Server };
let browser: Browser;
let bundle: string;

async function servePage(port: number): Promise<{ url: string; server: Server }> {
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>client</title></head><body><script>${bundle}</script></body></html>`;
  const server = createServer((req, res) => {
    if (req.url === '/favicon.ico') return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}`, server };
}

beforeAll(async () => {
  const out = await build({
    entryPoints: [fileURLToPath(new URL('./page-entry.ts', import.meta.url))],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  });
  bundle = out.outputFiles[0].text.replace(/<\/script/gi, '<\\/script');
  const pagePort = await freePort();
  t = await buildTestApp({ CORS_ORIGINS: `http://127.0.0.1:${pagePort}` });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  api = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
  allowedPage = await servePage(pagePort);
  otherPage = await servePage(await freePort());
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  allowedPage?.server.close();
  otherPage?.server.close();
  await t?.close();
});

describe('in a real browser', () => {
  it('signs in with credentials; the page sees logged_in but never refresh_token; refresh works from the cookie alone', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(allowedPage.url);
    const result = await page.evaluate(async (apiUrl) => {
      const { createApiClient, unwrap, newWallet } = (window as any).pb;
      const wallet = await newWallet();
      const client = createApiClient({ baseUrl: apiUrl, mode: 'cookie' });
      const user = await client.session.signInWithWallet({ address: wallet.address, chain: 'solana', signMessage: wallet.sign });
      const cookiesAfterSignIn = document.cookie;
      // A "reload": a new client with nothing in memory; only the httpOnly cookie can restore the session.
      const reloaded = createApiClient({ baseUrl: apiUrl, mode: 'cookie' });
      const prefs = await unwrap(reloaded.api.GET('/api/v1/push/preferences'));
      return { user, cookiesAfterSignIn, prefs, signedIn: reloaded.session.signedIn };
    }, api);
    expect(result.user.walletAddress).toBeTruthy();
    expect(result.cookiesAfterSignIn).toContain('logged_in=1');
    expect(result.cookiesAfterSignIn).toContain('beta_access=1');
    expect(result.cookiesAfterSignIn).not.toContain('refresh_token');
    expect(result.prefs).toMatchObject({ enabled: true });
    expect(result.signedIn).toBe(true);
    const jar = await context.cookies(`${api}/api/v1/auth/refresh`);
    const refresh = jar.find((c) => c.name === 'refresh_token');
    expect(refresh).toMatchObject({ httpOnly: true, path: '/api/v1/auth', sameSite: 'Lax' });
    await context.close();
  }, 60_000);

  it('two tabs refreshing at once take turns (Web Locks): neither presents a rotated cookie, the session survives', async () => {
    const context = await browser.newContext();
    const [tabA, tabB] = [await context.newPage(), await context.newPage()];
    await tabA.goto(allowedPage.url);
    await tabB.goto(allowedPage.url);
    await tabA.evaluate(async (apiUrl) => {
      const { createApiClient, newWallet } = (window as any).pb;
      const wallet = await newWallet();
      const client = createApiClient({ baseUrl: apiUrl, mode: 'cookie' });
      await client.session.signInWithWallet({ address: wallet.address, chain: 'solana', signMessage: wallet.sign });
    }, api);
    // Both tabs start a refresh at the same instant, each with its own client (a page load each).
    const startAt = Date.now() + 400;
    const inTab = (tab: typeof tabA) =>
      tab.evaluate(
        async ([apiUrl, at]) => {
          const { createApiClient } = (window as any).pb;
          let loggedOut = false;
          const client = createApiClient({ baseUrl: apiUrl, mode: 'cookie', onLoggedOut: () => (loggedOut = true) });
          await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
          const token = await client.session.refresh();
          return { ok: token !== null, loggedOut, locks: typeof navigator.locks?.request === 'function' };
        },
        [api, startAt] as const,
      );
    const results = await Promise.all([inTab(tabA), inTab(tabB)]);
    expect(results).toEqual([
      { ok: true, loggedOut: false, locks: true },
      { ok: true, loggedOut: false, locks: true },
    ]);
    // The session is alive: another refresh from the cookie works, and its body never shows the refresh token.
    const after = await tabB.evaluate(async (apiUrl) => {
      const res = await fetch(`${apiUrl}/api/v1/auth/refresh`, {
        method: 'POST',
        credentials: 'include',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      const body = await res.json();
      return { status: res.status, hasRefreshToken: 'refreshToken' in body, sees: document.cookie.includes('refresh_token') };
    }, api);
    expect(after).toEqual({ status: 200, hasRefreshToken: false, sees: false });
    await context.close();
  }, 60_000);

  it('a page of another site cannot rotate the cookie (403 ORIGIN_NOT_ALLOWED, cookies kept)', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(allowedPage.url);
    await page.evaluate(async (apiUrl) => {
      const { createApiClient, newWallet } = (window as any).pb;
      const wallet = await newWallet();
      await createApiClient({ baseUrl: apiUrl, mode: 'cookie' }).session.signInWithWallet({
        address: wallet.address,
        chain: 'solana',
        signMessage: wallet.sign,
      });
    }, api);
    const before = (await context.cookies(`${api}/api/v1/auth/refresh`)).find((c) => c.name === 'refresh_token')!.value;
    const evil = await context.newPage();
    await evil.goto(otherPage.url);
    // The cookie goes along (same site, SameSite=Lax); the answer is unreadable to the page (CORS), and the server refuses.
    await evil.evaluate(async (apiUrl) => {
      await fetch(`${apiUrl}/api/v1/auth/refresh`, { method: 'POST', credentials: 'include', mode: 'no-cors' }).catch(() => undefined);
    }, api);
    const after = (await context.cookies(`${api}/api/v1/auth/refresh`)).find((c) => c.name === 'refresh_token');
    expect(after?.value).toBe(before);
    const stillWorks = await page.evaluate(async (apiUrl) => {
      const { createApiClient } = (window as any).pb;
      return (await createApiClient({ baseUrl: apiUrl, mode: 'cookie' }).session.refresh()) !== null;
    }, api);
    expect(stillWorks).toBe(true);
    await context.close();
  }, 60_000);

  it('CORS refuses an origin that is not listed', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(otherPage.url);
    const outcome = await page.evaluate(async (apiUrl) => {
      try {
        await fetch(`${apiUrl}/api/v1/events`, { credentials: 'include' });
        return 'allowed';
      } catch (e) {
        return `refused: ${(e as Error).name}`;
      }
    }, api);
    expect(outcome).toBe('refused: TypeError');
    await context.close();
  }, 60_000);
});
