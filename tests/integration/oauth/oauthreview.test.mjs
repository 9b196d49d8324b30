// Corner cases of the OAuth authorization server: a client registered with an
// allowed custom redirect scheme survives a restart and a re-read of the clients file (so
// `oauth clients revoke` is seen), and a client that sends no redirect_uri to /authorize need
// not send one to /token (RFC 6749 §4.1.3).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { restartHermes, HERMES, startOAuth, OAUTH_PASS as PASS, pkce, registerPublic,
  approveConsent } from '../../lib/lib.mjs';

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

const register = registerPublic;

function authorizeUrl(issuer, params) {
  const url = new URL(`${issuer}/authorize`);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url;
}

// Consent as the owner; returns the code from the redirect.
async function consent(issuer, params) {
  const c = await approveConsent(issuer, authorizeUrl(issuer, params));
  assert.ok(c.csrf, c.html);
  assert.equal(c.res.status, 302);
  return c.code;
}

// Stops the server and keeps its directory (srv.stop() removes it) for a restart.
const stopKeepingFiles = (srv) => new Promise((res) => {
  if (srv.proc.exitCode !== null) return res();
  srv.proc.on('close', res);
  srv.proc.kill('SIGTERM');
});

test('a client with an allowed custom redirect scheme survives a restart; revoke is seen', async () => {
  let { srv, issuer } = await startOAuth({ OAUTH_ALLOWED_REDIRECT_SCHEMES: 'vscode,claude' });
  try {
    const vs = await register(issuer, 'vscode://x.y/cb', 'VS');
    const loop = await register(issuer, 'http://127.0.0.1:7777/cb', 'Loop');
    await stopKeepingFiles(srv);
    srv = await restartHermes(srv);
    const page = await fetch(authorizeUrl(issuer, { response_type: 'code', client_id: vs, redirect_uri: 'vscode://x.y/cb',
      code_challenge: pkce().challenge, code_challenge_method: 'S256' }));
    assert.equal(page.status, 200, 'the vscode:// client is still known after a restart');
    // The CLI revokes the client; the running server reads the file again and forgets it.
    const rc = spawnSync(HERMES, ['oauth', 'clients', 'revoke', vs, '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.equal(rc.status, 0, rc.stderr);
    const gone = await fetch(authorizeUrl(issuer, { response_type: 'code', client_id: vs, redirect_uri: 'vscode://x.y/cb',
      code_challenge: pkce().challenge, code_challenge_method: 'S256' }));
    assert.equal(gone.status, 400, 'revoked: the server saw the new clients file');
    assert.ok(!srv.proc.stderrText.includes('keeping the clients'), srv.proc.stderrText);
    assert.equal((await fetch(authorizeUrl(issuer, { response_type: 'code', client_id: loop, redirect_uri: 'http://127.0.0.1:7777/cb',
      code_challenge: pkce().challenge, code_challenge_method: 'S256' }))).status, 200);
  } finally {
    await srv.stop();
  }
});

test('a stored client whose scheme is no longer allowed is skipped with a warning, not the file', async () => {
  let { srv, issuer } = await startOAuth({ OAUTH_ALLOWED_REDIRECT_SCHEMES: 'vscode' });
  try {
    const vs = await register(issuer, 'vscode://x.y/cb', 'VS');
    const loop = await register(issuer, 'http://127.0.0.1:7777/cb', 'Loop');
    await stopKeepingFiles(srv);
    const { readFileSync, writeFileSync } = await import('node:fs');
    writeFileSync(srv.envFile, readFileSync(srv.envFile, 'utf8').replace('OAUTH_ALLOWED_REDIRECT_SCHEMES=vscode', 'OAUTH_ALLOWED_REDIRECT_SCHEMES=claude'));
    srv = await restartHermes(srv);
    const q = (id, uri) => authorizeUrl(issuer, { response_type: 'code', client_id: id, redirect_uri: uri,
      code_challenge: pkce().challenge, code_challenge_method: 'S256' });
    assert.equal((await fetch(q(loop, 'http://127.0.0.1:7777/cb'))).status, 200, 'the other client is kept');
    assert.equal((await fetch(q(vs, 'vscode://x.y/cb'))).status, 400, 'the client no longer allowed is skipped');
    assert.match(srv.proc.stderrText, new RegExp(`skipping OAuth client ${vs}`));
  } finally {
    await srv.stop();
  }
});

test('no redirect_uri at /authorize: none needed at /token; sent at /authorize: needed at /token', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const id = await register(issuer, 'http://127.0.0.1:7777/cb');
    const token = async (body) => {
      const res = await fetch(`${issuer}/token`, { method: 'POST', headers: FORM, body: new URLSearchParams(body) });
      return { status: res.status, ...(await res.json()) };
    };
    let p = pkce();
    let code = await consent(issuer, { response_type: 'code', client_id: id, code_challenge: p.challenge, code_challenge_method: 'S256' });
    const t = await token({ grant_type: 'authorization_code', code, client_id: id, code_verifier: p.verifier });
    assert.equal(t.status, 200, JSON.stringify(t));
    assert.match(t.access_token, /\S{20,}/);
    p = pkce();
    code = await consent(issuer, { response_type: 'code', client_id: id, redirect_uri: 'http://127.0.0.1:7777/cb',
      code_challenge: p.challenge, code_challenge_method: 'S256' });
    const t2 = await token({ grant_type: 'authorization_code', code, client_id: id, code_verifier: p.verifier });
    assert.equal(t2.status, 400);
    assert.equal(t2.error, 'invalid_grant');
  } finally {
    await srv.stop();
  }
});

test('a full client table makes room: clients without a token go after 24 h, else the oldest', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const used = await register(issuer, REDIRECT, 'Used');
    const p = pkce();
    const code = await consent(issuer, { response_type: 'code', client_id: used, redirect_uri: REDIRECT,
      code_challenge: p.challenge, code_challenge_method: 'S256' });
    const t = await fetch(`${issuer}/token`, { method: 'POST', headers: FORM, body: new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: used, code_verifier: p.verifier }) });
    assert.equal(t.status, 200);
    // Fill the table to 1000 (the file the server reads again when it changes): the used
    // client is the oldest of all; one never used registered 25 h ago, one 2 h ago, the rest 1 h.
    const { readFileSync, writeFileSync, renameSync } = await import('node:fs');
    const { join } = await import('node:path');
    const file = join(srv.dir, 'oauth-clients.json');
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    const now = Math.floor(Date.now() / 1000);
    doc.clients[0].created = now - 30 * 86400;
    const hex = (i) => i.toString(16).padStart(32, '0');
    for (let i = 1; i < 1000; i++)
      doc.clients.push({ client_id: hex(i), client_name: `filler ${i}`, redirect_uris: [REDIRECT],
        created: i === 1 ? now - 25 * 3600 : i === 2 ? now - 2 * 3600 : now - 3600 });
    writeFileSync(`${file}.new`, JSON.stringify(doc), { mode: 0o600 });
    renameSync(`${file}.new`, file);
    const known = async (id) => (await fetch(authorizeUrl(issuer, { response_type: 'code', client_id: id, redirect_uri: REDIRECT,
      code_challenge: pkce().challenge, code_challenge_method: 'S256' }))).status === 200;
    assert.ok(await known(hex(999)), 'the server read the full table');
    const x = await register(issuer, REDIRECT, 'X');
    assert.ok(!(await known(hex(1))), 'unused for over 24 h: dropped');
    assert.ok(await known(hex(2)), 'unused for 2 h: kept while one older than 24 h made room');
    await register(issuer, REDIRECT, 'Y');
    assert.ok(!(await known(hex(2))), 'full again and none over 24 h: the oldest never used goes');
    for (const id of [used, x, hex(3), hex(999)]) assert.ok(await known(id), id);
  } finally {
    await srv.stop();
  }
});

// A scope of our own namespaces (hermes:*, gateway:*) that does not exist is a typo in our
// vocabulary: refused, never replaced by the defaults (which could be wider than meant).
test('a scope named twice, or one of ours that does not exist, at /authorize is invalid_scope', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const id = await register(issuer, REDIRECT);
    const ask = (scope) => fetch(authorizeUrl(issuer, { response_type: 'code', client_id: id, redirect_uri: REDIRECT, scope,
      code_challenge: pkce().challenge, code_challenge_method: 'S256' }), { redirect: 'manual' });
    const twice = await ask('hermes:read hermes:task hermes:read');
    assert.equal(twice.status, 302);
    assert.equal(new URL(twice.headers.get('location')).searchParams.get('error'), 'invalid_scope');
    for (const scope of ['hermes:raed', 'hermes:admni claudeai', 'claudeai hermes:', 'gateway:', 'gateway:-files',
      'hermes:read gateway:fi/es']) {
      const res = await ask(scope);
      assert.equal(res.status, 302, scope);
      assert.equal(new URL(res.headers.get('location')).searchParams.get('error'), 'invalid_scope', scope);
    }
    assert.equal((await ask('hermes:read hermes:task')).status, 200, 'each once: the consent page');
  } finally {
    await srv.stop();
  }
});

// RFC 6749 3.3: a scope the server does not know is dropped, not refused (claude.ai asks for
// "claudeai", others for OpenID's); the token response names what was granted, and when nothing
// known is left, or nothing was asked (ChatGPT on a reconnect), that is the defaults.
test('scopes: unknown ones dropped, known ones kept in order, nothing known left gives the defaults', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const id = await register(issuer, REDIRECT);
    for (const [asked, granted] of [['claudeai', 'hermes:read hermes:task'], ['hermes:read claudeai', 'hermes:read'],
      ['openid  offline_access hermes:admin', 'hermes:admin'], ['profile email', 'hermes:read hermes:task'],
      [null, 'hermes:read hermes:task']]) {
      const p = pkce();
      const params = { response_type: 'code', client_id: id, redirect_uri: REDIRECT, code_challenge: p.challenge,
        code_challenge_method: 'S256' };
      if (asked !== null) params.scope = asked;
      const html = await (await fetch(authorizeUrl(issuer, params))).text();
      assert.ok(!/<code>(claudeai|openid|offline_access|profile|email)<\/code>/.test(html), `${asked}: only known scopes offered`);
      const code = await consent(issuer, params);
      const res = await fetch(`${issuer}/token`, { method: 'POST', headers: FORM, body: new URLSearchParams({
        grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: id, code_verifier: p.verifier }) });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.scope, granted, String(asked));
    }
  } finally {
    await srv.stop();
  }
});

test('a code of a client revoked since the consent gets no tokens', async () => {
  const { srv, issuer } = await startOAuth();
  try {
    const REDIRECT = 'http://127.0.0.1:7777/cb';
    const id = await register(issuer, REDIRECT);
    const p = pkce();
    const code = await consent(issuer, { response_type: 'code', client_id: id, redirect_uri: REDIRECT,
      code_challenge: p.challenge, code_challenge_method: 'S256' });
    const rc = spawnSync(HERMES, ['oauth', 'clients', 'revoke', id, '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.equal(rc.status, 0, rc.stderr);
    const res = await fetch(`${issuer}/token`, { method: 'POST', headers: FORM, body: new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: id, code_verifier: p.verifier }) });
    const body = await res.json();
    // No longer registered: client authentication fails (RFC 6749 5.2), which tells claude.ai to
    // register again (and so ask the owner again).
    assert.equal(res.status, 401, JSON.stringify(body));
    assert.equal(body.error, 'invalid_client');
    assert.equal(body.access_token, undefined);
  } finally {
    await srv.stop();
  }
});
