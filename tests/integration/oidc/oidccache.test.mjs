// A provider's key set is kept as long as its Cache-Control says, within 60 s and a day: three
// providers answer their JWKS with max-age=61, max-age=3600 and no-store. After 63 s a new
// token of each is verified: the first and the third (no-store is kept the 60 s floor) have
// their key sets fetched again, the second not. Within the first seconds no-store is not
// refetched for each token either. (The test waits 63 s: the floor is the server's.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { sleep, until } from '../../lib/lib.mjs';
import { newKey, publicJwk, signJwt, claimsFor, startOidcHermes, whoami } from '../../lib/oidc.mjs';

// A provider at http://127.0.0.1:PORT/<name> whose /keys answers with cacheControl; keyHits
// counts the key set's fetches.
async function provider(name, cacheControl) {
  const key = newKey('RS256');
  const p = { key, keyHits: 0 };
  const srv = createServer((req, res) => {
    const origin = `http://127.0.0.1:${srv.address().port}`;
    if (req.url === `/${name}/.well-known/openid-configuration`)
      return res.end(JSON.stringify({ issuer: `${origin}/${name}`, jwks_uri: `${origin}/${name}/keys` }));
    if (req.url === `/${name}/keys`) {
      p.keyHits++;
      res.setHeader('Cache-Control', cacheControl);
      return res.end(JSON.stringify({ keys: [publicJwk(key)] }));
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  p.issuer = `http://127.0.0.1:${srv.address().port}/${name}`;
  p.close = () => srv.close();
  return p;
}

test('key sets are kept per Cache-Control, 60 s at least', { timeout: 120000 }, async () => {
  const ops = [await provider('short', 'max-age=61'), await provider('long', 'public, max-age=3600'),
    await provider('nostore', 'no-store')];
  const srv = await startOidcHermes(ops);
  // A token not seen before (a new jti): verified against the issuer's key set.
  const fresh = (op, sub) => signJwt(claimsFor(op, { resource: srv.audience, sub }), op.key);
  try {
    const names = ['oidc:a', 'oidc2:b', 'oidc3:c'];
    for (let i = 0; i < 3; i++)
      assert.equal((await whoami(srv, await fresh(ops[i], names[i].split(':')[1]))).principal, names[i]);
    assert.deepEqual(ops.map((o) => o.keyHits), [1, 1, 1]);
    await sleep(3000);
    for (let i = 0; i < 3; i++) await whoami(srv, await fresh(ops[i], 'x'));
    assert.deepEqual(ops.map((o) => o.keyHits), [1, 1, 1], 'no-store is still kept the 60 s floor');
    await sleep(60500);
    for (let i = 0; i < 3; i++) await whoami(srv, await fresh(ops[i], 'y'));
    await until(() => ops[0].keyHits === 2 && ops[2].keyHits === 2, 'the 61 s and no-store sets fetched again', 5000);
    assert.equal(ops[1].keyHits, 1, 'max-age=3600 is still fresh');
  } finally {
    await srv.stop();
    for (const op of ops) op.close();
  }
});
