// Helpers for the OIDC tests: start a real OpenID provider (tests/fakes/oidc-provider.mjs, panva's
// oidc-provider), get tokens from it as a machine client (client credentials) and as a user
// (authorization code with PKCE, its sign-in and consent forms submitted with plain fetch), and
// forge the bad tokens an attacker sends, with jose, using the provider's own keys or new ones.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { createHash, createHmac, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { ROOT, pkce, freePort, startHermes, connectClient, rpc, sleep } from './lib.mjs';

// rpc (lib.mjs) is the OIDC tests' request too: a token of the provider's as the bearer.
export { rpc };

export const OIDC_PROVIDER = join(ROOT, 'tests/fakes/oidc-provider.mjs');
// jose 6 from tools/oidc (scripts/node-tools.sh oidc), the library oidc-provider signs with.
export const jose = await import(toolPath('jose'));

// Where a package of tools/oidc is, or a plain error naming the command that installs it.
function toolPath(pkg) {
  try {
    return createRequire(join(ROOT, 'tools/oidc/')).resolve(pkg);
  } catch {
    throw new Error(`${pkg} is not in tools/oidc: run scripts/node-tools.sh oidc`);
  }
}

export const ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'];

// A new private JWK for alg (RS256, PS256, ES256, EdDSA) with a kid of its own (kid: given).
export function newKey(alg = 'RS256', kid = `${alg.toLowerCase()}-${randomBytes(6).toString('hex')}`) {
  let pair;
  if (alg === 'RS256' || alg === 'PS256') pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  else if (alg === 'ES256') pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  else if (alg === 'EdDSA') pair = generateKeyPairSync('ed25519');
  else throw new Error(`newKey: alg ${alg}`);
  return { ...pair.privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

// The public half of a private JWK (what a JWKS publishes).
export function publicJwk(jwk) {
  const { d, p, q, dp, dq, qi, ...pub } = jwk;
  return pub;
}

// Starts the provider. opts: the provider's configuration (tests/fakes/oidc-provider.mjs says
// each key); clients and secrets are made here when not given, so the test knows them (their
// ids start with opts.idPrefix, default none):
//   machine       client_credentials, client_secret_basic (claims: opts.machineClaims)
//   app           public, authorization code + PKCE, loopback redirect (any port)
//   introspector  confidential: the resource server's own credentials for introspection
// Returns { issuer, proc, keys, clients, state(), rotate(), fault(), reset(), jwksFetches(),
// clientCredentials(), authorizationCode(), introspect(), stop() }.
export async function startOidc(opts = {}) {
  const { machineClaims, idPrefix = '', ...rest } = opts;
  const alg = rest.alg ?? 'RS256';
  const clients = {
    machine: { id: `${idPrefix}machine`, secret: randomBytes(24).toString('hex') },
    app: { id: `${idPrefix}app`, redirect: 'http://127.0.0.1/callback' },
    introspector: { id: `${idPrefix}introspector`, secret: randomBytes(24).toString('hex') },
  };
  const config = {
    alg,
    keys: rest.keys ?? [newKey(alg)],
    clients: rest.clients ?? [
      { client_id: clients.machine.id, client_secret: clients.machine.secret, grant_types: ['client_credentials'],
        response_types: [], token_endpoint_auth_method: 'client_secret_basic',
        ...(machineClaims ? { claims: machineClaims } : {}) },
      { client_id: clients.app.id, application_type: 'native', token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        redirect_uris: [clients.app.redirect] },
      { client_id: clients.introspector.id, client_secret: clients.introspector.secret,
        grant_types: ['client_credentials'], response_types: [], token_endpoint_auth_method: 'client_secret_basic' },
    ],
    ...rest,
    exitWithStdin: true,
  };
  // Keys and secrets go through the environment, never argv.
  const proc = spawn(process.execPath, [OIDC_PROVIDER], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, OIDC_PROVIDER_CONFIG: JSON.stringify(config) },
  });
  proc.stderrText = '';
  proc.stderr.on('data', (d) => { proc.stderrText += d; });
  const issuer = await new Promise((res, rej) => {
    let out = '';
    const timer = setTimeout(() => rej(new Error(`oidc-provider: no issuer line in 30 s\n${proc.stderrText}`)), 30000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^(http:\/\/127\.0\.0\.1:\d+)\n/);
      if (m) { clearTimeout(timer); res(m[1]); }
    });
    proc.on('close', (code) => { clearTimeout(timer); rej(new Error(`oidc-provider exited with ${code}:\n${proc.stderrText}`)); });
  });

  const control = async (path, body) => {
    const r = await fetch(`${issuer}/_harness/${path}`, body === undefined ? {} :
      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const json = await r.json();
    if (!r.ok) throw new Error(`oidc-provider /_harness/${path}: ${r.status} ${JSON.stringify(json)}`);
    return json;
  };

  const op = {
    issuer, proc, clients, config,
    // The private JWKs published now, the signing key first.
    keys: config.keys,
    get key() { return op.keys[0]; },
    state: () => control('state'),
    async jwksFetches() { return (await control('state')).fetches.jwks; },
    // A new key signs from now on (new of alg, or key); the old ones leave the JWKS unless keep.
    async rotate({ alg: a, key, keep = false } = {}) {
      const k = key ?? newKey(a ?? op.key.alg);
      const r = await control('rotate', { key: k, keep });
      op.keys = keep ? [k, ...op.keys] : [k];
      return r;
    },
    // endpoint (jwks or discovery) answers as mode says: ok, down (500), hang, slow (delayMs).
    fault: (mode, { endpoint = 'jwks', delayMs } = {}) => control('fault', { endpoint, mode, delayMs }),
    reset: () => control('reset', {}),
    // A client-credentials token response ({access_token, scope, ...}) for scope and resource.
    async clientCredentials({ scope, resource, client = clients.machine } = {}) {
      const body = new URLSearchParams({ grant_type: 'client_credentials' });
      if (scope) body.set('scope', scope);
      if (resource) body.set('resource', resource);
      const r = await fetch(`${issuer}/token`, { method: 'POST', body, headers: {
        Authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}` } });
      const json = await r.json();
      if (r.status !== 200) throw new Error(`client_credentials: ${r.status} ${JSON.stringify(json)}`);
      return json;
    },
    authorizationCode: (o) => authorizationCode(op, o),
    // RFC 7662 introspection of token as the introspector client: the provider's answer.
    async introspect(token, client = clients.introspector) {
      const r = await fetch(`${issuer}/token/introspection`, { method: 'POST', body: new URLSearchParams({ token }),
        headers: { Authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}` } });
      return r.json();
    },
    stop() {
      return new Promise((res) => {
        if (proc.exitCode !== null || proc.signalCode) return res();
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        proc.on('close', () => { clearTimeout(t); res(); });
        proc.kill('SIGTERM');
      });
    },
  };
  return op;
}

// Starts a provider for each entry of named ({ name: opts for startOidc }) at once, so that their
// starts overlap: { name: op }. A file starts those its tests share (none of them rotates a key
// or makes the JWKS fail) and the fresh ones a test needs to itself this way, in before(), and
// stops them all with stopOidcs in after().
export async function startOidcs(named) {
  const started = {};
  try {
    await Promise.all(Object.entries(named).map(async ([name, opts]) => { started[name] = await startOidc(opts); }));
  } catch (e) {
    await stopOidcs(started);
    throw e;
  }
  return started;
}

// Stops every provider of ops ({ name: op }, from startOidcs; none if undefined).
export const stopOidcs = (ops) => Promise.all(Object.values(ops ?? {}).map((op) => op.stop()));

// A cookie jar just big enough for the provider's interaction cookies.
function cookieJar() {
  const jar = new Map();
  return {
    take(res) {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const i = pair.indexOf('=');
        const name = pair.slice(0, i).trim();
        if (/expires=Thu, 01 Jan 1970/i.test(c)) jar.delete(name); else jar.set(name, pair.slice(i + 1));
      }
    },
    header: () => [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
  };
}

// The first form of an HTML page: its action and its fields (hidden inputs with their values).
function parseForm(html, base) {
  const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) return null;
  const fields = {};
  for (const m of form[2].matchAll(/<input[^>]*>/gi)) {
    const name = /name="([^"]+)"/.exec(m[0])?.[1];
    if (name) fields[name] = /value="([^"]*)"/.exec(m[0])?.[1] ?? '';
  }
  return { action: new URL(form[1].replaceAll('&amp;', '&'), base).href, fields };
}

// The authorization code flow as a user at a browser and a public client: /auth, the sign-in
// form (login, any password), the consent form, the redirect to the client's loopback URI with
// the code, then the code exchanged with the PKCE verifier. Redirects are followed by hand.
// opts: scope, resource, login (the user: sub), port (the loopback redirect's port).
// Returns the token response, plus { code, redirect } (where the provider sent the browser).
export async function authorizationCode(op, { scope, resource, login = 'alice', port = 8765, client = op.clients.app } = {}) {
  const redirectUri = `http://127.0.0.1:${port}/callback`;
  const { verifier, challenge } = pkce();
  const st = randomBytes(8).toString('hex');
  const params = new URLSearchParams({ client_id: client.id, response_type: 'code', redirect_uri: redirectUri,
    code_challenge: challenge, code_challenge_method: 'S256', state: st });
  if (scope) params.set('scope', scope);
  if (resource) params.set('resource', resource);
  const jar = cookieJar();
  let url = `${op.issuer}/auth?${params}`;
  let method = 'GET';
  let body;
  let redirect;
  for (let step = 0; step < 12 && !redirect; step++) {
    const res = await fetch(url, { method, body, redirect: 'manual', headers: { Cookie: jar.header(),
      ...(body ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}) } });
    jar.take(res);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url).href;
      if (next.startsWith(redirectUri)) redirect = new URL(next);
      url = next; method = 'GET'; body = undefined;
      continue;
    }
    const html = await res.text();
    const form = res.status === 200 && parseForm(html, url);
    if (!form) throw new Error(`authorization code flow: ${res.status} at ${url}: ${html.slice(0, 400)}`);
    // The sign-in form asks for login and password; the consent form has only hidden fields.
    if (form.fields.prompt === 'login') Object.assign(form.fields, { login, password: 'any' });
    url = form.action; method = 'POST'; body = new URLSearchParams(form.fields).toString();
  }
  if (!redirect) throw new Error('authorization code flow: never redirected to the client');
  const code = redirect.searchParams.get('code');
  if (!code || redirect.searchParams.get('state') !== st)
    throw new Error(`authorization code flow: redirected without a code: ${redirect}`);
  const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri,
    client_id: client.id, code_verifier: verifier });
  if (resource) form.set('resource', resource);
  const r = await fetch(`${op.issuer}/token`, { method: 'POST', body: form });
  const json = await r.json();
  if (r.status !== 200) throw new Error(`authorization_code: ${r.status} ${JSON.stringify(json)}`);
  return { ...json, code, redirect };
}

// ---------- forged tokens ----------

const b64u = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

// The claims of an access token as the provider issues them (RFC 9068): iss, aud, sub,
// client_id, scope, iat, exp, jti; over: claims changed (a key set to undefined is left out).
export function claimsFor(op, { resource, scope = 'hermes:read', sub = 'forger', ...over } = {}) {
  const c = { iss: op.issuer, aud: resource, sub, client_id: sub, scope, iat: now(), exp: now() + 600,
    jti: randomBytes(12).toString('base64url'), ...over };
  for (const k of Object.keys(c)) if (c[k] === undefined) delete c[k];
  return c;
}

// A JWS compact token over claims, signed with the private JWK key; header: more header
// members (kid defaults to the key's; typ at+jwt).
export async function signJwt(claims, key, header = {}) {
  const alg = header.alg ?? key.alg;
  const k = await jose.importJWK(key, alg);
  return new jose.CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
    .setProtectedHeader({ alg, typ: 'at+jwt', kid: key.kid, ...header })
    .sign(k);
}

// An HS256 JWS whose HMAC key is secret (bytes), with the raw header given.
function hmacJwt(header, claims, secret) {
  const input = `${b64u(header)}.${b64u(claims)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

// A local HTTP server that records every request and serves an attacker's JWKS (and the same
// text for x5u): a token whose header points here must never make the server come here.
export async function attackerServer(jwks) {
  const hits = [];
  const srv = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(jwks));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${srv.address().port}`;
  return { base, hits, close: () => new Promise((r) => { srv.closeAllConnections(); srv.close(r); }) };
}

// A token as the provider would issue it, signed with its current key: the control that passes
// where every forged one, which differs from it in one point, must fail.
export const goodToken = (op, opts) => signJwt(claimsFor(op, opts), op.key);

// The forged tokens, each wrong in one way, as { name: token }. opts: resource (the audience
// the server expects), scope, sub; attacker: the base URL of attackerServer (jku/x5u targets).
export async function forgedTokens(op, { attacker = 'http://127.0.0.1:9', ...opts } = {}) {
  const key = op.key;
  const c = (over) => claimsFor(op, { ...opts, ...over });
  const rogue = newKey(key.alg);
  // The same kid as the provider's key, another key: the signature must not verify.
  const impostor = newKey(key.alg, key.kid);
  const spki = createPublicKey({ key: publicJwk(key), format: 'jwk' });
  const pem = spki.export({ type: 'spki', format: 'pem' });
  const der = spki.export({ type: 'spki', format: 'der' });
  return {
    expired: await signJwt(c({ iat: now() - 7200, exp: now() - 3600 }), key),
    not_yet_valid: await signJwt(c({ nbf: now() + 3600 }), key),
    wrong_issuer: await signJwt(c({ iss: 'http://127.0.0.1:9/not-the-issuer' }), key),
    wrong_audience: await signJwt(c({ aud: 'http://127.0.0.1:9/mcp' }), key),
    audience_missing: await signJwt(c({ aud: undefined }), key),
    unpublished_key_same_kid: await signJwt(c(), impostor),
    unknown_kid: await signJwt(c(), rogue),
    alg_none: `${b64u({ alg: 'none', typ: 'at+jwt', kid: key.kid })}.${b64u(c())}.`,
    alg_none_signed: `${b64u({ alg: 'none', typ: 'at+jwt', kid: key.kid })}.${b64u(c())}.${b64u('x')}`,
    hs256_public_pem: hmacJwt({ alg: 'HS256', typ: 'at+jwt', kid: key.kid }, c(), pem),
    hs256_public_der: hmacJwt({ alg: 'HS256', typ: 'at+jwt', kid: key.kid }, c(), der),
    jku_header: await signJwt(c(), rogue, { jku: `${attacker}/jwks` }),
    x5u_header: await signJwt(c(), rogue, { x5u: `${attacker}/x5u` }),
    jwk_header: await signJwt(c(), rogue, { jwk: publicJwk(rogue) }),
    kid_path: hmacJwt({ alg: 'HS256', typ: 'at+jwt', kid: '../../../../../../dev/null' }, c(), ''),
    kid_injection: await signJwt(c(), rogue, { kid: `${key.kid}' OR '1'='1` }),
    bad_signature: (await signJwt(c(), key)).replace(/.{8}$/, 'AAAAAAAA'),
  };
}

// count tokens each signed by a fresh key with a random kid the provider never published.
export async function randomKidTokens(op, count, opts = {}) {
  const rogue = newKey(op.key.alg);
  const out = [];
  for (let i = 0; i < count; i++)
    out.push(await signJwt(claimsFor(op, opts), rogue, { kid: randomBytes(8).toString('hex') }));
  return out;
}

// Verifies token as a resource server would, with jose against the provider's JWKS (fetched:
// counted by the provider): the payload and protected header.
export async function verifyWithJwks(op, token, { audience } = {}) {
  const jwks = jose.createRemoteJWKSet(new URL(`${op.issuer}/jwks`), { cacheMaxAge: 0, cooldownDuration: 0 });
  return jose.jwtVerify(token, jwks, { issuer: op.issuer, audience, typ: 'at+jwt' });
}

// The decoded header and payload of a JWS, unverified.
export function peek(token) {
  return { header: jose.decodeProtectedHeader(token), payload: jose.decodeJwt(token) };
}

// A digest for messages: never print a token whole.
export const tokenTag = (t) => createHash('sha256').update(t).digest('hex').slice(0, 12);

// ---------- hermes-mcp in front of the provider ----------

// Starts hermes-mcp accepting the access tokens of the providers ops (one, or a list):
// OIDC_ISSUER_URL names their issuers (space-separated), OIDC_AUDIENCE is the server's own /mcp
// URL, on a port chosen first (opts.port, or a free one). extra: more settings (OIDC_*,
// TOKENS_FILE, ...); other opts go to startHermes. The server keeps MCP_AUTH_TOKEN (the owner).
export async function startOidcHermes(ops, extra = {}, { port, ...opts } = {}) {
  port ??= await freePort();
  const audience = `http://127.0.0.1:${port}/mcp`;
  const srv = await startHermes({ MCP_PORT: String(port),
    OIDC_ISSUER_URL: [].concat(ops).map((o) => o.issuer).join(' '), OIDC_AUDIENCE: audience, ...extra }, opts);
  return { ...srv, audience };
}

// whoami as token's bearer: the tool's structured answer (throws unless the call succeeded).
export async function whoami(srv, token) {
  const r = await rpc(srv, token, 'tools/call', { name: 'whoami', arguments: {} });
  if (r.status !== 200 || r.json?.result?.isError !== false)
    throw new Error(`whoami: ${r.status} ${r.www ?? ''} ${r.text.slice(0, 300)}`);
  return r.json.result.structuredContent;
}

// Polls token's whoami every 250 ms until it is accepted (the server may wait out its refetch
// rate limit first), failing on an answer other than 401 or 503 or after ms; the time it took.
export async function acceptedWithin(srv, token, ms, what) {
  const t0 = Date.now();
  for (;;) {
    const r = await rpc(srv, token, 'tools/call', { name: 'whoami', arguments: {} });
    if (r.status === 200) return Date.now() - t0;
    assert.ok([401, 503].includes(r.status), `${what}: ${r.status} ${r.text.slice(0, 200)}`);
    if (Date.now() - t0 > ms) assert.fail(`${what}: still refused after ${ms} ms (${r.www})`);
    await sleep(250);
  }
}

// The tool names token's bearer sees, sorted, as the official SDK client lists them.
export async function toolNames(srv, token) {
  const client = await connectClient(srv, { name: 'oidc-it', headers: { Authorization: `Bearer ${token}` } });
  try {
    return (await client.listTools()).tools.map((t) => t.name).sort();
  } finally {
    await client.close();
  }
}

// A hand-made provider at http://127.0.0.1:PORT<path> (its issuer), for what oidc-provider will
// not do: it serves only what serve says:
// { openid: bool, rfc8414: bool, claimIssuer: the issuer its metadata names (default its own) },
// and one RS256 key (key, private JWK) at /keys; hits lists the paths asked for.
export async function handProvider(path, serve = { openid: true }) {
  const key = newKey('RS256');
  const hits = [];
  const srv = createServer((req, res) => {
    hits.push(req.url);
    const origin = `http://127.0.0.1:${srv.address().port}`;
    const issuer = origin + path;
    const meta = JSON.stringify({ issuer: serve.claimIssuer ?? issuer, jwks_uri: `${origin}/keys` });
    const trimmed = path.replace(/\/$/, '');
    if (serve.openid && req.url === `${trimmed}/.well-known/openid-configuration`) return res.end(meta);
    if (serve.rfc8414 && req.url === `/.well-known/oauth-authorization-server${trimmed}`) return res.end(meta);
    if (req.url === '/keys') return res.end(JSON.stringify({ keys: [publicJwk(key)] }));
    res.statusCode = 404;
    res.end();
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${srv.address().port}${path}`;
  return { issuer, key, hits, close: () => srv.close() };
}
