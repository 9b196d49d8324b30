// The OAuth 2.1 authorization server: the official SDK client's auth()
// runs the whole dance against build/hermes-mcp (discovery from the 401, dynamic registration,
// PKCE S256, the owner's consent with passphrase and CSRF token read from the page as a browser
// would, the code exchange, calls, refresh, a restart, calls still authorized), then the hostile
// cases: PKCE missing, plain or wrong; code replay; redirect URI mismatch; refresh reuse revoking
// the family; wrong passphrase, forged CSRF and cross-site POST; no passphrase set; DCR off; the
// passphrase checked on a worker thread while the loop answers others; /revoke.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { statSync, readFileSync, chmodSync, writeFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { ROOT, startHermes, restartHermes, post, INIT, HERMES, OAUTH_PASS as PASS, setPassphrase,
  startOAuth, until, pkce, registerClient, oauthProvider, approveConsent as consent } from '../../lib/lib.mjs';

const REDIRECT = 'http://127.0.0.1:7777/callback';

// An OAuthClientProvider keeping everything in memory, as a connector would in its own store.
const memoryProvider = (redirectUrl = REDIRECT) => oauthProvider(redirectUrl, {
  clientMetadata: { redirect_uris: [redirectUrl], client_name: 'Flow <test> client',
    token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
  state: 'state-42', discovery: true });

const form = (o) => new URLSearchParams(o).toString();
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };


async function mcpClient(url, provider) {
  const client = new Client({ name: 'oauth-flow-it', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  return client;
}

test('the SDK client authorizes through DCR, PKCE and consent; tokens refresh and survive a restart', async () => {
  const { srv, issuer } = await startOAuth();
  let cur = srv;
  try {
    const mode = statSync(join(srv.dir, 'oauth-passphrase')).mode & 0o777;
    assert.equal(mode, 0o600);
    assert.ok(!readFileSync(join(srv.dir, 'oauth-passphrase'), 'utf8').includes(PASS));

    const { st, provider } = memoryProvider();
    // The transport gets the 401 and runs auth(): discovery, registration, then the redirect.
    await assert.rejects(mcpClient(srv.url, provider), /Unauthorized/);
    assert.match(st.client.client_id, /^[0-9a-f]{32}$/, 'registered by DCR');
    assert.ok(st.authUrl, 'sent to the authorization endpoint');
    assert.equal(st.authUrl.origin + st.authUrl.pathname, `${issuer}/authorize`);
    assert.equal(st.authUrl.searchParams.get('code_challenge_method'), 'S256');

    const c = await consent(issuer, st.authUrl);
    assert.equal(c.page.status, 200);
    const csp = c.page.headers.get('content-security-policy');
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /default-src 'none'/);
    assert.equal(c.page.headers.get('x-frame-options'), 'DENY');
    assert.ok(c.html.includes('Flow &lt;test&gt; client'), 'the client named, escaped');
    assert.ok(c.html.includes('<strong id="host">127.0.0.1:7777</strong>'), 'its redirect host');
    for (const s of ['hermes:read', 'hermes:task']) assert.ok(c.html.includes(`<code>${s}</code>`), s);
    assert.doesNotMatch(c.html, /<script|https?:\/\/(?!127\.0\.0\.1)/, 'no script, no third-party asset');
    assert.equal(c.res.status, 302);
    const back = new URL(c.location);
    assert.equal(back.origin + back.pathname, REDIRECT);
    assert.equal(back.searchParams.get('state'), 'state-42');
    assert.equal(back.searchParams.get('iss'), issuer);
    const code = back.searchParams.get('code');
    assert.match(code, /^[0-9a-f]{64}$/);

    assert.equal(await auth(provider, { serverUrl: srv.url, authorizationCode: code }), 'AUTHORIZED');
    const first = st.tokens;
    assert.equal(first.token_type, 'Bearer');
    assert.equal(first.expires_in, 3600);
    assert.match(first.access_token, /^[0-9a-f]{64}$/);
    assert.match(first.refresh_token, /^[0-9a-f]{64}$/);

    let client = await mcpClient(srv.url, provider);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('list_agents') && names.includes('hermes_task'), names.join());
    assert.ok(!names.includes('hermes_reset'), 'hermes:admin was not asked for, not granted');
    const agents = await client.callTool({ name: 'list_agents', arguments: {} });
    assert.ok(!agents.isError, JSON.stringify(agents));
    await client.close();

    // Only hashes on disk.
    const store = readFileSync(join(srv.dir, 'oauth-tokens.json'), 'utf8');
    assert.ok(!store.includes(first.access_token) && !store.includes(first.refresh_token));
    assert.ok(store.includes(createHash('sha256').update(first.access_token).digest('hex')));

    // Refresh: a new pair; the SDK goes to the token endpoint with the refresh token.
    assert.equal(await auth(provider, { serverUrl: srv.url }), 'AUTHORIZED');
    assert.notEqual(st.tokens.access_token, first.access_token);
    assert.notEqual(st.tokens.refresh_token, first.refresh_token);

    // A restart: the tokens are still good, and refresh still works.
    await new Promise((res) => { srv.proc.on('exit', res); srv.proc.kill('SIGTERM'); });
    cur = await restartHermes(srv);
    client = await mcpClient(cur.url, provider);
    assert.ok((await client.listTools()).tools.length > 0);
    await client.close();
    assert.equal(await auth(provider, { serverUrl: cur.url }), 'AUTHORIZED');
    client = await mcpClient(cur.url, provider);
    assert.ok(!(await client.callTool({ name: 'list_agents', arguments: {} })).isError);
    await client.close();

    // The registered client is known after the restart: it can be authorized again.
    const again = await fetch(st.authUrl);
    assert.equal(again.status, 200);
    assert.ok((await again.text()).includes('Flow &lt;test&gt; client'));
    assert.equal(statSync(join(srv.dir, 'oauth-clients.json')).mode & 0o777, 0o600);

    const logs = srv.proc.stderrText + cur.proc.stderrText;
    for (const secret of [PASS, code, first.access_token, first.refresh_token, st.tokens.access_token])
      assert.ok(!logs.includes(secret), 'no secret in the log');
  } finally {
    assert.equal(await cur.stop(), 0);
  }
});

test('metadata advertises what exists; OAUTH_DCR=0 turns registration off', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    for (const p of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const res = await fetch(issuer + p);
      assert.equal(res.status, 200, p);
      const m = await res.json();
      assert.equal(m.issuer, issuer);
      assert.equal(m.authorization_endpoint, `${issuer}/authorize`);
      assert.equal(m.token_endpoint, `${issuer}/token`);
      assert.equal(m.registration_endpoint, `${issuer}/register`);
      assert.deepEqual(m.code_challenge_methods_supported, ['S256']);
      assert.deepEqual(m.grant_types_supported, ['authorization_code', 'refresh_token']);
      // Public clients, and confidential ones registered with a secret (claude.ai's).
      const methods = ['none', 'client_secret_basic', 'client_secret_post'];
      assert.deepEqual(m.token_endpoint_auth_methods_supported, methods);
      assert.equal(m.revocation_endpoint, `${issuer}/revoke`);
      assert.deepEqual(m.revocation_endpoint_auth_methods_supported, methods);
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const off = await startOAuth({ OAUTH_DCR: '0' });
  try {
    const m = await (await fetch(`${off.issuer}/.well-known/oauth-authorization-server`)).json();
    assert.equal(m.registration_endpoint, undefined);
    const res = await fetch(`${off.issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT] }) });
    assert.equal(res.status, 404);
  } finally {
    assert.equal(await off.srv.stop(), 0);
  }
  // Without OAUTH_ISSUER_URL there is no authorization server at all.
  const plain = await startHermes();
  try {
    for (const p of ['/.well-known/oauth-authorization-server', '/authorize', '/token', '/register'])
      assert.equal((await fetch(plain.base + p)).status, 404, p);
  } finally {
    assert.equal(await plain.stop(), 0);
  }
});

// Raw HTTP for the hostile cases: a registered client and a way to get a code.
const register = (issuer, body = { redirect_uris: [REDIRECT], client_name: 'raw', token_endpoint_auth_method: 'none' }) =>
  registerClient(issuer, body);

function authorizeUrl(issuer, clientId, over = {}) {
  const u = new URL(`${issuer}/authorize`);
  const p = { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, state: 'xyz',
    code_challenge_method: 'S256', scope: 'hermes:read', ...over };
  for (const [k, v] of Object.entries(p)) if (v !== undefined) u.searchParams.set(k, v);
  return u;
}

async function getCode(issuer, clientId, challenge) {
  const c = await consent(issuer, authorizeUrl(issuer, clientId, { code_challenge: challenge }));
  assert.equal(c.res.status, 302, c.html);
  return new URL(c.location).searchParams.get('code');
}

const token = async (issuer, body) => {
  const res = await fetch(`${issuer}/token`, { method: 'POST', headers: FORM, body: form(body) });
  return { status: res.status, body: await res.json(), cache: res.headers.get('cache-control') };
};

const exchange = (issuer, clientId, code, verifier, redirect = REDIRECT) =>
  token(issuer, { grant_type: 'authorization_code', client_id: clientId, code, code_verifier: verifier, redirect_uri: redirect });

test('hostile: PKCE, code replay, redirect mismatch, refresh reuse, passphrase and CSRF', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const { body: cl } = await register(issuer);
    const id = cl.client_id;
    const { verifier, challenge } = pkce();

    // PKCE missing or plain: back to the client with invalid_request, the state echoed.
    for (const over of [{}, { code_challenge_method: 'plain', code_challenge: challenge },
      { code_challenge_method: undefined, code_challenge: challenge }]) {
      const res = await fetch(authorizeUrl(issuer, id, over), { redirect: 'manual' });
      assert.equal(res.status, 302, JSON.stringify(over));
      const loc = new URL(res.headers.get('location'));
      assert.equal(loc.searchParams.get('error'), 'invalid_request');
      assert.equal(loc.searchParams.get('state'), 'xyz');
    }
    // A redirect URI not registered (another path, host, userinfo trick): a page, no redirect.
    // Another port of the registered loopback URI is the same one (RFC 8252 7.3).
    for (const bad of ['http://localhost:7777/callback', 'http://127.0.0.1:7777/other', 'http://127.0.0.1:7777/callback/',
      'http://127.0.0.1:7777/callback?x=1', 'http://127.0.0.1.evil.example:7777/callback', 'http://127.0.0.1:/callback',
      'http://127.0.0.1:7777@evil.example/callback', 'javascript:alert(1)', 'data:text/html,x',
      'http://127.0.0.1:7777/callback?next=https://evil.example', 'http://127.0.0.1:7777/callback/..']) {
      const res = await fetch(authorizeUrl(issuer, id, { code_challenge: challenge, redirect_uri: bad }), { redirect: 'manual' });
      assert.equal(res.status, 400, bad);
      assert.equal(res.headers.get('location'), null, bad);
    }
    const otherPort = await fetch(authorizeUrl(issuer, id, { code_challenge: challenge, redirect_uri: 'http://127.0.0.1:7778/callback' }));
    assert.equal(otherPort.status, 200, 'the registered loopback URI on another port');
    const unknown = await fetch(authorizeUrl(issuer, 'f'.repeat(32), { code_challenge: challenge }), { redirect: 'manual' });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.headers.get('location'), null);

    // Wrong passphrase, forged CSRF, cross-site POST: no code.
    const wrong = await consent(issuer, authorizeUrl(issuer, id, { code_challenge: challenge }), 'not the passphrase');
    assert.equal(wrong.res.status, 403);
    assert.equal(wrong.location, null);
    assert.match(await wrong.res.text(), /Wrong passphrase/);
    const forged = await consent(issuer, authorizeUrl(issuer, id, { code_challenge: challenge }), PASS, { csrf: 'a'.repeat(64) });
    assert.equal(forged.res.status, 403);
    assert.equal(forged.location, null);
    const cross = await consent(issuer, authorizeUrl(issuer, id, { code_challenge: challenge }), PASS, { headers: { Origin: 'https://evil.example' } });
    assert.equal(cross.res.status, 403);
    assert.equal(cross.location, null);

    // Wrong verifier: refused, and the code is spent.
    let code = await getCode(issuer, id, challenge);
    let r = await exchange(issuer, id, code, pkce().verifier);
    assert.equal(r.status, 400);
    assert.equal(r.body.error, 'invalid_grant');
    assert.equal((await exchange(issuer, id, code, verifier)).body.error, 'invalid_grant');
    // No verifier at all.
    code = await getCode(issuer, id, challenge);
    r = await token(issuer, { grant_type: 'authorization_code', client_id: id, code, redirect_uri: REDIRECT });
    assert.equal(r.body.error, 'invalid_request');
    // Redirect URI mismatch at the token endpoint.
    code = await getCode(issuer, id, challenge);
    r = await exchange(issuer, id, code, verifier, 'http://127.0.0.1:7777/elsewhere');
    assert.equal(r.body.error, 'invalid_grant');

    // Code replay: the second use fails and revokes what the first gave.
    code = await getCode(issuer, id, challenge);
    const good = await exchange(issuer, id, code, verifier);
    assert.equal(good.status, 200);
    assert.equal(good.cache, 'no-store');
    assert.equal(good.body.scope, 'hermes:read');
    assert.equal((await post(srv, INIT(), { Authorization: `Bearer ${good.body.access_token}` })).status, 200);
    assert.equal((await exchange(issuer, id, code, verifier)).body.error, 'invalid_grant');
    assert.equal((await post(srv, INIT(), { Authorization: `Bearer ${good.body.access_token}` })).status, 401);
    assert.equal((await token(issuer, { grant_type: 'refresh_token', client_id: id, refresh_token: good.body.refresh_token })).body.error, 'invalid_grant');

    // Refresh rotation; reuse of a rotated refresh token revokes the family.
    code = await getCode(issuer, id, challenge);
    const t1 = (await exchange(issuer, id, code, verifier)).body;
    const t2 = (await token(issuer, { grant_type: 'refresh_token', client_id: id, refresh_token: t1.refresh_token })).body;
    assert.match(t2.refresh_token, /^[0-9a-f]{64}$/);
    // A client id nobody registered fails client authentication (RFC 6749 5.2), before any grant
    // (another registered client's refresh is invalid_grant: connectors.test.mjs).
    const nobody = await token(issuer, { grant_type: 'refresh_token', client_id: 'e'.repeat(32), refresh_token: t2.refresh_token });
    assert.equal(nobody.status, 401, 'an unknown client');
    assert.equal(nobody.body.error, 'invalid_client');
    const reuse = await token(issuer, { grant_type: 'refresh_token', client_id: id, refresh_token: t1.refresh_token });
    assert.equal(reuse.body.error, 'invalid_grant');
    assert.equal((await token(issuer, { grant_type: 'refresh_token', client_id: id, refresh_token: t2.refresh_token })).body.error, 'invalid_grant', 'the family is gone');
    assert.equal((await post(srv, INIT(), { Authorization: `Bearer ${t2.access_token}` })).status, 401);

    // Registration refuses what it must.
    for (const uris of [['javascript:alert(1)'], ['data:text/html,x'], ['http://evil.example/cb'],
      ['https://a@evil.example/cb'], ['https://ok.example/cb#frag'], [], Array(11).fill(REDIRECT)]) {
      const reg = await register(issuer, { redirect_uris: uris });
      assert.equal(reg.status, 400, JSON.stringify(uris));
    }
    // A method other than none, client_secret_post and client_secret_basic.
    const jwt = await register(issuer, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' });
    assert.equal(jwt.status, 400);
    assert.equal(jwt.body.error, 'invalid_client_metadata');
    assert.equal((await register(issuer, { redirect_uris: ['claude://callback'] })).status, 201);

    const logs = srv.proc.stderrText;
    for (const secret of [PASS, 'not the passphrase', good.body.access_token, t1.refresh_token])
      assert.ok(!logs.includes(secret), 'no secret in the log');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('consent is rate limited per address, and refused with a how-to without a passphrase', async () => {
  const { srv, issuer } = await startOAuth({}, false);
  try {
    assert.equal((await register(issuer, { redirect_uris: [REDIRECT], client_name: 'line\nbreak' })).status, 400);
    assert.equal((await register(issuer, { redirect_uris: [REDIRECT], client_name: 'n'.repeat(201) })).status, 400);
    const { body: cl } = await register(issuer);
    const { challenge } = pkce();
    const res = await fetch(authorizeUrl(issuer, cl.client_id, { code_challenge: challenge }));
    assert.equal(res.status, 503);
    assert.match(await res.text(), /hermes-mcp oauth passwd/);
    setPassphrase(srv.envFile, PASS); // taken at the next consent, no restart
    const statuses = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await consent(issuer, authorizeUrl(issuer, cl.client_id, { code_challenge: challenge }), 'wrong guess ' + i)).res.status);
    assert.deepEqual(statuses, [403, 403, 403, 403, 403, 429, 429]);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('oauth passwd refuses a short passphrase and never takes one from argv', async () => {
  const { srv } = await startOAuth({}, false);
  try {
    const short = spawnSync(HERMES, ['oauth', 'passwd', '--env-file', srv.envFile], { input: 'short\n', encoding: 'utf8' });
    assert.equal(short.status, 1);
    assert.match(short.stderr, /at least 12/);
    const argv = spawnSync(HERMES, ['oauth', 'passwd', PASS, '--env-file', srv.envFile], { input: '', encoding: 'utf8' });
    assert.equal(argv.status, 2);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('doctor: the consent passphrase missing warns with the command, set is ok, readable by others FAILs', async () => {
  const { srv } = await startOAuth({}, false);
  try {
    const doctor = () => spawnSync(HERMES, ['doctor', '--env-file', srv.envFile, '--no-probe'], { encoding: 'utf8', timeout: 20000 });
    let r = doctor();
    assert.match(r.stdout, /warn\s+no OAuth consent passphrase .*run: hermes-mcp oauth passwd/, r.stdout);
    setPassphrase(srv.envFile, PASS);
    r = doctor();
    assert.match(r.stdout, /ok\s+OAuth consent passphrase .*oauth-passphrase \(scrypt\)/, r.stdout);
    assert.equal((await register(srv.base)).status, 201);
    r = doctor();
    assert.match(r.stdout, /ok\s+OAuth clients file .*oauth-clients.json: 1 client\n/, r.stdout);
    chmodSync(join(srv.dir, 'oauth-passphrase'), 0o644);
    r = doctor();
    assert.equal(r.status, 1, r.stdout);
    assert.match(r.stdout, /FAIL\s+.*oauth-passphrase is readable or writable by others; run: chmod 600/, r.stdout);
    assert.ok(!r.stdout.includes(PASS));
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a clients file readable by others, or not ours, stops the server', async () => {
  const { srv } = await startOAuth();
  const file = join(srv.dir, 'oauth-clients.json');
  const { issuer } = { issuer: srv.base };
  assert.equal((await register(issuer)).status, 201);
  await new Promise((res) => { srv.proc.on('exit', res); srv.proc.kill('SIGTERM'); });
  try {
    chmodSync(file, 0o644);
    let refused = await restartHermes(srv).then((s) => s, (e) => e);
    if (!(refused instanceof Error)) await refused.stop();
    assert.ok(refused instanceof Error);
    assert.match(refused.message, /exited with 2 .*OAuth clients file .*chmod 600/s);
    chmodSync(file, 0o600);
    writeFileSync(file, '{"version":1,"clients":[{"client_id":"x","client_name":"n","redirect_uris":["javascript:1"]}]}');
    refused = await restartHermes(srv).then((s) => s, (e) => e);
    if (!(refused instanceof Error)) await refused.stop();
    assert.ok(refused instanceof Error);
    assert.match(refused.message, /exited with 2 .*OAuth clients file .*not one this server wrote/s);
  } finally {
    rmSync(srv.dir, { recursive: true, force: true });
  }
});

test('registration is capped and rate limited; Deny and a missing CSRF token give no code', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const big = await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'x', pad: 'y'.repeat(20000) }) });
    assert.equal(big.status, 413);
    const { body: cl } = await register(issuer);
    const { challenge } = pkce();
    // Deny: back to the client with access_denied and the state, no code.
    const page = await (await fetch(authorizeUrl(issuer, cl.client_id, { code_challenge: challenge }))).text();
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(page)[1];
    const deny = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual', headers: FORM,
      body: form({ csrf, action: 'deny' }) });
    assert.equal(deny.status, 302);
    const loc = new URL(deny.headers.get('location'));
    assert.equal(loc.searchParams.get('error'), 'access_denied');
    assert.equal(loc.searchParams.get('state'), 'xyz');
    assert.equal(loc.searchParams.get('code'), null);
    // The form is spent: approving it afterwards is refused.
    const late = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual', headers: FORM,
      body: form({ csrf, passphrase: PASS, action: 'approve' }) });
    assert.equal(late.status, 403);
    // No CSRF token at all.
    const none = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual', headers: FORM,
      body: form({ passphrase: PASS, action: 'approve' }) });
    assert.equal(none.status, 403);
    assert.equal(none.headers.get('location'), null);
    // A flood of registrations from one address: 10 a minute (two were made above), then 429.
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push((await register(issuer)).status);
    assert.deepEqual(statuses, [201, 201, 201, 201, 201, 201, 201, 201, 429, 429]);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// The passphrase's scrypt runs on a worker thread, not on the event loop: while a consent POST
// is being checked, another client is answered. HERMES_TEST_CONSENT_DELAY_MS (a test-only knob,
// applied on the worker) holds each check 2 s longer than scrypt's ~0.1 s, so the ordering below
// does not depend on how loaded the machine is; on a loop that checks the passphrase itself the
// consent answer always comes first (and the knob does nothing).
const HOLD_MS = 2000;
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// Requests the server holds open for a later answer (a consent POST while it is checked).
async function heldRequests(srv) {
  const text = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
  return Number(/^hermes_mcp_requests_held(?:\{\})? (\S+)$/m.exec(text)?.[1]);
}

async function consentForm(issuer, clientId, challenge) {
  const html = await (await fetch(authorizeUrl(issuer, clientId, { code_challenge: challenge }))).text();
  return /name="csrf" value="([0-9a-f]{64})"/.exec(html)[1];
}
const sendConsent = (issuer, csrf, pass, signal) => fetch(`${issuer}/authorize`, { method: 'POST',
  redirect: 'manual', headers: { ...FORM, Origin: issuer }, signal,
  body: form({ csrf, passphrase: pass, action: 'approve' }) });

test('the consent passphrase is checked off the event loop: /health is answered meanwhile', async () => {
  const { srv, issuer } = await startOAuth({}, true, { env: { HERMES_TEST_CONSENT_DELAY_MS: String(HOLD_MS) } });
  try {
    const { body: cl } = await register(issuer);
    const { challenge } = pkce();
    const csrf = await consentForm(issuer, cl.client_id, challenge);
    const order = [];
    const t0 = performance.now();
    const pending = sendConsent(issuer, csrf, PASS).then((res) => { order.push('consent'); return res; });
    await until(async () => (await heldRequests(srv)) === 1, 'the consent POST held while it is checked');
    const health = await fetch(`${issuer}/health`);
    order.push('health');
    const res = await pending;
    const consentMs = performance.now() - t0;
    assert.equal(health.status, 200);
    assert.deepEqual(order, ['health', 'consent']);
    assert.equal(res.status, 302);
    assert.match(res.headers.get('location'), /[?&]code=[0-9a-f]{64}/);
    assert.ok(consentMs >= HOLD_MS, `the consent took ${consentMs} ms: the check was not held`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a consent whose client leaves mid-check: its form is spent, a wrong guess still counts', async () => {
  const { srv, issuer } = await startOAuth({}, true, { env: { HERMES_TEST_CONSENT_DELAY_MS: '300' } });
  try {
    const { body: cl } = await register(issuer);
    const { challenge } = pkce();
    // Right passphrase, then three wrong ones, each on its own form, each from a client that
    // leaves before the answer (checks still running count against the limit: four, one under
    // it).
    const left = [];
    for (const pass of [PASS, 'wrong guess 1', 'wrong guess 2', 'wrong guess 3']) {
      const csrf = await consentForm(issuer, cl.client_id, challenge);
      left.push(csrf);
      // The previous POST's hang-up is seen first, so the count below is this POST's.
      await until(async () => (await heldRequests(srv)) === 0, 'the previous POST let go');
      const ac = new AbortController();
      const p = sendConsent(issuer, csrf, pass, ac.signal).catch((e) => e.name);
      await until(async () => (await heldRequests(srv)) === 1, 'the consent POST reached the server');
      ac.abort();
      assert.equal(await p, 'AbortError');
    }
    // Checks run in order, so these are answered after all four above. A CSRF token is spent
    // by the POST that carried it, even one whose client left.
    const spent = await sendConsent(issuer, left[0], PASS);
    assert.equal(spent.status, 403, 'the form whose POST left cannot be sent again');
    assert.equal(spent.headers.get('location'), null);
    assert.match(await spent.text(), /Expired or forged request/);
    const ok = await sendConsent(issuer, await consentForm(issuer, cl.client_id, challenge), PASS);
    assert.equal(ok.status, 302, 'a new form is answered');
    for (const pass of ['wrong guess 4', 'wrong guess 5']) {
      const wrong = await sendConsent(issuer, await consentForm(issuer, cl.client_id, challenge), pass);
      assert.equal(wrong.status, 403);
      assert.match(await wrong.text(), /Wrong passphrase/);
    }
    const limited = await sendConsent(issuer, await consentForm(issuer, cl.client_id, challenge), PASS);
    assert.equal(limited.status, 429, 'the guesses whose clients left were not counted');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// The consent form's CSRF token is one use, whatever the answer: a token sent once with a wrong
// passphrase is refused with the right one. The wrong-passphrase page carries a fresh token,
// which is the one that works then, once.
test('a CSRF token sent with a wrong passphrase is spent: the right passphrase with it gets no code', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const { body: cl } = await register(issuer);
    const { challenge } = pkce();
    const csrf = await consentForm(issuer, cl.client_id, challenge);
    const wrong = await sendConsent(issuer, csrf, 'not the passphrase');
    assert.equal(wrong.status, 403);
    const page = await wrong.text();
    assert.match(page, /Wrong passphrase/);
    const fresh = /name="csrf" value="([0-9a-f]{64})"/.exec(page)?.[1];
    assert.ok(fresh, 'the page again, with a form');
    assert.notEqual(fresh, csrf, 'a new token, not the one just sent');

    const again = await sendConsent(issuer, csrf, PASS);
    assert.equal(again.status, 403, 'the spent token is refused');
    assert.equal(again.headers.get('location'), null, 'no code');
    assert.match(await again.text(), /Expired or forged request/);

    const ok = await sendConsent(issuer, fresh, PASS);
    assert.equal(ok.status, 302, 'the fresh token works');
    assert.match(ok.headers.get('location'), /[?&]code=[0-9a-f]{64}/);
    const replay = await sendConsent(issuer, fresh, PASS);
    assert.equal(replay.status, 403, 'and only once');
    assert.equal(replay.headers.get('location'), null);
    // A POST that carried no passphrase spends its token too.
    const bare = await consentForm(issuer, cl.client_id, challenge);
    const empty = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
      headers: { ...FORM, Origin: issuer }, body: form({ csrf: bare, action: 'approve' }) });
    assert.equal(empty.status, 403);
    assert.equal((await sendConsent(issuer, bare, PASS)).status, 403);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('stopping while a consent passphrase is being checked: the POST is answered, the exit is clean', async () => {
  const { srv, issuer } = await startOAuth({}, true, { env: { HERMES_TEST_CONSENT_DELAY_MS: '1500' } });
  const { body: cl } = await register(issuer);
  const csrf = await consentForm(issuer, cl.client_id, pkce().challenge);
  const pending = sendConsent(issuer, csrf, PASS).then((r) => r.status, (e) => e.name);
  await until(async () => (await heldRequests(srv)) === 1, 'the consent POST held while it is checked');
  assert.equal(await srv.stop(), 0);
  assert.equal(await pending, 503);
});

// /revoke (RFC 7009): an access token goes alone, a refresh token takes its family; unknown,
// spent and other clients' tokens get 200 and nothing happens; the client authenticates as at
// /token.
test('revocation: access token alone, refresh token with its family; others untouched', async () => {
  const { srv, issuer } = await startOAuth();
  const revoke = async (body, headers = {}) => {
    const res = await fetch(`${issuer}/revoke`, { method: 'POST', headers: { ...FORM, ...headers }, body: form(body) });
    return { status: res.status, body: await res.json(), cache: res.headers.get('cache-control') };
  };
  const mcpStatus = async (access) => (await post(srv, INIT(), { Authorization: `Bearer ${access}` })).status;
  try {
    const { body: cl } = await register(issuer);
    const { body: other } = await register(issuer);
    const id = cl.client_id;
    const pair = async () => {
      const { verifier, challenge } = pkce();
      return (await exchange(issuer, id, await getCode(issuer, id, challenge), verifier)).body;
    };
    const a = await pair(), b = await pair();
    assert.equal(await mcpStatus(a.access_token), 200);
    // Another client cannot revoke it; the answer does not say so.
    let r = await revoke({ token: a.access_token, client_id: other.client_id });
    assert.equal(r.status, 200);
    assert.equal(await mcpStatus(a.access_token), 200, "another client's revocation took effect");
    // The access token alone: its refresh token still works.
    r = await revoke({ token: a.access_token, client_id: id, token_type_hint: 'access_token' });
    assert.equal(r.status, 200);
    assert.equal(r.cache, 'no-store');
    assert.equal(await mcpStatus(a.access_token), 401);
    const a2 = await token(issuer, { grant_type: 'refresh_token', client_id: id, refresh_token: a.refresh_token });
    assert.equal(a2.status, 200, 'the refresh token went with its access token');
    // A refresh token takes the family: the access token issued with it stops working too.
    r = await revoke({ token: a2.body.refresh_token, client_id: id });
    assert.equal(r.status, 200);
    assert.equal(await mcpStatus(a2.body.access_token), 401);
    assert.equal((await token(issuer, { grant_type: 'refresh_token', client_id: id, refresh_token: a2.body.refresh_token })).body.error, 'invalid_grant');
    // The other authorization is untouched; unknown tokens are no error.
    assert.equal(await mcpStatus(b.access_token), 200);
    assert.equal((await revoke({ token: 'f'.repeat(64), client_id: id })).status, 200);
    assert.equal((await revoke({ token: a.access_token, client_id: id })).status, 200, 'twice is no error');
    // Malformed: no token, no client, GET.
    assert.equal((await revoke({ client_id: id })).body.error, 'invalid_request');
    assert.equal((await revoke({ token: b.access_token })).status, 400);
    assert.equal((await fetch(`${issuer}/revoke`)).status, 405);
    assert.equal(await mcpStatus(b.access_token), 200);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// Browser-based MCP clients (MCP Inspector's web UI) run discovery, registration and the token
// exchange from their own origin: the SDK sends MCP-Protocol-Version on the metadata requests and
// JSON to /register, so the browser asks first (a CORS preflight). Those endpoints answer it for
// any origin (no cookies are involved, the answers are public or bound to PKCE); /authorize,
// where the owner consents, does not, and its POST from another site stays refused.
test('CORS: metadata, /register, /token and /revoke answer preflights from any origin; /authorize does not', async () => {
  const { srv, issuer } = await startOAuth();
  const ORIGIN = 'http://localhost:6274'; // the Inspector's web UI
  const preflight = (path, method, headers) => fetch(issuer + path, { method: 'OPTIONS', headers: {
    Origin: ORIGIN, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': headers } });
  try {
    for (const [path, method, headers] of [
      ['/.well-known/oauth-protected-resource/mcp', 'GET', 'mcp-protocol-version'],
      ['/.well-known/oauth-protected-resource', 'GET', 'mcp-protocol-version'],
      ['/.well-known/oauth-authorization-server', 'GET', 'mcp-protocol-version'],
      ['/.well-known/openid-configuration', 'GET', 'mcp-protocol-version'],
      ['/register', 'POST', 'content-type'],
      ['/token', 'POST', 'content-type,authorization'],
      ['/revoke', 'POST', 'content-type']]) {
      const res = await preflight(path, method, headers);
      assert.equal(res.status, 204, path);
      assert.equal(res.headers.get('access-control-allow-origin'), '*', path);
      assert.ok(res.headers.get('access-control-allow-methods').split(/, */).includes(method), path);
      const allowed = res.headers.get('access-control-allow-headers').toLowerCase().split(/, */);
      for (const h of headers.split(',')) assert.ok(allowed.includes(h), `${path}: ${h}`);
      assert.equal(res.headers.get('access-control-allow-credentials'), null, path);
    }
    // The answers themselves carry the header, errors too (the client reads the OAuth error).
    const meta = await fetch(`${issuer}/.well-known/oauth-authorization-server`, { headers: { Origin: ORIGIN, 'MCP-Protocol-Version': '2025-11-25' } });
    assert.equal(meta.status, 200);
    assert.equal(meta.headers.get('access-control-allow-origin'), '*');
    const reg = await fetch(`${issuer}/register`, { method: 'POST', headers: { Origin: ORIGIN, 'Content-Type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) });
    assert.equal(reg.status, 201);
    assert.equal(reg.headers.get('access-control-allow-origin'), '*');
    const tok = await fetch(`${issuer}/token`, { method: 'POST', headers: { Origin: ORIGIN, ...FORM },
      body: form({ grant_type: 'authorization_code', client_id: (await reg.json()).client_id, code: 'f'.repeat(64), code_verifier: pkce().verifier, redirect_uri: REDIRECT }) });
    assert.equal(tok.status, 400);
    assert.equal(tok.headers.get('access-control-allow-origin'), '*');
    assert.equal((await tok.json()).error, 'invalid_grant');
    // The consent endpoint: no CORS answer, so a page elsewhere cannot even read the form.
    const authz = await preflight('/authorize', 'POST', 'content-type');
    assert.notEqual(authz.status, 204);
    assert.equal(authz.headers.get('access-control-allow-origin'), null);
    const page = await fetch(`${issuer}/authorize?response_type=code`, { headers: { Origin: ORIGIN } });
    assert.equal(page.headers.get('access-control-allow-origin'), null);
    // /mcp is not opened by this: its Origin check (DNS rebinding) is unchanged.
    const mcp = await fetch(srv.url, { method: 'OPTIONS', headers: { Origin: ORIGIN, 'Access-Control-Request-Method': 'POST' } });
    assert.equal(mcp.headers.get('access-control-allow-origin'), null);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// Token lifetimes are settings (OAUTH_ACCESS_TTL_S, OAUTH_REFRESH_TTL_S): the answer says the
// access token's, the token stops working when it is over, and the refresh token still gets a
// new one.
test('OAUTH_ACCESS_TTL_S and OAUTH_REFRESH_TTL_S set the tokens\' lives', async () => {
  const { srv, issuer } = await startOAuth({ OAUTH_ACCESS_TTL_S: '2', OAUTH_REFRESH_TTL_S: '120' });
  try {
    const { body: cl } = await register(issuer);
    const { verifier, challenge } = pkce();
    const t = await exchange(issuer, cl.client_id, await getCode(issuer, cl.client_id, challenge), verifier);
    assert.equal(t.status, 200);
    assert.equal(t.body.expires_in, 2);
    const store = JSON.parse(readFileSync(join(srv.dir, 'oauth-tokens.json'), 'utf8'));
    const entries = Object.values(store).find(Array.isArray);
    const life = (kind) => entries.filter((e) => e.kind === kind).map((e) => e.expires - e.issued);
    assert.deepEqual(life('access'), [2]);
    assert.deepEqual(life('refresh'), [120]);
    const call = (tok) => post(srv, INIT(), { Authorization: `Bearer ${tok}` });
    assert.equal((await call(t.body.access_token)).status, 200);
    const deadline = Date.now() + 10000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      await sleep(250);
      status = (await call(t.body.access_token)).status;
    }
    assert.equal(status, 401, 'the access token ended with its 2 s');
    const fresh = await token(issuer, { grant_type: 'refresh_token', client_id: cl.client_id, refresh_token: t.body.refresh_token });
    assert.equal(fresh.status, 200);
    assert.equal((await call(fresh.body.access_token)).status, 200);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// A DCR flood from many addresses is capped by the number of clients kept (1000): the next
// registration is refused, and one revoked (oauth clients revoke) makes room again.
test('registration is capped at 1000 clients with tokens; revoking one makes room', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const clients = Array.from({ length: 1000 }, (_, i) => ({ client_id: i.toString(16).padStart(32, '0'),
      client_name: `flood ${i}`, redirect_uris: [REDIRECT], created: 1700000000 }));
    // Each holds a refresh token: clients that never got one would be dropped to make room.
    const tokens = clients.map((c, i) => ({ sha256: i.toString(16).padStart(64, '0'), kind: 'refresh',
      client_id: c.client_id, scope: 'hermes:read', resource: `${issuer}/mcp`, expires: Math.floor(Date.now() / 1000) + 86400 }));
    writeFileSync(join(srv.dir, 'oauth-tokens.json'), JSON.stringify({ version: 1, tokens }), { mode: 0o600 });
    const file = join(srv.dir, 'oauth-clients.json');
    writeFileSync(file, JSON.stringify({ version: 1, clients }), { mode: 0o600 });
    chmodSync(file, 0o600);
    const full = await register(issuer);
    assert.equal(full.status, 400);
    assert.equal(full.body.error, 'temporarily_unavailable');
    const r = spawnSync(HERMES, ['oauth', 'clients', 'revoke', clients[0].client_id, '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const room = await register(issuer);
    assert.equal(room.status, 201);
    // Full again; the newest never got a token, so it gives its place, the others keep theirs.
    const next = await register(issuer);
    assert.equal(next.status, 201);
    assert.equal((await fetch(authorizeUrl(issuer, room.body.client_id, { code_challenge: pkce().challenge }))).status, 400);
    assert.equal((await fetch(authorizeUrl(issuer, clients[1].client_id, { code_challenge: pkce().challenge }))).status, 200);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// Wrong audience asked for (RFC 8707 resource): tokens are only for this server's /mcp, so a
// client asking for another resource at /authorize or /token gets invalid_target and nothing.
test('hostile: a resource other than <issuer>/mcp is refused at /authorize and /token (invalid_target)', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const { body: cl } = await register(issuer);
    const { verifier, challenge } = pkce();
    const res = await fetch(authorizeUrl(issuer, cl.client_id, { code_challenge: challenge, resource: 'https://other.example/mcp' }), { redirect: 'manual' });
    assert.equal(res.status, 302);
    const loc = new URL(res.headers.get('location'));
    assert.equal(loc.searchParams.get('error'), 'invalid_target');
    assert.equal(loc.searchParams.get('code'), null);
    const ours = await fetch(authorizeUrl(issuer, cl.client_id, { code_challenge: challenge, resource: `${issuer}/mcp` }));
    assert.equal(ours.status, 200, 'its own resource is fine');
    const code = await getCode(issuer, cl.client_id, challenge);
    const t = await token(issuer, { grant_type: 'authorization_code', client_id: cl.client_id, code, code_verifier: verifier,
      redirect_uri: REDIRECT, resource: `${issuer.replace('127.0.0.1', 'localhost')}/mcp` });
    assert.equal(t.status, 400);
    assert.equal(t.body.error, 'invalid_target');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// Codes live 60 s (AUTHSERVER_CODE_TTL): one 61 s old is refused like an unknown one, while a
// fresh one from the same consent flow is taken. (A real wait: the server reads its own clock.)
test('an authorization code older than 60 s is refused', async () => {
  // tests/fakes/clockshift.c, preloaded: the server's time() runs as many seconds ahead as the
  // file says, so the code ages 61 s at once.
  const dir = mkdtempSync(join(tmpdir(), 'hm-clock-'));
  const shim = join(dir, 'clockshift.so');
  const cc = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-o', shim, join(ROOT, 'tests/fakes/clockshift.c'), '-ldl'], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const shift = join(dir, 'shift');
  writeFileSync(shift, '0');
  const { srv, issuer } = await startOAuth({}, true, { env: { LD_PRELOAD: shim, CLOCKSHIFT_FILE: shift,
    ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:verify_asan_link_order=0` } }); // the shim has no ASan
  try {
    const { body: cl } = await register(issuer);
    const { verifier, challenge } = pkce();
    const old = await getCode(issuer, cl.client_id, challenge);
    writeFileSync(shift, '61');
    const late = await exchange(issuer, cl.client_id, old, verifier);
    assert.equal(late.status, 400, JSON.stringify(late.body));
    assert.equal(late.body.error, 'invalid_grant');
    const fresh = await exchange(issuer, cl.client_id, await getCode(issuer, cl.client_id, challenge), verifier);
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    assert.ok(fresh.body.access_token);
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
