// The console in a real browser: OIDC sign-in against a real provider, the
// hydrated Readiness panel, the non-admin view, and sign-out.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLore, launchBrowser, openPage, signIn, hydrated, ADMIN, USER } from './helpers.mjs';

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

test('an admin signs in through the identity provider and sees Readiness', async () => {
  const { context, page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);

  // A fresh install lands on the setup wizard; the Dashboard is one click away.
  await hydrated(page);
  assert.equal(new URL(page.url()).pathname, '/setup');
  await page.goto(`${lore.baseUrl}/dashboard`);
  await hydrated(page);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  // The Readiness panel is fetched by the hydrated page from /admin/setup-state/.
  const verdict = page.locator('.readiness .verdict');
  await verdict.waitFor();
  assert.equal(await verdict.getAttribute('data-can-answer'), 'no');
  assert.equal(await page.locator('.readiness [data-check]').count(), 6);
  assert.match(await page.locator('[data-check="provider"]').innerText(), /missing/i);
  for (const screen of ['Setup wizard', 'Sources', 'Providers', 'Playground', 'Prompt', 'Access', 'Advanced tuning', 'Dashboard']) {
    assert.equal(await page.getByRole('navigation').getByRole('link', { name: screen, exact: true }).count(), 1, screen);
  }
  assert.deepEqual(errors, [], 'the page logged no errors');
  await context.close();
});

test('the hydrated Readiness panel refreshes on click', async () => {
  const { context, page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/dashboard`);
  await hydrated(page);
  await page.locator('.readiness .verdict').waitFor();

  const refreshed = page.waitForResponse((r) => r.url().endsWith('/admin/setup-state/') && r.status() === 200);
  await page.locator('.readiness').getByRole('button', { name: 'Refresh' }).click();
  const body = await (await refreshed).json();
  assert.equal(body.canAnswer, false);

  // Client-side navigation works too: the router is live.
  await page.getByRole('navigation').getByRole('link', { name: 'Sources', exact: true }).click();
  await page.getByRole('heading', { name: 'Sources', exact: true }).waitFor();
  assert.equal(new URL(page.url()).pathname, '/sources');
  assert.deepEqual(errors, [], 'the page logged no errors');
  await context.close();
});

test('a signed-in account that is not an admin finds the admin area unavailable', async () => {
  const { context, page, errors } = await openPage(browser, lore.baseUrl, ['403 /']);
  await signIn(page, lore.baseUrl, USER);

  const notice = page.locator('[data-code="admin_unavailable"]');
  await notice.waitFor();
  assert.match(await notice.innerText(), /not an authorized admin/);
  assert.match(await notice.innerText(), /bob@example\.test/);
  assert.equal(await page.getByRole('navigation').count(), 0);

  const api = await context.request.get(`${lore.baseUrl}/admin/setup-state/`);
  assert.equal(api.status(), 403);
  assert.equal((await api.json()).error.code, 'admin_unavailable');
  assert.deepEqual(errors, [], 'the page logged no errors');
  await context.close();
});

test('after sign-out the old cookie no longer works', async () => {
  const { context, page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  await hydrated(page);
  const cookie = (await context.cookies()).find((c) => c.name === 'lore_session');
  assert.ok(cookie, 'a session cookie was set');
  assert.equal(cookie.httpOnly, true);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/signin/);

  const replay = await fetch(`${lore.baseUrl}/admin/setup-state/`, { headers: { cookie: `lore_session=${cookie.value}` } });
  assert.equal(replay.status, 401);
  assert.deepEqual(errors, [], 'the page logged no errors');
  await context.close();
});
