// The provider's keys as they fail, with the other clients' answers timed: many tokens with
// random kids cause at most a few JWKS fetches; while the JWKS hangs, the token waiting on it is
// held (and served once the keys come) and every other client, a static TOKENS_FILE token and
// the owner, is answered promptly: the event loop never waits on the provider; a JWKS that is
// down gets the token refused at once and is used again when it is back; with two issuers, one's
// hanging JWKS does not delay the other's tokens. (oidcrotate.test.mjs: a rotation, a JWKS that
// never answers.)
// serial: measures how promptly other clients are answered while the JWKS hangs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { tokensFile, until, probeJson } from '../../lib/lib.mjs';
import { startOidcs, stopOidcs, startOidcHermes, rpc, whoami, randomKidTokens, acceptedWithin }
  from '../../lib/oidc.mjs';

const WHOAMI = ['tools/call', { name: 'whoami', arguments: {} }];
// Promptly: a static client's request while the JWKS hangs (the server is otherwise idle).
const PROMPT_MS = 500;

// Each test's own provider (each counts its fetches or makes its JWKS fail), all started at once.
let ops;
before(async () => {
  ops = await startOidcs({ kids: {}, hang: {}, down: {}, stuck: {},
    fine: { alg: 'ES256', idPrefix: 'fine-' } });
});
after(() => stopOidcs(ops));

const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

test('many tokens with random kids cause at most a few JWKS fetches; the real token is still served', async (t) => {
  const op = ops.kids;
  const srv = await startOidcHermes(op);
  try {
    const good = (await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    assert.equal((await whoami(srv, good)).principal, 'oidc:machine');
    await op.reset();
    const toks = await randomKidTokens(op, 100, { resource: srv.audience });
    for (let i = 0; i < toks.length; i += 20) {
      const rs = await Promise.all(toks.slice(i, i + 20).map((tk) => rpc(srv, tk, ...WHOAMI)));
      for (const r of rs) {
        assert.equal(r.status, 401);
        assert.match(r.www, /error="invalid_token"/);
      }
    }
    const fetches = await op.jwksFetches();
    t.diagnostic(`100 random-kid tokens: ${fetches} JWKS fetches`);
    assert.ok(fetches <= 3, `${fetches} JWKS fetches for 100 unknown kids`);
    const r = await rpc(srv, good, ...WHOAMI);
    assert.equal(r.status, 200);
    assert.ok(r.ms < PROMPT_MS, `the real token answered in ${r.ms} ms`);
  } finally {
    await srv.stop();
    await op.stop();
  }
});

test('while the JWKS hangs, the token waiting on it is held and every other client is answered promptly', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oidckeys-'));
  const reader = randomBytes(32).toString('hex');
  const op = ops.hang;
  await op.fault('hang');
  const srv = await startOidcHermes(op, { TOKENS_FILE: tokensFile(dir, { reader: [reader, 'hermes:read'] }) });
  try {
    // The token endpoint works; only the JWKS hangs.
    const token = (await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    const pending = rpc(srv, token, ...WHOAMI, { timeoutMs: 120000 });
    await until(async () => (await op.state()).held.jwks >= 1, 'the server waiting on the JWKS', 15000);

    const ms = [];
    for (let i = 0; i < 10; i++) {
      const r = await rpc(srv, reader, ...WHOAMI);
      assert.equal(r.status, 200);
      assert.equal(r.json.result.structuredContent.principal, 'reader');
      ms.push(r.ms);
    }
    const burst = await Promise.all([
      ...Array.from({ length: 8 }, () => rpc(srv, reader, ...WHOAMI)),
      rpc(srv, srv.token, 'tools/list'),
      rpc(srv, srv.token, ...WHOAMI),
    ]);
    for (const r of burst) {
      assert.equal(r.status, 200, r.text.slice(0, 200));
      ms.push(r.ms);
    }
    const t0 = performance.now();
    assert.equal((await probeJson(srv, '/healthz')).status, 200);
    ms.push(performance.now() - t0);
    const max = Math.max(...ms);
    t.diagnostic(`static clients while the JWKS hangs: median ${percentile(ms, 0.5).toFixed(1)} ms, ` +
      `max ${max.toFixed(1)} ms over ${ms.length} requests`);
    assert.ok(max < PROMPT_MS, `a static client waited ${max} ms while the JWKS hung`);
    assert.ok((await op.state()).held.jwks >= 1, 'the JWKS was still hanging throughout');

    // The keys come: the held request is answered, as the token's principal.
    await op.fault('ok');
    const r = await pending;
    assert.equal(r.status, 200, `the held request: ${r.status} ${r.text.slice(0, 200)}`);
    assert.equal(r.json.result.structuredContent.principal, 'oidc:machine');
    assert.equal((await whoami(srv, token)).principal, 'oidc:machine');
  } finally {
    await srv.stop();
    await op.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a JWKS that is down gets the token refused at once, others unaffected; once back it is used', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-oidckeys-'));
  const reader = randomBytes(32).toString('hex');
  const op = ops.down;
  await op.fault('down');
  const srv = await startOidcHermes(op, { TOKENS_FILE: tokensFile(dir, { reader: [reader, 'hermes:read'] }) });
  try {
    const token = (await op.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    const down = await rpc(srv, token, ...WHOAMI);
    t.diagnostic(`JWKS down: ${down.status} after ${down.ms.toFixed(0)} ms`);
    assert.ok([401, 503].includes(down.status), `JWKS down: ${down.status} ${down.text.slice(0, 200)}`);
    assert.ok(down.ms < 10000, `JWKS down: answered after ${down.ms} ms`);
    assert.ok(await op.jwksFetches() >= 1, 'the server did try the JWKS');
    const r = await rpc(srv, reader, ...WHOAMI);
    assert.equal(r.status, 200);
    assert.ok(r.ms < PROMPT_MS, `the static client answered in ${r.ms} ms`);

    // Back: the token is accepted (once the server's refetch limit allows a fetch).
    await op.fault('ok');
    const took = await acceptedWithin(srv, token, 65000, 'the token once the JWKS is back');
    t.diagnostic(`JWKS back: accepted after ${took} ms`);
    assert.equal((await whoami(srv, token)).principal, 'oidc:machine');
  } finally {
    await srv.stop();
    await op.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two issuers: while one\'s JWKS hangs, the other\'s tokens are verified promptly', async (t) => {
  const { stuck, fine } = ops;
  await stuck.fault('hang');
  const srv = await startOidcHermes([stuck, fine]);
  try {
    const held = (await stuck.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    const pending = rpc(srv, held, ...WHOAMI, { timeoutMs: 120000 });
    await until(async () => (await stuck.state()).held.jwks >= 1, 'the server waiting on the stuck JWKS', 15000);
    const token = (await fine.clientCredentials({ scope: 'hermes:read', resource: srv.audience })).access_token;
    const ms = [];
    for (let i = 0; i < 5; i++) {
      const r = await rpc(srv, token, ...WHOAMI);
      assert.equal(r.status, 200, r.text.slice(0, 200));
      assert.equal(r.json.result.structuredContent.principal, 'oidc2:fine-machine'); // the second issuer's
      ms.push(r.ms);
    }
    t.diagnostic(`the other issuer's token while one JWKS hangs: first ${ms[0].toFixed(1)} ms, ` +
      `max of the rest ${Math.max(...ms.slice(1)).toFixed(1)} ms`);
    assert.ok(Math.max(...ms) < PROMPT_MS, `the other issuer's token waited ${Math.max(...ms)} ms`);
    assert.ok((await stuck.state()).held.jwks >= 1, 'the stuck JWKS was still hanging');
    await stuck.fault('ok');
    const r = await pending;
    assert.equal(r.status, 200, `the held request: ${r.status} ${r.text.slice(0, 200)}`);
    assert.equal(r.json.result.structuredContent.principal, 'oidc:machine');
  } finally {
    await srv.stop();
    await stuck.stop();
    await fine.stop();
  }
});
