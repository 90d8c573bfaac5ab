// Providers, Access and Prompt in a real browser: quick add a real on-node
// provider (llama.cpp's llama-server with SmolLM2); create a key and see its
// value only once; an assistant signed in over OAuth listed and revoked;
// save a prompt version, look at the history and restore.

import crypto from 'node:crypto';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, freePort, hydrated, launchBrowser, openPage, signIn, startLlama, startLore } from './helpers.mjs';

let lore;
let browser;
let llama;

before(async () => {
  llama = await startLlama();
  lore = await startLore({ LORE_INGEST__ALLOW_PRIVATE_ADDRESSES: 'true', RUST_LOG: 'debug' });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await lore?.stop();
  llama?.stop();
});

test('quick add binds a real on-node model, and a dead endpoint is refused with the reason', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl, ['502 /admin/providers/quick-add']);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/providers`);
  await hydrated(page);
  await page.getByRole('heading', { name: 'Quick add' }).waitFor();

  // A dead endpoint: the probe fails, the message says why, nothing is stored.
  await page.selectOption('select[name=kind]', 'custom');
  await page.fill('input[name=endpoint]', `http://127.0.0.1:${await freePort()}/v1`);
  await page.fill('input[name=model]', 'nothing-here');
  await page.getByRole('button', { name: 'Add and probe' }).click();
  await page.locator('.flash.error', { hasText: 'probe_failed' }).waitFor();
  assert.equal(await page.locator('li.account').count(), 0, 'nothing half-made remains');

  await page.selectOption('select[name=kind]', 'llama_cpp');
  await page.fill('input[name=endpoint]', llama.endpoint);
  // llama-server ignores the key; Lore still stores and sends it.
  const providerKey = 'sk-e2e-never-shown-5d41402abc4b2a76';
  await page.fill('input[name=api_key]', providerKey);
  await page.fill('input[name=model]', 'smollm2');
  await page.getByRole('button', { name: 'Add and probe' }).click();
  await page.locator('.flash.ok', { hasText: 'now generates answers' }).waitFor({ timeout: 60_000 });
  const target = page.locator('li.target[data-model=smollm2]');
  await target.locator('.badge', { hasText: 'ready' }).waitFor();
  const generation = page.locator('tr[data-role=generation]');
  assert.match(await generation.innerText(), /smollm2/);
  assert.match(await generation.innerText(), /ready/);
  // The form starts over (on the embedded type, which has no key field): no field keeps the key.
  const values = await page.locator('input').evaluateAll((inputs) => inputs.map((input) => input.value));
  assert.equal(values.includes(providerKey), false, 'the key field is cleared');
  await page.reload();
  await hydrated(page);
  await page.locator('li.target[data-model=smollm2]').waitFor();
  assert.equal((await page.content()).includes(providerKey), false, 'the key is not on the page');
  const overview = await (await page.request.get(`${lore.baseUrl}/admin/providers/`)).text();
  assert.equal(overview.includes(providerKey), false, 'nor in any response');
  assert.equal(lore.logs().includes(providerKey), false, 'nor in the server log');
  assert.deepEqual(errors, []);
});

test('an account is added, edited with its key kept and then rotated, and deleted only once no role uses it', async () => {
  // The refused delete's 409 is expected; its path is known once the account exists.
  const expected = [];
  const { page, errors } = await openPage(browser, lore.baseUrl, expected);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/providers`);
  await hydrated(page);
  await page.getByRole('heading', { name: 'Add an account' }).waitFor();

  // An account on its own, then a model of it, probed.
  const firstKey = 'sk-e2e-account-first-9a8b7c6d5e4f';
  await page.selectOption('select[name=account_kind]', 'llama_cpp');
  await page.fill('input[name=account_name]', 'Side llama');
  await page.fill('input[name=account_endpoint]', llama.endpoint);
  await page.fill('input[name=account_api_key]', firstKey);
  await page.getByRole('button', { name: 'Add account' }).click();
  await page.locator('.flash.ok', { hasText: 'Side llama is stored' }).waitFor();
  const account = page.locator('li.account[data-account="Side llama"]');
  await account.locator('input[name=target_model]').fill('smollm2-side');
  await account.getByRole('button', { name: 'Add model' }).click();
  const target = account.locator('li.target[data-model=smollm2-side]');
  await target.waitFor();
  await target.getByRole('button', { name: 'Probe', exact: true }).click();
  await target.locator('.badge', { hasText: 'ready' }).waitFor({ timeout: 60_000 });
  // Its probe history: one probe, which answered.
  await target.getByRole('button', { name: 'Probe history' }).click();
  await target.locator('ol.probe-history li[data-ok=true]').waitFor();
  assert.equal(await target.locator('ol.probe-history li').count(), 1);

  // Edited with a blank key: renamed, the key kept.
  await account.locator('button.edit-account').click();
  await account.locator('input[name=edit_name]').fill('Side llama (edited)');
  await account.getByRole('button', { name: 'Save account' }).click();
  await page.locator('.flash.ok', { hasText: 'its key is kept' }).waitFor();
  const edited = page.locator('li.account[data-account="Side llama (edited)"]');
  await edited.waitFor();
  assert.match(await edited.innerText(), /key stored/);
  // A new value rotates it.
  const rotatedKey = 'sk-e2e-account-rotated-1f2e3d4c5b6a';
  await edited.locator('button.edit-account').click();
  await edited.locator('input[name=edit_api_key]').fill(rotatedKey);
  await edited.getByRole('button', { name: 'Save account' }).click();
  await page.locator('.flash.ok', { hasText: 'its key is replaced' }).waitFor();

  // Bound to the escalation role, the account cannot be deleted: the
  // message names the role, and the account stays.
  const escalation = page.locator('tr[data-role=escalation]');
  await escalation.locator('select[name=target]').selectOption({ label: 'smollm2-side (ready)' });
  await escalation.getByRole('button', { name: 'Bind' }).click();
  await page.locator('.flash.ok', { hasText: 'escalation role was updated' }).waitFor();
  const overview = await (await page.request.get(`${lore.baseUrl}/admin/providers/`)).json();
  const id = overview.accounts.find((a) => a.name === 'Side llama (edited)').id;
  expected.push(`409 /admin/providers/accounts/${id}`);
  await page.locator('li.account[data-account="Side llama (edited)"] button.delete-account').click();
  await page.locator('.flash.error', { hasText: 'escalation' }).waitFor();
  assert.match(await page.locator('.flash.error').innerText(), /provider_in_use|serves the escalation/);
  assert.equal(await page.locator('li.account[data-account="Side llama (edited)"]').count(), 1);

  // Unbound, it is deleted with its model.
  await page.locator('tr[data-role=escalation] select[name=target]').selectOption('');
  await page.locator('tr[data-role=escalation]').getByRole('button', { name: 'Bind' }).click();
  await page.locator('.flash.ok', { hasText: 'escalation role was updated' }).waitFor();
  await page.locator('li.account[data-account="Side llama (edited)"] button.delete-account').click();
  await page.locator('.flash.ok', { hasText: 'deleted' }).waitFor();
  await page.locator('li.account[data-account="Side llama (edited)"]').waitFor({ state: 'detached' });

  for (const key of [firstKey, rotatedKey]) {
    assert.equal((await page.content()).includes(key), false, 'the key is not on the page');
    assert.equal(lore.logs().includes(key), false, 'nor in the server log');
  }
  assert.deepEqual(errors, []);
});

test('a new key is shown once, with a copy button, and never again', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  await page.goto(`${lore.baseUrl}/access`);
  await hydrated(page);
  await page.fill('input[name=name]', 'Support backend');
  await page.getByRole('button', { name: 'Create key' }).click();
  const raw = (await page.locator('code.raw-key').innerText()).trim();
  assert.match(raw, /^lore_sk_[0-9A-Za-z]{32}$/);
  await page.getByRole('button', { name: 'Copy' }).waitFor();
  const row = page.locator('tr', { hasText: 'Support backend' });
  await row.waitFor();
  assert.match(await row.innerText(), /answer, retrieve/);

  // Done, or a reload: the raw value is gone for good.
  await page.getByRole('button', { name: 'Done' }).click();
  assert.equal(await page.locator('code.raw-key').count(), 0);
  await page.reload();
  await hydrated(page);
  await page.locator('tr', { hasText: 'Support backend' }).waitFor();
  assert.equal((await page.content()).includes(raw), false, 'the raw key is not on the page any more');
  const listed = await (await page.request.get(`${lore.baseUrl}/admin/keys`)).text();
  assert.equal(listed.includes(raw), false);

  // Revoking asks first, then the status changes.
  await page.locator('tr', { hasText: 'Support backend' }).getByRole('button', { name: 'Revoke' }).click();
  await page.getByRole('button', { name: 'Confirm revoke' }).click();
  await page.locator('tr', { hasText: 'Support backend' }).locator('.badge', { hasText: 'revoked' }).waitFor();
  assert.deepEqual(errors, []);
});

test('an assistant signs in over OAuth, and the Access screen lists it and revokes it', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  // The client: registered dynamically, with PKCE, for the tool server.
  const callback = 'http://127.0.0.1:9/callback';
  const registered = await (await fetch(`${lore.baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [callback], client_name: 'E2E Assistant' }),
  })).json();
  const verifier = crypto.randomBytes(32).toString('base64url');
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  const resource = `${lore.baseUrl}/mcp`;
  const query = new URLSearchParams({ response_type: 'code', client_id: registered.client_id, redirect_uri: callback,
    scope: 'mcp', state: 'e2e', code_challenge: challenge, code_challenge_method: 'S256', resource });
  let landed;
  await page.route('http://127.0.0.1:9/**', (route) => {
    landed = route.request().url();
    return route.fulfill({ status: 200, body: 'back at the client' });
  });
  // The person sees who asks and allows it.
  await page.goto(`${lore.baseUrl}/oauth/authorize?${query}`);
  await page.getByRole('heading', { name: 'Allow E2E Assistant to use Lore?' }).waitFor();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL(/127\.0\.0\.1:9\/callback/);
  const back = new URL(landed).searchParams;
  assert.equal(back.get('state'), 'e2e');
  const tokens = await (await fetch(`${lore.baseUrl}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'authorization_code', code: back.get('code'), client_id: registered.client_id,
      redirect_uri: callback, code_verifier: verifier, resource }),
  })).json();
  const initialize = () => fetch(resource, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json, text/event-stream',
      'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }),
  });
  assert.equal((await initialize()).status, 200);

  // The Access screen lists it; revoking refuses its next call.
  await page.goto(`${lore.baseUrl}/access`);
  await hydrated(page);
  const row = page.locator('table.connections tr', { hasText: 'E2E Assistant' });
  await row.waitFor();
  assert.match(await row.innerText(), /an admin/);
  assert.match(await row.innerText(), /mcp/);
  await row.getByRole('button', { name: 'Revoke' }).click();
  await page.locator('.flash.ok', { hasText: 'Revoked “E2E Assistant”' }).waitFor();
  await page.getByText('No assistant has signed in.').waitFor();
  assert.equal((await initialize()).status, 401);
  assert.deepEqual(errors, []);
});

test('an admin adds a role from a preset and a user with it, then a key that acts as that user', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  const made = await page.request.post(`${lore.baseUrl}/operation`, {
    data: { operation: 'create_table', database: 'pets', table: 'dog', primary_key: 'id' },
  });
  assert.equal(made.status(), 200);
  await page.goto(`${lore.baseUrl}/access`);
  await hydrated(page);

  await page.fill('input[name=role-name]', 'dog_reader');
  await page.selectOption('select[name=preset]', 'read_only');
  await page.fill('input[name=preset-database]', 'pets');
  await page.getByRole('button', { name: 'Use preset' }).click();
  await page.waitForFunction(() => document.querySelector('textarea[name=permission]').value.includes('"dog"'));
  await page.getByRole('button', { name: 'Add role' }).click();
  await page.locator('.flash.ok', { hasText: 'Added the role' }).waitFor();
  await page.locator('tr[data-role=dog_reader]', { hasText: '1 table(s) of pets' }).waitFor();

  // The engine validates the tree and names the wrong field by its path.
  await page.fill('input[name=role-name]', 'broken');
  await page.fill('textarea[name=permission]', '{"pets": {"tables": {"dog": {"read": "yes"}}}}');
  await page.getByRole('button', { name: 'Add role' }).click();
  await page.locator('.flash.error', { hasText: 'permission.pets.tables.dog.read' }).waitFor();
  assert.equal(await page.locator('tr[data-role=broken]').count(), 0);

  await page.fill('input[name=username]', 'reader');
  await page.selectOption('select[name=user-role]', 'dog_reader');
  await page.getByRole('button', { name: 'Add user' }).click();
  await page.locator('tr[data-user=reader]', { hasText: 'dog_reader' }).waitFor();

  await page.fill('input[name=name]', 'Reader script');
  await page.check('input[name=scope-operations]');
  await page.fill('input[name=user]', 'reader');
  await page.getByRole('button', { name: 'Create key' }).click();
  const raw = (await page.locator('code.raw-key').innerText()).trim();
  const asReader = (body) => fetch(`${lore.baseUrl}/operation`, {
    method: 'POST', headers: { 'x-api-key': raw, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  assert.equal((await asReader({ operation: 'describe_table', database: 'pets', table: 'dog' })).status, 200);
  const refused = await asReader({ operation: 'insert', database: 'pets', table: 'dog', records: [{ id: 1 }] });
  assert.equal(refused.status, 403, 'the role reads only');

  // A key for an assistant: the configuration to paste names the tool
  // server and carries the key, and the tool server answers it.
  await page.getByRole('button', { name: 'Done' }).click();
  await page.locator('.connect-assistant', { hasText: '/mcp' }).waitFor();
  await page.fill('input[name=name]', 'Reader assistant');
  await page.check('input[name=scope-mcp]');
  await page.fill('input[name=user]', 'reader');
  await page.getByRole('button', { name: 'Create key' }).click();
  const assistantKey = (await page.locator('code.raw-key').innerText()).trim();
  const config = JSON.parse(await page.locator('pre.assistant-config').innerText());
  assert.deepEqual(config.mcpServers.lore, { type: 'http', url: `${lore.baseUrl}/mcp`, headers: { 'x-api-key': assistantKey } });
  const initialize = await fetch(config.mcpServers.lore.url, {
    method: 'POST',
    headers: { ...config.mcpServers.lore.headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1' } } }),
  });
  assert.equal(initialize.status, 200);
  assert.match(initialize.headers.get('mcp-session-id'), /^[0-9a-f]{32}$/);
  assert.deepEqual(errors, ['422 /operation'], 'only the broken tree was refused');
});

test('an admin saves a prompt version, views the history and restores the first', async () => {
  const { page, errors } = await openPage(browser, lore.baseUrl);
  await signIn(page, lore.baseUrl, ADMIN);
  // The first index creates the profile: an upload source and its first run.
  const created = await page.request.post(`${lore.baseUrl}/admin/sources/`, { data: { name: 'Notes', kind: 'upload' } });
  const source = await created.json();
  const synced = await page.request.post(`${lore.baseUrl}/admin/sources/${source.id}/sync`, { data: {} });
  assert.equal(synced.status(), 202);

  await page.goto(`${lore.baseUrl}/prompt`);
  await hydrated(page);
  await page.getByRole('heading', { name: 'Editing from version 1 (active)' }).waitFor();
  const original = await page.locator('textarea[name=prompt]').inputValue();
  assert.match(original, /documentation assistant/);
  await page.fill('textarea[name=prompt]', `${original}\nAlways mention the version number.`);
  await page.fill('input[name=note]', 'mention versions');
  await page.getByRole('button', { name: 'Save as a new version' }).click();
  await page.locator('.flash.ok', { hasText: 'Saved as version 2' }).waitFor();
  await page.getByRole('heading', { name: 'Editing from version 2 (active)' }).waitFor();

  const v1 = page.locator('li.version[data-version="1"]');
  await v1.getByRole('button', { name: 'Diff with active' }).click();
  // Version 1 against the active version 2: the new line is what v1 lacks.
  await page.locator('pre.diff .removed', { hasText: 'Always mention the version number.' }).waitFor();
  assert.equal(await page.locator('pre.diff .added').count(), 0, 'nothing else differs');
  await v1.getByRole('button', { name: 'Restore' }).click();
  await page.locator('.flash.ok', { hasText: 'Version 1 is active again.' }).waitFor();
  await page.getByRole('heading', { name: 'Editing from version 1 (active)' }).waitFor();
  assert.equal(await page.locator('textarea[name=prompt]').inputValue(), original);
  assert.equal(await page.locator('li.version').count(), 2, 'version 2 stays listed');
  assert.deepEqual(errors, []);
});
