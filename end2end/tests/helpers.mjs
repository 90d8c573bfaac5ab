// Starts what a browser test needs: a real OpenID provider, a `lore serve`
// process on a free loopback port with a fresh data directory, and Debian's
// Chromium driven by playwright-core.

import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
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
    /** Runs `lore ARGS` on the same data directory and settings; its stdout. */
    cli: (args) => execFileSync(bin, args, { env, encoding: 'utf8' }),
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

/**
 * Signs in through the identity provider's login page as `account`. Done
 * when the browser is back at Lore with its session: the page it lands on
 * need not finish loading (the caller goes where it tests). A timeout says
 * where the browser was stuck.
 */
export async function signIn(page, baseUrl, account) {
  await page.goto(`${baseUrl}/`);
  await step(page, 'signing in, the sign-in page', () => page.waitForURL(/\/signin/));
  await atProvider(page, account);
  await step(page, 'signing in, back at Lore', () => page.waitForURL(
    (url) => url.href.startsWith(baseUrl) && !url.pathname.startsWith('/auth/'),
    { waitUntil: 'commit' },
  ));
}

/**
 * Runs one step of a browser flow; a failure says `what` was awaited and
 * where the browser was stuck (its URL, title and the start of its text).
 */
export async function step(page, what, wait) {
  try {
    return await wait();
  } catch (err) {
    const text = await page.locator('body').innerText({ timeout: 1000 }).catch(() => '?');
    throw new Error(`${what}: stuck at ${page.url()} (${await page.title().catch(() => '?')}: ${text.slice(0, 300)}): ${err.message}`);
  }
}

/**
 * From Lore's sign-in page, through the identity provider's login as
 * `account`; the provider then sends the browser back to Lore.
 */
export async function atProvider(page, account) {
  await step(page, 'leaving Lore for the provider', () =>
    page.getByRole('link', { name: 'Sign in with your identity provider' }).click());
  await step(page, 'the provider\'s login', () => page.waitForURL(/\/interaction\//));
  await step(page, 'the provider\'s account buttons', () =>
    page.getByRole('button', { name: `Sign in as ${account.name}` }).click());
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

/** llama-server with SmolLM2 on a free loopback port (scripts/test builds and fetches both). */
export async function startLlama() {
  const bin = process.env.LORE_TEST_LLAMA_SERVER;
  const model = process.env.LORE_TEST_SMOLLM;
  if (!bin || !model) throw new Error('LORE_TEST_LLAMA_SERVER and LORE_TEST_SMOLLM must be set (scripts/test sets them)');
  const port = await freePort();
  const child = spawn(bin, ['-m', model, '--host', '127.0.0.1', '--port', String(port), '-c', '2048', '-t', '1', '-np', '1'],
    { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) { child.kill(); throw new Error('llama-server did not start'); }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { endpoint: `${base}/v1`, stop: () => child.kill('SIGTERM') };
}

// The documentation site of the Rust answer tests (engine/tests/support/site.rs),
// page for page, so SmolLM2 (greedy decoding) sees the same passages.
const PAGES = 12;
const TOPICS = ['installing the server on Linux with the package manager', 'configuring single sign-on through an identity provider',
  'backing up the database and restoring it on a new machine', 'tuning the search cutoff and the fusion weights',
  'writing webhooks that notify your chat channel', 'rotating the API keys of a hosted model provider',
  'importing Markdown files from a documentation repository', 'monitoring latency percentiles on the dashboard',
  'running behind a reverse proxy with TLS termination', 'limiting the rate of requests from embedded widgets',
  'translating answers for a multilingual audience', 'exporting usage reports for finance each month'];
const COLOURS = ['amber', 'cobalt', 'crimson', 'emerald', 'indigo', 'saffron', 'teal', 'violet'];
const pageText = (n) => `Guide number ${n} explains ${TOPICS[n % TOPICS.length]}. Step one for guide ${n}: open the `
  + `${COLOURS[n % COLOURS.length]} panel and read setting ${n}. Step two: confirm that option ${n} is enabled, then restart. `
  + `Guide ${n} ends with a checklist of ${n + 3} items.`;
const html = (title, body) => `<!doctype html><html><head><title>${title}</title></head><body>
<header><a href="/docs/">Acme Docs</a> <span>Search the docs</span></header>
<nav><ul><li><a href="/docs/page-1">Getting started</a></li><li><a href="/docs/page-2">Configuration</a></li><li><a href="/private/secret">Internal</a></li></ul></nav>
<main>${body}</main>
<footer>Copyright Acme Corporation. All rights reserved. <a href="https://example.invalid/legal">Legal</a></footer>
</body></html>`;

/** The docs site's pages as files to upload: `guide-1.html` … `guide-12.html`. */
export function docsFiles() {
  return Array.from({ length: PAGES }, (_, i) => {
    const n = i + 1;
    return {
      name: `guide-${n}.html`,
      mimeType: 'text/html',
      buffer: Buffer.from(html(`Guide ${n} · Acme Docs`, `<h1>Guide ${n}</h1><h2>Overview</h2><p>${pageText(n)}</p>`)),
    };
  });
}

/** The docs site on a free loopback port: `/sitemap.xml` and `/docs/page-1` … `/docs/page-12`. */
export async function startDocsSite() {
  const server = http.createServer((req, res) => {
    const base = `http://${req.headers.host}`;
    const page = /^\/docs\/page-(\d+)$/.exec(req.url);
    if (req.url === '/robots.txt') {
      res.end(`User-agent: *\nDisallow: /private/\n\nSitemap: ${base}/sitemap.xml\n`);
    } else if (req.url === '/sitemap.xml') {
      const urls = Array.from({ length: PAGES }, (_, i) => `<url><loc>${base}/docs/page-${i + 1}</loc><lastmod>2026-11-01</lastmod></url>`);
      res.setHeader('content-type', 'application/xml');
      res.end(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.join('')}</urlset>`);
    } else if (page && Number(page[1]) >= 1 && Number(page[1]) <= PAGES) {
      const n = Number(page[1]);
      const next = n < PAGES ? `<p><a href="/docs/page-${n + 1}">Next guide</a></p>` : '';
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(html(`Guide ${n} · Acme Docs`, `<h1>Guide ${n}</h1><h2>Overview</h2><p>${pageText(n)}</p>${next}`));
    } else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/**
 * Crawls the docs site into a source named Guides and binds SmolLM2 to
 * generation, through the admin API with `request` (a signed-in admin's
 * page.request).
 */
export async function prepareGuides(request, baseUrl, site, llama) {
  const created = await request.post(`${baseUrl}/admin/sources/`, {
    data: { name: 'Guides', kind: 'website', config: { start_url: `${site.url}/docs/`, discovery: 'sitemap' } },
  });
  if (created.status() !== 201) throw new Error(`creating the source: ${created.status()} ${await created.text()}`);
  // Creating a website source starts its first sync.
  const job = (await created.json()).latest_job.id;
  for (let i = 0; ; i++) {
    const status = (await (await request.get(`${baseUrl}/admin/jobs/${job}`)).json()).status;
    if (status === 'succeeded') break;
    if (!['queued', 'running'].includes(status) || i >= 1200) throw new Error(`job ${job} is ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const added = await request.post(`${baseUrl}/admin/providers/quick-add`,
    { data: { kind: 'llama_cpp', endpoint: llama.endpoint, model: 'smollm2-135m-instruct' } });
  if (added.status() !== 201) throw new Error(`quick add: ${added.status()} ${await added.text()}`);
}
