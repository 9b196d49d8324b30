// With STORE_URL the OAuth authorization server's state is in PostgreSQL, so any replica serves
// any step: registration and consent on A, the code exchanged on B, refreshed on C, a tool call
// with each access token on every replica; /revoke on B refused on A within a second; the CLI's
// revocations (against any replica's env file) refused everywhere; a code replayed on another
// replica, or a rotated refresh token reused on another, revokes the family; SQL-looking text
// in every client-controlled field stored as text; wrong passphrases counted across replicas,
// and sixteen sent at once get five checks; a full client table makes room; the consent and
// client caps hold under concurrent requests; a client removed by the CLI issues nothing more;
// a consent's CSRF token stored hashed;
// the database stopped: 503 with Retry-After (cached tokens still work), then recovery. Real
// PostgreSQL 15, three real servers on one database, one issuer URL.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, freePort, setPassphrase, pkce, rpc, toolCall, hermesCli, until, OAUTH_PASS }
  from '../../lib/lib.mjs';
import { startPostgres, storeInit } from '../../lib/pg.mjs';

const REDIRECT = 'http://127.0.0.1:7777/callback';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
let pg, dir, issuer, a, b, c;

const base = (srv) => srv.url.replace(/\/mcp$/, '');
const form = (o) => new URLSearchParams(o).toString();

async function replica(port) {
  return startHermes({ STORE_URL: pg.url, OAUTH_ISSUER_URL: issuer, ...(port ? { MCP_PORT: String(port) } : {}) });
}

// A replica just started connects to the store on its own: until then OAuth answers 503.
async function connected(srv) {
  await until(async () => (await fetch(`${base(srv)}/authorize?${form({ response_type: 'code',
    client_id: 'f'.repeat(32), redirect_uri: REDIRECT })}`)).status !== 503, 'the store reached', 10000);
  return srv;
}

async function register(srv, extra = {}) {
  const res = await fetch(`${base(srv)}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'replicas', token_endpoint_auth_method: 'none', ...extra }) });
  return { status: res.status, retry: res.headers.get('retry-after'), body: await res.json() };
}

// The consent page shown by one replica, the owner's answer posted to another: the code.
async function authorize(show, answer, clientId, { state = 's-1', scope = 'hermes:read', pass = OAUTH_PASS } = {}) {
  const { verifier, challenge } = pkce();
  const url = `${base(show)}/authorize?${form({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT,
    code_challenge: challenge, code_challenge_method: 'S256', state, scope })}`;
  const page = await fetch(url, { redirect: 'manual' });
  const html = await page.text();
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)?.[1];
  assert.ok(csrf, `${page.status}: ${html.slice(0, 300)}`);
  const res = await fetch(`${base(answer)}/authorize`, { method: 'POST', redirect: 'manual',
    headers: { ...FORM, Origin: issuer }, body: form({ csrf, passphrase: pass, action: 'approve' }) });
  const location = res.headers.get('location');
  return { page, html, res, verifier, location, code: location && new URL(location).searchParams.get('code'),
    body: location ? '' : await res.text() };
}

async function token(srv, params) {
  const res = await fetch(`${base(srv)}/token`, { method: 'POST', headers: FORM, body: form(params) });
  return { status: res.status, retry: res.headers.get('retry-after'), body: await res.json() };
}

const exchange = (srv, clientId, code, verifier) => token(srv, { grant_type: 'authorization_code', code,
  redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier });
const refresh = (srv, clientId, rt) => token(srv, { grant_type: 'refresh_token', refresh_token: rt, client_id: clientId });
const status = async (srv, tok) => (await rpc(srv, tok, 'tools/list')).status;
// A revocation reaches the other replicas by the store's notification: refused within a second.
const refused = (srv, tok, what) => until(async () => (await status(srv, tok)) === 401, what, 1000);

// A client registered on C and allowed on A, its tokens from B: { id, tokens }.
async function authorized(extra) {
  const reg = await register(c, extra);
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const z = await authorize(a, a, reg.body.client_id);
  assert.ok(z.code, z.body);
  const t = await exchange(b, reg.body.client_id, z.code, z.verifier);
  assert.equal(t.status, 200, JSON.stringify(t.body));
  return { id: reg.body.client_id, tokens: t.body };
}

before(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'hm-storeoauth-'));
  const init = storeInit(pg, dir);
  assert.equal(init.status, 0, init.stderr);
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  a = await replica(port);
  b = await replica();
  c = await replica();
  setPassphrase(b.envFile); // to the store: every replica's consent reads it
});
after(async () => {
  if (process.env.HM_DEBUG) for (const s of [a, b, c]) console.log(s?.proc.stderrText.slice(-3000));
  await a?.stop();
  await b?.stop();
  await c?.stop();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('registered and allowed on A, exchanged on B, refreshed on C: each token works on every replica', async () => {
  assert.equal(await pg.psql("SELECT count(*) FROM hm_secret WHERE name = 'passphrase'"), '1');
  assert.match(await pg.psql("SELECT value FROM hm_secret WHERE name = 'passphrase'"), /^scrypt\$/);
  for (const srv of [a, b, c]) assert.ok(!existsSync(join(srv.dir, 'oauth-passphrase')), 'no file beside the env file');
  const reg = await register(a);
  assert.equal(reg.status, 201);
  const id = reg.body.client_id;
  // The consent page on A, the owner's answer through B (the consent is a row of the store).
  const z = await authorize(a, b, id);
  assert.equal(z.page.status, 200);
  assert.match(z.html, /replicas/, 'the client named on the page');
  assert.equal(z.res.status, 302, z.body);
  assert.equal(new URL(z.location).searchParams.get('state'), 's-1');
  const t = await exchange(b, id, z.code, z.verifier);
  assert.equal(t.status, 200, JSON.stringify(t.body));
  assert.equal(t.body.scope, 'hermes:read');
  for (const srv of [a, b, c]) {
    const r = await toolCall(srv, t.body.access_token, 'whoami');
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.match(JSON.stringify(r.structuredContent), new RegExp(`oauth:${id}`));
  }
  const t2 = await refresh(c, id, t.body.refresh_token);
  assert.equal(t2.status, 200, JSON.stringify(t2.body));
  assert.notEqual(t2.body.access_token, t.body.access_token);
  for (const srv of [a, b, c]) assert.equal(await status(srv, t2.body.access_token), 200);
  // The exchange left the code used: its replay on C is refused and revokes what it gave.
  const again = await exchange(c, id, z.code, z.verifier);
  assert.equal(again.status, 400);
  assert.equal(again.body.error, 'invalid_grant');
  for (const srv of [a, b, c]) {
    await refused(srv, t2.body.access_token, 'the family revoked everywhere');
    await refused(srv, t.body.access_token, 'the first token too');
  }
  assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_token WHERE client_id = '${id}'`), '0');
  for (const srv of [a, b, c]) assert.ok(!existsSync(join(srv.dir, 'oauth-tokens.json')), 'no token file');
});

test('a code is exchanged once across replicas: the loser of two at once revokes the family', async () => {
  const reg = await register(c);
  const id = reg.body.client_id;
  const z = await authorize(c, a, id);
  const [x, y] = await Promise.all([exchange(a, id, z.code, z.verifier), exchange(b, id, z.code, z.verifier)]);
  assert.deepEqual([x.status, y.status].sort(), [200, 400], JSON.stringify([x.body, y.body]));
  const won = x.status === 200 ? x.body : y.body;
  await refused(c, won.access_token, 'the winner\'s tokens revoked');
  assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_token WHERE client_id = '${id}'`), '0');
});

test('a rotated refresh token reused on another replica revokes the family on every replica', async () => {
  const { id, tokens } = await authorized();
  const r1 = await refresh(a, id, tokens.refresh_token);
  assert.equal(r1.status, 200);
  for (const srv of [a, b, c]) assert.equal(await status(srv, r1.body.access_token), 200);
  const reuse = await refresh(b, id, tokens.refresh_token);
  assert.equal(reuse.status, 400);
  assert.equal(reuse.body.error, 'invalid_grant');
  for (const srv of [a, b, c]) await refused(srv, r1.body.access_token, 'the family revoked');
  assert.equal((await refresh(c, id, r1.body.refresh_token)).status, 400, 'the new refresh token went too');
});

test('/revoke on B: A refuses the token it had cached within a second', async () => {
  const { id, tokens } = await authorized();
  assert.equal(await status(a, tokens.access_token), 200); // now in A's cache
  const t0 = Date.now();
  const res = await fetch(`${base(b)}/revoke`, { method: 'POST', headers: FORM,
    body: form({ token: tokens.refresh_token, client_id: id }) });
  assert.equal(res.status, 200);
  await refused(a, tokens.access_token, 'A refusing it');
  assert.ok(Date.now() - t0 < 1000);
  await refused(c, tokens.access_token, 'C refusing it');
});

test('the CLI revokes in the store: tokens and clients refused on every replica at once', async () => {
  const one = await authorized();
  const two = await authorized();
  for (const srv of [a, b, c]) assert.equal(await status(srv, one.tokens.access_token), 200);
  const list = await hermesCli(c, 'oauth', 'tokens', '--json');
  assert.equal(list.code, 0, list.stderr);
  assert.ok(JSON.parse(list.stdout).some((t) => t.client_id === one.id && t.kind === 'access'));
  const t0 = Date.now();
  const r = await hermesCli(c, 'oauth', 'tokens', 'revoke', '--client', one.id);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /revoked 2 tokens/);
  for (const srv of [a, b]) await refused(srv, one.tokens.access_token, 'the CLI\'s revocation');
  assert.ok(Date.now() - t0 < 1500, `${Date.now() - t0} ms`);
  const clients = await hermesCli(a, 'oauth', 'clients', '--json');
  assert.ok(JSON.parse(clients.stdout).some((x) => x.client_id === two.id));
  const rc = await hermesCli(b, 'oauth', 'clients', 'revoke', two.id);
  assert.equal(rc.code, 0, rc.stderr);
  for (const srv of [a, b, c]) await refused(srv, two.tokens.access_token, 'the client\'s tokens');
  const t = await refresh(a, two.id, two.tokens.refresh_token);
  assert.equal(t.status, 401, 'the client is gone on A too');
  assert.equal(t.body.error, 'invalid_client');
});

test('a client removed through the CLI: its code exchanged on another replica is refused', async () => {
  const reg = await register(c);
  const id = reg.body.client_id;
  const z = await authorize(b, b, id); // B has the client cached
  assert.ok(z.code, z.body);
  assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_code WHERE doc::json->>'client_id' = '${id}'`), '1');
  const rc = await hermesCli(c, 'oauth', 'clients', 'revoke', id);
  assert.equal(rc.code, 0, rc.stderr);
  assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_code WHERE doc::json->>'client_id' = '${id}'`), '0',
    'its codes went with it');
  const t = await exchange(a, id, z.code, z.verifier);
  assert.notEqual(t.status, 200, JSON.stringify(t.body));
  // A replica that missed the removal's notification still holds the client: the exchange's
  // statement itself finds it gone.
  const two = (await register(b)).body.client_id;
  const y = await authorize(b, b, two);
  assert.ok(y.code, y.body);
  await pg.psql(`DELETE FROM hm_oauth_client WHERE id = '${two}'`); // no notification
  const u = await exchange(b, two, y.code, y.verifier);
  assert.equal(u.status, 400, JSON.stringify(u.body));
  assert.equal(u.body.error, 'invalid_grant');
  assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_token WHERE client_id = '${two}'`), '0');
  await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'register:%'"); // the next tests' minute
});

test('a consent\'s CSRF token is stored as its SHA-256 only, and still answers on another replica', async () => {
  await pg.psql('DELETE FROM hm_oauth_consent');
  const id = (await register(c)).body.client_id;
  const page = await fetch(`${base(a)}/authorize?${form({ response_type: 'code', client_id: id, redirect_uri: REDIRECT,
    code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'h' })}`, { redirect: 'manual' });
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await page.text())[1];
  assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_consent WHERE csrf_sha256 = '${csrf}' OR doc LIKE '%${csrf}%'`), '0',
    'the token itself is nowhere in the store');
  assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_consent WHERE csrf_sha256 = '${createHash('sha256').update(csrf).digest('hex')}'`), '1');
  const res = await fetch(`${base(b)}/authorize`, { method: 'POST', redirect: 'manual',
    headers: { ...FORM, Origin: issuer }, body: form({ csrf, passphrase: OAUTH_PASS, action: 'approve' }) });
  assert.equal(res.status, 302);
  assert.equal(await pg.psql('SELECT count(*) FROM hm_oauth_consent'), '0', 'the consent spent and dropped');
});

test('SQL-looking text in client_name, redirect_uri, scope and state is stored and shown as text', async () => {
  const evil = "x'); DROP TABLE hm_oauth_token; --";
  const uri = `${REDIRECT}?q=${encodeURIComponent("'; DELETE FROM hm_oauth_client; --")}`;
  const res = await fetch(`${base(a)}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [uri], client_name: evil, token_endpoint_auth_method: 'none' }) });
  assert.equal(res.status, 201);
  const id = (await res.json()).client_id;
  const { verifier, challenge } = pkce();
  const state = "1' OR '1'='1";
  const page = await fetch(`${base(b)}/authorize?${form({ response_type: 'code', client_id: id, redirect_uri: uri,
    code_challenge: challenge, code_challenge_method: 'S256', state, scope: "hermes:read x'; DROP TABLE hm_secret; --" })}`,
  { redirect: 'manual' });
  const html = await page.text();
  assert.equal(page.status, 200, html.slice(0, 300));
  assert.ok(html.includes('x&#39;); DROP TABLE hm_oauth_token; --'), 'the name shown as text');
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)[1];
  const post = await fetch(`${base(c)}/authorize`, { method: 'POST', redirect: 'manual',
    headers: { ...FORM, Origin: issuer }, body: form({ csrf, passphrase: OAUTH_PASS, action: 'approve' }) });
  assert.equal(post.status, 302);
  const back = new URL(post.headers.get('location'));
  assert.equal(back.searchParams.get('state'), state);
  const t = await token(a, { grant_type: 'authorization_code', code: back.searchParams.get('code'),
    redirect_uri: uri, client_id: id, code_verifier: verifier });
  assert.equal(t.status, 200, JSON.stringify(t.body));
  assert.equal(t.body.scope, 'hermes:read', 'the foreign scope dropped, not run');
  assert.equal(await pg.psql('SELECT count(*) > 0 FROM hm_oauth_token'), 't');
  assert.equal(await pg.psql(`SELECT doc::json->>'client_name' FROM hm_oauth_client WHERE id = '${id}'`), evil);
  assert.equal(await pg.psql("SELECT count(*) FROM hm_secret WHERE name = 'passphrase'"), '1');
  // A token that is SQL: unknown, not an error.
  assert.equal(await status(b, "' OR 1=1 --"), 401);
});

test('wrong passphrases count across replicas: the sixth from one address is refused on any', async () => {
  const reg = await register(a);
  const id = reg.body.client_id;
  const codes = [];
  for (const [show, answer] of [[a, b], [b, c], [c, a], [a, c], [b, a]]) {
    const z = await authorize(show, answer, id, { pass: 'not the passphrase at all' });
    codes.push(z.res.status);
  }
  assert.deepEqual(codes, [403, 403, 403, 403, 403]);
  const z = await fetch(`${base(c)}/authorize?${form({ response_type: 'code', client_id: id, redirect_uri: REDIRECT,
    code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'x' })}`, { redirect: 'manual' });
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(await z.text())[1];
  const sixth = await fetch(`${base(b)}/authorize`, { method: 'POST', redirect: 'manual',
    headers: { ...FORM, Origin: issuer }, body: form({ csrf, passphrase: OAUTH_PASS, action: 'approve' }) });
  assert.equal(sixth.status, 429, 'even the right passphrase waits: five wrong ones this minute');
  assert.ok(Number(sixth.headers.get('retry-after')) >= 1);
  await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'consent:%'"); // the next tests' minute
});

test('sixteen wrong passphrases at once through three replicas: at most five checked, the rest 429', async () => {
  await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'consent:%'");
  await pg.psql('DELETE FROM hm_oauth_consent');
  const fresh = [await connected(await replica()), await connected(await replica()),
    await connected(await replica())]; // no failure remembered locally
  try {
    const id = (await register(fresh[0])).body.client_id;
    const csrfs = [];
    for (let i = 0; i < 16; i++) {
      const page = await fetch(`${base(fresh[i % 3])}/authorize?${form({ response_type: 'code', client_id: id,
        redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: `p${i}` })}`,
      { redirect: 'manual' });
      const html = await page.text();
      csrfs.push(/name="csrf" value="([0-9a-f]{64})"/.exec(html)?.[1]);
      assert.ok(csrfs[i], `${page.status}: ${html.slice(0, 300)}`);
    }
    const answers = await Promise.all(csrfs.map(async (csrf, i) => {
      const res = await fetch(`${base(fresh[(i + 1) % 3])}/authorize`, { method: 'POST', redirect: 'manual',
        headers: { ...FORM, Origin: issuer }, body: form({ csrf, passphrase: 'wrong guess', action: 'approve' }) });
      return { status: res.status, retry: res.headers.get('retry-after'), text: await res.text() };
    }));
    const checked = answers.filter((x) => /Wrong passphrase/.test(x.text)).length;
    const refused = answers.filter((x) => x.status === 429);
    assert.ok(checked >= 1 && checked <= 5, `${checked} checked: ${answers.map((x) => x.status)}`);
    assert.equal(refused.length, 16 - checked, `${answers.map((x) => x.status)}`);
    for (const x of refused) assert.ok(Number(x.retry) >= 1);
    // Only the attempts within the address's limit count for everyone: one address alone
    // cannot use up the 30 of all addresses and keep the owner out.
    assert.equal(await pg.psql("SELECT n FROM hm_oauth_counter WHERE key = 'consent:*'"), String(checked));
  } finally {
    for (const srv of fresh) await srv.stop();
    await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'consent:%'");
    await pg.psql('DELETE FROM hm_oauth_consent'); // sixteen open from this address
  }
});

test('the client table full: a registration takes the oldest client with no token and no live code', async () => {
  await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'register:%'");
  const kept = await authorized(); // has tokens: never the one to go
  await pg.psql(`UPDATE hm_oauth_client SET created_at = now() - interval '3 days' WHERE id = '${kept.id}'`);
  const fill = 1000 - Number(await pg.psql('SELECT count(*) FROM hm_oauth_client'));
  await pg.psql(`INSERT INTO hm_oauth_client (id, doc, created_at) SELECT 'fill' || i, '{}',
    now() - interval '1 day' + i * interval '1 second' FROM generate_series(1, ${fill}) AS i`);
  try {
    assert.equal(await pg.psql('SELECT count(*) FROM hm_oauth_client'), '1000');
    const oldest = 'fill1'; // the kept client is older, but has tokens
    const reg = await register(b);
    assert.equal(reg.status, 201, JSON.stringify(reg.body));
    assert.equal(await pg.psql('SELECT count(*) FROM hm_oauth_client'), '1000');
    assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_client WHERE id = '${oldest}'`), '0', 'the oldest unused went');
    assert.equal(await pg.psql(`SELECT count(*) FROM hm_oauth_client WHERE id = '${kept.id}'`), '1');
    assert.equal(await status(a, kept.tokens.access_token), 200);
    // Every client holding a token: none can go, so the registration is refused.
    await pg.psql(`INSERT INTO hm_oauth_token (sha256, doc, kind, client_id, issued_at, expires_at)
      SELECT 'filltok' || id, '{}', 'access', id, 0, now() + interval '1 hour' FROM hm_oauth_client o
      WHERE NOT EXISTS (SELECT 1 FROM hm_oauth_token t WHERE t.client_id = o.id)`);
    const full = await register(c);
    assert.equal(full.status, 400, JSON.stringify(full.body));
    assert.equal(full.body.error, 'temporarily_unavailable');
    assert.equal(await pg.psql('SELECT count(*) FROM hm_oauth_client'), '1000');
    // 999, none that can go: registrations at once through three replicas never pass 1000 (each
    // after the first takes the place of the one before, the only client with no token).
    await pg.psql("DELETE FROM hm_oauth_token WHERE sha256 = 'filltokfill2'");
    await pg.psql("DELETE FROM hm_oauth_client WHERE id = 'fill2'");
    await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'register:%'");
    const fresh = [await connected(await replica()), await connected(await replica()),
      await connected(await replica())]; // no registration counted locally
    try {
      const regs = await Promise.all(Array.from({ length: 9 }, (_, i) => register(fresh[i % 3])));
      assert.deepEqual(regs.map((x) => x.status), Array(9).fill(201));
      assert.equal(await pg.psql('SELECT count(*) FROM hm_oauth_client'), '1000');
    } finally {
      for (const srv of fresh) await srv.stop();
    }
  } finally {
    await pg.psql("DELETE FROM hm_oauth_token WHERE sha256 LIKE 'filltok%'");
    await pg.psql("DELETE FROM hm_oauth_client WHERE id LIKE 'fill%'");
    await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'register:%'");
  }
});

test('consent pages at once through three replicas: never more than sixteen open from one address', async () => {
  await pg.psql('DELETE FROM hm_oauth_consent');
  const id = (await register(b)).body.client_id;
  try {
    const pages = await Promise.all(Array.from({ length: 40 }, (_, i) => fetch(`${base([a, b, c][i % 3])}/authorize?${form({
      response_type: 'code', client_id: id, redirect_uri: REDIRECT, code_challenge: pkce().challenge,
      code_challenge_method: 'S256', state: `c${i}` })}`, { redirect: 'manual' }).then(async (r) => (await r.text(), r.status))));
    assert.equal(pages.filter((x) => x === 200).length, 16, `${pages}`);
    assert.equal(pages.filter((x) => x === 429).length, 24, `${pages}`);
    assert.equal(await pg.psql('SELECT count(*) FROM hm_oauth_consent'), '16');
  } finally {
    await pg.psql('DELETE FROM hm_oauth_consent');
  }
});

test('registrations count across replicas: the eleventh of a minute from one address is refused', async () => {
  await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'register:%'");
  for (let i = 0; i < 10; i++) assert.equal((await register(i % 2 ? a : b)).status, 201, `registration ${i + 1}`);
  const over = await register(b);
  assert.equal(over.status, 429, JSON.stringify(over.body));
  assert.equal(over.retry, '60');
  assert.equal(await pg.psql("SELECT n FROM hm_oauth_counter WHERE key LIKE 'register:%'"), '11');
  await pg.psql("DELETE FROM hm_oauth_counter WHERE key LIKE 'register:%'");
});

test('the database stopped: 503 with Retry-After, cached tokens still work; then recovery', async () => {
  const { id, tokens } = await authorized();
  assert.equal(await status(c, tokens.access_token), 200); // cached on C
  await pg.kill();
  try {
    const t = await refresh(c, id, tokens.refresh_token);
    assert.equal(t.status, 503, JSON.stringify(t.body));
    assert.ok(Number(t.retry) >= 1);
    const reg = await register(b);
    assert.equal(reg.status, 503);
    assert.ok(Number(reg.retry) >= 1);
    const page = await fetch(`${base(a)}/authorize?${form({ response_type: 'code', client_id: id, redirect_uri: REDIRECT,
      code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'x' })}`, { redirect: 'manual' });
    assert.equal(page.status, 503);
    assert.ok(Number(page.headers.get('retry-after')) >= 1);
    assert.equal(await status(c, tokens.access_token), 200, 'a cached token keeps working');
    const unknown = await rpc(b, 'f'.repeat(64), 'tools/list');
    assert.equal(unknown.status, 503, 'a token not cached cannot be judged');
  } finally {
    await pg.restart();
  }
  // Back: every step works again (pgconn reconnects with its backoff).
  const t = await until(async () => { const r = await refresh(c, id, tokens.refresh_token); return r.status === 503 ? null : r; },
    'the store back', 15000);
  assert.equal(t.status, 200, JSON.stringify(t.body));
  // Each replica reconnects on its own backoff (up to 5 s): until then a token it never saw
  // is a 503 there, never a refusal.
  for (const srv of [a, b, c]) {
    await until(async () => { const st = await status(srv, t.body.access_token); assert.notEqual(st, 401); return st === 200; },
      'the token judged on every replica', 15000);
  }
});

test('doctor reads the OAuth state from the store, not the files beside the env file', async () => {
  const r = spawnSync(HERMES, ['doctor', '--env-file', a.envFile, '--timeout', '3'], { encoding: 'utf8' });
  const out = r.stdout + r.stderr;
  assert.match(out, /OAuth state in the store: \d+ tokens?, \d+ clients?, a consent passphrase/);
  assert.doesNotMatch(out, /oauth-passphrase|oauth-tokens\.json/);
});
