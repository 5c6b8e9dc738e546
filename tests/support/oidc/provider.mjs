// A third-party OpenID provider for the tests: panva's certified oidc-provider (pinned in
// package.json), configured, not written, here. Run by tests/support/oidc_node.py:
//
//   OIDC_CLIENT='{"client_id": ..., "client_secret": ..., "redirect_uris": [...]}' \
//   OIDC_ACCOUNTS='{"alice": {"preferred_username": "alice", "email": ...}}' node provider.mjs
//
// It listens on a free loopback port and prints `ready <issuer>` (http://localhost:PORT). The sign-in pages are the
// library's own devInteractions (a login form, then a consent form); an account the form names
// that is not in OIDC_ACCOUNTS does not exist (findAccount answers nothing). PKCE is required of
// every client. SIGUSR2 rotates the signing key: a new provider instance, with a new key id, takes
// over the same port, and the line `rotated <kid>` is printed.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const client = JSON.parse(process.env.OIDC_CLIENT);
const accounts = JSON.parse(process.env.OIDC_ACCOUNTS);

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };
}

function makeProvider(issuer, key) {
  return new Provider(issuer, {
    clients: [{ grant_types: ['authorization_code'], response_types: ['code'], ...client }],
    jwks: { keys: [key] },
    pkce: { required: () => true },
    claims: { openid: ['sub'], profile: ['preferred_username', 'name'], email: ['email'] },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: [randomUUID()] },
    async findAccount(ctx, sub) {
      if (!Object.hasOwn(accounts, sub)) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...accounts[sub] }) };
    },
  });
}

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://localhost:${server.address().port}`; // not the hub's host: no cookie shared
  let handler = makeProvider(issuer, signingKey()).callback();
  server.on('request', (req, res) => handler(req, res));
  process.on('SIGUSR2', () => {
    const key = signingKey();
    handler = makeProvider(issuer, key).callback();
    console.log(`rotated ${key.kid}`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
  console.log(`ready ${issuer}`);
});
