// The tool server with the official MCP clients against a real `lore serve`:
// the Python SDK (1.x, session era; 2.x, both eras), the TypeScript SDK
// (v1, session era) and the 2026-era TypeScript client, and the MCP
// Inspector's CLI. Each lists tools, calls one and reads a resource, on the
// application profile (exported tables, answer/retrieve) and the
// operations profile.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startLore } from './helpers.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const clients = path.join(here, '..', 'mcp');

const SCHEMA = `
type Dog @table(database: "dev", table: "dog") @export(name: "dogs") {
  id: ID @primaryKey
  name: String!
  breed: String @indexed
  age: Int
  secret: String
  created: Long @createdTime
}
`;

let lore;
let rootKey;
let annKey;

before(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lore-mcp-'));
  const schema = path.join(dir, 'schema.graphql');
  writeFileSync(schema, SCHEMA);
  lore = await startLore({ LORE_APPDB__SCHEMA: schema, LORE_MCP__OPERATIONS__ENABLED: 'true' });
  lore.cli(['roles', 'add', 'root', '--permission', JSON.stringify({ super_user: true })]);
  lore.cli(['users', 'add', 'root', '--role', 'root']);
  const reader = {
    operations: ['describe_all', 'search_by_value'],
    dev: { tables: { dog: { read: true, insert: false, update: false, delete: false,
      attribute_permissions: [{ attribute_name: 'secret', read: false, insert: false, update: false }] } } },
  };
  lore.cli(['roles', 'add', 'reader', '--permission', JSON.stringify(reader)]);
  lore.cli(['users', 'add', 'ann', '--role', 'reader']);
  const key = (user, ...more) => JSON.parse(lore.cli(['keys', 'create', '--name', user, '--user', user,
    '--scope', 'mcp', '--scope', 'operations', ...more.flatMap((scope) => ['--scope', scope]), '--json'])).raw_key;
  // Root's key carries the answer tools' scopes; Ann's does not, so she is
  // not offered them.
  rootKey = key('root', 'answer', 'retrieve');
  annKey = key('ann');
  const insert = await fetch(`${lore.baseUrl}/operation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': rootKey },
    body: JSON.stringify({ operation: 'insert', database: 'dev', table: 'dog', records: [
      { id: 'rex', name: 'Rex', breed: 'collie', age: 3, secret: 'chip 42' },
      { id: 'ada', name: 'Ada', breed: 'beagle', age: 5, secret: 'chip 7' }] }),
  });
  assert.equal(insert.status, 200, await insert.text());
});

after(async () => {
  await lore?.stop();
});

async function python(line, args) {
  const bin = line === 1 ? process.env.LORE_TEST_MCP_PYTHON1 : process.env.LORE_TEST_MCP_PYTHON2;
  assert.ok(bin, 'scripts/test sets LORE_TEST_MCP_PYTHON1 and LORE_TEST_MCP_PYTHON2');
  const script = path.join(clients, line === 1 ? 'client_v1.py' : 'client_v2.py');
  const { stdout } = await run(bin, [script, ...args], { timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').pop());
}

async function typescript(kind, args) {
  const { stdout } = await run(process.execPath, [path.join(clients, 'clients.mjs'), kind, ...args], { timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').pop());
}

const app = () => `${lore.baseUrl}/mcp`;
const ops = () => `${lore.baseUrl}/operation/mcp`;
const getRex = JSON.stringify({ id: 'rex' });

function checkApplication(seen, who) {
  assert.ok(seen.tools.includes('get_dogs') && seen.tools.includes('search_dogs'), `${who}: ${seen.tools}`);
  assert.ok(seen.tools.includes('answer') && seen.tools.includes('retrieve'), `${who}: the answer tools, for a key with their scopes`);
  assert.equal(seen.call.is_error, false, `${who}: ${JSON.stringify(seen.call)}`);
  assert.equal(seen.call.structured.record.name, 'Rex', who);
  assert.equal(seen.resource.version, '5.1.0', who);
  assert.ok(seen.resources.includes('svc://about') && seen.resources.includes(`${lore.baseUrl}/data/dogs`), `${who}: ${seen.resources}`);
}

test('the Python SDK 1.x works on a session', async () => {
  const seen = await python(1, [app(), rootKey, 'get_dogs', getRex, 'svc://about']);
  assert.match(seen.session_id, /^[0-9a-f]{32}$/);
  assert.ok(['2025-06-18', '2025-11-25'].includes(seen.protocol_version), seen.protocol_version);
  checkApplication(seen, 'python 1.x');
  // A user sees only what its role allows, and an attribute it may not
  // read is absent from what it gets.
  const ann = await python(1, [app(), annKey, 'get_dogs', getRex]);
  assert.ok(!ann.tools.includes('create_dogs') && !ann.tools.includes('delete_dogs'), `${ann.tools}`);
  assert.ok(!ann.tools.includes('answer') && !ann.tools.includes('retrieve'), `not callable with her key: ${ann.tools}`);
  assert.equal(ann.call.structured.record.secret, undefined);
  assert.equal(ann.call.structured.record.name, 'Rex');
});

test('the Python SDK 2.x speaks the sessionless revision, and a session-era one when told', async () => {
  const modern = await python(2, ['auto', app(), rootKey, 'get_dogs', getRex, 'svc://about']);
  assert.equal(modern.protocol_version, '2026-07-28');
  checkApplication(modern, 'python 2.x auto');
  const legacy = await python(2, ['legacy', app(), rootKey, 'get_dogs', getRex, 'svc://about']);
  assert.notEqual(legacy.protocol_version, '2026-07-28');
  checkApplication(legacy, 'python 2.x legacy');
});

test('the TypeScript SDK and the 2026-era client work on both eras', async () => {
  const v1 = await typescript('sdk', [app(), rootKey, 'get_dogs', getRex, 'svc://about']);
  assert.match(v1.session_id, /^[0-9a-f]{32}$/);
  checkApplication(v1, 'typescript sdk');
  const auto = await typescript('client-auto', [app(), rootKey, 'get_dogs', getRex, 'svc://about']);
  assert.equal(auto.protocol_version, '2026-07-28');
  assert.equal(auto.session_id, null, 'no session in the sessionless revision');
  checkApplication(auto, 'typescript client auto');
});

test('the operations profile lists operations per user and calls them', async () => {
  const root = await python(1, [ops(), rootKey, 'describe_all', '{}', 'svc://operations']);
  assert.ok(root.tools.includes('describe_all') && root.tools.includes('read_log'), `${root.tools}`);
  assert.ok(!root.tools.includes('get_configuration'), 'get_* is no wildcard');
  assert.ok(root.call.structured.dev.dog, JSON.stringify(root.call.structured));
  const ann = await python(2, ['auto', ops(), annKey, 'search_by_value',
    JSON.stringify({ database: 'dev', table: 'dog', search_attribute: 'breed', search_value: 'collie' }), 'svc://operations']);
  assert.deepEqual(ann.tools, ['describe_all', 'search_by_value'], 'only what permission.operations lists');
  assert.deepEqual(ann.resource.operations, ['describe_all', 'search_by_value']);
  assert.equal(ann.call.structured.result[0].id, 'rex');
  assert.equal(ann.call.structured.result[0].secret, undefined);
});

test('retrieve over MCP reads what the caller may read, with both Python SDK lines', async () => {
  // A handbook only the `reader` role (and admins) may read, and a user
  // whose role reads no table and is in no audience.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lore-mcp-audience-'));
  const handbook = path.join(dir, 'handbook.md');
  writeFileSync(handbook, '# Kennel\n\nThe kennel door code is marigold-417.\n');
  lore.cli(['sources', 'add', '--name', 'Kennel handbook', '--kind', 'upload', '--audience', 'reader']);
  lore.cli(['ingest', handbook, '--name', 'Kennel handbook', '--json']);
  lore.cli(['roles', 'add', 'visitor', '--permission', JSON.stringify({ super_user: false })]);
  lore.cli(['users', 'add', 'vic', '--role', 'visitor']);
  const retrieving = (user) => JSON.parse(lore.cli(['keys', 'create', '--name', `${user} retrieves`,
    '--user', user, '--scope', 'mcp', '--scope', 'retrieve', '--json'])).raw_key;
  const [root, ann, vic] = ['root', 'ann', 'vic'].map(retrieving);
  const query = JSON.stringify({ query: 'What is the kennel door code?' });
  const finds = (seen) => JSON.stringify(seen.call.structured).includes('marigold-417');
  // The serving process sees the CLI's write within a second.
  for (let i = 0; !finds(await python(1, [app(), root, 'retrieve', query])); i++) {
    assert.ok(i < 20, 'the handbook never became searchable');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  for (const [who, key, may] of [['root', root, true], ['ann (reader)', ann, true], ['vic (visitor)', vic, false]]) {
    for (const [era, seen] of [
      ['1.x, session', await python(1, [app(), key, 'retrieve', query])],
      ['2.x, sessionless', await python(2, ['auto', app(), key, 'retrieve', query])],
    ]) {
      assert.equal(seen.call.is_error, false, `${who}, ${era}: ${JSON.stringify(seen.call)}`);
      assert.equal(finds(seen), may, `${who}, ${era}: ${JSON.stringify(seen.call.structured)}`);
    }
  }
});

test('the MCP Inspector CLI lists the tools, in both eras', async () => {
  const inspector = path.join(here, '..', 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');
  for (const era of ['legacy', 'modern']) {
    const { stdout } = await run(process.execPath, [inspector, '--cli', app(), '--transport', 'http',
      '--protocol-era', era, '--method', 'tools/list', '--format', 'json', '--header', `x-api-key: ${rootKey}`], { timeout: 60_000 });
    const names = JSON.parse(stdout).result.tools.map((t) => t.name);
    assert.ok(names.includes('get_dogs'), `${era}: ${names}`);
  }
});
