// The official TypeScript MCP clients against Lore's tool server: the v1
// SDK (session-era revisions) and the 2026-era client package, each listing
// tools, calling one and reading a resource. Prints one JSON object.
//
// Usage: node clients.mjs sdk|client-legacy|client-auto URL KEY TOOL ARGS_JSON [RESOURCE_URI]

const [kind, url, key, tool, args, resource] = process.argv.slice(2);
const headers = { 'x-api-key': key };
let client;
let transport;
if (kind === 'sdk') {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  client = new Client({ name: 'lore-test', version: '0.0.1' });
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
} else {
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const mode = kind === 'client-auto' ? 'auto' : 'legacy';
  client = new Client({ name: 'lore-test', version: '0.0.1' }, { versionNegotiation: { mode } });
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}
await client.connect(transport);
const { tools } = await client.listTools();
const called = await client.callTool({ name: tool, arguments: JSON.parse(args) });
const out = {
  protocol_version: client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null,
  session_id: transport.sessionId ?? null,
  tools: tools.map((t) => t.name).sort(),
  call: { is_error: Boolean(called.isError), structured: called.structuredContent ?? null },
};
if (resource) {
  const read = await client.readResource({ uri: resource });
  out.resource = JSON.parse(read.contents[0].text);
}
const { resources } = await client.listResources();
out.resources = resources.map((r) => r.uri).sort();
await client.close();
console.log(JSON.stringify(out));
