// Consent slots under a flood of GET /authorize: whoever opens many consent
// pages must not evict the owner's open one (then the right passphrase would get 403). One
// address holds at most 16 open consents (429), a full table answers 503 with a page rather
// than evicting, and HEAD opens none. TRUSTED_PROXIES lets the test speak from many addresses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { startHermes, HERMES, until, freePort } from '../lib/lib.mjs';

const PASS = 'correct horse battery staple';
const REDIRECT = 'http://127.0.0.1:7777/cb';

test('a consent flood neither evicts the owner\'s consent nor opens consents by HEAD', async () => {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const srv = await startHermes({ MCP_PORT: String(port), OAUTH_ISSUER_URL: issuer, TRUSTED_PROXIES: '127.0.0.1' });
  try {
    assert.equal(spawnSync(HERMES, ['oauth', 'passwd', '--env-file', srv.envFile], { input: `${PASS}\n` }).status, 0);
    const reg = await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'it', token_endpoint_auth_method: 'none' }) });
    const { client_id } = await reg.json();
    const url = new URL(`${issuer}/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id, redirect_uri: REDIRECT,
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
      code_challenge_method: 'S256' })) url.searchParams.set(k, v);
    const open = (addr, method = 'GET') => fetch(url, { method, headers: { 'X-Forwarded-For': addr } });

    const owner = await (await open('192.0.2.1')).text();
    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(owner)?.[1];
    assert.ok(csrf, owner);

    // HEAD answers like GET and opens nothing: 300 of them leave room for 16 GETs below.
    for (let i = 0; i < 300; i++) assert.equal((await open('198.51.100.1', 'HEAD')).status, 200);

    // One address: 16 open consents, then 429.
    for (let i = 0; i < 16; i++) assert.equal((await open('198.51.100.2')).status, 200, `consent ${i + 1}`);
    const tooMany = await open('198.51.100.2');
    assert.equal(tooMany.status, 429);
    assert.match(await tooMany.text(), /Too many authorization requests from this address/);

    // Many addresses fill the table (256 slots, 17 taken): then 503 with a page, no eviction.
    let statuses = [];
    for (let a = 0; a < 16 && !statuses.includes(503); a++)
      for (let i = 0; i < 16; i++) statuses.push((await open(`203.0.113.${a + 1}`)).status);
    assert.equal(statuses.filter((s) => s === 200).length, 256 - 17, 'every free slot was used');
    const full = await open('203.0.113.100');
    assert.equal(full.status, 503);
    assert.match(await full.text(), /Too many applications are waiting/);

    // The owner's consent is still open: the right passphrase gets the code.
    const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: issuer, 'X-Forwarded-For': '192.0.2.1' },
      body: new URLSearchParams({ csrf, passphrase: PASS, action: 'approve' }) });
    assert.equal(res.status, 302, await res.text());
    assert.match(res.headers.get('location'), /[?&]code=[0-9a-f]{64}/);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// A server with a passphrase and one registered client; consent(addr) opens a consent page
// from addr and returns post(passphrase), which answers it from the same address. A CSRF token
// is spent by the POST that carries it: post goes on with the fresh one a wrong-passphrase page
// carries, as the owner retrying in the browser does.
async function consentServer(extra = {}, opts = {}) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const srv = await startHermes({ MCP_PORT: String(port), OAUTH_ISSUER_URL: issuer, TRUSTED_PROXIES: '127.0.0.1', ...extra }, opts);
  assert.equal(spawnSync(HERMES, ['oauth', 'passwd', '--env-file', srv.envFile], { input: `${PASS}\n` }).status, 0);
  const reg = await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'it', token_endpoint_auth_method: 'none' }) });
  const { client_id } = await reg.json();
  const url = new URL(`${issuer}/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id, redirect_uri: REDIRECT,
    code_challenge: createHash('sha256').update('v'.repeat(43)).digest('base64url'), code_challenge_method: 'S256' }))
    url.searchParams.set(k, v);
  const consent = async (addr) => {
    const html = await (await fetch(url, { headers: { 'X-Forwarded-For': addr } })).text();
    let csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)?.[1];
    assert.ok(csrf, html);
    return async (passphrase) => {
      const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: issuer, 'X-Forwarded-For': addr },
        body: new URLSearchParams({ csrf, passphrase, action: 'approve' }) });
      csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await res.clone().text())?.[1] ?? csrf;
      return res;
    };
  };
  return { srv, consent };
}

test('wrong passphrases from many addresses meet a global budget, with a warning', async () => {
  const { srv, consent } = await consentServer();
  try {
    // 6 addresses, 5 wrong guesses each (the per-address limit): 30 in the minute.
    for (let a = 1; a <= 6; a++) {
      const post = await consent(`198.51.100.${a}`);
      for (let i = 0; i < 5; i++) assert.equal((await post('wrong guess')).status, 403, `address ${a} guess ${i + 1}`);
    }
    const post = await consent('192.0.2.1');
    const res = await post(PASS);
    assert.equal(res.status, 429, 'the global budget is spent: nobody is checked this minute');
    assert.match(await res.text(), /Too many wrong passphrases were tried this minute/);
    assert.match(srv.proc.stderrText, /30 wrong consent passphrases this minute from all addresses/);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('guessing addresses cannot fill the passphrase checker\'s queue: the owner is still checked', async () => {
  const { srv, consent } = await consentServer({}, { env: { HERMES_TEST_CONSENT_DELAY_MS: '400' } });
  try {
    // Four forms from each of five addresses (a form takes one POST), all sent at once.
    const posts = [];
    for (let a = 1; a <= 5; a++)
      for (let i = 0; i < 4; i++) posts.push(await consent(`198.51.100.${a}`));
    const owner = await consent('192.0.2.1');
    let busy = 0;
    const guesses = posts.map((post) => post('wrong guess').then((r) => { busy += r.status === 503; return r.status; }));
    await until(() => busy > 0, 'the queue refusing a guess');
    const res = await owner(PASS);
    assert.equal(res.status, 302, await res.text());
    assert.ok((await Promise.all(guesses)).every((s) => s === 403 || s === 503));
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a consent POST refused because the checker\'s queue is full leaves its form usable: sent again later, it is checked', async () => {
  const { srv, consent } = await consentServer({}, { env: { HERMES_TEST_CONSENT_DELAY_MS: '500' } });
  try {
    // Twenty addresses, one form each (no address has a check running, so the places kept
    // free are theirs too): sixteen fill the queue, the others are told to wait.
    const posts = [];
    for (let a = 1; a <= 20; a++) posts.push(await consent(`198.51.100.${a}`));
    const owner = await consent('192.0.2.1');
    let busy = 0;
    const guesses = posts.map((post) => post('wrong guess').then((r) => { busy += r.status === 503; return r.status; }));
    await until(() => busy > 0, 'the queue refusing a guess');
    const first = await owner(PASS);
    assert.equal(first.status, 503, 'the queue is full');
    assert.match(await first.text(), /try again in a moment/);
    const statuses = await Promise.all(guesses);
    assert.equal(statuses.filter((s) => s === 403).length, 16, 'the queue held sixteen');
    // The same form again, as the owner does after "try again in a moment".
    const again = await owner(PASS);
    assert.equal(again.status, 302, await again.text());
    assert.match(again.headers.get('location'), /[?&]code=[0-9a-f]{64}/);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});
