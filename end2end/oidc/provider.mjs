// A real OpenID provider (the `oidc-provider` package) for Lore's tests, on
// 127.0.0.1 only. It knows three accounts, an admin, an ordinary user and one
// whose ID token says nothing of whether its email is verified; its login page
// lets the test pick one; consent is granted automatically.
//
// With `accessTokens: true` it is also an authorization server for Lore's
// tool servers (an external issuer, `auth.mcp.issuer`): the machine client
// `lore-machine` gets JWT access tokens for any resource it names (RFC
// 8707), with the scopes `mcp` and `operations`; `rotate()` puts a new
// signing key first, keeping the old one published.
//
// Use it from node:  const op = await startProvider({ redirectUris: [...] })
// or as a process:   node provider.mjs <redirect-uri>...
//                    (prints `ISSUER=http://127.0.0.1:PORT` once listening;
//                    LORE_TEST_ACCESS_TOKENS=jwt for access tokens, and a
//                    `rotate` line on stdin rotates the keys)

import http from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';

export const CLIENT_ID = 'lore-test';
export const MACHINE_CLIENT = { id: 'lore-machine', secret: 'lore-machine-secret' };

export const ACCOUNTS = {
  ada: { sub: 'ada', email: 'ada@example.test', email_verified: true, name: 'Ada Admin', groups: ['staff'] },
  bob: { sub: 'bob', email: 'bob@example.test', email_verified: true, name: 'Bob User', groups: ['staff'] },
  cy: { sub: 'cy', email: 'cy@example.test', name: 'Cy Unverified' },
};

function loginPage(uid) {
  const buttons = Object.entries(ACCOUNTS)
    .map(([id, a]) => `<button type="submit" name="account" value="${id}">Sign in as ${a.name}</button>`)
    .join('\n');
  return `<!doctype html><html><head><title>Test identity provider</title></head><body>
<h1>Test identity provider</h1>
<form method="post" action="/interaction/${uid}/login">${buttons}</form>
</body></html>`;
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

export async function startProvider({ redirectUris, accessTokens = false }) {
  const keys = [signingKey()];

  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;

  let provider = configure(issuer, keys, redirectUris, accessTokens);
  server.on('request', (req, res) => serve(provider, req, res));
  const rotate = () => {
    keys.unshift(signingKey());
    provider = configure(issuer, keys, redirectUris, accessTokens);
    return keys[0].kid;
  };
  return { issuer, clientId: CLIENT_ID, rotate, close: () => new Promise((resolve) => server.close(resolve)) };
}

function configure(issuer, keys, redirectUris, accessTokens) {
  const clients = [{
    client_id: CLIENT_ID,
    token_endpoint_auth_method: 'none',
    redirect_uris: redirectUris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }];
  const features = { devInteractions: { enabled: false } };
  if (accessTokens) {
    clients.push({
      client_id: MACHINE_CLIENT.id,
      client_secret: MACHINE_CLIENT.secret,
      token_endpoint_auth_method: 'client_secret_post',
      redirect_uris: [],
      grant_types: ['client_credentials'],
      response_types: [],
    });
    features.clientCredentials = { enabled: true };
    features.resourceIndicators = {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: 'mcp operations',
        audience: resource,
        accessTokenTTL: 600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    };
  }
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys },
    pkce: { required: () => true },
    features,
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    // Put the scope's claims in the ID token itself (Lore reads no userinfo).
    conformIdTokenClaims: false,
    findAccount: async (_ctx, id) => ACCOUNTS[id] && { accountId: id, claims: async () => ACCOUNTS[id] },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['lore-test-cookie-key'] },
  });
  provider.on('server_error', (_ctx, err) => console.error('oidc-provider error:', err));
  provider.handle = provider.callback();
  return provider;
}

async function serve(provider, req, res) {
  const match = req.url.match(/^\/interaction\/([^/?]+)(\/login)?/);
  if (!match) return provider.handle(req, res);
  try {
    const details = await provider.interactionDetails(req, res);
    if (req.method === 'POST' && match[2]) {
      const account = (await readForm(req)).get('account');
      if (!ACCOUNTS[account]) { res.statusCode = 400; return res.end('unknown account'); }
      return await provider.interactionFinished(req, res, { login: { accountId: account } }, { mergeWithLastSubmission: false });
    }
    if (details.prompt.name === 'consent') {
      const grant = new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      const grantId = await grant.save();
      return await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    }
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(loginPage(details.uid));
  } catch (err) {
    res.statusCode = 500;
    res.end(String(err));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // A parent that stopped reading must not crash the provider mid-test.
  process.stdout.on('error', () => {});
  const accessTokens = process.env.LORE_TEST_ACCESS_TOKENS === 'jwt';
  const op = await startProvider({ redirectUris: process.argv.slice(2), accessTokens });
  console.log(`ISSUER=${op.issuer}`);
  // Exit with the parent: the tests close stdin when they are done.
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (text) => {
    for (const line of text.split('\n')) {
      if (line.trim() === 'rotate') console.log(`ROTATED=${op.rotate()}`);
    }
  });
  process.stdin.on('end', () => process.exit(0));
}
