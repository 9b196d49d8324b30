// `hermes-mcp oauth clients` and `hermes-mcp oauth tokens`: the owner lists the
// OAuth clients (id, name, redirect hosts, created, last used) and the tokens (principal, kind,
// state, expiry, family; never a token or its hash), and revokes a client with its tokens or
// tokens by family or client, while the server runs: the server refuses them from the next
// request on, without a restart or a signal, and a registration or a token issued afterwards
// does not bring back what was revoked (both write the same files, under their lock).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startHermes, post, INIT, HERMES, freePort, OAUTH_PASS as PASS, registerPublic } from '../../lib/lib.mjs';

const REDIRECT = 'http://127.0.0.1:7777/callback';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

const cli = (srv, ...args) => spawnSync(HERMES, ['oauth', ...args, '--env-file', srv.envFile], { encoding: 'utf8' });
const cliJson = (srv, what) => {
  const r = cli(srv, what, '--json');
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
};

const register = (issuer, name, redirect = REDIRECT) => registerPublic(issuer, redirect, name);

// The whole code flow for client_id, as the owner allowing it: an access and a refresh token.
async function authorize(issuer, client_id) {
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL(`${issuer}/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id, redirect_uri: REDIRECT, state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' }))
    url.searchParams.set(k, v);
  const html = await (await fetch(url)).text();
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)?.[1];
  assert.ok(csrf, html);
  const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual', headers: { ...FORM, Origin: issuer },
    body: new URLSearchParams({ csrf, passphrase: PASS, action: 'approve' }) });
  assert.equal(res.status, 302);
  const code = new URL(res.headers.get('location')).searchParams.get('code');
  return token(issuer, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id, code_verifier: verifier });
}

async function token(issuer, body) {
  const res = await fetch(`${issuer}/token`, { method: 'POST', headers: FORM, body: new URLSearchParams(body) });
  return { status: res.status, ...(await res.json()) };
}

const mcpStatus = async (srv, access) => (await post(srv, INIT(), { Authorization: `Bearer ${access}` })).status;
const sha = (t) => createHash('sha256').update(t).digest('hex');

test('oauth clients/tokens list and revoke; the running server sees it at once', async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const srv = await startHermes({ MCP_PORT: String(port), OAUTH_ISSUER_URL: issuer });
  try {
    const pw = spawnSync(HERMES, ['oauth', 'passwd', '--env-file', srv.envFile], { input: `${PASS}\n`, encoding: 'utf8' });
    assert.equal(pw.status, 0, pw.stderr);
    const started = Date.now();
    const a = await register(issuer, 'Client A');
    const b = await register(issuer, 'Client B', 'https://app.example.com/cb');
    const ta = await authorize(issuer, a);
    assert.equal(ta.status, 200);
    // B never gets a token; B2 authorizes and refreshes once.
    const b2 = await register(issuer, 'Client B2');
    const tb = await authorize(issuer, b2);
    const tb2 = await token(issuer, { grant_type: 'refresh_token', refresh_token: tb.refresh_token, client_id: b2 });
    assert.equal(tb2.status, 200);
    const secrets = [ta.access_token, ta.refresh_token, tb.access_token, tb.refresh_token, tb2.access_token, tb2.refresh_token];

    // clients: all three, with what the owner needs to recognise them.
    const clients = cliJson(srv, 'clients');
    assert.deepEqual(clients.map((c) => c.client_name).sort(), ['Client A', 'Client B', 'Client B2']);
    const ca = clients.find((c) => c.client_id === a);
    assert.deepEqual(ca.redirect_hosts, ['127.0.0.1:7777']);
    assert.deepEqual(clients.find((c) => c.client_id === b).redirect_hosts, ['app.example.com']);
    assert.ok(Math.abs(Date.parse(ca.created) - started) < 60000, ca.created);
    assert.ok(Math.abs(Date.parse(ca.last_used) - started) < 60000, ca.last_used);
    assert.equal(ca.live_tokens, 2);
    assert.equal(clients.find((c) => c.client_id === b).last_used, null, 'B never got a token');
    assert.equal(clients.find((c) => c.client_id === b2).live_tokens, 3, 'access, new access, new refresh (the old one rotated)');
    const table = cli(srv, 'clients');
    assert.equal(table.status, 0);
    assert.match(table.stdout, /^CLIENT ID +CREATED +LAST USED +TOKENS +REDIRECT HOSTS +NAME\n/);
    assert.match(table.stdout, new RegExp(`^${a} .* 127\\.0\\.0\\.1:7777 +Client A$`, 'm'));
    assert.match(table.stdout, new RegExp(`^${b} .* never .* app\\.example\\.com +Client B$`, 'm'));

    // tokens: principal, kind, state, family; never the token or its hash.
    const tokens = cliJson(srv, 'tokens');
    assert.equal(tokens.length, 6);
    const mine = tokens.filter((t) => t.principal === `oauth:${b2}`);
    assert.deepEqual(mine.map((t) => `${t.kind}/${t.state}`).sort(), ['access/live', 'access/live', 'refresh/live', 'refresh/rotated']);
    assert.ok(mine.every((t) => t.client_name === 'Client B2' && t.scope === 'hermes:read hermes:task'));
    assert.equal(new Set(mine.map((t) => t.family)).size, 1, 'one authorization, one family');
    const famA = tokens.find((t) => t.client_id === a).family;
    assert.match(famA, /^[0-9a-f]{32}$/);
    const text = cli(srv, 'tokens');
    assert.match(text.stdout, /^PRINCIPAL +KIND +STATE +EXPIRES +FAMILY +SCOPE\n/);
    const shown = cli(srv, 'clients', '--json').stdout + cli(srv, 'tokens', '--json').stdout + table.stdout + text.stdout;
    for (const s of secrets) {
      assert.ok(!shown.includes(s), 'no token in the output');
      assert.ok(!shown.includes(sha(s)), 'no token hash in the output');
    }

    // Revoke A's family: the running server refuses A's access token at the next request and
    // the refresh token is gone; B2 is untouched.
    assert.equal(await mcpStatus(srv, ta.access_token), 200);
    assert.equal(await mcpStatus(srv, tb2.access_token), 200);
    const rf = cli(srv, 'tokens', 'revoke', '--family', famA);
    assert.equal(rf.status, 0, rf.stderr);
    assert.equal(rf.stdout, 'revoked 2 tokens\n');
    assert.equal(await mcpStatus(srv, ta.access_token), 401, 'revoked: refused without a restart or signal');
    assert.equal((await token(issuer, { grant_type: 'refresh_token', refresh_token: ta.refresh_token, client_id: a })).error, 'invalid_grant');
    assert.equal(await mcpStatus(srv, tb2.access_token), 200);

    // Revoke client B2: its tokens and the client itself, at once.
    const rc = cli(srv, 'clients', 'revoke', b2);
    assert.equal(rc.status, 0, rc.stderr);
    assert.equal(rc.stdout, `revoked client ${b2} and its 4 tokens\n`);
    assert.equal(await mcpStatus(srv, tb2.access_token), 401);
    assert.equal((await token(issuer, { grant_type: 'refresh_token', refresh_token: tb2.refresh_token, client_id: b2 })).error, 'invalid_client',
      'a client the server forgot fails client authentication');
    const again = await fetch(`${issuer}/authorize?response_type=code&client_id=${b2}&redirect_uri=${encodeURIComponent(REDIRECT)}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`);
    assert.equal(again.status, 400, 'the server forgot the client');
    assert.match(await again.text(), /Unknown application/);

    // The server writes both files again (a registration, a new authorization of A): what the
    // command removed stays removed.
    const c = await register(issuer, 'Client C');
    const ta2 = await authorize(issuer, a);
    assert.equal(ta2.status, 200);
    assert.equal(await mcpStatus(srv, ta2.access_token), 200);
    const after = cliJson(srv, 'clients');
    assert.deepEqual(after.map((x) => x.client_id).sort(), [a, b, c].sort());
    const left = cliJson(srv, 'tokens');
    assert.ok(!left.some((t) => t.client_id === b2 || t.family === famA), JSON.stringify(left));
    assert.equal(left.length, 2);
    for (const f of ['oauth-clients.json', 'oauth-tokens.json'])
      assert.equal(statSync(join(srv.dir, f)).mode & 0o777, 0o600, f);
    assert.ok(!readFileSync(join(srv.dir, 'oauth-clients.json'), 'utf8').includes(b2));

    // Refusals: nothing matched, usage errors.
    assert.equal(cli(srv, 'clients', 'revoke', b2).status, 1, 'gone already');
    assert.equal(cli(srv, 'tokens', 'revoke', '--client', b2).status, 1);
    assert.equal(cli(srv, 'clients', 'revoke').status, 2);
    assert.equal(cli(srv, 'tokens', 'revoke').status, 2);
    assert.equal(cli(srv, 'tokens', '--bogus').status, 2);
    assert.ok(!srv.proc.stderrText.includes('keeping the'), srv.proc.stderrText);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('oauth clients --help; OAuth off is a configuration error', async () => {
  const help = spawnSync(HERMES, ['oauth', 'clients', '--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^usage: hermes-mcp oauth clients/);
  assert.match(help.stdout, /oauth tokens revoke \[--client ID\] \[--family F\]/);
  assert.match(spawnSync(HERMES, ['help', 'oauth'], { encoding: 'utf8' }).stdout, /clients, tokens/);
  const srv = await startHermes();
  try {
    const r = cli(srv, 'tokens');
    assert.equal(r.status, 2);
    assert.match(r.stderr, /OAuth is off .*no OAUTH_ISSUER_URL/);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});
