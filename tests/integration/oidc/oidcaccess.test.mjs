// Access tokens from an external OpenID provider (OIDC_ISSUER_URL, OIDC_AUDIENCE): a real
// provider (panva's oidc-provider, tests/fakes/oidc-provider.mjs) issues them by client
// credentials and by the authorization code flow; the principal is oidc:<claim>, and it reaches
// exactly the tools its scopes allow, as a TOKENS_FILE role with the same scopes does: tools/list
// filtered, calls outside its scopes refused with 403 insufficient_scope, gateway:<upstream>
// for an upstream's tools, its gateway calls audited under its name. OIDC_SCOPES_CLAIM and
// OIDC_PRINCIPAL_CLAIM pick other claims; several issuers may be listed, each with its own keys;
// the protected resource metadata names every issuer. Static tokens keep working beside it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startFake, agentEnv, tokensFile, gatewayFile, fakeUpstream, until } from '../../lib/lib.mjs';
import { startOidcs, stopOidcs, startOidcHermes, rpc, whoami, toolNames, signJwt, claimsFor } from '../../lib/oidc.mjs';

const sorted = (a) => [...a].sort();
const scopesOf = async (srv, token) => sorted((await whoami(srv, token)).scopes);

// The providers, started at once and shared: no test changes one (its keys, its faults), each
// starts its own server. main (RS256) is the first issuer of every test, second the other one.
let ops;
before(async () => {
  ops = await startOidcs({ main: { scopes: ['gateway:files', 'gateway:web'] }, PS256: { alg: 'PS256' },
    ES256: { alg: 'ES256' }, EdDSA: { alg: 'EdDSA' }, second: { alg: 'ES256', idPrefix: 'second-' },
    roles: { machineClaims: { roles: ['hermes:read', 'hermes:task'] },
      accounts: { alice: { claims: { roles: ['hermes:read'] } } } } });
});
after(() => stopOidcs(ops));

// A fresh dir with a gateway file of two upstreams, files and web, each offering echo.
function twoUpstreams(dir) {
  const up = (name) => fakeUpstream(name, [], '    tools: {include: ["echo"]}\n');
  return gatewayFile(dir, `upstreams:\n${up('files')}${up('web')}`);
}

test('client credentials and authorization code tokens reach the tools their scopes allow, and no others', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oidc-'));
  const fake = await startFake();
  const op = ops.main;
  // Static roles with the same scopes: what an OIDC principal sees must be what they see.
  const tok = { reader: randomBytes(32).toString('hex'), worker: randomBytes(32).toString('hex'),
    admin: randomBytes(32).toString('hex') };
  const tokens = tokensFile(dir, { reader: [tok.reader, 'hermes:read'],
    worker: [tok.worker, 'hermes:read, hermes:task, gateway:files'], admin: [tok.admin, 'hermes:read, hermes:admin'] });
  const srv = await startOidcHermes(op, { TOKENS_FILE: tokens, GATEWAY_FILE: twoUpstreams(dir),
    HERMES_ENV_PATH: agentEnv(fake) });
  try {
    // A machine client with hermes:read: the reader's tools, as oidc:<sub> (sub is its client id).
    const cc = await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    const me = await whoami(srv, cc.access_token);
    assert.equal(me.principal, 'oidc:machine');
    assert.deepEqual(me.scopes, ['hermes:read']);
    assert.ok(!JSON.stringify(me).includes(cc.access_token), 'whoami never tells the token');
    const readerTools = await toolNames(srv, tok.reader);
    assert.ok(readerTools.includes('hermes_status') && !readerTools.includes('hermes_task'), readerTools.join());
    assert.deepEqual(await toolNames(srv, cc.access_token), readerTools);
    assert.equal((await rpc(srv, cc.access_token, 'tools/call', { name: 'hermes_status', arguments: {} })).status, 200);
    const task = await rpc(srv, cc.access_token, 'tools/call', { name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(task.status, 403);
    assert.match(task.www, /^Bearer /);
    assert.match(task.www, /error="insufficient_scope"/);
    assert.match(task.www, /scope="hermes:task"/);
    assert.equal(task.json.error.code, -32003);
    const files = await rpc(srv, cc.access_token, 'tools/call', { name: 'files__echo', arguments: { message: 'hi' } });
    assert.equal(files.status, 403);
    assert.match(files.www, /gateway:files/);
    assert.equal(fake.received().filter((q) => q.path === '/v1/chat/completions').length, 0,
      'nothing reached the agent for a refused task');

    // A user through the authorization code flow, with task and one upstream.
    const ac = await op.authorizationCode({ scope: 'hermes:read hermes:task gateway:files', resource: srv.audience,
      login: 'alice' });
    const alice = await whoami(srv, ac.access_token);
    assert.equal(alice.principal, 'oidc:alice');
    assert.deepEqual(sorted(alice.scopes), ['gateway:files', 'hermes:read', 'hermes:task']);
    const workerTools = await toolNames(srv, tok.worker);
    assert.ok(workerTools.includes('hermes_task') && workerTools.includes('files__echo'), workerTools.join());
    assert.ok(!workerTools.includes('web__echo') && !workerTools.includes('hermes_reset'));
    assert.deepEqual(await toolNames(srv, ac.access_token), workerTools);
    const done = await rpc(srv, ac.access_token, 'tools/call', { name: 'hermes_task',
      arguments: { task: 'hello from alice', mode: 'sync', id: 'alice-task' } });
    assert.equal(done.status, 200);
    assert.equal(done.json.result.isError, false, done.text);
    assert.ok(fake.received().some((q) => q.path === '/v1/chat/completions'), 'the task reached the agent');
    const echo = await rpc(srv, ac.access_token, 'tools/call', { name: 'files__echo', arguments: { message: 'hi' } });
    assert.equal(echo.json.result.content[0].text, 'Echo: hi', echo.text);
    const web = await rpc(srv, ac.access_token, 'tools/call', { name: 'web__echo', arguments: { message: 'hi' } });
    assert.equal(web.status, 403);
    assert.match(web.www, /gateway:web/);
    const reset = await rpc(srv, ac.access_token, 'tools/call', { name: 'hermes_reset', arguments: { confirmed: true } });
    assert.equal(reset.status, 403);
    assert.match(reset.www, /scope="hermes:admin"/);
    // Its task is its own: the machine client, another principal, does not see it.
    assert.equal((await rpc(srv, ac.access_token, 'tools/call', { name: 'hermes_result', arguments: { id: 'alice-task' } }))
      .json.result.isError, false);
    const other = await rpc(srv, cc.access_token, 'tools/call', { name: 'hermes_result', arguments: { id: 'alice-task' } });
    assert.equal(other.json.result.structuredContent.error, 'not_found', other.text);
    // The gateway's audit line names the OIDC principal.
    await until(() => existsSync(srv.auditFile) && readFileSync(srv.auditFile, 'utf8').includes('"event":"gateway_call"'),
      'gateway audit line');
    const calls = readFileSync(srv.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
      .filter((l) => l.event === 'gateway_call');
    assert.deepEqual(calls.map((l) => [l.principal, l.upstream]), [['oidc:alice', 'files']]);

    // hermes:admin: the admin role's tools.
    const adm = await op.clientCredentials({ scope: 'hermes:read hermes:admin', resource: srv.audience });
    const adminTools = await toolNames(srv, tok.admin);
    assert.ok(adminTools.includes('hermes_reset'));
    assert.deepEqual(await toolNames(srv, adm.access_token), adminTools);

    // The static tokens and the owner work as before, beside the provider's.
    assert.equal((await whoami(srv, tok.reader)).principal, 'reader');
    assert.equal((await whoami(srv, srv.token)).principal, 'owner');
    // The token never shows up in the log.
    for (const t of [cc.access_token, ac.access_token, adm.access_token])
      assert.ok(!srv.proc.stderrText.includes(t.split('.')[2]), 'a token in the log');
  } finally {
    await srv.stop();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every algorithm the provider signs with is verified: RS256, PS256, ES256, EdDSA', async () => {
  for (const alg of ['RS256', 'PS256', 'ES256', 'EdDSA']) {
    const op = alg === 'RS256' ? ops.main : ops[alg];
    const srv = await startOidcHermes(op);
    try {
      const t = await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
      assert.equal(JSON.parse(Buffer.from(t.access_token.split('.')[0], 'base64url')).alg, alg);
      assert.equal((await whoami(srv, t.access_token)).principal, 'oidc:machine', alg);
    } finally {
      await srv.stop();
    }
  }
});

test('the protected resource metadata names the issuers; no token gets the Bearer challenge', async () => {
  const { main: op1, second: op2 } = ops;
  const srv = await startOidcHermes([op1, op2]);
  try {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const r = await fetch(`${srv.base}${path}`);
      assert.equal(r.status, 200, path);
      const prm = await r.json();
      assert.ok(prm.authorization_servers.includes(op1.issuer), JSON.stringify(prm));
      assert.ok(prm.authorization_servers.includes(op2.issuer), JSON.stringify(prm));
    }
    const none = await rpc(srv, null, 'tools/list');
    assert.equal(none.status, 401);
    assert.match(none.www, /^Bearer /);
    assert.match(none.www, /resource_metadata="[^"]*\/\.well-known\/oauth-protected-resource/);
  } finally {
    await srv.stop();
  }
});

test('several issuers: each one\'s tokens are accepted; a token naming one issuer signed with the other\'s key is not', async () => {
  const { main: op1, second: op2 } = ops;
  const srv = await startOidcHermes([op1, op2]);
  try {
    const t1 = await op1.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    const t2 = await op2.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    assert.equal((await whoami(srv, t1.access_token)).principal, 'oidc:machine');
    assert.equal((await whoami(srv, t2.access_token)).principal, 'oidc2:second-machine');
    // The same sub at the second issuer is another principal: subs are unique per issuer only.
    const twin = await signJwt(claimsFor(op2, { resource: srv.audience, sub: 'machine' }), op2.key);
    assert.equal((await whoami(srv, twin)).principal, 'oidc2:machine');
    // op1's issuer, op2's key (and kid): op1's keys must verify it, and cannot.
    const mixed = await signJwt(claimsFor(op1, { resource: srv.audience, sub: 'machine' }), op2.key);
    const r = await rpc(srv, mixed, 'tools/call', { name: 'whoami', arguments: {} });
    assert.equal(r.status, 401);
    assert.match(r.www, /error="invalid_token"/);
  } finally {
    await srv.stop();
  }
});

test('a comma-separated issuer list works too', async () => {
  const { main: op1, second: op2 } = ops;
  const srv = await startOidcHermes([], { OIDC_ISSUER_URL: `${op1.issuer},${op2.issuer}` });
  try {
    const t2 = await op2.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    assert.equal((await whoami(srv, t2.access_token)).principal, 'oidc2:second-machine');
    const t1 = await op1.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    assert.equal((await whoami(srv, t1.access_token)).principal, 'oidc:machine');
  } finally {
    await srv.stop();
  }
});

test('OIDC_SCOPES_CLAIM=roles and OIDC_PRINCIPAL_CLAIM=client_id map other claims', async () => {
  const op = ops.roles;
  const srv = await startOidcHermes(op, { OIDC_SCOPES_CLAIM: 'roles', OIDC_PRINCIPAL_CLAIM: 'client_id' });
  try {
    // The token's scope claim says hermes:read only; its roles say read and task.
    const cc = await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    assert.deepEqual(await scopesOf(srv, cc.access_token), ['hermes:read', 'hermes:task']);
    const names = await toolNames(srv, cc.access_token);
    assert.ok(names.includes('hermes_task'), names.join());
    // The user's token: principal by client_id (the app), scopes from alice's roles, though the
    // scope claim asks for task as well.
    const ac = await op.authorizationCode({ scope: 'hermes:read hermes:task', resource: srv.audience, login: 'alice' });
    const me = await whoami(srv, ac.access_token);
    assert.equal(me.principal, 'oidc:app');
    assert.deepEqual(me.scopes, ['hermes:read']);
    const t = await rpc(srv, ac.access_token, 'tools/call', { name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(t.status, 403);
  } finally {
    await srv.stop();
  }
});
