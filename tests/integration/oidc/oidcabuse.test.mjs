// What a client without a credential cannot make the server do with provider-shaped tokens: an
// ID token of the provider (nonce) is no access token; tokens never seen before each cost a
// request of the address's RATE_LIMIT_PER_MIN before any verification or fetch, so a flood of
// them gets 429 while the owner's static token is served.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOidcs, stopOidcs, startOidcHermes, rpc, whoami, goodToken, randomKidTokens } from '../../lib/oidc.mjs';

const WHOAMI = ['tools/call', { name: 'whoami', arguments: {} }];

// A provider for each test (the second makes its JWKS hang), both started at once.
let ops;
before(async () => { ops = await startOidcs({ id: {}, flood: {} }); });
after(() => stopOidcs(ops));

test('an ID token (nonce) is refused though its signature, iss and aud are right', async () => {
  const op = ops.id;
  const srv = await startOidcHermes(op);
  try {
    const access = await goodToken(op, { resource: srv.audience, sub: 'ann' });
    assert.equal((await whoami(srv, access)).principal, 'oidc:ann');
    const id = await goodToken(op, { resource: srv.audience, sub: 'ann', nonce: 'n-0S6_WzA2Mj' });
    const r = await rpc(srv, id, ...WHOAMI);
    assert.equal(r.status, 401, r.text);
    assert.match(r.www, /error_description="an ID token, not an access token"/);
  } finally {
    await srv.stop();
    await op.stop();
  }
});

test('new provider tokens from one address beyond RATE_LIMIT_PER_MIN get 429 before any work', async () => {
  const op = ops.flood;
  // The unknown-kid refetch allowed at once, so that without the admission each token would
  // wait on the hanging key set; with it, those over the address's rate are answered at once.
  const srv = await startOidcHermes(op, { RATE_LIMIT_PER_MIN: '3' },
    { env: { ...process.env, HERMES_TEST_OIDC_REFETCH_MS: '1' } });
  try {
    await whoami(srv, await goodToken(op, { resource: srv.audience, sub: 'warm' })); // keys in
    await op.fault('hang');
    const tokens = await randomKidTokens(op, 8, { resource: srv.audience });
    const answers = await Promise.all(tokens.map((t) => rpc(srv, t, ...WHOAMI)));
    const quick = answers.filter((r) => r.status === 429 && r.ms < 1000);
    assert.ok(quick.length >= 5, answers.map((r) => `${r.status} ${Math.round(r.ms)}ms`).join(', '));
    // The owner's token is counted per credential, not per address: still served.
    const owner = await rpc(srv, srv.token, ...WHOAMI);
    assert.equal(owner.status, 200, owner.text);
  } finally {
    await op.fault('ok');
    await srv.stop();
    await op.stop();
  }
});
