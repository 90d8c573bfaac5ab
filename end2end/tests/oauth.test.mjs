// Assistants sign in over OAuth with the official MCP SDKs' own flows, against
// a real `lore serve`: the TypeScript SDK (1.x) and the 2026-era client, the
// Python SDK 1.x and 2.x, each once naming itself by a client ID metadata
// document (served over HTTPS on loopback, under a test certificate authority
// Lore is told to trust) and once registering dynamically. The person's
// sign-in (the local OpenID provider) and consent happen in Chromium; each
// flow ends in a `tools/call` of `answer` (SmolLM2) that cites a page. The
// TypeScript SDK's tokens are then refreshed and revoked.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client as SdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as SdkTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth as sdkAuth } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as NextClient, StreamableHTTPClientTransport as NextTransport } from '@modelcontextprotocol/client';
import { ADMIN, USER, atProvider, launchBrowser, prepareGuides, signIn, startDocsSite, startLlama, startLore, step } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CALLBACK = 'http://127.0.0.1:9/callback';
const QUESTION = 'What does guide 4 explain?';

let lore;
let llama;
let site;
let documents;
let browser;

/**
 * A test certificate authority and a certificate for 127.0.0.1 it signed
 * (Lore trusts the authority through `ingest.ca_file`).
 */
function certificates(dir) {
  const file = (name) => path.join(dir, name);
  const openssl = (args) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '1', '-subj', '/CN=Lore test CA']);
  openssl(['req', ...ec, '-keyout', file('leaf.key'), '-out', file('leaf.csr'), '-subj', '/CN=127.0.0.1']);
  writeFileSync(file('leaf.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  openssl(['x509', '-req', '-in', file('leaf.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial',
    '-out', file('leaf.pem'), '-days', '1', '-extfile', file('leaf.ext')]);
  return { ca: file('ca.pem'), key: readFileSync(file('leaf.key')), cert: readFileSync(file('leaf.pem')) };
}

/** Each client's metadata document, at `https://127.0.0.1:PORT/NAME.json`, naming itself. */
async function serveDocuments(tls) {
  const server = https.createServer(tls, (req, res) => {
    const name = /^\/([a-z0-9-]+)\.json$/.exec(req.url)?.[1];
    if (!name) { res.statusCode = 404; return res.end(); }
    res.setHeader('content-type', 'application/json');
    res.setHeader('cache-control', 'max-age=300');
    res.end(JSON.stringify({
      client_id: `https://127.0.0.1:${server.address().port}${req.url}`,
      client_name: `${name} (metadata document)`,
      redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `https://127.0.0.1:${server.address().port}`;
  return { url: (name) => `${base}/${name}.json`, close: () => new Promise((resolve) => server.close(resolve)) };
}

before(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lore-oauth-'));
  const tls = certificates(dir);
  documents = await serveDocuments(tls);
  llama = await startLlama();
  site = await startDocsSite();
  lore = await startLore({ LORE_INGEST__ALLOW_PRIVATE_ADDRESSES: 'true', LORE_INGEST__CA_FILE: tls.ca });
  // Bob signs assistants in as the Lore user named by his verified e-mail.
  lore.cli(['roles', 'add', 'staff', '--permission', JSON.stringify({ super_user: false })]);
  lore.cli(['users', 'add', USER.email, '--role', 'staff']);
  browser = await launchBrowser();
  // The admin crawls the guides and binds SmolLM2 to generation.
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, lore.baseUrl, ADMIN);
  await prepareGuides(page.request, lore.baseUrl, site, llama);
  await context.close();
});

after(async () => {
  await browser?.close();
  await lore?.stop();
  await documents?.close();
  await site?.close();
  llama?.stop();
});

const app = () => `${lore.baseUrl}/mcp`;

/**
 * Bob, in a fresh browser, follows `authorizeUrl`: signs in at the identity
 * provider, sees the consent page naming `client`, and allows. The query
 * Lore redirected back with (`code`, `state`, `iss`).
 */
async function consent(authorizeUrl, client) {
  const context = await browser.newContext();
  const page = await context.newPage();
  let landed;
  await page.route(`${CALLBACK}**`, (route) => {
    landed = route.request().url();
    return route.fulfill({ status: 200, body: 'back at the client' });
  });
  await page.goto(authorizeUrl);
  await atProvider(page, USER);
  await step(page, 'the consent page', () => page.getByRole('heading', { name: `Allow ${client} to use Lore?` }).waitFor());
  assert.match(await page.locator('body').innerText(), new RegExp(`user ${USER.email}`));
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((url) => url.href.startsWith(CALLBACK));
  await context.close();
  const back = new URL(landed).searchParams;
  assert.equal(back.get('iss'), lore.baseUrl, 'RFC 9207');
  return back;
}

/** What the TypeScript clients keep between runs: in memory. */
class Remembering {
  constructor(name, metadataUrl) {
    this.name = name;
    if (metadataUrl) this.clientMetadataUrl = metadataUrl;
  }

  get redirectUrl() { return CALLBACK; }

  get clientMetadata() {
    return { client_name: this.name, redirect_uris: [CALLBACK], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  }

  clientInformation() { return this.client; }

  saveClientInformation(client) { this.client = client; }

  tokens() { return this.saved; }

  saveTokens(tokens) { this.saved = tokens; }

  redirectToAuthorization(url) { this.authorizeUrl = url.toString(); }

  saveCodeVerifier(verifier) { this.verifier = verifier; }

  codeVerifier() { return this.verifier; }

  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'client') this.client = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
  }
}

function typescriptClient(line, provider) {
  if (line === 'sdk') {
    return { client: new SdkClient({ name: 'lore-oauth', version: '1.0.0' }),
      transport: new SdkTransport(new URL(app()), { authProvider: provider }) };
  }
  return { client: new NextClient({ name: 'lore-oauth', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } }),
    transport: new NextTransport(new URL(app()), { authProvider: provider }) };
}

/** Connects `line`'s client; a first connection sends Bob through consent. */
async function typescriptSignIn(line, provider, expectedName) {
  let { client, transport } = typescriptClient(line, provider);
  await assert.rejects(client.connect(transport), (err) => err.name === 'UnauthorizedError' || /Unauthorized/.test(String(err)));
  assert.ok(provider.authorizeUrl, `${line}: asked to send the person to authorize`);
  const back = await consent(provider.authorizeUrl, expectedName);
  // The 2026-era client checks the response's issuer (RFC 9207) itself.
  await transport.finishAuth(line === 'sdk' ? back.get('code') : back);
  ({ client, transport } = typescriptClient(line, provider));
  await client.connect(transport);
  return client;
}

/** The answer cites one of the guides. */
function citesAGuide(structured, who) {
  assert.ok(structured, `${who}: structured content`);
  assert.equal(structured.refused, false, `${who}: ${JSON.stringify(structured)}`);
  const citations = JSON.stringify(structured.citations);
  assert.match(citations, /\/docs\/page-\d+/, `${who}: ${citations}`);
}

async function typescriptAnswers(client, who) {
  const called = await client.callTool({ name: 'answer', arguments: { question: QUESTION } });
  assert.equal(Boolean(called.isError), false, `${who}: ${JSON.stringify(called)}`);
  citesAGuide(called.structuredContent, who);
}

for (const line of ['sdk', 'client']) {
  for (const registration of ['metadata document', 'dynamic registration']) {
    test(`the TypeScript ${line === 'sdk' ? 'SDK (1.x)' : '2026-era client'} signs in by ${registration} and answers`, async () => {
      const name = `ts-${line}-${registration === 'metadata document' ? 'cimd' : 'dcr'}`;
      const metadataUrl = registration === 'metadata document' ? documents.url(name) : undefined;
      const provider = new Remembering(name, metadataUrl);
      const shown = metadataUrl ? `${name} (metadata document)` : name;
      const client = await typescriptSignIn(line, provider, shown);
      if (metadataUrl) assert.equal(provider.client.client_id, metadataUrl, 'no registration: the document names it');
      else assert.match(provider.client.client_id, /^lore_oc_/);
      await typescriptAnswers(client, name);
      await client.close();
      if (line !== 'sdk' || metadataUrl) return;

      // Refresh: a new pair, the old refresh token spent; the new access
      // token answers.
      const before = { ...provider.saved };
      assert.equal(await sdkAuth(provider, { serverUrl: app() }), 'AUTHORIZED');
      assert.notEqual(provider.saved.access_token, before.access_token);
      assert.notEqual(provider.saved.refresh_token, before.refresh_token);
      const { client: again, transport } = typescriptClient(line, provider);
      await again.connect(transport);
      await typescriptAnswers(again, `${name} after refresh`);
      await again.close();

      // Revocation (RFC 7009) by the client: its tokens are refused, and a
      // new connection asks the person again.
      const revoked = await fetch(`${lore.baseUrl}/oauth/revoke`, { method: 'POST',
        body: new URLSearchParams({ token: provider.saved.refresh_token, client_id: provider.client.client_id }) });
      assert.equal(revoked.status, 200);
      provider.authorizeUrl = undefined;
      const { client: refused, transport: refusedTransport } = typescriptClient(line, provider);
      await assert.rejects(refused.connect(refusedTransport));
      assert.ok(provider.authorizeUrl, 'the revoked grant sends the person back to consent');
    });
  }
}

/** The Python SDK's flow in its own process, Bob's consent in Chromium. */
async function python(version, metadataUrl) {
  const bin = version === 1 ? process.env.LORE_TEST_MCP_PYTHON1 : process.env.LORE_TEST_MCP_PYTHON2;
  assert.ok(bin, 'scripts/test sets LORE_TEST_MCP_PYTHON1 and LORE_TEST_MCP_PYTHON2');
  const args = [path.join(here, '..', 'mcp', 'oauth_client.py'), app(), CALLBACK, QUESTION];
  if (metadataUrl) args.push(metadataUrl);
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const killer = setTimeout(() => child.kill(), 120_000);
  try {
    for await (const line of readline.createInterface({ input: child.stdout })) {
      const seen = JSON.parse(line);
      if (seen.authorize) {
        const name = metadataUrl ? `py${version}-cimd (metadata document)` : `Python SDK ${version}.x`;
        const back = await consent(seen.authorize, name);
        child.stdin.write(`${JSON.stringify(Object.fromEntries(back))}\n`);
      } else {
        return seen;
      }
    }
    throw new Error(`the Python client ended without an answer:\n${stderr}`);
  } finally {
    clearTimeout(killer);
    child.kill();
  }
}

for (const version of [1, 2]) {
  test(`the Python SDK ${version}.x signs in by metadata document and by dynamic registration, and answers`, async () => {
    const cimd = await python(version, documents.url(`py${version}-cimd`));
    assert.equal(cimd.client_id, documents.url(`py${version}-cimd`));
    assert.equal(cimd.call.is_error, false, JSON.stringify(cimd));
    citesAGuide(cimd.call.structured, `python ${version}.x, metadata document`);
    const dcr = await python(version);
    assert.match(dcr.client_id, /^lore_oc_/);
    assert.equal(dcr.call.is_error, false, JSON.stringify(dcr));
    citesAGuide(dcr.call.structured, `python ${version}.x, dynamic registration`);
    // The tool beside `answer` rates it, for the user who signed in.
    for (const run of [cimd, dcr]) {
      assert.equal(run.call.structured.feedback.tool, 'rate_answer', JSON.stringify(run.call.structured));
      assert.equal(run.rated.trace_id, run.call.structured.trace.id, JSON.stringify(run.rated));
      assert.equal(run.rated.helpful, false);
    }
    if (version === 2) assert.equal(dcr.protocol_version, '2026-07-28', 'the sessionless revision, with a token');
  });
}
