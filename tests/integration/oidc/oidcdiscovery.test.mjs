// How the server finds an issuer's keys: OpenID Connect discovery, else RFC 8414 (the
// well-known segment between host and path), an issuer written with its trailing '/' (Auth0's
// are), metadata that names another issuer (refused: the mix-up defence), and the protected
// resource metadata listing the issuer. The provider here is a small hand-made one, so that each
// of these can be served or withheld.
import { test } from 'node:test';
import { execFile } from 'node:child_process';
import assert from 'node:assert/strict';
import { handProvider as provider, signJwt, startOidcHermes, whoami, rpc } from '../../lib/oidc.mjs';
import { waitEvent } from '../../lib/events.mjs';
import { HERMES } from '../../lib/lib.mjs';

// hermes-mcp doctor on srv's env file, as an operator runs it: { status, stdout }. Not
// spawnSync: the provider answering it lives in this process.
const doctor = (srv) => new Promise((resolve) => execFile(HERMES, ['doctor', '--env-file', srv.envFile],
  (err, stdout) => resolve({ status: err ? err.code : 0, stdout })));

const now = () => Math.floor(Date.now() / 1000);
const token = (op, srv, sub) => signJwt({ iss: op.issuer, aud: srv.audience, sub, scope: 'hermes:read',
  iat: now(), exp: now() + 300 }, op.key);

test('RFC 8414 metadata, found after discovery 404s, for an issuer with a path and a trailing slash', async () => {
  const op = await provider('/tenant/', { rfc8414: true });
  const srv = await startOidcHermes(op);
  try {
    const me = await whoami(srv, await token(op, srv, 'carol'));
    assert.equal(me.principal, 'oidc:carol');
    assert.equal(me.kind, 'oidc');
    // Discovery first (the trailing '/' dropped, not doubled), then RFC 8414's URL, then keys.
    assert.deepEqual(op.hits.slice(0, 3), ['/tenant/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server/tenant', '/keys']);
    const prm = await (await fetch(`${srv.base}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.deepEqual(prm.authorization_servers, [op.issuer]);
    assert.equal(prm.resource, srv.audience);
    // doctor finds the keys the same way.
    const d = await doctor(srv);
    assert.ok(d.stdout.includes(`identity provider ${op.issuer}: 1 usable signing key`), d.stdout);
  } finally {
    await srv.stop();
    op.close();
  }
});

test('metadata naming another issuer is refused: its tokens get 503, never accepted', async () => {
  const op = await provider('', { openid: true, claimIssuer: 'https://evil.example' });
  const srv = await startOidcHermes(op);
  try {
    await waitEvent(srv, 'oidc_fetch_failed', { what: 'metadata' });
    const r = await rpc(srv, await token(op, srv, 'dave'), 'tools/call', { name: 'whoami', arguments: {} });
    assert.equal(r.status, 503, r.text);
    assert.equal(JSON.parse(r.text).error, 'auth_unavailable');
    assert.ok(!op.hits.includes('/keys'), `the key set was fetched: ${op.hits}`);
    // The owner's static token is served meanwhile.
    const owner = await rpc(srv, srv.token, 'tools/call', { name: 'whoami', arguments: {} });
    assert.equal(owner.status, 200, owner.text);
    // doctor says what to fix, and fails.
    const d = await doctor(srv);
    assert.equal(d.status, 1, d.stdout);
    assert.match(d.stdout, /FAIL.*identity provider .*: its metadata names the issuer https:\/\/evil\.example; set OIDC_ISSUER_URL to exactly that/, d.stdout);
  } finally {
    await srv.stop();
    op.close();
  }
});
