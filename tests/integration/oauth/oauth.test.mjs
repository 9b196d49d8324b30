// The OAuth resource server: with OAUTH_ISSUER_URL set, a 401 names the
// protected resource metadata (RFC 9728) in WWW-Authenticate, the metadata is served without a
// token at both well-known paths, a token in the query string is refused, and the official SDK
// client's OAuth discovery follows the 401 to our metadata. Without OAUTH_ISSUER_URL none of it
// exists and the bearer path is as it always was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync, chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { discoverOAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/client/auth.js';
import { startHermes, restartHermes, post, INIT, JSON_HEADERS, until, startOAuth, tokensFile } from '../../lib/lib.mjs';

test('without OAUTH_ISSUER_URL: the 401 and the paths are as before', async () => {
  const srv = await startHermes();
  try {
    const none = await post(srv, INIT(), { Authorization: '' });
    assert.equal(none.status, 401);
    assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="hermes-mcp"');
    const bad = await post(srv, INIT(), { Authorization: 'Bearer nope' });
    assert.equal(bad.headers.get('www-authenticate'), 'Bearer realm="hermes-mcp", error="invalid_token"');
    for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      assert.equal((await fetch(srv.base + p)).status, 404, p);
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('with OAUTH_ISSUER_URL: 401 names the metadata, which is public, and query tokens are refused', async () => {
  const { srv, issuer, prm } = await startOAuth({}, false, { issuerSlash: true });
  try {
    const none = await post(srv, INIT(), { Authorization: '' });
    assert.equal(none.status, 401);
    const www = none.headers.get('www-authenticate');
    assert.match(www, /^Bearer /);
    assert.ok(www.includes(`resource_metadata="${prm}"`), www);
    assert.ok(www.includes('scope="hermes:read hermes:task"'), www);
    assert.doesNotMatch(www, /error=/, 'no token: no error code (RFC 6750 3.1)');
    const bad = await post(srv, INIT(), { Authorization: 'Bearer nope' });
    assert.match(bad.headers.get('www-authenticate'), /error="invalid_token".*resource_metadata="/);

    // The metadata, at both paths, without a token.
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await fetch(srv.base + path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type'), /^application\/json/);
      assert.deepEqual(await res.json(), {
        resource: `${issuer}/mcp`, authorization_servers: [issuer],
        scopes_supported: ['hermes:read', 'hermes:task', 'hermes:admin'],
        bearer_methods_supported: ['header'], resource_name: 'hermes-mcp',
      });
      const p = await fetch(srv.base + path, { method: 'POST' });
      assert.equal(p.status, 405);
      assert.equal(p.headers.get('allow'), 'GET, HEAD');
    }

    // A token in the query string is never accepted: alone, or beside a good header.
    const url = `${srv.url}?access_token=${srv.token}`;
    for (const headers of [JSON_HEADERS, { ...JSON_HEADERS, ...srv.auth }]) {
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(INIT()) });
      assert.equal(res.status, 400);
      assert.match(res.headers.get('www-authenticate'), /error="invalid_request"/);
      assert.equal((await res.json()).error, 'invalid_request');
    }
    // The header still works, and the 403 of step-up names the metadata too.
    assert.equal((await post(srv, INIT())).status, 200);
    assert.ok(!srv.proc.stderrText.includes(srv.token), 'the query token was not logged');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('step-up 403 carries resource_metadata with OAuth on', async () => {
  const token = randomBytes(32).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'hm-oauth-'));
  const file = tokensFile(dir, { reader: [token, 'hermes:read'] });
  const { srv, prm } = await startOAuth({ TOKENS_FILE: file }, false, { issuerSlash: true });
  try {
    const res = await post(srv, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'hermes_reset', arguments: { confirmed: true } } },
      { Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2025-11-25' });
    assert.equal(res.status, 403);
    const www = res.headers.get('www-authenticate');
    assert.match(www, /error="insufficient_scope"/);
    assert.match(www, /scope="hermes:admin"/);
    assert.ok(www.includes(`resource_metadata="${prm}"`), www);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('the SDK client follows the 401 to our metadata (RFC 9728 discovery)', async () => {
  const { srv, issuer, prm } = await startOAuth({}, false, { issuerSlash: true });
  try {
    // The SDK's own discovery, probing the well-known path of the server URL.
    const meta = await discoverOAuthProtectedResourceMetadata(new URL(srv.url));
    assert.equal(meta.resource, `${issuer}/mcp`);
    assert.deepEqual(meta.authorization_servers, [issuer]);

    // A client with an OAuth provider and no token: the transport gets our 401, reads
    // resource_metadata from it and runs discovery from there. The authorization server comes in
    // a later slice, so the flow stops after discovery; what it discovered is what we check.
    const fetched = [];
    let discovered;
    const provider = {
      redirectUrl: 'http://127.0.0.1:1/callback',
      clientMetadata: { redirect_uris: ['http://127.0.0.1:1/callback'], client_name: 'it' },
      clientInformation: () => undefined,
      tokens: () => undefined,
      saveTokens: () => {},
      redirectToAuthorization: () => {},
      saveCodeVerifier: () => {},
      codeVerifier: () => 'v',
      saveDiscoveryState: (s) => { discovered = s; },
    };
    const transport = new StreamableHTTPClientTransport(new URL(srv.url), {
      authProvider: provider,
      fetch: async (url, init) => { fetched.push(String(url)); return fetch(url, init); },
    });
    const client = new Client({ name: 'oauth-it', version: '1' });
    await assert.rejects(client.connect(transport));
    assert.equal(fetched[0], srv.url, 'the POST that got the 401');
    assert.equal(fetched[1], prm, 'then the metadata URL the 401 named');
    assert.ok(discovered, `the SDK saved what it discovered; it fetched ${fetched.join(', ')}`);
    assert.equal(discovered.resourceMetadata.resource, `${issuer}/mcp`);
    assert.equal(String(discovered.authorizationServerUrl).replace(/\/$/, ''), issuer);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('an OAUTH_ISSUER_URL that is not a safe origin stops the server', async () => {
  for (const bad of ['http://mcp.example.com', 'https://mcp.example.com/sub', 'https://u@mcp.example.com']) {
    const started = await startHermes({ OAUTH_ISSUER_URL: bad }).then((srv) => srv, (e) => e);
    if (!(started instanceof Error)) await started.stop(); // a server that should not have started
    assert.ok(started instanceof Error, `${bad}: refused`);
    assert.match(started.message, /exited with 2 .*\n.*OAUTH_ISSUER_URL must be/s, bad);
  }
});

// The OAuth token store (oauth-tokens.json beside the env file): hashes of issued tokens with
// their grants. Here the test writes the store itself, as the authorization server writes it,
// and the resource server must honour exactly the live access tokens issued for its own MCP URL,
// across restarts.
test('stored access tokens: audience, expiry, kind and scope checked; kept across a restart', async () => {
  const { srv, issuer } = await startOAuth({}, false, { issuerSlash: true });
  const sha = (t) => createHash('sha256').update(t).digest('hex');
  const tok = { good: randomBytes(32).toString('hex'), otherAud: randomBytes(32).toString('hex'),
    expired: randomBytes(32).toString('hex'), refresh: randomBytes(32).toString('hex') };
  const entry = (t, over = {}) => ({ sha256: sha(t), kind: 'access', client_id: 'claude-connector',
    scope: 'hermes:read', resource: `${issuer}/mcp`, expires: Math.floor(Date.now() / 1000) + 3600, ...over });
  const store = { version: 1, tokens: [entry(tok.good), entry(tok.otherAud, { resource: 'https://other.example/mcp' }),
    entry(tok.expired, { expires: 1000 }), entry(tok.refresh, { kind: 'refresh', family: 'f1' })] };
  const stop = () => new Promise((res) => { srv.proc.on('exit', res); srv.proc.kill('SIGTERM'); });
  let cur = srv;
  try {
    await stop();
    const file = join(srv.dir, 'oauth-tokens.json');
    writeFileSync(file, JSON.stringify(store));
    chmodSync(file, 0o600);
    for (let round = 0; round < 2; round++) { // the same answers after a second restart
      cur = await restartHermes(srv);
      const transport = new StreamableHTTPClientTransport(new URL(cur.url), {
        requestInit: { headers: { Authorization: `Bearer ${tok.good}` } } });
      const client = new Client({ name: 'oauth-it', version: '1' });
      await client.connect(transport);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(),
        ['hermes_files', 'hermes_result', 'hermes_status', 'list_agents', 'whoami']);
      await assert.rejects(client.callTool({ name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } }),
        (e) => e.code === 403);
      await client.close();
      for (const t of [tok.otherAud, tok.expired, tok.refresh]) {
        const res = await post(cur, INIT(), { Authorization: `Bearer ${t}` });
        assert.equal(res.status, 401);
        assert.match(res.headers.get('www-authenticate'), /error="invalid_token"/);
      }
      if (round === 0) await new Promise((res) => { cur.proc.on('exit', res); cur.proc.kill('SIGTERM'); });
    }
    await until(() => readFileSync(join(srv.dir, 'audit.jsonl'), 'utf8').includes('"principal":"oauth:claude-connector"'), 'audit line');
    // A store readable by others stops the server.
    await new Promise((res) => { cur.proc.on('exit', res); cur.proc.kill('SIGTERM'); });
    chmodSync(file, 0o644);
    const refused = await restartHermes(srv).then((s) => s, (e) => e);
    if (!(refused instanceof Error)) await refused.stop();
    assert.ok(refused instanceof Error);
    assert.match(refused.message, /exited with 2 .*OAuth token store .*chmod 600/s);
  } finally {
    await cur.stop();
  }
});
