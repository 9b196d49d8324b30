// Shared helpers for integration tests: start the real binaries on 127.0.0.1:0 and find the port
// from their "listening on http://HOST:PORT" line.
import { spawn, spawnSync, execFile } from 'node:child_process';
import { createServer as createNetServer } from 'node:net';
import { mkdtempSync, writeFileSync, chmodSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes, createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const ROOT = resolve(new URL('../..', import.meta.url).pathname);

// HM_VALGRIND=1 runs our binaries under valgrind (make valgrind); a report fails stop().
const VALGRIND = process.env.HM_VALGRIND === '1'
  ? ['valgrind', '--quiet', '--error-exitcode=99', '--leak-check=full', '--errors-for-leak-kinds=definite',
    '--show-leak-kinds=definite', '--track-fds=no']
  : null;
// opts.env: extra environment; opts.prefix: a launcher run first (it must exec the rest, e.g.
// build/listen-exec). The systemd variables of whoever runs the tests are never passed on.
const SYSTEMD_VARS = ['NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID', 'LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES'];
function run(bin, args, opts = {}) {
  const env = { ...process.env };
  for (const k of SYSTEMD_VARS) delete env[k];
  Object.assign(env, opts.env || {});
  const argv = [...(opts.prefix || []), ...(VALGRIND || []), bin, ...args];
  return spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env });
}
// The build flavour under test: HM_BUILD names its folder (build/release, the default, or
// build/asan); make and tests/integration/run.sh set it. Every binary of the tests comes from it.
export const BUILD = resolve(ROOT, process.env.HM_BUILD || 'build/release');
export const HERMES = join(BUILD, 'hermes-mcp');
export const CONFORMANCE = join(BUILD, 'conformance-server');

function waitForListening(proc, name) {
  return new Promise((resolvePort, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`${name}: no listening line in 30 s\n${err}`)), 30000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/([^\s/]+):(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolvePort(Number(m[2]));
      }
    });
    proc.stderr.on('data', (d) => { err += d; proc.stderrText = err; });
    // 'close', not 'exit': by then stderr has been read to its end, so the reason is in err.
    proc.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before listening:\n${err}`));
    });
  });
}

// Starts hermes-mcp (HERMES) with a fresh mode-600 env file. extra: more KEY=VALUE settings (a key
// set to undefined is left out, e.g. MCP_AUTH_TOKEN for an OAuth-only server);
// opts: {env, prefix} as for run(); keepDefaults: the server's own rate limits.
export async function startHermes(extra = {}, opts = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-it-'));
  const token = randomBytes(32).toString('hex');
  // Tests make many requests a minute; the rate-limit tests set their own limit.
  const limits = opts.keepDefaults ? {} : { RATE_LIMIT_PER_MIN: '100000', RATE_LIMIT_AUTH_PER_MIN: '100000' };
  const lines = { MCP_PORT: '0', MCP_AUTH_TOKEN: token, ...limits,
    AGENTS_FILE: join(dir, 'agents.yaml'), ...extra };
  const envFile = join(dir, 'env');
  writeFileSync(envFile, Object.entries(lines).filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
  chmodSync(envFile, 0o600);
  const proc = run(HERMES, ['serve', '--env-file', envFile], opts);
  proc.stderrText = '';
  const port = await waitForListening(proc, 'hermes-mcp');
  return {
    proc, port, token, dir, envFile, auditFile: join(dir, 'audit.jsonl'),
    url: `http://127.0.0.1:${port}/mcp`,
    base: `http://127.0.0.1:${port}`,
    auth: { Authorization: `Bearer ${token}` },
    async stop(signal = 'SIGTERM') { return stopProc(proc, signal, () => rmSync(dir, { recursive: true, force: true })); },
  };
}

// Starts hermes-mcp again on the same env file and task directory (after a crash or a stop).
export async function restartHermes(srv, opts = {}) {
  const proc = run(HERMES, ['serve', '--env-file', srv.envFile], opts);
  proc.stderrText = '';
  const port = await waitForListening(proc, 'hermes-mcp');
  return {
    ...srv, proc, port,
    url: `http://127.0.0.1:${port}/mcp`,
    base: `http://127.0.0.1:${port}`,
    async stop(signal = 'SIGTERM') { return stopProc(proc, signal, () => rmSync(srv.dir, { recursive: true, force: true })); },
  };
}

export async function startConformance(args = []) {
  const proc = run(CONFORMANCE, ['--port', '0', ...args]);
  proc.stderrText = '';
  const port = await waitForListening(proc, 'conformance-server');
  return {
    proc, port,
    url: `http://127.0.0.1:${port}/mcp`,
    base: `http://127.0.0.1:${port}`,
    auth: {},
    async stop(signal = 'SIGTERM') { return stopProc(proc, signal, () => {}); },
  };
}

// Stops a server and fails if a sanitizer reported anything (the ASan run of the suite).
function stopProc(proc, signal, cleanup) {
  return new Promise((res, rej) => {
    const done = (code) => {
      cleanup();
      const report = (proc.stderrText || '').match(/(AddressSanitizer|LeakSanitizer|runtime error:|==\d+== (Invalid|Conditional|Syscall param|Mismatched)|definitely lost: [1-9])[^\n]*/);
      if (report) rej(new Error(`sanitizer report: ${report[0]}\n${proc.stderrText}`));
      else res(code);
    };
    if (proc.exitCode !== null || proc.signalCode !== null) return done(proc.exitCode ?? proc.signalCode);
    const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
    proc.on('close', (code, sig) => { clearTimeout(t); done(code ?? sig); });
    proc.kill(signal);
  });
}

export const JSON_HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
};

// The JSON lines of a file another process appends to: whole lines only (one being written
// is left for the next read).
export function jsonLines(text) {
  return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

// MCP 2026-07-28 requests as a client of that revision sends them (stateless): its protocol
// version, capabilities and name in params._meta, the method (and tool or task name) mirrored
// in headers.
export const MODERN = '2026-07-28';
export const modernMeta = (caps = {}, client = 'it', version = MODERN) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientCapabilities': caps,
  'io.modelcontextprotocol/clientInfo': { name: client, version: '1' },
});
export const modernHeaders = (method, name, version = MODERN) => ({
  ...JSON_HEADERS, 'MCP-Protocol-Version': version, 'Mcp-Method': method,
  ...(name !== undefined && name !== null ? { 'Mcp-Name': String(name) } : {}),
});

// POST one JSON-RPC body; returns {status, headers, text, json}.
export async function post(srv, body, headers = {}) {
  const res = await fetch(srv.url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, ...srv.auth, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, headers: res.headers, text, json };
}

let rpcId = 0;
// One JSON-RPC request (protocol 2025-11-25, no session) to srv with token as the bearer (null:
// none at all, not srv.auth): { status, www (the WWW-Authenticate header), json, text, ms (the
// wall time of the answer) }.
export async function rpc(srv, token, method, params = {}, { timeoutMs = 30000 } = {}) {
  const t0 = performance.now();
  const res = await fetch(srv.url, { method: 'POST', signal: AbortSignal.timeout(timeoutMs),
    headers: { ...JSON_HEADERS, ...(token ? { Authorization: `Bearer ${token}` } : {}), 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }) });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, www: res.headers.get('www-authenticate'), json, text, ms: performance.now() - t0 };
}

// A tools/call of name with args as token's bearer (rpc): asserts the answer is HTTP 200 JSON;
// its JSON-RPC result (a tool error is a result too).
export async function toolCall(srv, token, name, args = {}) {
  const r = await rpc(srv, token, 'tools/call', { name, arguments: args });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  assert.ok(r.json, `not JSON: ${r.text.slice(0, 300)}`);
  return r.json.result;
}

// Parses an SSE body into [{id, data}] with data JSON-parsed when non-empty.
export function parseSse(text) {
  const events = [];
  for (const block of text.split('\n\n')) {
    if (!block.trim()) continue;
    const ev = { id: undefined, data: '', retry: undefined };
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) ev.id = line.slice(3).trim();
      else if (line.startsWith('data:')) ev.data += line.slice(5).trimStart();
      else if (line.startsWith('retry:')) ev.retry = Number(line.slice(6));
    }
    ev.json = ev.data ? JSON.parse(ev.data) : undefined;
    events.push(ev);
  }
  return events;
}

export const INIT = (version = '2025-11-25', id = 1) => ({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'it', version: '1' } },
});

export const FAKE = join(BUILD, 'fake-agent');

// Starts the fake Hermes Agent (tests/fakes/) with a fresh key; records requests to a JSONL file.
export async function startFake(args = [], key = randomBytes(24).toString('hex')) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-fake-'));
  const keyFile = join(dir, 'key');
  const record = join(dir, 'record.jsonl');
  writeFileSync(keyFile, key + '\n');
  chmodSync(keyFile, 0o600);
  const proc = spawn(FAKE, ['--port', '0', '--key-file', keyFile, '--record', record, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stderrText = '';
  const port = await waitForListening(proc, 'fake-agent');
  return {
    proc, port, key, dir, keyFile, record,
    base: `http://127.0.0.1:${port}`,
    // The requests the fake received so far (parsed JSONL).
    received() {
      let text = '';
      try { text = readFileSync(record, 'utf8'); } catch { return []; }
      return jsonLines(text);
    },
    async stop(signal = 'SIGTERM') { return stopProc(proc, signal, () => rmSync(dir, { recursive: true, force: true })); },
  };
}

// An env file for the agent (HERMES_ENV_PATH) pointing at a fake.
export function agentEnv(fake, key = fake.key) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-agentenv-'));
  const f = join(dir, 'agent.env');
  writeFileSync(f, `API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=${fake.port}\nAPI_SERVER_KEY=${key}\n`);
  chmodSync(f, 0o600);
  return f;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls fn (sync or async) until it returns something truthy; fails after ms (8 s by default:
// room for a loaded machine; a test that waits on an event loses nothing by it).
export async function until(fn, what, ms = 8000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

// A port free on 127.0.0.1 right now, for a server that must know its own port before it
// starts (an OAuth issuer URL, an upstream named in a gateway file).
export async function freePort() {
  const s = createNetServer();
  await new Promise((r, rej) => { s.on('error', rej); s.listen(0, '127.0.0.1', r); });
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

// The owner's consent passphrase of the OAuth tests; setPassphrase stores one as
// `hermes-mcp oauth passwd` does (read from stdin, never argv).
export const OAUTH_PASS = 'correct horse battery staple';
export function setPassphrase(envFile, pass = OAUTH_PASS) {
  const r = spawnSync(HERMES, ['oauth', 'passwd', '--env-file', envFile], { input: `${pass}\n`, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hermes-mcp oauth passwd: ${r.stderr}`);
  return r;
}

// A PKCE pair (S256): the verifier a client keeps and the challenge it sends to /authorize.
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

// `hermes-mcp oauth mint-client`, as the operator runs it for a client that takes a pasted pair:
// { id, secret } (32 and 64 hex digits).
export function mintClient() {
  const r = spawnSync(HERMES, ['oauth', 'mint-client'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const id = /^OAUTH_CLIENT_ID=([0-9a-f]{32})$/m.exec(r.stdout)?.[1];
  const secret = /^OAUTH_CLIENT_SECRET=([0-9a-f]{64})$/m.exec(r.stdout)?.[1];
  assert.ok(id && secret, r.stdout);
  return { id, secret };
}

// Dynamic client registration (POST /register) with body: { status, body }.
export async function registerClient(issuer, body) {
  const res = await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

// Registers a public client (no secret) with one redirect URI; asserts 201; its client_id.
export async function registerPublic(issuer, redirect, name = 'it') {
  const res = await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [redirect], client_name: name, token_endpoint_auth_method: 'none' }) });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()).client_id;
}

// The owner approving on the consent page at authUrl (an /authorize URL) with pass, as a browser
// posts the form; over: { csrf, headers } to forge the post. Returns the page (not followed), its
// html and csrf token, the post's res, its location and the code that location carries.
export async function approveConsent(issuer, authUrl, pass = OAUTH_PASS, over = {}) {
  const page = await fetch(authUrl, { redirect: 'manual' });
  const html = await page.text();
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)?.[1];
  const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: issuer, ...over.headers },
    body: new URLSearchParams({ csrf: over.csrf ?? csrf, passphrase: pass, action: 'approve' }).toString() });
  const location = res.headers.get('location');
  return { page, html, csrf, res, location, code: location && new URL(location).searchParams.get('code') };
}

// One raw 2026-07-28 tools/call to srv (as token's caller if given), declaring form elicitation;
// extra: more params (inputResponses, requestState). { status, answer (the JSON-RPC answer), text }.
export async function modernToolCall(srv, name, args, extra = {}, token = null) {
  const id = randomBytes(4).readUInt32BE();
  const auth = token ? { Authorization: `Bearer ${token}` } : srv.auth;
  const r = await fetch(srv.url, { method: 'POST',
    headers: { ...modernHeaders('tools/call', name), ...auth },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args,
      ...extra, _meta: modernMeta({ elicitation: { form: {} } }) } }) });
  const text = await r.text();
  let answer;
  try { answer = JSON.parse(text); } catch { answer = parseSse(text).map((e) => e.json).find((m) => m?.id === id); }
  return { status: r.status, answer, text };
}

// Starts hermes-mcp as an OAuth authorization server: on a port chosen first, as its issuer URL
// names it (written with a trailing slash if opts.issuerSlash), with OAUTH_PASS as the owner's
// passphrase unless withPass is false; other opts go to startHermes. prm: the protected-resource
// metadata URL of its /mcp.
export async function startOAuth(extra = {}, withPass = true, { issuerSlash = false, ...opts } = {}) {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const srv = await startHermes({ MCP_PORT: String(port),
    OAUTH_ISSUER_URL: issuerSlash ? `${issuer}/` : issuer, ...extra }, opts);
  if (withPass) setPassphrase(srv.envFile);
  return { srv, issuer, prm: `${issuer}/.well-known/oauth-protected-resource/mcp` };
}

// @modelcontextprotocol/server-everything, installed by scripts/node-tools.sh (its entry script).
let everything;
export function everythingPath() {
  everything ??= spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything'], { encoding: 'utf8' })
    .stdout.trim().split('\n')[0];
  return everything;
}

// A Node HTTP upstream (a script and its args in argv, more environment in env) started under
// this node and pushed onto children (the caller's list to kill), if given; resolves once its
// stderr names port (it says where it listens). The process, its stderr in proc.stderrText.
export async function startNodeUpstream(argv, port, { env = {}, children } = {}) {
  const proc = spawn(process.execPath, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  children?.push(proc);
  proc.stderrText = '';
  proc.stderr.on('data', (d) => { proc.stderrText += d; });
  await until(() => proc.stderrText.includes(`${port}`), `upstream listening on ${port}`, 15000);
  return proc;
}

// server-everything in its Streamable HTTP mode (a session-era upstream) on a free port.
export async function startEverythingHttp() {
  const port = await freePort();
  const proc = await startNodeUpstream([everythingPath(), 'streamableHttp'], port, { env: { PORT: String(port) } });
  return { proc, port, url: `http://127.0.0.1:${port}/mcp`, kill: () => proc.kill('SIGKILL') };
}

// A gateway file in dir, mode 600 (the server refuses one that others can read); its path.
export function gatewayFile(dir, text, name = 'gateway.yaml') {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, 0o600);
  return path;
}

// A gateway file name.yaml in dir: an `upstreams:` map of entries (a YAML string, or an array of
// entry strings, e.g. from fakeUpstream); its path.
export function upstreamsFile(dir, name, entries) {
  return gatewayFile(dir, 'upstreams:\n' + [].concat(entries).join(''), `${name}.yaml`);
}

// A TOKENS_FILE in dir, mode 600: one role per entry of roles, { name: [token, scopes] } with
// scopes as the file lists them ('hermes:read, hermes:task'); more: further YAML lines. Its path.
export function tokensFile(dir, roles, more = '') {
  const path = join(dir, 'tokens.yaml');
  writeFileSync(path, 'tokens:\n' + Object.entries(roles).map(([name, [token, scopes]]) =>
    `  - name: ${name}\n    sha256: ${createHash('sha256').update(token).digest('hex')}\n    scopes: [${scopes}]\n`)
    .join('') + more);
  chmodSync(path, 0o600);
  return path;
}

// The scriptable fake MCP upstream (stdio, or Streamable HTTP with --http).
export const FAKE_UPSTREAM = join(ROOT, 'tests/fakes/fake-upstream.mjs');

// One gateway-file upstream entry that runs FAKE_UPSTREAM under this node with args; extra: more
// indented lines of the entry (tools:, prefix:, ...).
export function fakeUpstream(name, args = [], extra = '') {
  return `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE_UPSTREAM, ...args])}\n${extra}`;
}

// The operator's CLI run against srv's control socket, as an operator types it:
// { code, stdout, stderr } (code 0 on success).
export function hermesCli(srv, ...args) {
  return new Promise((resolve) => {
    execFile(HERMES, [...args, '--env-file', srv.envFile], { encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}

// The approval requests srv lists (`hermes-mcp approvals --json`).
export async function pendingApprovals(srv) {
  const r = await hermesCli(srv, 'approvals', '--json');
  if (r.code !== 0) throw new Error(`hermes-mcp approvals exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// Waits until srv lists exactly n approval requests; returns them.
export const waitApprovals = (srv, n = 1) =>
  until(async () => { const l = await pendingApprovals(srv); return l.length === n ? l : null; }, `${n} pending`, 10000);

// An official SDK 1.x client connected to srv that has listed the tools first, as real clients
// do (the SDK validates a result against the schema it listed). { client, tools: {name: tool} }.
export async function sdkClient(srv, name = 'it') {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
  const tools = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t]));
  return { client, tools };
}

// An official SDK 1.x client connected to srv ({url, auth}, or a URL string) as a real client
// connects: announcing name and capabilities, sending headers (srv.auth unless given) on every
// request; listTools: lists the tools first, as clients do before they call one; setup(client):
// runs before the connect (request and notification handlers).
export async function connectClient(srv,
  { name = 'it', version = '1.0.0', headers, capabilities, listTools = false, setup } = {}) {
  const url = typeof srv === 'string' ? srv : srv.url;
  const client = new Client({ name, version }, capabilities ? { capabilities } : undefined);
  setup?.(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: headers ?? srv.auth } }));
  if (listTools) await client.listTools();
  return client;
}

// An SDK OAuthClientProvider keeping everything in st, in memory, as a connector keeps it in its
// own store: { st, provider }. st.authUrl is where it was sent to authorize. opts: clientMetadata,
// state (the value it sends), discovery (caches the discovery state too); any other key is set
// on the provider as given (clientMetadataUrl, a static clientInformation, ...).
export function oauthProvider(redirectUrl, { clientMetadata, state, discovery = false, ...more } = {}) {
  const st = {};
  const provider = {
    get redirectUrl() { return redirectUrl; },
    clientMetadata: clientMetadata ??
      { redirect_uris: [redirectUrl], client_name: 'it', token_endpoint_auth_method: 'none' },
    ...(state === undefined ? {} : { state: () => state }),
    clientInformation: () => st.client,
    saveClientInformation: (c) => { st.client = c; },
    tokens: () => st.tokens,
    saveTokens: (t) => { st.tokens = t; },
    redirectToAuthorization: (u) => { st.authUrl = new URL(u); },
    saveCodeVerifier: (v) => { st.verifier = v; },
    codeVerifier: () => st.verifier,
    ...(discovery ? { saveDiscoveryState: (d) => { st.discovery = d; }, discoveryState: () => st.discovery } : {}),
    ...more,
  };
  return { st, provider };
}

// The TypeScript SDK v2 client package (scripts/node-tools.sh client).
export const SDK_V2 = join(ROOT, 'tools/client/node_modules/@modelcontextprotocol/client/dist/index.mjs');

// An SDK v2 client connected to srv, negotiating as mode says (pinned to MODERN unless given),
// each request it sends and the answer kept in client.wire (recordingFetch). answers: a handler
// by kind (elicitation, sampling, roots) for the requests the server sends it; each request
// handled is pushed to client.asked as [kind, params]. record: the recording fetch to use.
export async function connectV2Client(srv, name,
  { answers = {}, capabilities = {}, mode = { pin: MODERN }, record = recordingFetch } = {}) {
  const { Client: ClientV2, StreamableHTTPClientTransport: HttpV2 } = await import(SDK_V2);
  const wire = [];
  const client = new ClientV2({ name, version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
  client.asked = [];
  for (const [method, kind] of [['elicitation/create', 'elicitation'], ['sampling/createMessage', 'sampling'],
    ['roots/list', 'roots']]) {
    if (!answers[kind]) continue;
    client.setRequestHandler(method, async (req) => { client.asked.push([kind, req.params]); return answers[kind](req.params); });
  }
  await client.connect(new HttpV2(new URL(srv.url), { requestInit: { headers: srv.auth }, fetch: record(wire) }));
  client.wire = wire;
  return client;
}

// GET of an unauthenticated probe path on srv (/healthz, /readyz): { status, body (its JSON) }.
export async function probeJson(srv, path) {
  const r = await fetch(`${srv.base}${path}`); // no Authorization: probes need none
  return { status: r.status, body: await r.json() };
}

// A fetch (for an SDK transport) that keeps each tools/call POST's body and answer text.
export function recordingFetch(wire) {
  return async (url, init = {}) => {
    let body;
    try { body = JSON.parse(init.body); } catch { body = undefined; }
    const entry = { body };
    if (body?.method === 'tools/call') wire.push(entry);
    const res = await fetch(url, init);
    entry.text = res.clone().text();
    return res;
  };
}
