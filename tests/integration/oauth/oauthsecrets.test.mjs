// No secret in any log, audit line, error text or page: one server
// runs every OAuth flow, the good paths and the refused ones (DCR and the static confidential
// client; consent with a wrong and a right passphrase; code exchange, replay, refresh, reuse,
// revocation; a wrong client secret, a wrong PKCE verifier, a token in the query string; the
// owner's MCP_AUTH_TOKEN and a wrong bearer), at LOG_LEVEL=debug. Then everything the server
// wrote or answered is searched for every secret the test knows: its stderr to the exit, the
// audit log, what `oauth passwd` printed, and every status line, header and body the test
// received, except the two answers whose job is to carry one (the token response carries the
// tokens; the consent's 302 carries the code, and the page its own CSRF token).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, INIT, HERMES, freePort, OAUTH_PASS as PASS, pkce } from '../../lib/lib.mjs';

const WRONG_PASS = 'incorrect mule battery stable';
const REDIRECT = 'http://127.0.0.1:7777/callback';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const form = (o) => new URLSearchParams(o).toString();
const sha = (s) => createHash('sha256').update(s).digest('hex');

test('no secret in any log, audit line, error text or page of a whole OAuth run', async () => {
  const minted = spawnSync(HERMES, ['oauth', 'mint-client'], { encoding: 'utf8' });
  assert.equal(minted.status, 0, minted.stderr);
  const staticId = /^OAUTH_CLIENT_ID=([0-9a-f]{32})$/m.exec(minted.stdout)[1];
  const staticSecret = /^OAUTH_CLIENT_SECRET=([0-9a-f]{64})$/m.exec(minted.stdout)[1];
  const wrongSecret = randomBytes(32).toString('hex');
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const keepDir = mkdtempSync(join(tmpdir(), 'hm-secrets-')); // outlives the server's own
  const auditFile = join(keepDir, 'audit.jsonl');
  const srv = await startHermes({ MCP_PORT: String(port), OAUTH_ISSUER_URL: issuer, LOG_LEVEL: 'debug',
    AUDIT_LOG_PATH: auditFile,
    OAUTH_CLIENT_ID: staticId, OAUTH_CLIENT_SECRET: staticSecret });
  const passwd = spawnSync(HERMES, ['oauth', 'passwd', '--env-file', srv.envFile], { input: `${PASS}\n`, encoding: 'utf8' });
  assert.equal(passwd.status, 0, passwd.stderr);

  const secrets = { 'passphrase': PASS, 'wrong passphrase': WRONG_PASS, 'static client secret': staticSecret,
    'wrong client secret': wrongSecret, 'MCP_AUTH_TOKEN': srv.token };
  const keep = (what, value) => { secrets[`${what} ${Object.keys(secrets).length}`] = value; return value; };
  const seen = []; // every answer the test read: [what, text]
  const csrfs = [];
  const record = async (what, res, carries = false) => {
    const body = await res.text();
    // A consent page shown again carries its form's CSRF token, as it must.
    const text = `${res.status} ${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${body.replace(/name="csrf" value="[0-9a-f]{64}"/g, '')}`;
    if (!carries) seen.push([what, text]);
    return { status: res.status, body, location: res.headers.get('location') };
  };

  const authorizeUrl = (clientId, challenge) => {
    const u = new URL(`${issuer}/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT,
      state: 'st', code_challenge: challenge, code_challenge_method: 'S256', scope: 'hermes:read hermes:task' }))
      u.searchParams.set(k, v);
    return u;
  };
  // The page (its CSRF token is its own business), then the form with a passphrase.
  const consent = async (clientId, challenge, pass) => {
    const res = await fetch(authorizeUrl(clientId, challenge));
    const html = await res.text();
    assert.equal(res.status, 200, html);
    const csrf = keep('csrf', /name="csrf" value="([0-9a-f]{64})"/.exec(html)[1]);
    csrfs.push(csrf);
    seen.push(['consent page', html.replace(csrf, '')]);
    const sent = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual', headers: { ...FORM, Origin: issuer },
      body: form({ csrf, passphrase: pass, action: 'approve' }) });
    return record('consent answer', sent, sent.status === 302);
  };
  let wrongTries = 0; // five a minute, and consent is refused (429) for the rest of it
  const codeFor = async (clientId) => {
    const { verifier, challenge } = pkce();
    keep('PKCE verifier', verifier);
    if (wrongTries++ < 2) {
      const wrong = await consent(clientId, challenge, WRONG_PASS);
      assert.equal(wrong.status, 403);
    }
    const ok = await consent(clientId, challenge, PASS);
    assert.equal(ok.status, 302, ok.body);
    return { code: keep('code', new URL(ok.location).searchParams.get('code')), verifier };
  };
  const token = async (what, body, headers = {}, carries = false) => {
    const res = await fetch(`${issuer}/token`, { method: 'POST', headers: { ...FORM, ...headers }, body: form(body) });
    const r = await record(what, res, carries && res.status === 200);
    const json = JSON.parse(r.body);
    if (json.access_token) { keep('access token', json.access_token); keep('access token hash', sha(json.access_token)); }
    if (json.refresh_token) { keep('refresh token', json.refresh_token); keep('refresh token hash', sha(json.refresh_token)); }
    return { status: r.status, json };
  };
  const mcp = async (what, tok, path = '/mcp', body = INIT()) => record(what, await fetch(issuer + path, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      ...(tok ? { Authorization: `Bearer ${tok}` } : {}) }, body: JSON.stringify(body) }));

  try {
    // A public client through DCR.
    const reg = await record('registration', await fetch(`${issuer}/register`, { method: 'POST',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }) }));
    assert.equal(reg.status, 201);
    const id = JSON.parse(reg.body).client_id;
    let { code, verifier } = await codeFor(id);
    const bad = await token('wrong verifier', { grant_type: 'authorization_code', client_id: id, code, code_verifier: keep('PKCE verifier', pkce().verifier), redirect_uri: REDIRECT });
    assert.equal(bad.json.error, 'invalid_grant');
    ({ code, verifier } = await codeFor(id));
    const exchange = { grant_type: 'authorization_code', client_id: id, code, code_verifier: verifier, redirect_uri: REDIRECT };
    const t1 = await token('token', exchange, {}, true);
    assert.equal(t1.status, 200);
    assert.equal((await mcp('mcp call, OAuth token', t1.json.access_token)).status, 200);
    assert.equal((await token('code replay', exchange)).json.error, 'invalid_grant');
    ({ code, verifier } = await codeFor(id));
    const t2 = await token('token', { ...exchange, code, code_verifier: verifier }, {}, true);
    const t3 = await token('refresh', { grant_type: 'refresh_token', client_id: id, refresh_token: t2.json.refresh_token }, {}, true);
    assert.equal(t3.status, 200);
    assert.equal((await token('refresh reuse', { grant_type: 'refresh_token', client_id: id, refresh_token: t2.json.refresh_token })).json.error, 'invalid_grant');
    assert.equal((await mcp('mcp call, revoked family', t3.json.access_token)).status, 401);
    // A token in the query string, and revocation.
    ({ code, verifier } = await codeFor(id));
    const t4 = await token('token', { ...exchange, code, code_verifier: verifier }, {}, true);
    const q = await record('token in the query', await fetch(`${issuer}/mcp?access_token=${t4.json.access_token}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: JSON.stringify(INIT()) }));
    assert.equal(q.status, 400);
    const rv = await record('revoke', await fetch(`${issuer}/revoke`, { method: 'POST', headers: FORM,
      body: form({ token: t4.json.refresh_token, token_type_hint: 'refresh_token', client_id: id }) }));
    assert.equal(rv.status, 200);
    assert.equal((await mcp('mcp call, revoked', t4.json.access_token)).status, 401);

    // The static confidential client: a wrong secret, then Basic and post.
    ({ code, verifier } = await codeFor(staticId));
    const basic = (s) => ({ Authorization: `Basic ${Buffer.from(`${staticId}:${s}`).toString('base64')}` });
    const sx = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT };
    assert.equal((await token('wrong client secret (Basic)', sx, basic(wrongSecret))).json.error, 'invalid_client');
    assert.equal((await token('wrong client secret (post)', { ...sx, client_id: staticId, client_secret: wrongSecret })).json.error, 'invalid_client');
    const s1 = await token('token, static', sx, basic(staticSecret), true);
    assert.equal(s1.status, 200);
    const s2 = await token('refresh, static', { grant_type: 'refresh_token', refresh_token: s1.json.refresh_token,
      client_id: staticId, client_secret: staticSecret }, {}, true);
    assert.equal(s2.status, 200);
    assert.equal((await mcp('mcp call, static client', s2.json.access_token)).status, 200);

    // The owner's token, a wrong one, /metrics.
    assert.equal((await mcp('mcp call, owner', srv.token)).status, 200);
    assert.equal((await mcp('mcp call, wrong bearer', keep('wrong bearer', randomBytes(32).toString('hex')))).status, 401);
    const metrics = await record('metrics', await fetch(`${issuer}/metrics`, { headers: srv.auth }));
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, new RegExp(`principal="oauth:${staticId}"`));
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const audit = readFileSync(auditFile, 'utf8');
  rmSync(keepDir, { recursive: true, force: true });
  assert.ok(audit.split('\n').length > 20, 'the audit log recorded the run');
  assert.match(srv.proc.stderrText, /registered client/, 'the log recorded the run');
  const outputs = [['server stderr', srv.proc.stderrText], ['audit log', audit],
    ['oauth passwd', passwd.stdout + passwd.stderr], ...seen];
  assert.ok(Object.keys(secrets).length > 30, 'the run used many secrets');
  for (const [what, value] of Object.entries(secrets)) {
    assert.ok(value.length >= 16, what);
    for (const [where, text] of outputs)
      assert.ok(!text.includes(value), `${what.replace(/ \d+$/, '')} in ${where}`);
  }
  assert.ok(csrfs.length >= 7);
});
