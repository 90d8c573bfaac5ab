// A real OpenID provider (the `oidc-provider` package) for Lore's tests, on
// 127.0.0.1 only. It knows three accounts, an admin, an ordinary user and one
// whose ID token says nothing of whether its email is verified; its login page
// lets the test pick one; consent is granted automatically.
//
// Use it from node:  const op = await startProvider({ redirectUris: [...] })
// or as a process:   node provider.mjs <redirect-uri>...
//                    (prints `ISSUER=http://127.0.0.1:PORT` once listening)

import http from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';

export const CLIENT_ID = 'lore-test';

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

export async function startProvider({ redirectUris }) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };

  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;

  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID,
      token_endpoint_auth_method: 'none',
      redirect_uris: redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
    }],
    jwks: { keys: [jwk] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    // Put the scope's claims in the ID token itself (Lore reads no userinfo).
    conformIdTokenClaims: false,
    findAccount: async (_ctx, id) => ACCOUNTS[id] && { accountId: id, claims: async () => ACCOUNTS[id] },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: ['lore-test-cookie-key'] },
  });
  provider.on('server_error', (_ctx, err) => console.error('oidc-provider error:', err));

  const handle = provider.callback();
  server.on('request', async (req, res) => {
    const match = req.url.match(/^\/interaction\/([^/?]+)(\/login)?/);
    if (!match) return handle(req, res);
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
  });

  return { issuer, clientId: CLIENT_ID, close: () => new Promise((resolve) => server.close(resolve)) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // A parent that stopped reading must not crash the provider mid-test.
  process.stdout.on('error', () => {});
  const op = await startProvider({ redirectUris: process.argv.slice(2) });
  console.log(`ISSUER=${op.issuer}`);
  // Exit with the parent: the tests close stdin when they are done.
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}
