// The connectors people use, replayed against the real binary from their documented request
// shapes (tests/fixtures/connectors/, one file per client with its public sources): claude.ai,
// ChatGPT, Claude Desktop's custom connector with a pasted id and secret, Cursor, VS Code,
// Codex CLI, mcp-remote and MCP Inspector. Each goes end to end as that client does: its
// registration body as-is (or the operator's minted client), the owner's consent, the code, the
// token request with its client authentication, a refresh, and tools/list with the token. Then
// what confidential registrations must hold: the secret shown once and kept
// only as a hash, required at /token and /revoke (by Basic or in the body), a clients file from
// before them still read, and scopes the server does not know dropped rather than refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { ROOT, HERMES, OAUTH_PASS, INIT, post, startOAuth, oauthProvider, restartHermes, until, pkce, mintClient,
  registerClient } from '../../lib/lib.mjs';
import { events, waitEvent } from '../../lib/events.mjs';

const DIR = join(ROOT, 'tests/fixtures/connectors');
const fixtures = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort()
  .map((file) => ({ file, ...JSON.parse(readFileSync(join(DIR, file), 'utf8')) }));
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const sha256 = (s) => createHash('sha256').update(s).digest('hex');

// `hermes-mcp oauth mint-client`, as the operator runs it for a client that takes a pasted pair.
const mint = mintClient;

const register = registerClient;

// A request to /token or /revoke authenticated the way `auth` says.
async function tokenCall(issuer, path, auth, client, params) {
  const headers = { ...FORM };
  const body = new URLSearchParams(params);
  if (auth === 'client_secret_basic')
    headers.Authorization = 'Basic ' + Buffer.from(`${client.id}:${client.secret}`).toString('base64');
  else body.set('client_id', client.id);
  if (auth === 'client_secret_post') body.set('client_secret', client.secret);
  const res = await fetch(`${issuer}${path}`, { method: 'POST', headers, body: body.toString() });
  return { status: res.status, www: res.headers.get('www-authenticate'), body: await res.json() };
}

// The owner at the consent page: GET /authorize as the client builds it, then the form with the
// passphrase. The page, the code and where it was sent.
async function authorize(issuer, client, redirect, { scope, resource }, challenge) {
  const u = new URL(`${issuer}/authorize`);
  const p = { response_type: 'code', client_id: client.id, redirect_uri: redirect, state: 'st-1',
    code_challenge: challenge, code_challenge_method: 'S256' };
  if (scope !== null) p.scope = scope;
  if (resource) p.resource = `${issuer}/mcp`;
  for (const [k, v] of Object.entries(p)) u.searchParams.set(k, v);
  const page = await fetch(u, { redirect: 'manual' });
  const html = await page.text();
  assert.equal(page.status, 200, `the consent page: ${page.headers.get('location') ?? html}`);
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)[1];
  const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
    headers: { ...FORM, Origin: issuer }, body: new URLSearchParams({ csrf, passphrase: OAUTH_PASS, action: 'approve' }).toString() });
  assert.equal(res.status, 302);
  const location = res.headers.get('location');
  assert.ok(location.startsWith(redirect + '?'), location);
  const back = new URL(location);
  assert.equal(back.searchParams.get('state'), 'st-1');
  return { html, code: back.searchParams.get('code') };
}

async function toolNames(srv, access) {
  const client = new Client({ name: 'connectors-it', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: { Authorization: `Bearer ${access}` } } }));
  const names = (await client.listTools()).tools.map((t) => t.name);
  await client.close();
  return names;
}

test('the corpus holds the eight clients, each citing its public sources', () => {
  assert.deepEqual(fixtures.map((f) => f.file), ['chatgpt.json', 'claude-ai.json', 'claude-desktop-custom.json',
    'codex-cli.json', 'cursor.json', 'mcp-inspector.json', 'mcp-remote.json', 'vscode.json']);
  for (const f of fixtures) {
    assert.ok(f.source.length > 0 && f.source.every((s) => /^https:\/\//.test(s.url) && s.shows), f.file);
    assert.ok(typeof f.evidence === 'string' && f.evidence.length > 40, `${f.file}: says what is documented and what is observed`);
    assert.ok(['dcr', 'operator'].includes(f.registration), f.file);
    assert.ok(f.registration === 'operator' || f.register.redirect_uris.includes(f.redirect_uri), f.file);
  }
  assert.ok(fixtures.some((f) => f.authorize.scope === 'claudeai'), 'claude.ai\'s scope=claudeai');
  assert.ok(fixtures.some((f) => f.again?.authorize.scope === null), 'ChatGPT\'s reconnect without a scope');
});

for (const fx of fixtures) {
  test(`${fx.client}: registration, consent, code, token, refresh and tools/list, as it sends them`, async () => {
    const minted = fx.registration === 'operator' ? mint() : null;
    const { srv, issuer } = await startOAuth(minted
      ? { OAUTH_DCR: '0', OAUTH_CLIENT_ID: minted.id, OAUTH_CLIENT_SECRET: minted.secret } : {});
    try {
      // Where every client starts: the 401 and the metadata it names.
      const first = await post(srv, INIT(), { Authorization: '' });
      assert.equal(first.status, 401);
      assert.match(first.headers.get('www-authenticate'), /scope="hermes:read hermes:task"/);
      const meta = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
      for (const step of [fx.token, fx.refresh]) {
        assert.ok(meta.token_endpoint_auth_methods_supported.includes(step.auth), step.auth);
        assert.ok(meta.revocation_endpoint_auth_methods_supported.includes(step.auth), step.auth);
      }

      let client = minted;
      if (fx.registration === 'dcr') {
        const reg = await register(issuer, fx.register);
        assert.equal(reg.status, 201, JSON.stringify(reg.body));
        const method = fx.register.token_endpoint_auth_method ?? 'none';
        assert.equal(reg.body.token_endpoint_auth_method, method, 'the method asked for, echoed');
        assert.deepEqual(reg.body.redirect_uris, fx.register.redirect_uris);
        if (method === 'none') {
          assert.equal(reg.body.client_secret, undefined, 'a public client gets no secret');
        } else {
          assert.match(reg.body.client_secret, /^[0-9a-f]{64}$/);
          assert.equal(reg.body.client_secret_expires_at, 0);
        }
        client = { id: reg.body.client_id, secret: reg.body.client_secret };
      }

      let last;
      for (const round of [{ authorize: fx.authorize, granted: fx.granted }, ...(fx.again ? [fx.again] : [])]) {
        const redirect = round.redirect_uri ?? fx.redirect_uri;
        const { verifier, challenge } = pkce();
        const { html, code } = await authorize(issuer, client, redirect, round.authorize, challenge);
        for (const s of round.granted.split(' ')) assert.ok(html.includes(`<code>${s}</code>`), `the page asks for ${s}`);
        assert.ok(!html.includes('<code>claudeai</code>'), 'a scope we do not know is not offered');
        const params = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirect };
        if (fx.token.resource) params.resource = `${issuer}/mcp`;
        if (fx.token.auth !== 'none') {
          // Without its secret a confidential client gets nothing, and the code is not spent.
          const bare = await tokenCall(issuer, '/token', 'none', { id: client.id }, params);
          assert.equal(bare.status, 401, JSON.stringify(bare.body));
          assert.equal(bare.body.error, 'invalid_client');
        }
        const tok = await tokenCall(issuer, '/token', fx.token.auth, client, params);
        assert.equal(tok.status, 200, JSON.stringify(tok.body));
        assert.equal(tok.body.token_type, 'Bearer');
        assert.equal(tok.body.scope, round.granted, 'the token response names the scope granted');
        const names = await toolNames(srv, tok.body.access_token);
        assert.ok(names.includes('list_agents') && names.includes('hermes_task'), names.join());

        const refresh = { grant_type: 'refresh_token', refresh_token: tok.body.refresh_token };
        if (fx.refresh.resource) refresh.resource = `${issuer}/mcp`;
        if (fx.refresh.auth !== 'none') {
          // A confidential client's secret is required, by its method; a refusal spends nothing.
          for (const [auth, who] of [['none', { id: client.id }], [fx.refresh.auth, { ...client, secret: 'f'.repeat(64) }]]) {
            const bad = await tokenCall(issuer, '/token', auth, who, refresh);
            assert.equal(bad.status, 401, `${auth}: ${JSON.stringify(bad.body)}`);
            assert.equal(bad.body.error, 'invalid_client');
          }
        }
        const again = await tokenCall(issuer, '/token', fx.refresh.auth, client, refresh);
        assert.equal(again.status, 200, JSON.stringify(again.body));
        assert.equal(again.body.scope, round.granted);
        assert.notEqual(again.body.access_token, tok.body.access_token);
        assert.ok((await toolNames(srv, again.body.access_token)).includes('list_agents'));
        last = again.body;
      }

      // Revocation, authenticated as at /token: the refresh token and its family go.
      if (fx.refresh.auth !== 'none') {
        const bare = await tokenCall(issuer, '/revoke', 'none', { id: client.id }, { token: last.refresh_token });
        assert.equal(bare.status, 401, 'no secret, no revocation');
        // The log line names the endpoint and the client (never the secret).
        for (const path of ['/token', '/revoke'])
          await waitEvent(srv, 'client_auth_failed', { endpoint: path, client: client.id });
      }
      assert.equal((await tokenCall(issuer, '/revoke', fx.refresh.auth, client, { token: last.refresh_token })).status, 200);
      assert.equal((await post(srv, INIT(), { Authorization: `Bearer ${last.access_token}` })).status, 401);
      if (client.secret) assert.ok(!srv.proc.stderrText.includes(client.secret), 'the secret is in no log line');
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
}

const CLAUDE = JSON.parse(readFileSync(join(DIR, 'claude-ai.json'), 'utf8'));

test('a confidential client: the secret shown once, kept as a hash only, never listed, still required after a restart', async () => {
  const { srv, issuer } = await startOAuth();
  let cur = srv;
  try {
    const reg = await register(issuer, CLAUDE.register);
    assert.equal(reg.status, 201);
    const client = { id: reg.body.client_id, secret: reg.body.client_secret };
    const file = join(srv.dir, 'oauth-clients.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const stored = readFileSync(file, 'utf8');
    assert.ok(!stored.includes(client.secret), 'the secret is not on disk');
    const doc = JSON.parse(stored);
    assert.equal(doc.version, 2, 'a server from before confidential clients refuses the file');
    const entry = doc.clients.find((c) => c.client_id === client.id);
    assert.equal(entry.token_endpoint_auth_method, 'client_secret_post');
    assert.equal(entry.client_secret_sha256, sha256(client.secret));
    for (const args of [['oauth', 'clients'], ['oauth', 'clients', '--json']]) {
      const r = spawnSync(HERMES, [...args, '--env-file', srv.envFile], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.ok(r.stdout.includes(client.id), r.stdout);
      assert.ok(!r.stdout.includes(client.secret) && !r.stdout.includes(entry.client_secret_sha256), `${args.join(' ')}: no secret, no hash`);
    }

    await new Promise((res) => { srv.proc.on('exit', res); srv.proc.kill('SIGTERM'); });
    cur = await restartHermes(srv);
    const { verifier, challenge } = pkce();
    const { code } = await authorize(issuer, client, CLAUDE.redirect_uri, { scope: 'hermes:read', resource: true }, challenge);
    const params = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: CLAUDE.redirect_uri };
    const wrong = await tokenCall(issuer, '/token', 'client_secret_post', { ...client, secret: client.secret.replace(/.$/, (c) => (c === '0' ? '1' : '0')) }, params);
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'invalid_client');
    const ok = await tokenCall(issuer, '/token', 'client_secret_post', client, params);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.scope, 'hermes:read');
  } finally {
    assert.equal(await cur.stop(), 0);
  }
});

// RFC 6749 2.3.1 (OAuth 2.1 2.4.1): the server MUST take HTTP Basic from any client issued a
// secret, and may take the body; so a confidential client may use either, whatever it
// registered, but never its id alone.
test('a confidential client authenticates with its secret by Basic or in the body, whichever it registered; never without it', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const code = async (client) => {
      const { verifier, challenge } = pkce();
      const { code: c } = await authorize(issuer, client, REDIRECT, { scope: null, resource: false }, challenge);
      return { grant_type: 'authorization_code', code: c, code_verifier: verifier, redirect_uri: REDIRECT };
    };
    for (const [registered, other] of [['client_secret_basic', 'client_secret_post'], ['client_secret_post', 'client_secret_basic']]) {
      const reg = await register(issuer, { redirect_uris: [REDIRECT], client_name: registered, token_endpoint_auth_method: registered });
      assert.equal(reg.status, 201);
      assert.equal(reg.body.token_endpoint_auth_method, registered);
      const client = { id: reg.body.client_id, secret: reg.body.client_secret };
      const params = await code(client);
      const bare = await tokenCall(issuer, '/token', 'none', client, params);
      assert.equal(bare.status, 401, `${registered}: no secret`);
      assert.equal(bare.body.error, 'invalid_client');
      for (const auth of [registered, other]) {
        const wrong = await tokenCall(issuer, '/token', auth, { ...client, secret: 'x' }, params);
        assert.equal(wrong.status, 401, `${registered}, a wrong secret by ${auth}`);
        assert.equal(wrong.body.error, 'invalid_client');
        if (auth === 'client_secret_basic') assert.match(wrong.www, /^Basic /, 'a failed Basic names the scheme');
      }
      const ok = await tokenCall(issuer, '/token', other, client, params);
      assert.equal(ok.status, 200, `${registered} client, code by ${other}: ${JSON.stringify(ok.body)}`);
      assert.equal(ok.body.scope, 'hermes:read hermes:task', 'no scope asked: the defaults');
      const again = await tokenCall(issuer, '/token', registered, client, { grant_type: 'refresh_token', refresh_token: ok.body.refresh_token });
      assert.equal(again.status, 200, `${registered} client, refresh by ${registered}: ${JSON.stringify(again.body)}`);
      assert.equal((await tokenCall(issuer, '/revoke', other, client, { token: again.body.refresh_token })).status, 200);
      assert.equal((await post(srv, INIT(), { Authorization: `Bearer ${again.body.access_token}` })).status, 401, 'revoked by the other method');
    }
    // A public client that sends a secret it was never given is refused, either way.
    const pub = await register(issuer, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
    const params = await code({ id: pub.body.client_id });
    for (const auth of ['client_secret_post', 'client_secret_basic']) {
      const sent = await tokenCall(issuer, '/token', auth, { id: pub.body.client_id, secret: 'a'.repeat(64) }, params);
      assert.equal(sent.status, 401, auth);
    }
    assert.equal((await tokenCall(issuer, '/token', 'none', { id: pub.body.client_id }, params)).status, 200);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a clients file written before confidential clients (version 1, public) is still read', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const id = 'a'.repeat(32);
    const file = join(srv.dir, 'oauth-clients.json');
    writeFileSync(`${file}.new`, JSON.stringify({ version: 1, clients: [{ client_id: id, client_name: 'Old client',
      redirect_uris: [REDIRECT], created: Math.floor(Date.now() / 1000) - 86400 }] }), { mode: 0o600 });
    renameSync(`${file}.new`, file);
    const { verifier, challenge } = pkce();
    const { html, code } = await authorize(issuer, { id }, REDIRECT, { scope: 'hermes:read', resource: false }, challenge);
    assert.ok(html.includes('Old client'));
    const tok = await tokenCall(issuer, '/token', 'none', { id }, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT });
    assert.equal(tok.status, 200, JSON.stringify(tok.body));
    // A new public registration keeps the file at version 1.
    assert.equal((await register(issuer, { redirect_uris: [REDIRECT] })).status, 201);
    assert.equal(JSON.parse(readFileSync(file, 'utf8')).version, 1);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// Version 1 holds public clients only (a confidential one makes the file version 2, which an
// older server refuses): a version-1 file with a secret method or hash is not one we wrote.
test('a version-1 clients file holding a confidential client\'s fields is refused, saying why', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const file = join(srv.dir, 'oauth-clients.json');
    for (const [i, extra] of [{ token_endpoint_auth_method: 'client_secret_post', client_secret_sha256: sha256('s') },
      { token_endpoint_auth_method: 'none' }, { client_secret_sha256: sha256('s') }].entries()) {
      const id = String(i + 1).repeat(32);
      writeFileSync(`${file}.new`, JSON.stringify({ version: 1, clients: [{ client_id: id, client_name: 'Edited',
        redirect_uris: [REDIRECT], ...extra }] }), { mode: 0o600 });
      renameSync(`${file}.new`, file);
      const page = await fetch(`${issuer}/authorize?${new URLSearchParams({ response_type: 'code', client_id: id,
        redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' })}`, { redirect: 'manual' });
      assert.equal(page.status, 400, `${JSON.stringify(extra)}: not a client`);
      assert.match(await page.text(), /Unknown application/);
      const said = new RegExp(`client ${id}: a version-1 file holds public clients only, ` +
        'without token_endpoint_auth_method or client_secret_sha256; keeping the clients read before');
      await until(() => events(srv, 'clients_file_rejected').find((e) => said.test(e.line)), 'the warning naming the client and why');
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// RFC 7009 2.1: a client revokes only its own tokens. Client B, authenticated, names client A's
// tokens at /revoke (answered 200 all the same, as for any token it does not own) and at
// /token: A's tokens still work.
test('one confidential client cannot revoke or refresh another\'s tokens', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const reg = async (method) => {
      const r = await register(issuer, { redirect_uris: [REDIRECT], client_name: method, token_endpoint_auth_method: method });
      assert.equal(r.status, 201);
      return { id: r.body.client_id, secret: r.body.client_secret };
    };
    const a = await reg('client_secret_post');
    const b = await reg('client_secret_basic');
    const { verifier, challenge } = pkce();
    const { code } = await authorize(issuer, a, REDIRECT, { scope: null, resource: false }, challenge);
    const tok = await tokenCall(issuer, '/token', 'client_secret_post', a,
      { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT });
    assert.equal(tok.status, 200, JSON.stringify(tok.body));
    for (const token of [tok.body.access_token, tok.body.refresh_token])
      assert.equal((await tokenCall(issuer, '/revoke', 'client_secret_basic', b, { token })).status, 200);
    const stolen = await tokenCall(issuer, '/token', 'client_secret_basic', b, { grant_type: 'refresh_token', refresh_token: tok.body.refresh_token });
    assert.equal(stolen.status, 400);
    assert.equal(stolen.body.error, 'invalid_grant');
    assert.equal((await post(srv, INIT(), { Authorization: `Bearer ${tok.body.access_token}` })).status, 200, 'A\'s access token still works');
    const again = await tokenCall(issuer, '/token', 'client_secret_post', a, { grant_type: 'refresh_token', refresh_token: tok.body.refresh_token });
    assert.equal(again.status, 200, `A's refresh token still works: ${JSON.stringify(again.body)}`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// The official SDK client as a confidential client: it registers with client_secret_post or
// client_secret_basic, keeps the secret from the 201 and picks the method the registration
// echoed, then authorizes, calls, refreshes and calls again.
for (const method of ['client_secret_post', 'client_secret_basic']) {
  test(`the SDK client registered with ${method} authorizes, refreshes and calls`, async () => {
    const { srv, issuer } = await startOAuth();
    try {
      const REDIRECT = 'http://127.0.0.1:7777/callback';
      const seen = [];
      const { st, provider } = oauthProvider(REDIRECT, {
        clientMetadata: { redirect_uris: [REDIRECT], client_name: 'SDK confidential', token_endpoint_auth_method: method,
          grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
        state: 'st-1',
      });
      // Records how each /token request authenticated.
      const fetchFn = async (url, init = {}) => {
        if (String(url).endsWith('/token')) {
          const body = new URLSearchParams(String(init.body));
          const h = new Headers(init.headers);
          seen.push(h.get('authorization')?.startsWith('Basic ') ? 'client_secret_basic'
            : body.has('client_secret') ? 'client_secret_post' : 'none');
        }
        return fetch(url, init);
      };
      const connect = async () => {
        const client = new Client({ name: 'connectors-sdk', version: '1' });
        await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { authProvider: provider, fetch: fetchFn }));
        return client;
      };
      await assert.rejects(connect(), /Unauthorized/);
      assert.equal(st.client.token_endpoint_auth_method, method);
      assert.match(st.client.client_secret, /^[0-9a-f]{64}$/);
      const { code } = await authorize(issuer, { id: st.client.client_id }, REDIRECT,
        { scope: st.authUrl.searchParams.get('scope'), resource: true }, st.authUrl.searchParams.get('code_challenge'));
      assert.equal(await auth(provider, { serverUrl: srv.url, authorizationCode: code, fetchFn }), 'AUTHORIZED');
      let client = await connect();
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'list_agents'));
      await client.close();
      const first = st.tokens.access_token;
      assert.equal(await auth(provider, { serverUrl: srv.url, fetchFn }), 'AUTHORIZED', 'refreshed');
      assert.notEqual(st.tokens.access_token, first);
      client = await connect();
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'list_agents'));
      await client.close();
      assert.deepEqual(seen, [method, method], 'the code and the refresh, each with the method registered');
    } finally {
      assert.equal(await srv.stop(), 0);
    }
  });
}
