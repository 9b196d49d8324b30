// The gateway:<upstream> scope: an upstream's tools are for the owner and for
// the principals whose scopes name that upstream. A TOKENS_FILE role with gateway:files sees and
// calls files__echo and not web__echo (403 insufficient_scope naming gateway:web), a role without
// any gateway scope sees no upstream tool, the owner sees both. The upstreams are
// tests/fakes/fake-upstream.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHermes, startOAuth, JSON_HEADERS, until, gatewayFile, fakeUpstream, pkce, approveConsent, tokensFile }
  from '../../lib/lib.mjs';


// A fresh dir with a gateway file of two upstreams, files and web, each offering echo.
function twoUpstreams() {
  const dir = mkdtempSync(join(tmpdir(), 'hm-gwscopes-'));
  const up = (name) => fakeUpstream(name, [], '    tools: {include: ["echo"]}\n');
  return { dir, gw: gatewayFile(dir, `upstreams:\n${up('files')}${up('web')}`) };
}

async function tools(srv, token) {
  const client = new Client({ name: 'gwscopes-it', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const names = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.includes('__')).sort();
  return { client, names };
}

async function rawCall(srv, token, name) {
  const res = await fetch(srv.url, { method: 'POST',
    headers: { ...JSON_HEADERS, Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: { message: 'hi' } } }) });
  return { status: res.status, www: res.headers.get('www-authenticate') };
}

test('gateway:<upstream> scopes: each role sees and calls only the upstreams it names', async () => {
  const { dir, gw } = twoUpstreams();
  const tok = { filer: randomBytes(32).toString('hex'), reader: randomBytes(32).toString('hex') };
  const tokens = tokensFile(dir, { filer: [tok.filer, 'hermes:read, gateway:files'], reader: [tok.reader, 'hermes:read'] });
  const srv = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens });
  try {
    const owner = await tools(srv, srv.token);
    assert.deepEqual(owner.names, ['files__echo', 'web__echo']);
    await owner.client.close();

    const filer = await tools(srv, tok.filer);
    assert.deepEqual(filer.names, ['files__echo']);
    const r = await filer.client.callTool({ name: 'files__echo', arguments: { message: 'hi' } });
    assert.ok(!r.isError, JSON.stringify(r));
    assert.equal(r.content[0].text, 'Echo: hi');
    await filer.client.close();
    const refused = await rawCall(srv, tok.filer, 'web__echo');
    assert.equal(refused.status, 403);
    assert.match(refused.www, /insufficient_scope/);
    assert.match(refused.www, /gateway:web/);

    const reader = await tools(srv, tok.reader);
    assert.deepEqual(reader.names, []);
    await reader.client.close();
    assert.equal((await rawCall(srv, tok.reader, 'files__echo')).status, 403);
    // The gateway's audit line names the role that made the call.
    await until(() => existsSync(srv.auditFile) && readFileSync(srv.auditFile, 'utf8').includes('"event":"gateway_call"'), 'gateway audit line');
    const calls = readFileSync(srv.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
      .filter((l) => l.event === 'gateway_call');
    assert.deepEqual(calls.map((l) => [l.principal, l.upstream]), [['filer', 'files']]);
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

// An OAuth client may ask for an upstream too: the consent page lists gateway:files, and the
// token it gets shows that upstream's tools and no other.
test('an OAuth client granted gateway:files sees files__echo, not web__echo', async () => {
  const REDIRECT = 'http://127.0.0.1:7777/callback';
  const { dir, gw } = twoUpstreams();
  const { srv, issuer } = await startOAuth({ GATEWAY_FILE: gw });
  try {
    const reg = await (await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) })).json();
    const { verifier, challenge } = pkce();
    const u = new URL(`${issuer}/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id: reg.client_id, redirect_uri: REDIRECT, state: 's',
      code_challenge: challenge, code_challenge_method: 'S256',
      scope: 'hermes:read gateway:files' })) u.searchParams.set(k, v);
    const { page, html, res: ok, code } = await approveConsent(issuer, u);
    assert.equal(page.status, 200, html);
    assert.ok(html.includes('<code>gateway:files</code>'), 'the consent page names the upstream');
    assert.equal(ok.status, 302);
    const tok = await (await fetch(`${issuer}/token`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: reg.client_id, code, code_verifier: verifier, redirect_uri: REDIRECT }).toString() })).json();
    assert.equal(tok.scope, 'hermes:read gateway:files');
    const client = await tools(srv, tok.access_token);
    assert.deepEqual(client.names, ['files__echo']);
    assert.equal((await client.client.callTool({ name: 'files__echo', arguments: { message: 'o' } })).content[0].text, 'Echo: o');
    await client.client.close();
    assert.equal((await rawCall(srv, tok.access_token, 'web__echo')).status, 403);
    // A scope outside our namespaces is dropped (RFC 6749 3.3), not refused: the page asks for
    // what is left.
    u.searchParams.set('scope', 'gateway:files such');
    const dropped = await (await fetch(u, { redirect: 'manual' })).text();
    assert.ok(dropped.includes('<code>gateway:files</code>') && !dropped.includes('<code>such</code>'), dropped);
    // An upstream this server does not have (a typo of ours): back to the client, invalid_scope.
    for (const scope of ['gateway:nosuch', 'gateway:fies', 'hermes:read gateway:fies such']) {
      u.searchParams.set('scope', scope);
      const bad = await fetch(u, { redirect: 'manual' });
      assert.equal(bad.status, 302, scope);
      assert.equal(new URL(bad.headers.get('location')).searchParams.get('error'), 'invalid_scope', scope);
    }
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
