// The OIDC test harness itself (tests/fakes/oidc-provider.mjs, tests/lib/oidc.mjs), proved
// without hermes-mcp: the provider issues RFC 9068 JWT access tokens for the resource asked for,
// by client credentials and by the authorization code flow, signed with each algorithm the
// server accepts, that jose verifies against the provider's JWKS; rotation changes the kid and
// drops the old one; the JWKS down, hang and slow switches do what they say and the fetches are
// counted; opaque tokens are introspected; every forged token fails jose's verification where
// the control token signed the same way passes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ALGS, startOidcs, stopOidcs, verifyWithJwks, peek, forgedTokens, goodToken, randomKidTokens,
  attackerServer, publicJwk, jose } from '../../lib/oidc.mjs';

const RESOURCE = 'http://127.0.0.1:1/mcp';
const OPAQUE = 'http://127.0.0.1:2/mcp';

// One provider per algorithm, shared by the tests that change nothing in it, set up for all of
// them; the rotation and JWKS-switch tests get fresh ones of their own. All start at once.
const SHARED = { scopes: ['gateway:everything'], machineClaims: { roles: ['reader', 'ops'] },
  accounts: { alice: { claims: { roles: ['worker'] } } }, opaque: [OPAQUE], jwksCacheControl: 'max-age=300' };
let ops;
before(async () => {
  ops = await startOidcs({ ...Object.fromEntries(ALGS.map((alg) => [alg, { ...SHARED, alg }])),
    rotation: {}, switches: {} });
});
after(() => stopOidcs(ops));

test('client credentials: a JWT access token for the resource, verified against the JWKS, for each algorithm', async () => {
  for (const alg of ALGS) {
    const op = ops[alg];
    const t = await op.clientCredentials({ scope: 'hermes:read gateway:everything', resource: RESOURCE });
    assert.equal(t.token_type, 'Bearer');
    assert.equal(t.scope, 'hermes:read gateway:everything');
    const { payload, protectedHeader } = await verifyWithJwks(op, t.access_token, { audience: RESOURCE });
    assert.equal(protectedHeader.alg, alg);
    assert.equal(protectedHeader.typ, 'at+jwt');
    assert.equal(protectedHeader.kid, op.key.kid);
    assert.equal(payload.iss, op.issuer);
    assert.equal(payload.aud, RESOURCE);
    assert.equal(payload.sub, 'machine');
    assert.equal(payload.client_id, 'machine');
    assert.equal(payload.scope, 'hermes:read gateway:everything');
    assert.deepEqual(payload.roles, ['reader', 'ops']);
    assert.ok(payload.exp > payload.iat && payload.exp - payload.iat <= 600, JSON.stringify(payload));
    // The JWKS publishes the public key only.
    const jwks = await (await fetch(`${op.issuer}/jwks`)).json();
    assert.deepEqual(jwks.keys.map((k) => k.kid), [op.key.kid]);
    assert.ok(jwks.keys.every((k) => k.d === undefined), 'no private part in the JWKS');
    // Discovery names the JWKS and the endpoints the tests use.
    const meta = await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json();
    assert.equal(meta.issuer, op.issuer);
    assert.equal(meta.jwks_uri, `${op.issuer}/jwks`);
    assert.equal(meta.introspection_endpoint, `${op.issuer}/token/introspection`);
    assert.ok(meta.grant_types_supported.includes('client_credentials'));
    // A scope the provider does not know is left out of the token.
    const some = await op.clientCredentials({ scope: 'hermes:task hermes:nope', resource: RESOURCE });
    assert.equal(some.scope, 'hermes:task');
    assert.equal(peek(some.access_token).payload.scope, 'hermes:task');
  }
});

test('authorization code with PKCE: the user signs in and consents; the token carries sub, scope and claims', async () => {
  const op = ops.RS256;
  const t = await op.authorizationCode({ scope: 'hermes:read hermes:task', resource: RESOURCE, login: 'alice', port: 45678 });
  assert.equal(t.redirect.origin, 'http://127.0.0.1:45678', 'a loopback redirect on the port the client chose');
  assert.equal(t.redirect.searchParams.get('iss'), op.issuer);
  const { payload } = await verifyWithJwks(op, t.access_token, { audience: RESOURCE });
  assert.equal(payload.sub, 'alice');
  assert.equal(payload.client_id, 'app');
  assert.equal(payload.scope, 'hermes:read hermes:task');
  assert.deepEqual(payload.roles, ['worker']);
  // Another user, other scopes: another token.
  const bob = await op.authorizationCode({ scope: 'hermes:read', resource: RESOURCE, login: 'bob' });
  const p2 = (await verifyWithJwks(op, bob.access_token, { audience: RESOURCE })).payload;
  assert.equal(p2.sub, 'bob');
  assert.equal(p2.scope, 'hermes:read');
  assert.equal(p2.roles, undefined);
});

test('rotation: a new kid signs from then on, the old kid leaves the JWKS (or stays with keep)', async () => {
  const op = ops.rotation;
  try {
    const before = await op.clientCredentials({ scope: 'hermes:read', resource: RESOURCE });
    const kid1 = peek(before.access_token).header.kid;
    assert.equal(kid1, op.key.kid);
    const r = await op.rotate();
    assert.equal(r.previous, kid1);
    assert.notEqual(r.kid, kid1);
    const after = await op.clientCredentials({ scope: 'hermes:read', resource: RESOURCE });
    assert.equal(peek(after.access_token).header.kid, r.kid);
    const jwks = await (await fetch(`${op.issuer}/jwks`)).json();
    assert.deepEqual(jwks.keys.map((k) => k.kid), [r.kid]);
    await verifyWithJwks(op, after.access_token, { audience: RESOURCE });
    await assert.rejects(verifyWithJwks(op, before.access_token, { audience: RESOURCE }),
      (e) => e.code === 'ERR_JWKS_NO_MATCHING_KEY');
    // A rotation to another algorithm, keeping the old key published.
    const r2 = await op.rotate({ alg: 'ES256', keep: true });
    const es = await op.clientCredentials({ scope: 'hermes:read', resource: RESOURCE });
    assert.equal(peek(es.access_token).header.alg, 'ES256');
    assert.equal(peek(es.access_token).header.kid, r2.kid);
    assert.deepEqual((await op.state()).kids, [r2.kid, r.kid]);
    await verifyWithJwks(op, after.access_token, { audience: RESOURCE });
    // The flow under way survives a rotation: interactions live on in the memory adapter.
    const t = await op.authorizationCode({ scope: 'hermes:read', resource: RESOURCE });
    assert.equal(peek(t.access_token).header.kid, r2.kid);
  } finally {
    await op.stop();
  }
});

test('JWKS switches: down answers 500, hang holds the request until released, slow answers late; fetches counted', async () => {
  const op = ops.switches;
  const jwksUrl = `${op.issuer}/jwks`;
  try {
    await op.reset();
    assert.equal(await op.jwksFetches(), 0);
    assert.equal((await fetch(jwksUrl)).status, 200);
    assert.equal(await op.jwksFetches(), 1);

    await op.fault('down');
    const down = await fetch(jwksUrl);
    assert.equal(down.status, 500);
    assert.equal(await op.jwksFetches(), 2);
    // Only the JWKS: discovery and the token endpoint keep working.
    assert.equal((await fetch(`${op.issuer}/.well-known/openid-configuration`)).status, 200);
    await op.clientCredentials({ scope: 'hermes:read', resource: RESOURCE });

    await op.fault('hang');
    const t0 = Date.now();
    const held = fetch(jwksUrl);
    await assert.rejects(fetch(jwksUrl, { signal: AbortSignal.timeout(400) }), (e) => e.name === 'TimeoutError');
    assert.ok(Date.now() - t0 >= 380);
    assert.equal(await op.jwksFetches(), 4);
    assert.equal((await op.state()).held.jwks, 1, 'the first is held; the timed-out one is let go');
    await op.fault('ok');
    const released = await held;
    assert.equal(released.status, 200, 'a held request is answered once the JWKS is back');
    assert.deepEqual((await released.json()).keys.map((k) => k.kid), [op.key.kid]);
    assert.equal((await op.state()).held.jwks, 0);

    await op.fault('slow', { delayMs: 600 });
    const t1 = Date.now();
    const slow = await fetch(jwksUrl);
    assert.equal(slow.status, 200);
    assert.ok(Date.now() - t1 >= 550, `slow answered after ${Date.now() - t1} ms`);
    await op.fault('ok');
    assert.equal(await op.jwksFetches(), 5);

    // Discovery can fail the same way.
    await op.fault('down', { endpoint: 'discovery' });
    assert.equal((await fetch(`${op.issuer}/.well-known/openid-configuration`)).status, 500);
    assert.equal((await op.state()).fetches.discovery, 2);
  } finally {
    await op.stop();
  }
});

test('JWKS Cache-Control is sent when configured', async () => {
  assert.equal((await fetch(`${ops.RS256.issuer}/jwks`)).headers.get('cache-control'), 'max-age=300');
});

test('introspection: an opaque token for an opaque resource is active with its aud and scope', async () => {
  const op = ops.RS256;
  const t = await op.clientCredentials({ scope: 'hermes:read hermes:task', resource: OPAQUE });
  assert.doesNotMatch(t.access_token, /^eyJ/, 'opaque, not a JWT');
  const i = await op.introspect(t.access_token);
  assert.equal(i.active, true, JSON.stringify(i));
  assert.equal(i.aud, OPAQUE);
  assert.equal(i.scope, 'hermes:read hermes:task');
  assert.equal(i.client_id, 'machine');
  assert.equal(i.iss, op.issuer);
  assert.ok(i.exp > Date.now() / 1000);
  assert.deepEqual(await op.introspect('not-a-token-we-issued'), { active: false });
  // A wrong introspection secret is refused.
  const bad = await fetch(`${op.issuer}/token/introspection`, { method: 'POST',
    body: new URLSearchParams({ token: t.access_token }),
    headers: { Authorization: `Basic ${Buffer.from('introspector:wrong').toString('base64')}` } });
  assert.equal(bad.status, 401);
  // The other resources still get JWTs.
  const jwt = await op.clientCredentials({ scope: 'hermes:read', resource: RESOURCE });
  assert.match(jwt.access_token, /^eyJ/);
});

test('forged tokens: each fails verification against the JWKS; the control signed the same way passes', async () => {
  for (const alg of ['RS256', 'ES256']) {
    const op = ops[alg];
    const attacker = await attackerServer({ keys: [] });
    try {
      const good = await goodToken(op, { resource: RESOURCE });
      const { payload } = await verifyWithJwks(op, good, { audience: RESOURCE });
      assert.equal(payload.iss, op.issuer);
      const forged = await forgedTokens(op, { resource: RESOURCE, attacker: attacker.base });
      assert.ok(Object.keys(forged).length >= 15);
      for (const [name, token] of Object.entries(forged)) {
        await assert.rejects(verifyWithJwks(op, token, { audience: RESOURCE }), (e) => e instanceof jose.errors.JOSEError,
          `${alg} ${name} verified`);
      }
      // Each differs from the control in the point its name says.
      const h = (n) => peek(forged[n]).header;
      const p = (n) => peek(forged[n]).payload;
      assert.ok(p('expired').exp < Date.now() / 1000);
      assert.ok(p('not_yet_valid').nbf > Date.now() / 1000);
      assert.notEqual(p('wrong_issuer').iss, op.issuer);
      assert.notEqual(p('wrong_audience').aud, RESOURCE);
      assert.equal(p('audience_missing').aud, undefined);
      assert.equal(h('unpublished_key_same_kid').kid, op.key.kid);
      assert.notEqual(h('unknown_kid').kid, op.key.kid);
      assert.equal(h('alg_none').alg, 'none');
      assert.equal(h('hs256_public_pem').alg, 'HS256');
      assert.equal(h('hs256_public_pem').kid, op.key.kid);
      assert.equal(h('jku_header').jku, `${attacker.base}/jwks`);
      assert.equal(h('x5u_header').x5u, `${attacker.base}/x5u`);
      assert.equal(h('jwk_header').jwk.kty, publicJwk(op.key).kty);
      assert.match(h('kid_path').kid, /\.\.\//);
      for (const n of ['expired', 'wrong_issuer', 'wrong_audience', 'unknown_kid', 'jku_header'])
        assert.equal(p(n).scope, 'hermes:read', n);
      // jose follows no header URL; the attacker saw nothing.
      assert.deepEqual(attacker.hits, []);
    } finally {
      await attacker.close();
    }
  }
});

test('random-kid tokens: each names a kid the provider never published', async () => {
  const op = ops.RS256;
  const toks = await randomKidTokens(op, 20, { resource: RESOURCE });
  const kids = new Set(toks.map((t) => peek(t).header.kid));
  assert.equal(kids.size, 20);
  assert.ok(!kids.has(op.key.kid));
  for (const t of toks.slice(0, 3))
    await assert.rejects(verifyWithJwks(op, t, { audience: RESOURCE }), (e) => e.code === 'ERR_JWKS_NO_MATCHING_KEY');
});
