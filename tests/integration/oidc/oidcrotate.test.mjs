// The provider's keys as they change and fail, where no answer is timed (oidckeys.test.mjs
// times them, alone): a rotation mid-run (the server refetches the JWKS once for the new kid, and
// the dropped key signs nothing it accepts any more); a JWKS that never answers gets the token
// refused after the server's timeout, not held forever.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../../lib/lib.mjs';
import { startOidcs, stopOidcs, startOidcHermes, rpc, whoami, peek, signJwt, claimsFor, acceptedWithin }
  from '../../lib/oidc.mjs';

const WHOAMI = ['tools/call', { name: 'whoami', arguments: {} }];

// Each test's own provider (one rotates its key, the other's JWKS hangs), both started at once.
let ops;
before(async () => { ops = await startOidcs({ rotation: {}, never: {} }); });
after(() => stopOidcs(ops));

test('key rotation mid-run: one JWKS refetch for the new kid; the dropped key is no longer trusted', async (t) => {
  const op = ops.rotation;
  // The refetch interval cut from 10 s to 1 s (tests only): the same one refetch, sooner.
  const srv = await startOidcHermes(op, {}, { env: { ...process.env, HERMES_TEST_OIDC_REFETCH_MS: '1000' } });
  try {
    const before = (await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    assert.equal((await whoami(srv, before)).principal, 'oidc:machine');
    const oldKey = op.key;
    await op.reset();
    const { kid, previous } = await op.rotate();
    const after = (await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    assert.equal(peek(after).header.kid, kid);
    const took = await acceptedWithin(srv, after, 65000, 'the token signed with the new key');
    t.diagnostic(`new kid accepted after ${took} ms`);
    assert.equal(await op.jwksFetches(), 1, 'the JWKS fetched once for the new kid');
    for (let i = 0; i < 5; i++) assert.equal((await whoami(srv, after)).principal, 'oidc:machine');
    assert.equal(await op.jwksFetches(), 1, 'a known kid needs no fetch');
    // The provider dropped the old key: a token it signs, new to the server, is refused. (One
    // the server verified before may stay accepted until it expires: a verification cache.)
    const late = await signJwt(claimsFor(op, { resource: srv.audience, sub: 'machine' }), oldKey);
    const r = await rpc(srv, late, ...WHOAMI);
    assert.equal(r.status, 401, `a new token signed with the dropped key ${previous}: ${r.status}`);
    assert.match(r.www, /error="invalid_token"/);
    // The same claims under the new key: accepted (so the refusal is the key's).
    const fresh = await signJwt(claimsFor(op, { resource: srv.audience, sub: 'machine' }), op.key);
    assert.equal((await whoami(srv, fresh)).principal, 'oidc:machine');
  } finally {
    await srv.stop();
    await op.stop();
  }
});

test('a JWKS that never answers: the server gives up and refuses the token, it is not held forever', async (t) => {
  const op = ops.never;
  await op.fault('hang');
  const srv = await startOidcHermes(op);
  try {
    const token = (await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    const hung = await rpc(srv, token, ...WHOAMI, { timeoutMs: 120000 });
    t.diagnostic(`JWKS hanging: ${hung.status} after ${hung.ms.toFixed(0)} ms`);
    assert.ok([401, 503].includes(hung.status), `JWKS hanging: ${hung.status} ${hung.text.slice(0, 200)}`);
    assert.ok(await op.jwksFetches() >= 1, 'the server did try the JWKS');
    // The server let go of the hanging fetch (it timed out and closed it).
    await until(async () => (await op.state()).held.jwks === 0, 'the server closing its JWKS fetch', 15000);
  } finally {
    await srv.stop();
    await op.stop();
  }
});
