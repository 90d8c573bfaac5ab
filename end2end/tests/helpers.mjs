// Starts what a browser test needs: a real OpenID provider, a `lore serve`
// process on a free loopback port with a fresh data directory, and Debian's
// Chromium driven by playwright-core.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { startProvider, CLIENT_ID } from '../oidc/provider.mjs';

export const ADMIN = { id: 'ada', email: 'ada@example.test', name: 'Ada Admin' };
export const USER = { id: 'bob', email: 'bob@example.test', name: 'Bob User' };

/** A free port on 127.0.0.1. */
export async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitFor(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url);
      if (response.ok) return;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Lore with an identity provider; ADMIN is an authorized admin, USER is not.
 * `extraEnv` adds settings (`LORE_INGEST__ALLOW_PRIVATE_ADDRESSES`, ...).
 */
export async function startLore(extraEnv = {}) {
  const bin = process.env.LORE_BIN;
  if (!bin) throw new Error('LORE_BIN must name the built `lore` binary (scripts/test sets it)');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const op = await startProvider({ redirectUris: [`${baseUrl}/auth/oidc/callback`] });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'lore-e2e-'));
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LORE_'))),
    LORE_DATA_DIR: dataDir,
    LORE_SERVER__BIND: `127.0.0.1:${port}`,
    LORE_AUTH__OIDC__ISSUER: op.issuer,
    LORE_AUTH__OIDC__CLIENT_ID: CLIENT_ID,
    LORE_AUTH__ADMINS: ADMIN.email,
    ...extraEnv,
  };
  if (process.env.LORE_TEST_MODELS_DIR) env.LORE_MODELS__DIR = process.env.LORE_TEST_MODELS_DIR;
  const lore = spawn(bin, ['serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let logs = '';
  lore.stdout.on('data', (chunk) => { logs += chunk; });
  lore.stderr.on('data', (chunk) => { logs += chunk; });
  try {
    await waitFor(`${baseUrl}/healthz`, 30_000);
  } catch (err) {
    lore.kill();
    throw new Error(`${err.message}\n${logs}`);
  }
  return {
    baseUrl,
    logs: () => logs,
    async stop() {
      lore.kill('SIGTERM');
      await new Promise((resolve) => lore.once('exit', resolve));
      await op.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** Signs in through the identity provider's login page as `account`. */
export async function signIn(page, baseUrl, account) {
  await page.goto(`${baseUrl}/`);
  await page.waitForURL(/\/signin/);
  await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
  await page.waitForURL(/\/interaction\//);
  await page.getByRole('button', { name: `Sign in as ${account.name}` }).click();
  await page.waitForURL((url) => url.href.startsWith(baseUrl) && !url.pathname.startsWith('/auth/'));
}

/** Waits until the WASM has hydrated the page (clicks before that do nothing). */
export async function hydrated(page) {
  await page.waitForSelector('body[data-hydrated="true"]', { timeout: 30_000 });
}

/**
 * A fresh browser context and page that records what went wrong: uncaught
 * exceptions and console errors (a hydration error is one), and failed
 * responses from Lore other than those the test expects (`"403 /"`).
 * `errors` must stay empty.
 */
export async function openPage(browser, baseUrl, expected = []) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (message) => {
    // The failed response itself is judged below, with its URL.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) errors.push(message.text());
  });
  page.on('response', (response) => {
    const url = new URL(response.url());
    const seen = `${response.status()} ${url.pathname}`;
    if (response.status() >= 400 && url.origin === baseUrl && !expected.includes(seen)) errors.push(seen);
  });
  return { context, page, errors };
}
