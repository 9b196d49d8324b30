// Opaque access tokens checked by RFC 7662 introspection (OIDC_INTROSPECTION_URL, with
// OIDC_CLIENT_ID and OIDC_CLIENT_SECRET from the env file): the provider issues opaque tokens for
// this server's resource; an active one reaches the tools of its scopes as oidc:<sub>; an
// unknown one gets 401 invalid_token; a wrong introspection secret makes every opaque token fail
// (401, or 503: the provider refuses the server) while JWTs are still verified locally; the secret shows up in no argv, answer or log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { freePort } from '../../lib/lib.mjs';
import { startOidc, startOidcHermes, rpc, whoami, toolNames, goodToken } from '../../lib/oidc.mjs';

const WHOAMI = ['tools/call', { name: 'whoami', arguments: {} }];

// A provider that issues opaque tokens for the /mcp of a server on port, and the settings that
// let that server introspect them (secret: the introspection secret the server is given).
async function opaqueSetup(secret) {
  const port = await freePort();
  const op = await startOidc({ opaque: [`http://127.0.0.1:${port}/mcp`] });
  const intro = op.clients.introspector;
  const settings = { OIDC_INTROSPECTION_URL: `${op.issuer}/token/introspection`, OIDC_CLIENT_ID: intro.id,
    OIDC_CLIENT_SECRET: secret ?? intro.secret };
  return { port, op, settings };
}

test('an opaque token is introspected: its principal and scopes; an unknown one gets 401', async () => {
  const { port, op, settings } = await opaqueSetup();
  const srv = await startOidcHermes(op, settings, { port });
  try {
    const ac = await op.authorizationCode({ scope: 'hermes:read hermes:task', resource: srv.audience, login: 'alice' });
    assert.doesNotMatch(ac.access_token, /^eyJ/, 'the provider issued an opaque token');
    assert.equal((await op.introspect(ac.access_token)).active, true);
    const me = await whoami(srv, ac.access_token);
    assert.equal(me.principal, 'oidc:alice');
    assert.deepEqual([...me.scopes].sort(), ['hermes:read', 'hermes:task']);
    const names = await toolNames(srv, ac.access_token);
    assert.ok(names.includes('hermes_task') && !names.includes('hermes_reset'), names.join());
    const reset = await rpc(srv, ac.access_token, 'tools/call', { name: 'hermes_reset', arguments: { confirmed: true } });
    assert.equal(reset.status, 403);

    const unknown = await rpc(srv, 'opaque-token-the-provider-never-issued-0123456789', ...WHOAMI);
    assert.equal(unknown.status, 401);
    assert.match(unknown.www, /error="invalid_token"/);
    assert.match(unknown.www, /error_description="the provider says the token is not active"/);
    // The owner's token mistyped (64 hex digits, the shape of ours) is never sent to the
    // provider: refused here, with another reason than the provider's.
    const typo = srv.token.slice(0, -1) + (srv.token.endsWith('0') ? '1' : '0');
    const mine = await rpc(srv, typo, ...WHOAMI);
    assert.equal(mine.status, 401);
    assert.match(mine.www, /error_description="not a token of an identity provider"/);
    // JWTs are still verified locally, beside introspection.
    const jwt = await goodToken(op, { resource: srv.audience, sub: 'local' });
    assert.equal((await whoami(srv, jwt)).principal, 'oidc:local');
    // The secret: not on the command line, not in the log.
    const secret = settings.OIDC_CLIENT_SECRET;
    assert.ok(!srv.proc.spawnargs.join(' ').includes(secret));
    assert.ok(!readFileSync(`/proc/${srv.proc.pid}/cmdline`, 'utf8').includes(secret));
    assert.ok(!srv.proc.stderrText.includes(secret), 'the introspection secret in the log');
    assert.ok(!srv.proc.stderrText.includes(ac.access_token), 'a token in the log');
  } finally {
    await srv.stop();
    await op.stop();
  }
});

test('a wrong introspection secret: opaque tokens are refused, JWTs still verified, the server stays up', async () => {
  const wrong = 'not-the-introspection-secret-0123456789abcdef';
  const { port, op, settings } = await opaqueSetup(wrong);
  const srv = await startOidcHermes(op, settings, { port });
  try {
    const cc = await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    assert.doesNotMatch(cc.access_token, /^eyJ/);
    // Refused: 401, or 503 as the provider refuses the server itself (the token may be fine).
    const r = await rpc(srv, cc.access_token, ...WHOAMI);
    assert.ok([401, 503].includes(r.status), `${r.status} ${r.text.slice(0, 200)}`);
    assert.ok(!r.text.includes(wrong) && !(r.www ?? '').includes(wrong), 'the secret in the answer');
    assert.ok(!srv.proc.stderrText.includes(wrong), 'the secret in the log');
    const jwt = await goodToken(op, { resource: srv.audience, sub: 'local' });
    assert.equal((await whoami(srv, jwt)).principal, 'oidc:local');
    assert.equal((await whoami(srv, srv.token)).principal, 'owner');
  } finally {
    await srv.stop();
    await op.stop();
  }
});
