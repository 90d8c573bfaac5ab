// The Playground and the widget in a real browser, against llama-server with
// SmolLM2: answer mode shows the answer, its citations and the trace; the
// corpus diagnostic shows raw scores per mode; the widget, embedded in a page
// of an allowed origin, answers with its citations.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { ADMIN, freePort, hydrated, launchBrowser, openPage, prepareGuides, signIn, startDocsSite, startLlama, startLore } from './helpers.mjs';

let lore;
let browser;
let llama;
let host;
let site;

/**
 * A page on another loopback origin that embeds the widget with `snippet` in
 * its <head>, and sends its <body> half a second later: the async script runs
 * before the body exists, as it can on a slow page.
 */
async function startHost(port, snippet) {
  const server = http.createServer((_, response) => {
    // A declared charset: the browser parses the head at once, not sniffing.
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.write(`<!doctype html><html><head><title>Host</title>\n${snippet}\n</head>`);
    setTimeout(() => response.end('<body><h1>Partner docs</h1></body></html>'), 500);
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

before(async () => {
  llama = await startLlama();
  site = await startDocsSite();
  lore = await startLore({ LORE_INGEST__ALLOW_PRIVATE_ADDRESSES: 'true' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await host?.close();
  await lore?.stop();
  await site?.close();
  llama?.stop();
});

test('the Playground answers with citations and a trace, and the corpus diagnostic shows raw scores', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  await prepareGuides(page.request, lore.baseUrl, site, llama);

  await page.goto(`${lore.baseUrl}/playground`);
  await hydrated(page);
  await page.fill('textarea[name=question]', 'What does guide 4 explain?');
  await page.getByRole('button', { name: 'Ask' }).click();
  // While the model writes, the stages already done show as they end.
  await page.locator('ol.live-stages li[data-stage="retrieval"]').waitFor({ timeout: 60_000 });
  const panel = page.locator('.panel.answer');
  await panel.waitFor({ timeout: 120_000 });
  assert.equal(await panel.getAttribute('data-refused'), 'false', await panel.innerText());
  assert.equal(await panel.getAttribute('data-cache'), 'miss');
  await panel.locator('li.citation', { hasText: 'Guide 4' }).waitFor();
  // Statement by statement, each with the sentence of its passage that
  // says it, the statement's words marked there.
  const statements = panel.locator('ol.statements li.statement');
  assert.ok((await statements.count()) > 0, await panel.innerText());
  const support = statements.first().locator('blockquote.support');
  assert.ok((await support.innerText()).length > 10);
  assert.ok((await support.locator('mark').count()) > 0, await support.innerHTML());
  for (const stage of ['readiness', 'exact_cache', 'semantic_cache', 'retrieval', 'generation', 'grounding', 'answer']) {
    assert.equal(await panel.locator(`tr.stage[data-stage="${stage}"]`).count(), 1, stage);
  }
  assert.equal(await panel.locator('tr.stage[data-stage="grounding"]').getAttribute('data-decision'), 'quoted');

  // Asked again: served from the cache.
  await page.getByRole('button', { name: 'Ask' }).click();
  await page.locator('.panel.answer[data-cache="hit"]').waitFor({ timeout: 60_000 });

  await page.getByLabel('Corpus diagnostic').check();
  await page.fill('textarea[name=question]', 'indigo panel setting');
  await page.getByRole('button', { name: 'Ask' }).click();
  const hit = page.locator('li.hit', { hasText: 'Guide 4' });
  await hit.waitFor();
  assert.match(await hit.textContent(), /vector \d\.\d{3}, text \d/);
  assert.deepEqual(errors, []);
});

test('the widget snippet from the Access screen answers on a page of an allowed origin', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  await page.goto(`${lore.baseUrl}/access`);
  await hydrated(page);
  await page.fill('input[name=name]', 'Partner widget');
  await page.selectOption('select[name=kind]', 'widget');
  await page.fill('input[name=origins]', origin);
  await page.getByRole('button', { name: 'Create key' }).click();
  // The snippet loads the widget from server.base_url (here the address the admin uses too).
  const snippet = (await page.locator('pre.snippet').innerText()).trim();
  const raw = (await page.locator('code.raw-key').innerText()).trim();
  assert.equal(snippet, `<script src="${lore.baseUrl}/widget.js" data-key="${raw}" async></script>`);
  assert.deepEqual(errors, []);
  host = await startHost(port, snippet);

  const visitor = await browser.newContext();
  const hostPage = await visitor.newPage();
  await hostPage.goto(host.origin);
  const widget = hostPage.locator('[data-lore-widget]');
  await widget.locator('button.launcher').click();
  await widget.locator('input[name=question]').fill('What does guide 4 explain?');
  await widget.locator('button.ask').click();
  // A crawled page has a URL, so its citation is a link to it.
  const cite = widget.locator('ol.cites li a', { hasText: 'Guide 4' });
  await cite.waitFor({ timeout: 120_000 });
  assert.equal(await cite.getAttribute('href'), `${site.url}/docs/page-4`);
  // Numbered as the answer cites its passages, not 1, 2, 3 by position.
  assert.match(await cite.locator('xpath=..').getAttribute('value'), /^[1-9]\d*$/);
  const answer = widget.locator('p.a').last();
  assert.equal(await answer.getAttribute('class'), 'a');
  assert.ok((await answer.textContent()).length > 20);
  // A citation shows the sentence of its page that supports the answer: on
  // hover, and with its quote button (a tap, or the keyboard).
  const quoted = widget.locator('ol.cites li:has(button.quote)').first();
  const sentence = quoted.locator('blockquote.support').first();
  assert.equal(await sentence.isVisible(), false);
  await quoted.hover();
  await sentence.waitFor({ state: 'visible' });
  assert.ok((await sentence.locator('mark').count()) > 0, await sentence.innerHTML());
  await widget.locator('input[name=question]').hover();
  await sentence.waitFor({ state: 'hidden' });
  await quoted.locator('button.quote').focus();
  await quoted.locator('button.quote').press('Enter');
  await sentence.waitFor({ state: 'visible' });
  assert.equal(await quoted.locator('button.quote').getAttribute('aria-expanded'), 'true');
  // Ready for the next question once the stream has closed.
  await widget.locator('button.ask:not([disabled])').waitFor();
  // Escape closes the panel and gives the focus back to the launcher.
  await widget.locator('input[name=question]').press('Escape');
  assert.equal(await widget.locator('section.panel').isVisible(), false);
  assert.equal(await widget.locator('button.launcher').getAttribute('aria-expanded'), 'false');
  await visitor.close();
});

test('an upload set to the support role on the Sources screen is found in the Playground as support, not as guest', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  for (const role of ['support', 'guest']) {
    const added = await page.request.post(`${lore.baseUrl}/operation`,
      { data: { operation: 'add_role', role, permission: { super_user: false } } });
    assert.equal(added.status(), 200, await added.text());
  }
  const created = await page.request.post(`${lore.baseUrl}/admin/sources/`, { data: { name: 'Staff handbook', kind: 'upload' } });
  assert.equal(created.status(), 201, await created.text());
  const id = (await created.json()).id;
  const received = await page.request.post(`${lore.baseUrl}/admin/sources/${id}/files`, {
    multipart: { file: { name: 'handbook.md', mimeType: 'text/markdown',
      buffer: Buffer.from('# On call\n\nThe on-call escalation code word is heliotrope; say it to the duty manager.\n') } },
  });
  assert.equal(received.status(), 202, await received.text());
  const job = (await received.json())[0].job.id;
  for (let i = 0; ; i++) {
    const status = (await (await page.request.get(`${lore.baseUrl}/admin/jobs/${job}`)).json()).status;
    if (status === 'succeeded') break;
    assert.ok(['queued', 'running'].includes(status) && i < 600, `job ${job} is ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  // The admin restricts the handbook to the support role on its card.
  await page.goto(`${lore.baseUrl}/sources`);
  await hydrated(page);
  const card = page.locator('li.source[data-source="Staff handbook"]');
  await card.locator('.audience-words[data-audience="everyone"]').waitFor();
  await card.locator('input.audience-input').fill('support');
  await card.locator('button.audience-set').click();
  await page.locator('li.source[data-source="Staff handbook"] .audience-words[data-audience="support"]').waitFor();

  // The Playground, answering as each role, shows the difference.
  await page.goto(`${lore.baseUrl}/playground`);
  await hydrated(page);
  await page.getByLabel('Profile retrieval').check();
  await page.fill('textarea[name=question]', 'What is the on-call escalation code word?');
  const scope = page.locator('.panel.profile-retrieval p.meta');
  const hits = page.locator('.panel.hits-panel');
  await page.locator('select[name=answer_as] option[value="role:support"]').waitFor({ state: 'attached' });
  await page.selectOption('select[name=answer_as]', 'role:support');
  await page.getByRole('button', { name: 'Ask' }).click();
  await hits.locator('li.hit', { hasText: 'heliotrope' }).waitFor();
  assert.match(await scope.innerText(), /Staff handbook/);
  await page.selectOption('select[name=answer_as]', 'role:guest');
  await page.getByRole('button', { name: 'Ask' }).click();
  // The guest's reply replaces support's: its scope leaves the handbook out.
  await page.waitForFunction(() => {
    const meta = document.querySelector('.panel.profile-retrieval p.meta');
    return meta !== null && meta.textContent.includes('Guides') && !meta.textContent.includes('Staff handbook');
  });
  assert.equal(await hits.locator('li.hit', { hasText: 'heliotrope' }).count(), 0);
  assert.deepEqual(errors, []);
});

test('the Dashboard shows the questions asked, from the rollups', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/dashboard`);
  await hydrated(page);
  const tiles = page.locator('.metrics ul.tiles');
  await tiles.waitFor();
  // The Playground asked twice (a miss, then a hit) and the widget once.
  assert.equal(await tiles.getAttribute('data-queries'), '3');
  await page.locator('.top-queries li', { hasText: 'what does guide 4 explain' }).waitFor();
  assert.equal(await page.locator('.funnel tr.funnel-stage[data-stage="grounding"][data-decision="quoted"]').count(), 1);
  assert.equal(await page.locator('.funnel tr.funnel-stage[data-stage="exact_cache"][data-decision="hit"]').count(), 1);
  assert.equal(await page.locator('.key-usage tr.key[data-key="Partner widget"]').count(), 1);
  assert.equal(await page.locator('.charts svg').count(), 5);
  // Another range is read from the daily rollups.
  await page.selectOption('select[name=range]', String(24 * 7));
  await page.locator('.metrics ul.tiles[data-queries="3"]').waitFor();

  // Refused questions show as content gaps, each with its count and the way
  // to the Sources screen.
  for (const question of ['Zyxwv qrstu plokm?', 'zyxwv  qrstu plokm']) {
    const refused = await page.request.post(`${lore.baseUrl}/admin/playground/answer`, { data: { question } });
    assert.equal(refused.status(), 200, await refused.text());
    assert.equal((await refused.json()).refused, true);
  }
  await page.goto(`${lore.baseUrl}/dashboard`);
  await hydrated(page);
  const gap = page.locator('.content-gaps li.gap-group[data-label="zyxwv qrstu plokm"]');
  await gap.waitFor();
  assert.equal(await gap.getAttribute('data-count'), '2');

  // Asked as the guest role, a refusal is that audience's content gap: the
  // Dashboard lists one audience's questions when it is chosen.
  const asGuest = await page.request.post(`${lore.baseUrl}/admin/playground/answer`,
    { data: { question: 'Qwerty zxcvb asdfg?', answer_as: 'role:guest' } });
  assert.equal(asGuest.status(), 200, await asGuest.text());
  assert.equal((await asGuest.json()).refused, true);
  await page.goto(`${lore.baseUrl}/dashboard`);
  await hydrated(page);
  await page.locator('select[name=audience] option[value="role:guest"]').waitFor({ state: 'attached' });
  await page.selectOption('select[name=audience]', 'role:guest');
  await page.locator('.lists[data-audience="role:guest"]').waitFor();
  await page.locator('.content-gaps li.gap-group[data-label="qwerty zxcvb asdfg"]').waitFor();
  assert.equal(await page.locator('.content-gaps li.gap-group[data-label="zyxwv qrstu plokm"]').count(), 0);
  assert.equal(await page.inputValue('select[name=audience]'), 'role:guest', 'the choice stays shown');
  await page.selectOption('select[name=audience]', '');
  await page.locator('.lists[data-audience=""]').waitFor();
  await gap.waitFor();
  await gap.locator('a.add-source').click();
  await page.waitForURL(`${lore.baseUrl}/sources`);
  assert.deepEqual(errors, []);
});

test('a visitor rates an answer unhelpful in the widget; the admin pins a correction from the review queue, which the widget then serves', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  const port = await freePort();
  const created = await page.request.post(`${lore.baseUrl}/admin/keys`,
    { data: { name: 'Rated widget', kind: 'widget', origins: [`http://127.0.0.1:${port}`] } });
  assert.equal(created.status(), 201, await created.text());
  const rater = await startHost(port, (await created.json()).snippet);
  const visitor = await browser.newContext();
  try {
    const hostPage = await visitor.newPage();
    const pageErrors = [];
    hostPage.on('pageerror', (error) => pageErrors.push(error.message));
    await hostPage.goto(rater.origin);
    const widget = hostPage.locator('[data-lore-widget]');
    await widget.locator('button.launcher').click();
    const question = 'What does guide 3 explain?';
    await widget.locator('input[name=question]').fill(question);
    await widget.locator('button.ask').click();
    // A thumbs pair under the answer (or refusal), reached from the keyboard.
    const down = widget.locator('.rate button.down');
    await down.waitFor({ timeout: 120_000 });
    const served = (await widget.locator('p.a').last().textContent()).trim();
    await down.focus();
    await down.press('Enter');
    await widget.locator('.rate .note', { hasText: 'Thank you' }).waitFor();
    assert.equal(await down.getAttribute('aria-pressed'), 'true');
    // Markup and script in the comment stay text wherever it is shown.
    const comment = 'It should say <b>guide three</b><script>window.__rated = 1</script> & more';
    await widget.locator('.why textarea').fill(comment);
    await widget.locator('.why button[type=submit]').click();
    await widget.locator('.rate .note', { hasText: 'Thank you for telling us' }).waitFor();

    // The admin finds it in the review queue, with the comment as text.
    await page.goto(`${lore.baseUrl}/dashboard`);
    await hydrated(page);
    const item = page.locator('.review-queue li.review-item', { hasText: question });
    await item.waitFor();
    const quoted = item.locator('blockquote.comment');
    assert.equal(await quoted.textContent(), comment);
    assert.equal(await quoted.locator('b, script').count(), 0, 'the comment is not markup');
    assert.equal(await page.evaluate(() => window.__rated), undefined);
    assert.match(await page.locator('.metrics .tiles li.helpful').getAttribute('data-unhelpful'), /^[1-9]/);
    // Pinning a corrected answer: the pin editor opens with the served answer.
    await item.locator('button.pin-corrected').click();
    const editor = item.locator('form.pin-form textarea[name=pinned_answer]');
    const refused = (await item.locator('p.answer-text').getAttribute('data-refused')) === 'true';
    assert.equal((await editor.inputValue()).trim(), refused ? '' : served);
    const corrected = 'Guide 3 explains the third part of the setup; see the guide for each step.';
    await editor.fill(corrected);
    await item.locator('form.pin-form button[type=submit]').click();
    const reviewed = item.locator('p.reviewed[data-done="pinned"]');
    await reviewed.waitFor();
    // The item shows the pin it led to.
    const pins = await (await page.request.get(`${lore.baseUrl}/admin/pins`)).json();
    const pin = pins.find((p) => p.answer === corrected);
    assert.ok(pin, JSON.stringify(pins));
    assert.equal(await reviewed.getAttribute('data-made'), pin.id);
    // Still so after a reload: what was done is recorded on the item.
    await page.reload();
    await hydrated(page);
    await page.locator('.review-queue li.review-item', { hasText: question }).locator('p.reviewed[data-done="pinned"]').waitFor();

    // The same question through the widget is answered by the pin.
    await widget.locator('input[name=question]').fill(question);
    await widget.locator('button.ask').click();
    await widget.locator('p.a', { hasText: corrected }).waitFor({ timeout: 60_000 });
    assert.deepEqual(pageErrors, []);
  } finally {
    await visitor.close();
    await rater.close();
  }
  assert.deepEqual(errors, []);
});

test('golden questions gate a worse version until activated anyway, and a pinned answer serves a content gap', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);

  // An answered question on the Dashboard becomes a golden question.
  await page.goto(`${lore.baseUrl}/dashboard`);
  await hydrated(page);
  const asked = page.locator('.top-queries li[data-question="what does guide 4 explain"]');
  await asked.locator('button.save-golden').click();
  await asked.locator('text=golden: set its expected facts').waitFor();

  // A content gap's "Pin an answer" opens the Playground with the question;
  // the admin writes an answer and pins it, and it is served from then on.
  const gap = page.locator('.content-gaps li.gap-group[data-label="zyxwv qrstu plokm"]');
  await gap.locator('a.pin-answer').click();
  await page.waitForURL(/\/playground\?q=/);
  await hydrated(page);
  assert.equal(await page.inputValue('textarea[name=question]'), 'zyxwv qrstu plokm');
  await page.getByRole('button', { name: 'Ask' }).click();
  await page.locator('.panel.answer[data-refused="true"]').waitFor({ timeout: 60_000 });
  await page.getByRole('button', { name: 'Write an answer to pin' }).click();
  await page.fill('textarea[name=pinned_answer]', 'Zyxwv qrstu plokm is an internal codename; we do not document it.');
  await page.getByRole('button', { name: 'Pin', exact: true }).click();
  await page.locator('.curate .flash.ok', { hasText: 'Pinned' }).waitFor();
  await page.getByRole('button', { name: 'Ask' }).click();
  const pinned = page.locator('.panel.answer[data-pinned="true"]');
  await pinned.waitFor({ timeout: 60_000 });
  assert.match(await pinned.locator('.answer-text').innerText(), /internal codename/);

  // The Prompt screen: the golden set; the question added again there, as
  // the Playground asked it, replaces the Dashboard's wording.
  await page.goto(`${lore.baseUrl}/prompt`);
  await hydrated(page);
  await page.locator('.golden li.golden-question[data-question="what does guide 4 explain"]').waitFor();
  await page.fill('input[name=golden_question]', 'What does guide 4 explain?');
  await page.getByRole('button', { name: 'Add golden question' }).click();
  await page.locator('.golden li.golden-question[data-question="What does guide 4 explain?"]').waitFor();
  assert.equal(await page.locator('.golden li.golden-question').count(), 1);
  await page.locator('.pins li.pin[data-question="zyxwv qrstu plokm"]').waitFor();

  // A version that refuses everything (nothing passes a cutoff of 1) is
  // saved but kept inactive, shown beside the active one question by question.
  await page.fill('input[name=score_cutoff]', '1');
  await page.fill('input[name=note]', 'refuse everything');
  await page.getByRole('button', { name: 'Save as a new version' }).click();
  // While it is judged, the screen shows how far the judging got.
  const judging = page.locator('.panel.judging li.judging-item', { hasText: 'refuse everything' });
  await judging.waitFor({ timeout: 60_000 });
  assert.match(await judging.innerText(), /golden questions|active version/);
  const saved = page.locator('.flash', { hasText: 'Saved as version' });
  await saved.waitFor({ timeout: 300_000 });
  assert.match(await saved.innerText(), /not activated/);
  await page.locator('.panel.judging').waitFor({ state: 'detached', timeout: 10_000 });
  const held = page.locator('li.version', { has: page.locator('.badge.held') });
  await held.waitFor();
  const comparison = held.locator('.eval-comparison table.evals');
  await comparison.waitFor();
  const row = comparison.locator('tr[data-question="What does guide 4 explain?"]');
  assert.equal(await row.locator('td.wrong').count(), 1, await row.innerText());
  assert.equal(await row.locator('td.right').count(), 1, await row.innerText());
  await held.locator('button.activate-anyway').click();
  await page.locator('.flash.ok', { hasText: 'activated anyway' }).waitFor();
  await page.locator('li.version', { has: page.locator('.badge.ok') }).locator('.eval-comparison').waitFor();
  assert.deepEqual(errors, []);
});
