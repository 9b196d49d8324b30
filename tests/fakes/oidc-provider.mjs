// oidc-provider.mjs — a real OpenID provider for the OIDC tests: panva's oidc-provider (a
// certified implementation; scripts/node-tools.sh oidc) on 127.0.0.1 over http, with switches a
// test flips to make its JWKS misbehave. Run under Node 22:
//   node tests/fakes/oidc-provider.mjs ['{"alg": "ES256", ...}']
// The configuration is the JSON argument, else the OIDC_PROVIDER_CONFIG environment variable (the
// test helper uses the variable: it carries private keys and client secrets), else defaults.
// Once listening it prints its issuer URL, alone on the first line of stdout (requests that come
// while it still loads oidc-provider wait for it). It exits on
// SIGTERM/SIGINT, and with exitWithStdin when its stdin closes (the test that started it is gone).
//
// Configuration keys (all optional):
//   port            listen port (default 0: a free one)
//   alg             RS256 (default), PS256, ES256 or EdDSA: signs access tokens and ID tokens
//   keys            private JWKs ({kty, kid, alg, ...}); the first signs; default: one new key
//                   of alg. Every key given is published in the JWKS.
//   ttl             access token lifetime in seconds (default 600)
//   scopes          more scopes besides openid, offline_access, hermes:read, hermes:task,
//                   hermes:admin (e.g. gateway:NAME)
//   clients         client metadata (oidc-provider's) plus `claims`: more claims for the access
//                   tokens issued to that client (e.g. {"roles": ["reader"]}). Default: machine
//                   (client_credentials, client_secret_basic), app (public, authorization code
//                   with PKCE, native, redirect http://127.0.0.1/callback, any loopback port)
//                   and introspector (confidential, may call the introspection endpoint).
//   accounts        {login: {claims}}: more claims for the tokens of a user who signs in with
//                   that login (any login signs in; the password is not checked)
//   opaque          resources (URLs) whose access tokens are opaque: only introspection tells
//                   what they carry. Tokens for any other resource are JWTs (RFC 9068,
//                   typ at+jwt) whose aud is the resource asked for.
//   jwksCacheControl  a Cache-Control header for the JWKS answer (default: none)
//   exitWithStdin   exit when stdin reaches its end (the test helper sets it)
//
// Test controls, on the same port under /_harness/ (JSON in and out):
//   GET  /_harness/state     {issuer, alg, kid (the signing key), kids (published), fetches:
//                            {jwks, discovery}, faults: {jwks, discovery}, held: {jwks,
//                            discovery} (requests a hang holds now)}
//   GET  /_harness/keys      {keys: the private JWKs published, signing key first}
//   POST /_harness/rotate    {key?: private JWK, alg?, keep?: bool}: a new key (given, or new of
//                            alg, default the current alg) signs from now on; the old keys leave
//                            the JWKS unless keep. Answers {kid, previous}.
//   POST /_harness/fault     {endpoint?: "jwks" (default) | "discovery", mode: "ok" | "down"
//                            (500) | "hang" (no answer until the mode changes) | "slow"
//                            (answer after delayMs), delayMs?}. Requests held by "hang" are
//                            answered when the mode changes. Answers the state.
//   POST /_harness/reset     fetch counts back to 0; answers the state.
import http from 'node:http';
import { createRequire } from 'node:module';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let providerPath;
try {
  providerPath = createRequire(join(ROOT, 'tools/oidc/')).resolve('oidc-provider');
} catch {
  console.error('oidc-provider: not in tools/oidc: run scripts/node-tools.sh oidc');
  process.exit(2);
}
let Provider; // loaded once listening (below)

const BASE_SCOPES = ['openid', 'offline_access', 'hermes:read', 'hermes:task', 'hermes:admin'];
const ALGS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const JWKS_PATH = '/jwks';
const DISCOVERY_PATH = '/.well-known/openid-configuration';

const cfg = JSON.parse(process.argv[2] ?? process.env.OIDC_PROVIDER_CONFIG ?? '{}');
const log = (...a) => console.error('oidc-provider:', ...a);

// A new private JWK for alg, with a kid of its own.
function newKey(alg) {
  const kid = `${alg.toLowerCase()}-${randomBytes(6).toString('hex')}`;
  let pair;
  if (alg === 'RS256' || alg === 'PS256') pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  else if (alg === 'ES256') pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  else if (alg === 'EdDSA') pair = generateKeyPairSync('ed25519');
  else throw new Error(`alg ${alg}: not one of ${ALGS.join(', ')}`);
  return { ...pair.privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

function defaultClients() {
  return [
    { client_id: 'machine', client_secret: randomBytes(24).toString('hex'), grant_types: ['client_credentials'],
      response_types: [], token_endpoint_auth_method: 'client_secret_basic' },
    { client_id: 'app', application_type: 'native', token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      redirect_uris: ['http://127.0.0.1/callback'] },
    { client_id: 'introspector', client_secret: randomBytes(24).toString('hex'), grant_types: ['client_credentials'],
      response_types: [], token_endpoint_auth_method: 'client_secret_basic' },
  ];
}

const state = {
  alg: cfg.alg ?? 'RS256',
  keys: cfg.keys?.length ? cfg.keys : [newKey(cfg.alg ?? 'RS256')],
  ttl: cfg.ttl ?? 600,
  scopes: [...new Set([...BASE_SCOPES, ...(cfg.scopes ?? [])])],
  clients: cfg.clients ?? defaultClients(),
  accounts: cfg.accounts ?? {},
  opaque: new Set(cfg.opaque ?? []),
  fetches: { jwks: 0, discovery: 0 },
  faults: { jwks: { mode: 'ok' }, discovery: { mode: 'ok' } },
  held: { jwks: new Set(), discovery: new Set() },
};
if (!ALGS.includes(state.alg)) throw new Error(`alg ${state.alg}: not one of ${ALGS.join(', ')}`);
// The cookie keys stay across rotations, so a sign-in under way survives one.
const cookieKeys = [randomBytes(32).toString('hex')];
// More claims per client (its `claims`), kept out of the metadata oidc-provider validates.
const clientClaims = new Map();
const clientMetadata = state.clients.map(({ claims, ...meta }) => {
  if (claims) clientClaims.set(meta.client_id, claims);
  // ID tokens are signed with the provider's alg too (oidc-provider's default is RS256).
  return { id_token_signed_response_alg: state.alg, ...meta };
});

function signingAlg() { return state.keys[0].alg ?? state.alg; }

// One oidc-provider instance over the current keys. Rotation builds a new one: its keystore is
// fixed at construction. Grants, sessions and opaque tokens live in oidc-provider's memory
// adapter, shared by every instance of the process, so they outlive a rotation.
function build(issuer) {
  const provider = new Provider(issuer, {
    clients: clientMetadata.map((c) => ({ ...c, id_token_signed_response_alg: signingAlg() })),
    jwks: { keys: state.keys },
    scopes: state.scopes,
    cookies: { keys: cookieKeys },
    enabledJWA: { idTokenSigningAlgValues: ALGS },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // One resource asked for at /authorize is the token's too.
        defaultResource: (ctx, client, oneOf) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => ({
          scope: state.scopes.filter((s) => s !== 'openid' && s !== 'offline_access').join(' '),
          audience: resource,
          accessTokenTTL: state.ttl,
          accessTokenFormat: state.opaque.has(resource) ? 'opaque' : 'jwt',
          jwt: { sign: { alg: signingAlg() } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => ({
      ...(clientClaims.get(token.clientId) ?? {}),
      ...(token.accountId ? state.accounts[token.accountId]?.claims ?? {} : {}),
    }),
    findAccount: (ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, ...(state.accounts[sub]?.claims ?? {}) }),
    }),
    ttl: { AccessToken: state.ttl, ClientCredentials: state.ttl },
  });
  provider.on('server_error', (ctx, err) => log('server_error', err));
  return provider;
}

function publicState() {
  return {
    issuer, alg: signingAlg(), kid: state.keys[0].kid, kids: state.keys.map((k) => k.kid),
    fetches: { ...state.fetches }, faults: structuredClone(state.faults),
    held: { jwks: state.held.jwks.size, discovery: state.held.discovery.size },
  };
}

function sendJson(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function readJson(req) {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 1 << 20) throw new Error('body over 1 MiB');
  }
  return text ? JSON.parse(text) : {};
}

// Releases the requests a "hang" holds: they are served as the endpoint's mode now says.
function release(endpoint) {
  const held = [...state.held[endpoint]];
  state.held[endpoint].clear();
  for (const { req, res } of held) if (!res.destroyed) serveFaulty(endpoint, req, res, false);
}

async function admin(req, res, path) {
  if (req.method === 'GET' && path === 'state') return sendJson(res, 200, publicState());
  if (req.method === 'GET' && path === 'keys') return sendJson(res, 200, { keys: state.keys });
  if (req.method !== 'POST') return sendJson(res, 404, { error: 'no such control' });
  const body = await readJson(req);
  if (path === 'rotate') {
    const previous = state.keys[0].kid;
    const key = body.key ?? newKey(body.alg ?? signingAlg());
    state.keys = body.keep ? [key, ...state.keys] : [key];
    current = handler(build(issuer));
    log(`rotated: ${previous} -> ${key.kid}${body.keep ? ' (old keys kept)' : ''}`);
    return sendJson(res, 200, { kid: key.kid, previous });
  }
  if (path === 'fault') {
    const endpoint = body.endpoint ?? 'jwks';
    if (!state.faults[endpoint] || !['ok', 'down', 'hang', 'slow'].includes(body.mode))
      return sendJson(res, 400, { error: 'endpoint jwks|discovery, mode ok|down|hang|slow' });
    state.faults[endpoint] = { mode: body.mode, ...(body.mode === 'slow' ? { delayMs: body.delayMs ?? 2000 } : {}) };
    if (body.mode !== 'hang') release(endpoint);
    return sendJson(res, 200, publicState());
  }
  if (path === 'reset') {
    state.fetches = { jwks: 0, discovery: 0 };
    return sendJson(res, 200, publicState());
  }
  return sendJson(res, 404, { error: 'no such control' });
}

// The JWKS and discovery endpoints as their fault mode says; count: a new request (not one
// released from a hang).
function serveFaulty(endpoint, req, res, count = true) {
  if (count) state.fetches[endpoint]++;
  const fault = state.faults[endpoint];
  if (fault.mode === 'down') return sendJson(res, 500, { error: 'server_error', error_description: 'down (test)' });
  if (fault.mode === 'hang') {
    const entry = { req, res };
    state.held[endpoint].add(entry);
    res.on('close', () => state.held[endpoint].delete(entry));
    return;
  }
  if (fault.mode === 'slow') {
    const t = setTimeout(() => serveProvider(endpoint, req, res), fault.delayMs);
    res.on('close', () => clearTimeout(t));
    return;
  }
  serveProvider(endpoint, req, res);
}

function serveProvider(endpoint, req, res) {
  if (res.destroyed) return;
  if (endpoint === 'jwks' && cfg.jwksCacheControl) {
    // oidc-provider sets none of its own; a test that checks caching sets one.
    const writeHead = res.writeHead;
    res.writeHead = function (...a) { this.setHeader('Cache-Control', cfg.jwksCacheControl); return writeHead.apply(this, a); };
  }
  current(req, res);
}

// The node request handler of a provider.
function handler(provider) { return provider.callback(); }

let issuer;
let current;
let loaded;
const ready = new Promise((res) => { loaded = res; });
const server = http.createServer((req, res) => {
  if (current) route(req, res);
  else ready.then(() => route(req, res));
});

function route(req, res) {
  const path = new URL(req.url, 'http://x').pathname;
  if (path.startsWith('/_harness/')) {
    admin(req, res, path.slice('/_harness/'.length)).catch((e) => sendJson(res, 400, { error: String(e.message) }));
    return;
  }
  if (req.method === 'GET' && path === JWKS_PATH) return serveFaulty('jwks', req, res);
  if (req.method === 'GET' && path === DISCOVERY_PATH) return serveFaulty('discovery', req, res);
  current(req, res);
}
// Held requests never end on their own: let close() finish without them.
server.keepAliveTimeout = 1000;

server.listen(cfg.port ?? 0, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(`${issuer}\n`);
  // Loading oidc-provider (a large module graph) is most of the start: the issuer is printed
  // first, so that the server under test starts meanwhile; what comes before it is loaded waits.
  import(providerPath).then((m) => {
    Provider = m.default;
    current = handler(build(issuer));
    loaded();
  }).catch((e) => {
    log('could not start:', e);
    process.exit(2);
  });
});

function stop() {
  for (const held of Object.values(state.held)) for (const { res } of held) res.destroy();
  server.closeAllConnections?.();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 500).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
if (cfg.exitWithStdin) {
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}
