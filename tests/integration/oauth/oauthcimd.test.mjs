// Client ID metadata documents: a client_id that is an https URL names a JSON
// document hermes-mcp fetches on its event loop. A throwaway CA and certificate (openssl) serve
// the documents from a local https server the server trusts through OAUTH_CIMD_CA_FILE; as that
// server is on 127.0.0.1, OAUTH_CIMD_ALLOW_HOSTS=localhost lets "localhost" resolve there, while
// https://127.0.0.1/... itself is refused as a loopback address. The SDK client runs the whole
// flow with clientMetadataUrl (no registration); then each bad document is refused with its
// reason: huge, slow (timeout, while the server answers others), a redirect to 127.0.0.1, a
// private address, a client_id mismatch, a redirect_uri not listed, a non-https client_id,
// malformed JSON, private_key_jwt; and OAUTH_CIMD=0 turns the feature off.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpsServer } from 'node:https';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { startOAuth, until, post, INIT, HERMES, OAUTH_PASS as PASS, freePort, oauthProvider,
  pkce, approveConsent } from '../../lib/lib.mjs';

const REDIRECT = 'http://127.0.0.1:7777/callback';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGMSstw-cM';

function openssl(args, cwd) {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  assert.equal(r.status, 0, `openssl ${args.join(' ')}: ${r.stderr}`);
}

// A CA, and a certificate it signed for localhost and 127.0.0.1.
function makeCerts(dir) {
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=hermes-mcp test CA'], dir);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=localhost'], dir);
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  openssl(['x509', '-req', '-in', 'srv.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'srv.pem', '-days', '1', '-extfile', 'ext.cnf'], dir);
  return { ca: join(dir, 'ca.pem'), key: readFileSync(join(dir, 'srv.key')), cert: readFileSync(join(dir, 'srv.pem')) };
}

let dir, docs, docPort, hits = [];
const slowPending = [];
let slowClosed = 0;
const docUrl = (path, host = 'localhost') => `https://${host}:${docPort}${path}`;
const goodDoc = (path, extra = {}) => ({ client_id: docUrl(path), client_name: 'CIMD <test> app',
  redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], ...extra });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-cimd-'));
  const { ca, key, cert } = makeCerts(dir);
  docPort = await freePort();
  docs = createHttpsServer({ key, cert }, (req, res) => {
    hits.push({ host: req.headers.host, path: req.url });
    const json = (o, headers = {}) => { res.writeHead(200, { 'Content-Type': 'application/json', ...headers }); res.end(JSON.stringify(o)); };
    switch (req.url.split('?')[0]) {
      case '/good.json': return json(goodDoc('/good.json'));
      case '/nostore.json': return json(goodDoc('/nostore.json'), { 'Cache-Control': 'no-store' });
      case '/mismatch.json': return json(goodDoc('/mismatch.json', { client_id: docUrl('/other.json') }));
      case '/jwt.json': return json(goodDoc('/jwt.json', { token_endpoint_auth_method: 'private_key_jwt' }));
      case '/secret.json': return json(goodDoc('/secret.json', { token_endpoint_auth_method: 'client_secret_basic' }));
      case '/malformed.json': res.writeHead(200, { 'Content-Type': 'application/json' }); return res.end('{"client_id": "x",');
      case '/redirect.json':
        res.writeHead(302, { Location: docUrl('/good.json', '127.0.0.1') });
        return res.end();
      case '/huge.json': { // no Content-Length: the cap must hold while the bytes arrive
        res.writeHead(200, { 'Content-Type': 'application/json' });
        const chunk = ' '.repeat(16384);
        let sent = 0;
        const more = () => { while (sent < 4 << 20) { sent += chunk.length; if (!res.write(chunk)) return res.once('drain', more); } res.end('{}'); };
        res.on('error', () => {});
        return more();
      }
      case '/slow.json': // never answered; a closed one counts
        slowPending.push(res);
        res.on('close', () => { slowClosed += 1; });
        return undefined;
      default:
        if (req.url.startsWith('/connectors/')) return json(goodDoc(req.url)); // long client ids
        res.writeHead(404); return res.end();
    }
  });
  await new Promise((r) => docs.listen(docPort, '127.0.0.1', r));
  docs.ca = ca;
});

after(async () => {
  for (const r of slowPending) r.destroy();
  docs.closeAllConnections();
  await new Promise((r) => docs.close(r));
  rmSync(dir, { recursive: true, force: true });
});

function startCimd(extra = {}) {
  return startOAuth({ OAUTH_CIMD_CA_FILE: docs.ca, OAUTH_CIMD_ALLOW_HOSTS: 'localhost', ...extra });
}

function authorizeUrl(issuer, clientId, redirect = REDIRECT) {
  const u = new URL(`${issuer}/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: clientId, redirect_uri: redirect,
    state: 's1', code_challenge: CHALLENGE, code_challenge_method: 'S256' })) u.searchParams.set(k, v);
  return u;
}

// What /authorize says of a client_id it refuses: 400 and the reason on the page.
async function refused(issuer, clientId, reason, redirect) {
  const res = await fetch(authorizeUrl(issuer, clientId, redirect), { redirect: 'manual' });
  const html = await res.text();
  assert.equal(res.status, 400, `${clientId}: ${html}`);
  assert.match(res.headers.get('content-type'), /text\/html/);
  assert.match(res.headers.get('content-security-policy'), /frame-ancestors 'none'/);
  assert.ok(!/name="csrf"/.test(html), 'no consent form');
  assert.match(html, reason, `${clientId}: ${html}`);
  return html;
}

test('the SDK client authorizes with a client ID metadata document: consent names it and its host, token, calls', async () => {
  const { srv, issuer } = await startCimd();
  try {
    const meta = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
    assert.equal(meta.client_id_metadata_document_supported, true);

    const clientUrl = docUrl('/good.json');
    const { st, provider } = oauthProvider(REDIRECT, { clientMetadataUrl: clientUrl,
      clientMetadata: { redirect_uris: [REDIRECT], client_name: 'unused', token_endpoint_auth_method: 'none' },
      state: 'state-cimd' });
    const connect = async () => {
      const client = new Client({ name: 'oauth-cimd-it', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { authProvider: provider }));
      return client;
    };
    hits = [];
    await assert.rejects(connect(), /Unauthorized/);
    assert.equal(st.authUrl.searchParams.get('client_id'), clientUrl, 'the URL is the client_id, no DCR');

    const page = await fetch(st.authUrl);
    const html = await page.text();
    assert.equal(page.status, 200, html);
    assert.ok(html.includes('<strong id="client">CIMD &lt;test&gt; app</strong>'), html);
    assert.ok(html.includes(`<strong id="clienthost">localhost:${docPort}</strong>`), html);
    assert.ok(html.includes('<strong id="host">127.0.0.1:7777</strong>'), 'the redirect host');
    assert.deepEqual(hits.map((h) => h.path), ['/good.json'], 'fetched once');
    // A second /authorize comes from the cache.
    assert.equal((await fetch(st.authUrl)).status, 200);
    assert.equal(hits.length, 1, 'cached');

    const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)[1];
    // A wrong passphrase shows the page again, still naming the client and its host.
    const wrong = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: issuer },
      body: new URLSearchParams({ csrf, passphrase: 'not the passphrase', action: 'approve' }).toString() });
    const again = await wrong.text();
    assert.equal(wrong.status, 403);
    assert.ok(again.includes('<strong id="client">CIMD &lt;test&gt; app</strong>'), again);
    assert.ok(again.includes(`<strong id="clienthost">localhost:${docPort}</strong>`), again);
    // The token sent is spent; the page again carries a fresh one.
    const fresh = /name="csrf" value="([0-9a-f]{64})"/.exec(again)[1];
    assert.notEqual(fresh, csrf);
    const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: issuer },
      body: new URLSearchParams({ csrf: fresh, passphrase: PASS, action: 'approve' }).toString() });
    assert.equal(res.status, 302);
    const code = new URL(res.headers.get('location')).searchParams.get('code');
    assert.match(code, /^[0-9a-f]{64}$/);
    assert.equal(await auth(provider, { serverUrl: srv.url, authorizationCode: code }), 'AUTHORIZED');
    assert.match(st.tokens.access_token, /^[0-9a-f]{64}$/);

    const client = await connect();
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('list_agents'), names.join());
    const agents = await client.callTool({ name: 'list_agents', arguments: {} });
    assert.ok(!agents.isError, JSON.stringify(agents));
    await client.close();

    // A document sent with Cache-Control: no-store is fetched again each time.
    hits = [];
    const ns = authorizeUrl(issuer, docUrl('/nostore.json'));
    assert.equal((await fetch(ns)).status, 200);
    assert.equal((await fetch(ns)).status, 200);
    assert.equal(hits.length, 2, 'no-store is not cached');
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('bad client ID metadata documents are refused, each with its reason; the server serves others meanwhile', async () => {
  const { srv, issuer } = await startCimd();
  try {
    hits = [];
    await refused(issuer, `http://localhost:${docPort}/good.json`, /must use https/);
    await refused(issuer, `https://localhost:${docPort}/`, /must have a path/);
    await refused(issuer, `https://user@localhost:${docPort}/good.json`, /user name or password/);
    await refused(issuer, `https://localhost:${docPort}/a/../good.json`, /\. or \.\. path segments/);
    assert.equal(hits.length, 0, 'nothing fetched for an invalid client_id URL');

    // Loopback, private and link-local addresses: refused before any byte goes there.
    await refused(issuer, docUrl('/good.json', '127.0.0.1'), /private, loopback or link-local/);
    await refused(issuer, 'https://10.11.12.13/client.json', /private, loopback or link-local/);
    await refused(issuer, 'https://169.254.169.254/latest/meta-data.json', /private, loopback or link-local/);
    await refused(issuer, 'https://[::1]/client.json', /private, loopback or link-local/);
    assert.equal(hits.length, 0, 'no connection made to a refused address');

    // A redirect, here to 127.0.0.1, is not followed.
    await refused(issuer, docUrl('/redirect.json'), /redirects are not followed/);
    assert.deepEqual(hits.map((h) => h.host), [`localhost:${docPort}`], 'the redirect target never fetched');

    await refused(issuer, docUrl('/huge.json'), /larger than 5120 bytes/);
    await refused(issuer, docUrl('/mismatch.json'), /client_id is not the URL it was fetched from/);
    await refused(issuer, docUrl('/malformed.json'), /not valid JSON/);
    await refused(issuer, docUrl('/jwt.json'), /private_key_jwt is not supported/);
    await refused(issuer, docUrl('/secret.json'), /must be none/);
    await refused(issuer, docUrl('/missing.json'), /answered HTTP 404/);
    await refused(issuer, docUrl('/good.json'), /not one this application registered/,
      'http://127.0.0.1:7777/elsewhere');

    // Slow documents: each /authorize waits (5 s), the server answers others meanwhile; at most
    // 16 fetches at once, more get 503.
    const t0 = Date.now();
    const slow = [];
    for (let i = 0; i < 16; i++) slow.push(refused(issuer, `${docUrl('/slow.json')}?${i}`, /did not arrive in time/));
    await until(() => slowPending.length === 16, 'the 16 slow fetches under way', 3000);
    const busy = await fetch(authorizeUrl(issuer, docUrl('/nostore.json'))); // never cached
    assert.equal(busy.status, 503);
    assert.equal(busy.headers.get('retry-after'), '5');
    assert.match(await busy.text(), /Too many application descriptions/);
    const meta = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
    assert.equal(meta.status, 200);
    const dcr = await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'registered meanwhile' }) });
    assert.equal(dcr.status, 201, 'registration answered meanwhile');
    const registered = await fetch(authorizeUrl(issuer, (await dcr.json()).client_id));
    assert.equal(registered.status, 200, 'another client authorizes meanwhile');
    assert.ok(Date.now() - t0 < 3000, 'answered while the slow fetches wait');
    await Promise.all(slow);
    const took = Date.now() - t0;
    assert.ok(took >= 4500 && took < 9000, `timed out after ${took} ms`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('an OAUTH_CIMD_CA_FILE that cannot be read stops the server with the reason', async () => {
  const missing = join(dir, 'no-such-ca.pem');
  const started = await startCimd({ OAUTH_CIMD_CA_FILE: missing }).then((srv) => srv, (e) => e);
  if (!(started instanceof Error)) await started.srv.stop();
  assert.ok(started instanceof Error, 'refused');
  assert.match(started.message, /exited with 2 .*OAUTH_CIMD_CA_FILE .*no-such-ca\.pem cannot be read/s);
});

test('a client_id host not allowed to be private is refused even when it is the test server; OAUTH_CIMD=0 turns documents off', async () => {
  let { srv, issuer } = await startCimd({ OAUTH_CIMD_ALLOW_HOSTS: '' });
  try {
    hits = [];
    await refused(issuer, docUrl('/good.json'), /private, loopback or link-local/);
    assert.equal(hits.length, 0);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  ({ srv, issuer } = await startCimd({ OAUTH_CIMD: '0' }));
  try {
    const meta = await (await fetch(`${issuer}/.well-known/oauth-authorization-server`)).json();
    assert.equal(meta.client_id_metadata_document_supported, undefined);
    await refused(issuer, docUrl('/good.json'), /OAUTH_CIMD=0/);
    assert.equal(hits.length, 0);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a client that leaves while its document is fetched, and a stop while one is fetched: clean', async () => {
  const { srv, issuer } = await startCimd();
  let stopped = false;
  try {
    const before = slowPending.length;
    const gone = new AbortController();
    const left = fetch(authorizeUrl(issuer, docUrl('/slow.json')), { signal: gone.signal });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(slowPending.length, before + 1, 'the fetch is under way');
    const closedBefore = slowClosed;
    gone.abort();
    await assert.rejects(left, /abort/i);
    await until(() => slowClosed === closedBefore + 1, 'the fetch cancelled with its request', 2000);
    // The server goes on: another client authorizes.
    assert.equal((await fetch(authorizeUrl(issuer, docUrl('/good.json')))).status, 200);

    const waiting = fetch(authorizeUrl(issuer, docUrl('/slow.json'))).then((r) => r.status, () => 'closed');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(slowPending.length, before + 2, 'a second fetch is under way');
    const t0 = Date.now();
    const code = await srv.stop();
    stopped = true;
    assert.equal(code, 0, srv.proc.stderrText);
    const status = await waiting;
    assert.ok(status === 503 || status === 400 || status === 'closed', `answered ${status}`);
    assert.ok(Date.now() - t0 < 8000, 'the stop did not hang on the fetch');
  } finally {
    if (!stopped) await srv.stop();
  }
});

// A client_id URL is longer than a principal name (64): two documents whose URLs differ only
// past the cut must still be two principals (tasks, /metrics, the audit log go by the name).
// Each is named "oauth:" + its first 37 characters + "#" + 20 hex digits of its SHA-256.
test('two long client_id URLs alike in their first 58 characters are two principals', async () => {
  const { srv, issuer } = await startCimd();
  try {
    const ids = ['one', 'two'].map((n) => docUrl(`/connectors/hermes/metadata/documents/client-${n}.json`));
    assert.ok(ids.every((id) => id.length > 58) && ids[0].slice(0, 58) === ids[1].slice(0, 58));
    for (const id of ids) {
      const { verifier, challenge } = pkce();
      const u = authorizeUrl(issuer, id);
      u.searchParams.set('code_challenge', challenge);
      const { page, html, res: ok, code } = await approveConsent(issuer, u);
      assert.equal(page.status, 200, html);
      assert.equal(ok.status, 302);
      const tok = await fetch(`${issuer}/token`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', client_id: id, code, code_verifier: verifier, redirect_uri: REDIRECT }).toString() });
      assert.equal(tok.status, 200);
      const { access_token } = await tok.json();
      assert.equal((await post(srv, INIT(), { Authorization: `Bearer ${access_token}` })).status, 200);
    }
    const m = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
    const names = ids.map((id) => `oauth:${id.slice(0, 37)}#${createHash('sha256').update(id).digest('hex').slice(0, 20)}`);
    for (const name of names) {
      assert.equal(name.length, 64);
      assert.ok(m.includes(`hermes_mcp_principal_requests_total{principal="${name}"} 1`), `${name}:\n${m}`);
    }
    const listed = spawnSync(HERMES, ['oauth', 'tokens', '--json', '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.equal(listed.status, 0, listed.stderr);
    assert.deepEqual([...new Set(JSON.parse(listed.stdout).map((t) => t.principal))].sort(), names.sort());
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});
