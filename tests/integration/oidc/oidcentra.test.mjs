// Microsoft Entra ID's v2 access tokens with the settings docs/guides/identity-providers.md
// gives: the issuer https://login.microsoftonline.com/<tenant>/v2.0 (here a loopback stand-in
// with the same path), aud the application's client id (a GUID, not a URL), delegated
// permissions in scp as one space-separated string, application permissions in roles as an
// array, both by Entra's names (mapped in the tokens file), and the caller in oid. The claims are
// those Entra documents for v2 access tokens (learn.microsoft.com, "Access token claims
// reference"): aud, iss, iat, nbf, exp, aio, azp, azpacr, name, oid, preferred_username, rh,
// scp or roles, sub, tid, uti, ver 2.0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handProvider, signJwt, startOidcHermes, whoami, rpc } from '../../lib/oidc.mjs';
import { freePort } from '../../lib/lib.mjs';

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const APP = '6e74172b-be56-4843-9ff4-e66a39bb12e3';
const now = () => Math.floor(Date.now() / 1000);

function entraClaims(op, more) {
  return { aud: APP, iss: op.issuer, iat: now(), nbf: now(), exp: now() + 3600, aio: 'AXQAi/8TAAAA',
    azp: '2d4d11a2-f814-46a7-890a-274a72a7309e', azpacr: '0', tid: TENANT, uti: 'AbCdEf123456',
    rh: '0.ARoAv4j5cvGGr0GRqy180BHbR', ver: '2.0', sub: 'pairwise-' + Math.random(), ...more };
}

test('Entra ID v2: aud is the client id, scp and roles by Entra names, the caller by oid', async () => {
  const op = await handProvider(`/${TENANT}/v2.0`);
  const dir = mkdtempSync(join(tmpdir(), 'hm-entra-'));
  const tokens = join(dir, 'tokens.yaml');
  writeFileSync(tokens, 'oidc:\n  scopes:\n    Hermes.Read: [hermes:read]\n' +
    '    Hermes.Tasks: [hermes:read, hermes:task]\n', { mode: 0o600 });
  // The port is chosen first: the second audience is this server's URL, what the protected
  // resource metadata names (the GUID cannot be a resource URL).
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const srv2 = await startOidcHermes(op, { TOKENS_FILE: tokens, OIDC_PRINCIPAL_CLAIM: 'oid',
    OIDC_SCOPES_CLAIM: 'scp roles', OIDC_AUDIENCE: `${APP} ${url}` }, { port });
  try {
    const user = await signJwt(entraClaims(op, { oid: 'b5a5c7a4-0000-4d3a-9f3b-1b2c3d4e5f60',
      name: 'Alice', preferred_username: 'alice@contoso.example', scp: 'Hermes.Read Hermes.Tasks User.Read' }), op.key);
    const me = await whoami(srv2, user);
    assert.equal(me.principal, 'oidc:b5a5c7a4-0000-4d3a-9f3b-1b2c3d4e5f60');
    assert.deepEqual([...me.scopes].sort(), ['hermes:read', 'hermes:task']);
    assert.equal(me.client_id, '2d4d11a2-f814-46a7-890a-274a72a7309e');

    const daemon = await signJwt(entraClaims(op, { oid: 'svc-0001', roles: ['Hermes.Read'], idtyp: 'app' }), op.key);
    const d = await whoami(srv2, daemon);
    assert.equal(d.principal, 'oidc:svc-0001');
    assert.deepEqual(d.scopes, ['hermes:read']);
    const task = await rpc(srv2, daemon, 'tools/call', { name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(task.status, 403, task.text);

    // A v2 token for another application of the tenant is refused.
    const other = await signJwt(entraClaims(op, { aud: '00000003-0000-0000-c000-000000000000', oid: 'x', scp: 'Hermes.Read' }), op.key);
    assert.equal((await rpc(srv2, other, 'tools/call', { name: 'whoami', arguments: {} })).status, 401);

    // The resource metadata names the URL audience and the Entra issuer.
    const prm = await (await fetch(`${srv2.base}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.equal(prm.resource, url);
    assert.deepEqual(prm.authorization_servers, [op.issuer]);
  } finally {
    await srv2.stop();
    op.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
