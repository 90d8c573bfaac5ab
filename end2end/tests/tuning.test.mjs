// Advanced tuning in a real browser: placeholders show the effective value
// and whether it is stored; a chunking change of an indexed corpus opens the
// reindex dialog, and cancelling it saves nothing; confirming saves and
// starts the full reindex.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, hydrated, launchBrowser, openPage, signIn, startLore } from './helpers.mjs';

let lore;
let browser;

before(async () => {
  lore = await startLore();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await lore?.stop();
});

test('tuning shows effective values and asks before a chunking change re-embeds everything', async () => {
  // The 409 before the confirmation is the dialog's cue.
  const { page, errors } = await openPage(browser, lore.baseUrl, ['409 /admin/tuning']);
  await signIn(page, lore.baseUrl, ADMIN);

  // An indexed upload, so a chunking change means a reindex.
  const source = await (await page.request.post(`${lore.baseUrl}/admin/sources/`, { data: { name: 'Runbook', kind: 'upload' } })).json();
  const uploaded = await page.request.post(`${lore.baseUrl}/admin/sources/${source.id}/files`, {
    multipart: { file: { name: 'restores.md', mimeType: 'text/markdown', buffer: Buffer.from('# Restores\n\nStop Lore, copy the snapshot back, start it again.\n') } },
  });
  const [receipt] = await uploaded.json();
  for (let i = 0; ; i++) {
    const job = await (await page.request.get(`${lore.baseUrl}/admin/jobs/${receipt.job.id}`)).json();
    if (job.status === 'succeeded') break;
    assert.ok(['queued', 'running'].includes(job.status) && i < 600, JSON.stringify(job));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  await page.goto(`${lore.baseUrl}/tuning`);
  await hydrated(page);
  const size = page.locator('input[name=chunk_size]');
  await size.waitFor();
  assert.equal(await size.getAttribute('placeholder'), '200 (default)');
  assert.equal(await page.locator('input[name=top_k]').getAttribute('placeholder'), '5 (default)');

  // A retrieval value alone: saved as a new profile version, now "stored".
  await page.fill('input[name=top_k]', '7');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.locator('.flash.ok', { hasText: 'Profile version 2' }).waitFor();
  await page.locator('input[name=top_k][placeholder="7 (stored)"]').waitFor();

  // Chunking: the dialog; cancel saves nothing.
  await page.fill('input[name=chunk_size]', '120');
  await page.getByRole('button', { name: 'Save' }).click();
  const dialog = page.locator('.reindex-dialog');
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  let tuning = await (await page.request.get(`${lore.baseUrl}/admin/tuning`)).json();
  assert.deepEqual(tuning.chunk_size, { value: 200, stored: false });

  // Confirm: saved, and the full reindex starts.
  await page.getByRole('button', { name: 'Save' }).click();
  await dialog.getByRole('button', { name: 'Save and reindex' }).click();
  await page.locator('.flash.ok', { hasText: 'full reindex started' }).waitFor();
  tuning = await (await page.request.get(`${lore.baseUrl}/admin/tuning`)).json();
  assert.deepEqual(tuning.chunk_size, { value: 120, stored: true });
  await page.locator('input[name=chunk_size][placeholder="120 (stored)"]').waitFor();
  assert.deepEqual(errors, []);
});
