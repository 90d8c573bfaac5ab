// The Sources screen in a real browser: an admin creates a website source
// for a small documentation site served on 127.0.0.1, watches the indexing
// progress advance without reloading, and sees the source ready (and the
// vector index line follow the store); makes a
// table source; follows a git repository and sees the commit it indexed.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ADMIN, hydrated, launchBrowser, openPage, signIn, startLore } from './helpers.mjs';

const PAGES = 24;
let lore;
let browser;
let site;

/** A site with a sitemap and PAGES pages, each answered after a short delay. */
async function startSite() {
  const server = http.createServer((req, res) => {
    const base = `http://${req.headers.host}`;
    if (req.url === '/robots.txt') {
      res.end(`User-agent: *\nDisallow: /private/\nSitemap: ${base}/sitemap.xml\n`);
    } else if (req.url === '/sitemap.xml') {
      const urls = Array.from({ length: PAGES }, (_, i) => `<url><loc>${base}/guide/${i + 1}</loc></url>`).join('');
      res.setHeader('content-type', 'application/xml');
      res.end(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>`);
    } else if (req.url.startsWith('/guide/')) {
      const n = Number(req.url.slice('/guide/'.length));
      setTimeout(() => {
        res.setHeader('content-type', 'text/html');
        res.end(`<!doctype html><html><head><title>Guide ${n}</title></head><body><nav>Menu</nav><main><h1>Guide ${n}</h1>` +
          `<p>Chapter ${n} of the field manual describes procedure ${n * 7} for calibrating instrument ${n}.</p></main></body></html>`);
      }, 250);
    } else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

before(async () => {
  site = await startSite();
  lore = await startLore({ LORE_INGEST__ALLOW_PRIVATE_ADDRESSES: 'true', LORE_INGEST__CRAWL_CONCURRENCY: '1' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await lore?.stop();
  await site?.close();
});

test('an admin creates a website source and watches it index to ready', async () => {
  const { context, page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/sources`);
  await hydrated(page);
  await page.getByText('No sources yet').waitFor();
  assert.equal(await page.locator('select[name=kind] option[value=page_bank]').isDisabled(), true,
    'the page bank is announced, not available');
  // The vector index in a line: nothing stored yet, so nothing indexed.
  const vectorIndex = page.locator('.vector-index p.meta');
  await vectorIndex.waitFor();
  assert.equal(await vectorIndex.textContent(), 'Vector index: none yet; the 0 chunks are each compared.');

  await page.fill('input[name=name]', 'Field manual');
  await page.fill('input[name=start_url]', `${site.url}/`);
  await page.getByRole('button', { name: 'Add source' }).click();
  const card = page.locator('li.source[data-source="Field manual"]');
  await card.waitFor();

  // Progress advances on the page, without a reload.
  const job = card.locator('.job');
  const seen = new Set();
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (await job.count()) {
      const done = await job.getAttribute('data-done');
      if (done !== null) seen.add(Number(done));
    }
    if ((await card.getAttribute('data-status')) === 'ready') break;
    await page.waitForTimeout(200);
  }
  assert.equal(await card.getAttribute('data-status'), 'ready', `the source became ready; logs:\n${lore.logs()}`);
  const intermediate = [...seen].filter((n) => n > 0 && n < PAGES);
  assert.ok(intermediate.length >= 2, `progress was seen advancing, saw ${[...seen].sort((a, b) => a - b)}`);
  await card.locator(`[data-documents="${PAGES}"]`).waitFor();
  // The source turns ready once its documents are in; the run itself ends a
  // moment later, after the chunk store is compacted.
  await card.locator('.job[data-job-status="succeeded"]').waitFor({ timeout: 60_000 });
  // The index line follows the store as the list reloads, with no reload of
  // the page: below the threshold of an index every chunk is compared.
  const chunks = await card.locator('[data-chunks]').getAttribute('data-chunks');
  assert.ok(Number(chunks) >= PAGES, `each page gave a chunk: ${chunks}`);
  await page.locator('.vector-index p.meta',
    { hasText: `Vector index: none yet; the ${chunks} chunks are each compared.` }).waitFor();
  assert.equal(await page.locator('.vector-index .index-training').count(), 0, 'no training is under way');

  // The corpus search finds a page by its content, with per-mode scores.
  await page.fill('input[name=query]', 'calibrating instrument 17');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const hit = page.locator('li.hit', { hasText: 'Guide 17' });
  await hit.waitFor();
  assert.match(await hit.textContent(), /vector \d\.\d{3}, text \d/, 'both modes scored it');

  // Disable, then delete with confirmation.
  await card.getByRole('button', { name: 'Disable' }).click();
  await page.locator('.flash.ok', { hasText: '"Field manual" is disabled.' }).waitFor();
  await page.waitForSelector('li.source[data-source="Field manual"][data-status="disabled"]');
  await card.getByRole('button', { name: 'Delete' }).click();
  await card.getByRole('button', { name: 'Delete for good' }).click();
  await page.getByText('No sources yet').waitFor();
  assert.deepEqual(errors, []);
  await context.close();
});

test('an admin makes a table source, is told who can read its rows, and finds a row', async () => {
  const { context, page, errors } = await openPage(browser, lore.baseUrl, ['422 /admin/sources/']);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/sources`);
  await hydrated(page);
  const operation = (body) => page.evaluate(async (body) => {
    const res = await fetch('/operation', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return res.status;
  }, body);
  assert.equal(await operation({ operation: 'create_table', table: 'faq', primary_key: 'id' }), 200);
  assert.equal(await operation({ operation: 'insert', table: 'faq', records: [
    { id: 1, question: 'Where is the spare key?', answer: 'The spare key hangs behind the boiler-room door.' },
    { id: 2, question: 'When is the bins day?', answer: 'Bins go out on Tuesday evenings.' },
    { id: 3, question: 'Who waters the ferns?', answer: 'Marguerite waters the ferns on Fridays.' },
  ] }), 200);

  await page.selectOption('select[name=kind]', 'table');
  const warning = page.locator('form.new-source .warning');
  await warning.waitFor();
  assert.match(await warning.textContent(), /answer only callers whose role may read the table, each with the attributes its role may read .*; keys without a user and the widget read none/);

  // A table that does not exist is refused, and nothing is created.
  await page.fill('input[name=name]', 'House FAQ');
  await page.fill('input[name=table]', 'nope');
  await page.fill('input[name=title]', 'question');
  await page.fill('input[name=text]', 'answer');
  await page.getByRole('button', { name: 'Add source' }).click();
  await page.getByText('there is no table `data.nope`').waitFor();
  assert.equal(await page.locator('li.source').count(), 0);

  await page.fill('input[name=table]', 'faq');
  await page.getByRole('button', { name: 'Add source' }).click();
  const card = page.locator('li.source[data-source="House FAQ"]');
  await card.waitFor();
  await page.waitForSelector('li.source[data-source="House FAQ"][data-status="ready"]', { timeout: 60_000 });
  await card.locator('[data-documents="3"]').waitFor();
  // Its audience is its table's readers; published to everyone on purpose,
  // the card says plainly what that exposes.
  await card.locator('.audience-words[data-audience="table"]').waitFor();
  assert.equal(await card.locator('.audience-warning').count(), 0);
  await card.locator('input.audience-input').fill('everyone');
  await card.locator('button.audience-set').click();
  const published = page.locator('li.source[data-source="House FAQ"] .audience-warning');
  await published.waitFor();
  assert.match(await published.textContent(), /published to every caller/);

  await page.fill('input[name=query]', 'who waters the ferns');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await page.locator('li.hit', { hasText: 'Who waters the ferns?' }).waitFor();
  assert.deepEqual(errors, []);
  await context.close();
});

test('an admin follows a git repository and sees the commit it indexed', async () => {
  // A repository on the server's disk, made with the real git.
  const repo = mkdtempSync(path.join(os.tmpdir(), 'lore-e2e-repo-'));
  const env = {
    ...process.env, GIT_AUTHOR_NAME: 'Docs', GIT_AUTHOR_EMAIL: 'docs@acme.test',
    GIT_COMMITTER_NAME: 'Docs', GIT_COMMITTER_EMAIL: 'docs@acme.test', GIT_CONFIG_NOSYSTEM: '1',
  };
  const git = (...args) => execFileSync('git', args, { cwd: repo, env, encoding: 'utf8' }).trim();
  git('init', '--quiet', '-b', 'main');
  mkdirSync(path.join(repo, 'docs'));
  writeFileSync(path.join(repo, 'docs', 'boiler.md'), '# Boiler\n\n## Pressure\n\nThe boiler runs at 1.4 bar when warm.\n');
  writeFileSync(path.join(repo, 'docs', 'vents.rst'), 'Vents\n=====\n\nBleed the radiators every October.\n');
  git('add', '--all');
  git('commit', '--quiet', '-m', 'Docs');
  const head = git('rev-parse', 'HEAD');

  const { context, page, errors } = await openPage(browser, lore.baseUrl);
  try {
    await signIn(page, lore.baseUrl, ADMIN);
    await page.goto(`${lore.baseUrl}/sources`);
    await hydrated(page);
    await page.selectOption('select[name=kind]', 'git');
    await page.fill('input[name=name]', 'House repo');
    await page.fill('input[name=url]', repo);
    await page.getByRole('button', { name: 'Add source' }).click();
    const card = page.locator('li.source[data-source="House repo"]');
    await card.waitFor();
    await page.waitForSelector('li.source[data-source="House repo"][data-status="ready"]', { timeout: 60_000 });
    await card.locator('[data-documents="2"]').waitFor();
    const summary = card.locator('p.sync-summary');
    await summary.waitFor();
    assert.match(await summary.textContent(), new RegExp(`^Commit ${head.slice(0, 12)} of main: all 2 files compared`));

    await page.fill('input[name=query]', 'boiler pressure');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('li.hit', { hasText: '1.4 bar' }).waitFor();
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
    rmSync(repo, { recursive: true, force: true });
  }
});
