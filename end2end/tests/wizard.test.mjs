// The setup wizard end to end, as a new admin on an empty install: sign in,
// walk every step with a generated documentation site and the local
// llama-server (SmolLM2), get a cited answer to the first question, resume
// after a reload, then find the source ready on Sources and the question on
// the Dashboard.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, hydrated, launchBrowser, openPage, signIn, startDocsSite, startLlama, startLore } from './helpers.mjs';

let lore;
let browser;
let llama;
let site;

before(async () => {
  llama = await startLlama();
  site = await startDocsSite();
  lore = await startLore({ LORE_INGEST__ALLOW_PRIVATE_ADDRESSES: 'true' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await lore?.stop();
  await site?.close();
  llama?.stop();
});

const atStep = (page, step) => page.locator(`.wizard-step[data-step="${step}"]`).waitFor({ timeout: 60_000 });

test('a new admin walks the wizard to a cited first answer', async () => {
  // The blank source name below is refused on purpose.
  const { page, errors } = await openPage(browser, lore.baseUrl, ['422 /admin/setup/source']);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/setup`);
  await hydrated(page);

  // 1. Persona, with a detail.
  await atStep(page, 'persona');
  await page.locator('input[name=persona][value="documentation_assistant"]').check();
  await page.fill('input[name=organisation]', 'Acme');
  await page.getByRole('button', { name: 'Continue' }).click();

  // 2. The first source; a bad one is refused with a message and the wizard stays.
  await atStep(page, 'source');
  await page.fill('input[name=name]', ' ');
  await page.fill('input[name=start_url]', `${site.url}/docs/`);
  await page.getByRole('button', { name: 'Add the source' }).click();
  const refused = page.locator('.flash.error', { hasText: 'invalid_source' });
  await refused.waitFor();
  await atStep(page, 'source');
  await page.fill('input[name=name]', 'Acme docs');
  await page.fill('input[name=start_url]', `${site.url}/docs/`);
  await page.getByRole('button', { name: 'Add the source' }).click();

  // 3. The provider: stored, probed and bound in one action.
  await atStep(page, 'provider');
  await page.selectOption('select[name=kind]', 'llama_cpp');
  await page.fill('input[name=endpoint]', llama.endpoint);
  await page.fill('input[name=model]', 'smollm2-135m-instruct');
  await page.getByRole('button', { name: 'Add, probe and use it' }).click();

  // 4. Advanced is optional. The wizard lives on the server: a reload resumes here.
  await atStep(page, 'advanced');
  await page.reload();
  await hydrated(page);
  await atStep(page, 'advanced');
  await page.getByRole('button', { name: 'Continue' }).click();

  // 5. The first index (the profile is created as it starts).
  await atStep(page, 'index');
  await page.getByRole('button', { name: 'Start the first index' }).click();

  // 6. The first question, once indexing is done; answered with citations.
  await atStep(page, 'question');
  await page.locator('.index-progress[data-job-status="succeeded"]').waitFor({ timeout: 120_000 });
  await page.fill('textarea[name=question]', 'What does guide 4 explain?');
  await page.getByRole('button', { name: 'Ask' }).click();
  const panel = page.locator('.panel.answer');
  await panel.waitFor({ timeout: 120_000 });
  assert.equal(await panel.getAttribute('data-refused'), 'false', await panel.innerText());
  await panel.locator('li.citation', { hasText: 'Guide 4' }).waitFor();
  await page.getByRole('button', { name: 'Finish setup' }).click();
  await atStep(page, 'complete');

  // The source is ready on Sources; the question is on the Dashboard.
  await page.goto(`${lore.baseUrl}/sources`);
  await hydrated(page);
  await page.locator('li.source[data-source="Acme docs"][data-status="ready"]').waitFor({ timeout: 30_000 });
  await page.goto(`${lore.baseUrl}/dashboard`);
  await hydrated(page);
  await page.locator('.top-queries li', { hasText: 'what does guide 4 explain' }).waitFor();
  assert.deepEqual(errors, []);
});
