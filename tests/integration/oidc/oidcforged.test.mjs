// Forged and misdirected access tokens against a server that trusts one OpenID provider: expired,
// not yet valid, another issuer, another audience or none, signed by a key the provider never
// published (under its own kid or an unknown one), alg none, HS256 keyed with the provider's
// public key, jku/x5u/jwk headers naming the attacker's key, kid path and injection tricks, a
// broken signature: each gets 401 with a Bearer error="invalid_token" challenge, while a control
// token signed the same way and correct in every point is accepted. The server follows no URL a
// token names, fetches nothing from an issuer it was not given, and logs no token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOidcs, stopOidcs, startOidcHermes, rpc, whoami, forgedTokens, goodToken, attackerServer } from '../../lib/oidc.mjs';

// The providers, started at once: one per algorithm (RS256 is the trusted one of the last test
// too) and a stranger the server is never told of. No test changes one; each starts its server.
let ops;
before(async () => {
  ops = await startOidcs({ RS256: {}, ES256: { alg: 'ES256' }, stranger: { idPrefix: 'stranger-' } });
});
after(() => stopOidcs(ops));

async function refused(srv, token, what) {
  const r = await rpc(srv, token, 'tools/call', { name: 'whoami', arguments: {} });
  assert.equal(r.status, 401, `${what}: ${r.status} ${r.text.slice(0, 200)}`);
  assert.match(r.www ?? '', /^Bearer /, what);
  assert.match(r.www, /error="invalid_token"/, what);
  assert.ok(!r.text.includes(token) && !r.www.includes(token), `${what}: the answer quotes the token`);
  return r;
}

for (const alg of ['RS256', 'ES256']) {
  test(`forged ${alg} tokens get 401 invalid_token; the control token passes`, async () => {
    const op = ops[alg];
    const attacker = await attackerServer({ keys: [] });
    const srv = await startOidcHermes(op);
    try {
      // The control: the provider's key, every claim right. It is accepted, so each refusal
      // below is for the one point the forged token changes.
      const good = await goodToken(op, { resource: srv.audience, scope: 'hermes:read', sub: 'forger' });
      const me = await whoami(srv, good);
      assert.equal(me.principal, 'oidc:forger');
      assert.deepEqual(me.scopes, ['hermes:read']);

      const forged = await forgedTokens(op, { resource: srv.audience, scope: 'hermes:read', sub: 'forger',
        attacker: attacker.base });
      for (const [name, token] of Object.entries(forged)) await refused(srv, token, name);
      // The server fetched none of the keys the headers named.
      assert.deepEqual(attacker.hits, [], 'the server followed a URL from a token header');
      // Still served: the control again.
      assert.equal((await whoami(srv, good)).principal, 'oidc:forger');
      // No token, nor any signature of one, in the log.
      for (const t of [good, ...Object.values(forged)]) {
        const sig = t.split('.')[2];
        if (sig && sig.length > 20) assert.ok(!srv.proc.stderrText.includes(sig), 'a token in the log');
      }
    } finally {
      await srv.stop();
      await attacker.close();
    }
  });
}

test('real tokens for another resource or from an unlisted provider get 401; the unlisted one is never asked', async () => {
  const { RS256: op, stranger } = ops;
  const srv = await startOidcHermes(op);
  try {
    const other = await op.clientCredentials({ scope: 'hermes:read', resource: 'http://127.0.0.1:9/mcp' });
    await refused(srv, other.access_token, 'a token for another resource');
    // No resource at all: the provider's opaque token for its own userinfo.
    const bare = await op.clientCredentials({ scope: 'hermes:read' });
    await refused(srv, bare.access_token, 'a token without our audience');
    await stranger.reset();
    const foreign = await stranger.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    await refused(srv, foreign.access_token, 'a token of a provider the server does not trust');
    const st = await stranger.state();
    assert.deepEqual(st.fetches, { jwks: 0, discovery: 0 }, 'the server fetched from an issuer named only by a token');
    // The trusted provider's token for this server: accepted.
    const mine = await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience });
    assert.equal((await whoami(srv, mine.access_token)).principal, 'oidc:machine');
    // Garbage in the header: refused, the server unharmed.
    for (const junk of ['a.b.c', 'eyJ.eyJ.', '.'.repeat(40), `eyJ${'A'.repeat(8000)}.eyJ.sig`, `${mine.access_token}x`])
      assert.equal((await rpc(srv, junk, 'tools/list')).status, 401);
    assert.equal((await whoami(srv, mine.access_token)).principal, 'oidc:machine');
  } finally {
    await srv.stop();
  }
});
