// The static confidential client the Python hermes-mcp had: OAUTH_CLIENT_ID and
// OAUTH_CLIENT_SECRET in the env file are a pre-registered client that authenticates at /token
// with client_secret_basic or client_secret_post (the secret compared in constant time, as
// hashes); OAUTH_ALLOWED_REDIRECT_SCHEMES lists the app schemes its redirect URIs may use
// (https and http on loopback always; javascript: and data: never). The official SDK client
// runs the dance with the pasted id and secret, DCR off; a wrong or missing secret is refused;
// a short secret or a forbidden scheme stops the server at start; `oauth mint-client` prints a
// usable pair once and the secret appears in no log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { startHermes, startFake, agentEnv, modernMeta, modernHeaders, HERMES, freePort,
  OAUTH_PASS as PASS, pkce, mintClient, approveConsent as consent } from '../../lib/lib.mjs';

const REDIRECT = 'http://127.0.0.1:7777/callback';
const form = (o) => new URLSearchParams(o).toString();
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

const mint = mintClient;

async function startStatic(id, secret, extra = {}) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const srv = await startHermes({ MCP_PORT: String(port), OAUTH_ISSUER_URL: issuer, OAUTH_DCR: '0',
    OAUTH_CLIENT_ID: id, OAUTH_CLIENT_SECRET: secret, ...extra });
  const r = spawnSync(HERMES, ['oauth', 'passwd', '--env-file', srv.envFile], { input: `${PASS}\n`, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return { srv, issuer };
}

function authorizeUrl(issuer, clientId, challenge, redirect = REDIRECT) {
  const u = new URL(`${issuer}/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: redirect,
    code_challenge: challenge, code_challenge_method: 'S256', state: 's1' })) u.searchParams.set(k, v);
  return u;
}


async function getCode(issuer, id, challenge) {
  const c = await consent(issuer, authorizeUrl(issuer, id, challenge));
  assert.equal(c.res.status, 302);
  return c.code;
}

const token = async (issuer, body, headers = {}) => {
  const res = await fetch(`${issuer}/token`, { method: 'POST', headers: { ...FORM, ...headers }, body: form(body) });
  return { status: res.status, headers: res.headers, body: await res.json() };
};
const basic = (id, secret) => ({ Authorization: 'Basic ' + Buffer.from(`${id}:${secret}`).toString('base64') });

test('the SDK client connects with a pasted static client id and secret (client_secret_basic), DCR off', async () => {
  const { id, secret } = mint();
  const { srv, issuer } = await startStatic(id, secret);
  try {
    const meta = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
    assert.deepEqual(meta.token_endpoint_auth_methods_supported, ['none', 'client_secret_basic', 'client_secret_post']);
    assert.equal(meta.registration_endpoint, undefined);
    const st = {};
    const sent = [];
    const provider = {
      get redirectUrl() { return REDIRECT; },
      clientMetadata: { redirect_uris: [REDIRECT], client_name: 'pasted' },
      clientInformation: () => ({ client_id: id, client_secret: secret }),
      saveClientInformation: () => { throw new Error('no registration with a static client'); },
      tokens: () => st.tokens,
      saveTokens: (t) => { st.tokens = t; },
      redirectToAuthorization: (u) => { st.authUrl = new URL(u); },
      saveCodeVerifier: (v) => { st.verifier = v; },
      codeVerifier: () => st.verifier,
    };
    const fetchFn = (url, init) => {
      if (String(url).endsWith('/token')) sent.push(new Headers(init?.headers).get('authorization'));
      return fetch(url, init);
    };
    assert.equal(await auth(provider, { serverUrl: srv.url, fetchFn }), 'REDIRECT');
    const c = await consent(issuer, st.authUrl);
    assert.ok(c.html.includes(`${id} (the static client)`), 'the consent page names the static client');
    assert.equal(c.res.status, 302);
    assert.equal(await auth(provider, { serverUrl: srv.url, authorizationCode: c.code, fetchFn }), 'AUTHORIZED');
    assert.deepEqual(sent, ['Basic ' + Buffer.from(`${id}:${secret}`).toString('base64')]);
    const client = new Client({ name: 'oauth-static-it', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { authProvider: provider }));
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('list_agents'), names.join());
    await client.close();
    // The refresh grant authenticates the same way.
    const r = await token(issuer, { grant_type: 'refresh_token', refresh_token: st.tokens.refresh_token }, basic(id, secret));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    // The secret is in no log line.
    assert.ok(!srv.proc.stderrText.includes(secret), 'the secret was logged');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a wrong or missing static client secret is refused; client_secret_post works', async () => {
  const { id, secret } = mint();
  const { srv, issuer } = await startStatic(id, secret);
  try {
    const { verifier, challenge } = pkce();
    const code = await getCode(issuer, id, challenge);
    const body = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier };
    const wrongSecret = secret.slice(0, -1) + (secret.endsWith('0') ? '1' : '0');
    let r = await token(issuer, body, basic(id, wrongSecret));
    assert.equal(r.status, 401);
    assert.equal(r.body.error, 'invalid_client');
    assert.match(r.headers.get('www-authenticate') ?? '', /^Basic/);
    r = await token(issuer, { ...body, client_id: id, client_secret: wrongSecret });
    assert.equal(r.status, 401);
    r = await token(issuer, { ...body, client_id: id }); // as a public client: must authenticate
    assert.equal(r.status, 401);
    assert.equal(r.body.error, 'invalid_client');
    r = await token(issuer, body, basic('someone-else', secret));
    assert.equal(r.status, 401);
    r = await token(issuer, { ...body, client_id: id, client_secret: secret }, basic(id, secret)); // two methods
    assert.equal(r.status, 400);
    // None of the refusals spent the code: the right secret in the body gets the tokens.
    r = await token(issuer, { ...body, client_id: id, client_secret: secret });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.match(r.body.access_token, /^[0-9a-f]{64}$/);
    // /revoke authenticates the same way: a wrong secret is refused, the right one revokes.
    const rv = (tok, headers) => fetch(`${issuer}/revoke`, { method: 'POST', headers: { ...FORM, ...headers }, body: form({ token: tok }) });
    assert.equal((await rv(r.body.refresh_token, basic(id, wrongSecret))).status, 401);
    const next = await token(issuer, { grant_type: 'refresh_token', refresh_token: r.body.refresh_token }, basic(id, secret));
    assert.equal(next.status, 200, 'a refused revocation took effect');
    assert.equal((await rv(next.body.refresh_token, basic(id, secret))).status, 200);
    assert.equal((await token(issuer, { grant_type: 'refresh_token', refresh_token: next.body.refresh_token }, basic(id, secret))).body.error, 'invalid_grant');
    for (const s of [secret, wrongSecret]) assert.ok(!srv.proc.stderrText.includes(s), 'a secret was logged');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('the static client redirects only to https, http on loopback or an allowed app scheme', async () => {
  const { id, secret } = mint();
  const { srv, issuer } = await startStatic(id, secret, { OAUTH_ALLOWED_REDIRECT_SCHEMES: 'claude,myapp' });
  try {
    const { challenge } = pkce();
    const status = async (uri) => (await fetch(authorizeUrl(issuer, id, challenge, uri), { redirect: 'manual' })).status;
    for (const ok of ['https://claude.ai/api/mcp/auth_callback', 'http://localhost:3000/cb', 'claude://cb', 'myapp://x'])
      assert.equal(await status(ok), 200, ok);
    for (const bad of ['cursor://cb', 'javascript:alert(1)', 'data:text/html,x', 'http://example.com/cb',
      'https://user@evil.example/cb', 'https://claude.ai/cb#frag'])
      assert.equal(await status(bad), 400, bad);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a short static client secret, half a pair, an id over 64 characters, or a forbidden scheme stops the server at start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-it-'));
  try {
    const start = (lines) => {
      const env = join(dir, 'env');
      writeFileSync(env, Object.entries({ MCP_PORT: '0', MCP_AUTH_TOKEN: 'a'.repeat(64),
        OAUTH_ISSUER_URL: 'http://127.0.0.1:9', ...lines }).map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
      chmodSync(env, 0o600);
      return spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
    };
    const short = 's'.repeat(31);
    let r = start({ OAUTH_CLIENT_ID: 'static-1', OAUTH_CLIENT_SECRET: short });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /OAUTH_CLIENT_SECRET must have at least 32 characters/);
    assert.ok(!r.stderr.includes(short), 'the secret was echoed');
    r = start({ OAUTH_CLIENT_ID: 'static-1' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET go together/);
    // An id over 64 characters (or outside A-Za-z0-9-._~) is refused by name, not cut short.
    for (const id of ['i'.repeat(65), 'static/1']) {
      r = start({ OAUTH_CLIENT_ID: id, OAUTH_CLIENT_SECRET: 's'.repeat(32) });
      assert.notEqual(r.status, 0, id);
      assert.match(r.stderr, /OAUTH_CLIENT_ID must be 1-64 letters, digits/, id);
    }
    for (const bad of ['claude,javascript', 'data', 'Claude'])  {
      r = start({ OAUTH_ALLOWED_REDIRECT_SCHEMES: bad });
      assert.notEqual(r.status, 0, bad);
      assert.match(r.stderr, /OAUTH_ALLOWED_REDIRECT_SCHEMES/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('MCP tasks belong to one authorization: its refreshed token sees them, another authorization of the same client does not', async () => {
  const { id, secret } = mint();
  const fake = await startFake();
  const { srv, issuer } = await startStatic(id, secret, { HERMES_ENV_PATH: agentEnv(fake) });
  const EXT = 'io.modelcontextprotocol/tasks';
  let n = 1;
  const rpc = async (access, method, params) => {
    const res = await fetch(srv.url, { method: 'POST',
      headers: { Authorization: `Bearer ${access}`, ...modernHeaders(method, params.name ?? params.taskId) },
      body: JSON.stringify({ jsonrpc: '2.0', id: n++, method,
        params: { ...params, _meta: modernMeta({ extensions: { [EXT]: {} } }, 'oauth-tasks-it') } }) });
    return res.json();
  };
  const authorize = async () => {
    const p = pkce();
    const code = await getCode(issuer, id, p.challenge);
    const t = await token(issuer, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: p.verifier },
      basic(id, secret));
    assert.equal(t.status, 200, JSON.stringify(t.body));
    return t.body;
  };
  try {
    const first = await authorize();
    const second = await authorize();
    const created = await rpc(first.access_token, 'tools/call',
      { name: 'hermes_task', arguments: { task: 'what is 6 * 7', mode: 'async', id: 'auth-one' } });
    assert.equal(created.result?.taskId, 'auth-one', JSON.stringify(created));
    const theirs = await rpc(second.access_token, 'tasks/get', { taskId: 'auth-one' });
    assert.equal(theirs.error?.code, -32602, `another authorization of the client sees the task: ${JSON.stringify(theirs)}`);
    const refreshed = await token(issuer, { grant_type: 'refresh_token', refresh_token: first.refresh_token }, basic(id, secret));
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    const mine = await rpc(refreshed.body.access_token, 'tasks/get', { taskId: 'auth-one' });
    assert.equal(mine.result?.taskId, 'auth-one', `the refreshed token of the same authorization finds it: ${JSON.stringify(mine)}`);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});
