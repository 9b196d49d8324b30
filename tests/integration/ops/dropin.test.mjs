// Drop-in leftovers. The Python hermes-mcp's OAuth-only env file (no MCP_AUTH_TOKEN; an issuer, a
// static client, HERMES_API_KEY, BIND_HOST) starts the real binary: a client gets its token through
// the OAuth dance with the owner's consent passphrase and calls a tool, and no static bearer token
// gets in; doctor accepts the setup; a file with no way to authenticate is still refused. The
// Python server's tool names (hermes_ask, hermes_check; job_id on hermes_cancel) work through the
// official SDK client. whoami tells a principal who it is (owner, a TOKENS_FILE role, an OAuth
// client) and never the token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes, createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync, chmodSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import { startHermes, startFake, agentEnv, freePort, setPassphrase, HERMES, sdkClient, until,
  connectClient, mintClient, oauthProvider, approveConsent } from '../../lib/lib.mjs';
import { logMark, waitAnyEvent } from '../../lib/events.mjs';

const REDIRECT = 'http://127.0.0.1:7777/callback';

const mint = mintClient;

// A Hermes .env naming the fake's address and no key: the Python server's env file gives the key as
// HERMES_API_KEY.
function keylessAgentEnv(fake, dir) {
  const f = join(dir, 'agent.env');
  writeFileSync(f, `API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=${fake.port}\n`);
  chmodSync(f, 0o600);
  return f;
}

// The Python server's env file, as its users have it: no MCP_AUTH_TOKEN.
async function startPythonEnv(fake, dir, extra = {}) {
  const { id, secret } = mint();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const srv = await startHermes({ MCP_AUTH_TOKEN: undefined, MCP_PORT: String(port), BIND_HOST: '127.0.0.1',
    OAUTH_ISSUER_URL: issuer, OAUTH_CLIENT_ID: id, OAUTH_CLIENT_SECRET: secret,
    HERMES_API_KEY: fake.key, HERMES_ENV_PATH: keylessAgentEnv(fake, dir), ...extra });
  setPassphrase(srv.envFile);
  return { srv, issuer, id, secret };
}

// The owner at the consent page, as a browser: reads it, sends the form with the passphrase.
async function consent(issuer, authUrl) {
  const c = await approveConsent(issuer, authUrl);
  assert.equal(c.res.status, 302);
  return c.code;
}

// The official SDK client's OAuth dance with the pasted static client; its tokens.
async function oauthTokens(srv, issuer, id, secret) {
  const { st, provider } = oauthProvider(REDIRECT, {
    clientMetadata: { redirect_uris: [REDIRECT], client_name: 'python-era connector' },
    clientInformation: () => ({ client_id: id, client_secret: secret }),
    saveClientInformation: () => { throw new Error('no registration with a static client'); },
  });
  assert.equal(await auth(provider, { serverUrl: srv.url }), 'REDIRECT');
  const code = await consent(issuer, st.authUrl);
  assert.equal(await auth(provider, { serverUrl: srv.url, authorizationCode: code }), 'AUTHORIZED');
  return { provider, tokens: st.tokens };
}

const bearer = (token) => ({ Authorization: `Bearer ${token}` });
const connect = (url, headers) => connectClient(url, { name: 'dropin-it', version: '1', headers });

test('the Python server\'s OAuth-only env file starts; an OAuth client calls a tool; no static bearer gets in', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-dropin-'));
  const { srv, issuer, id, secret } = await startPythonEnv(fake, dir);
  try {
    await until(() => /no MCP_AUTH_TOKEN: no static owner token/.test(srv.proc.stderrText), 'the OAuth-only note');
    const { provider } = await oauthTokens(srv, issuer, id, secret);
    const client = new Client({ name: 'dropin-it', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { authProvider: provider }));
    const r = await client.callTool({ name: 'hermes_task', arguments: { task: 'hello from an OAuth-only setup', mode: 'sync' } });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent.status, 'completed');
    await client.close();
    assert.ok(fake.received().some((q) => JSON.stringify(q).includes('hello from an OAuth-only setup')));
    // No static token: the one startHermes would have written, any 64 hex, the client secret.
    for (const t of [srv.token, 'a'.repeat(64), secret]) {
      await assert.rejects(connect(srv.url, bearer(t)), /401|[Uu]nauthorized/, t);
      const res = await fetch(srv.url, { method: 'POST', headers: { ...bearer(t), 'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
      assert.equal(res.status, 401);
    }
    // No owner token: /metrics is read with an OAuth token granted hermes:admin.
    assert.equal((await fetch(`${srv.base}/metrics`, { headers: bearer(srv.token) })).status, 401);
    const { tokens: granted } = await oauthTokens(srv, issuer, id, secret);
    assert.ok(granted.scope.split(' ').includes('hermes:admin'), granted.scope);
    const scrape = await fetch(`${srv.base}/metrics`, { headers: bearer(granted.access_token) });
    assert.equal(scrape.status, 200);
    assert.match(await scrape.text(), /^hermes_mcp_principal_requests_total\{principal="oauth:/m);
    // doctor accepts the setup: the OAuth-only line, nothing failed.
    const doc = spawnSync(HERMES, ['doctor', '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.match(doc.stdout, /^ok +no MCP_AUTH_TOKEN: OAuth only \(OAUTH_ISSUER_URL\)/m, doc.stdout);
    assert.match(doc.stdout, /OAuth consent passphrase .* \(scrypt\)/);
    assert.match(doc.stdout, /, 0 failed/, doc.stdout);
    assert.ok(!doc.stdout.includes(secret) && !doc.stdout.includes(fake.key), 'no secret printed');
    assert.ok(!srv.proc.stderrText.includes(secret), 'the client secret was logged');
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no MCP_AUTH_TOKEN, TOKENS_FILE nor OAUTH_ISSUER_URL: serve refuses and says what to set; doctor fails', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-dropin-'));
  try {
    const env = join(dir, 'env');
    writeFileSync(env, `MCP_PORT=0\nHERMES_API_KEY=${randomBytes(16).toString('hex')}\n`);
    chmodSync(env, 0o600);
    const r = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /no MCP_AUTH_TOKEN, TOKENS_FILE or OAUTH_ISSUER_URL in .*token gen.*OAUTH_ISSUER_URL.*oauth passwd/);
    const doc = spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', env], { encoding: 'utf8' });
    assert.equal(doc.status, 1);
    assert.match(doc.stdout, /^FAIL +no MCP_AUTH_TOKEN in /m, doc.stdout);
    // A tokens file that names nobody is no way in either.
    const tokens = join(dir, 'tokens.yaml');
    writeFileSync(tokens, 'tokens: []\n');
    chmodSync(tokens, 0o600);
    writeFileSync(env, `MCP_PORT=0\nTOKENS_FILE=${tokens}\n`);
    const r2 = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r2.status, 2);
    assert.match(r2.stderr, /TOKENS_FILE .* names no principal and there is no MCP_AUTH_TOKEN nor OAUTH_ISSUER_URL/);
    // OAuth only but no consent passphrase yet: serve starts (it can be set while it runs),
    // doctor says nobody can sign in.
    writeFileSync(env, `MCP_PORT=0\nOAUTH_ISSUER_URL=http://127.0.0.1:9\n`);
    const d2 = spawnSync(HERMES, ['doctor', '--no-probe', '--env-file', env], { encoding: 'utf8' });
    assert.match(d2.stdout, /^FAIL +no OAuth consent passphrase .* and no MCP_AUTH_TOKEN: nobody can sign in/m, d2.stdout);
    // Its secrets make the env file's mode matter even without MCP_AUTH_TOKEN.
    writeFileSync(env, `MCP_PORT=0\nOAUTH_ISSUER_URL=http://127.0.0.1:9\nOAUTH_CLIENT_ID=c1\nOAUTH_CLIENT_SECRET=${'s'.repeat(40)}\n`);
    chmodSync(env, 0o644);
    const r3 = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r3.status, 2);
    assert.match(r3.stderr, /readable by others.*chmod 600/);
    assert.ok(!r3.stderr.includes('s'.repeat(40)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a TOKENS_FILE-only server whose env file loses TOKENS_FILE on reload keeps its settings and names the three ways in', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-dropin-'));
  const role = randomBytes(32).toString('hex');
  const tokens = join(dir, 'tokens.yaml');
  writeFileSync(tokens, `tokens:\n  - name: ci\n    sha256: ${sha(role)}\n    scopes: [hermes:read]\n`);
  chmodSync(tokens, 0o600);
  const srv = await startHermes({ MCP_AUTH_TOKEN: undefined, TOKENS_FILE: tokens });
  try {
    const text = readFileSync(srv.envFile, 'utf8');
    const reload = async (body) => {
      writeFileSync(srv.envFile, body);
      const mark = logMark(srv);
      srv.proc.kill('SIGHUP');
      return waitAnyEvent(srv, ['reload_applied', 'reload_rejected'], { config: 'env' }, { since: mark });
    };
    let e = await reload(text.replace(/^TOKENS_FILE=.*\n/m, ''));
    assert.equal(e.event, 'reload_rejected');
    assert.match(e.line, /no MCP_AUTH_TOKEN, TOKENS_FILE or OAUTH_ISSUER_URL in .*; set TOKENS_FILE again, or create a token with: hermes-mcp token gen --env-file .* \(or set OAUTH_ISSUER_URL, then: hermes-mcp oauth passwd/);
    e = await reload(text.replace(/^TOKENS_FILE=.*\n/m, 'OAUTH_ISSUER_URL=http://127.0.0.1:9\n'));
    assert.equal(e.event, 'reload_rejected');
    assert.match(e.line, /.* has no MCP_AUTH_TOKEN nor TOKENS_FILE, and its OAUTH_ISSUER_URL takes effect only at a restart/);
    const client = await connect(srv.url, bearer(role));
    await client.close();
  } finally {
    assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---------- the Python server's tool names ----------

const ASK_PROPS = ['async_mode', 'prompt', 'session_id', 'toolsets'];
const chats = (fake) => fake.received().filter((r) => r.path === '/v1/chat/completions');

// hermes_ask sync and async, hermes_check by job_id until the result, hermes_cancel by job_id.
async function exerciseAliases(client, fake) {
  let r = await client.callTool({ name: 'hermes_ask', arguments: { prompt: 'the older names ask', session_id: 'chat-7',
    toolsets: ['web', 'terminal'] } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.status, 'completed');
  const sent = chats(fake).find((q) => JSON.stringify(q.body).includes('the older names ask'));
  assert.ok(sent, 'the prompt reached the agent');
  assert.equal(sent.headers['x-hermes-session-id'], 'gb-sess-hermes-chat-7', 'session_id is our session');
  assert.ok(!JSON.stringify(sent.body).includes('terminal'), 'toolsets is ignored, as the Python server did');
  // async_mode: the id comes back at once; hermes_check(job_id) polls it to its result.
  r = await client.callTool({ name: 'hermes_ask', arguments: { prompt: 'slow one [delay=600]', async_mode: true } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.status, 'accepted');
  const jobId = r.structuredContent.id;
  const first = await client.callTool({ name: 'hermes_check', arguments: { job_id: jobId } });
  assert.equal(first.isError, false, JSON.stringify(first));
  assert.equal(first.structuredContent.id, jobId);
  assert.equal(first.structuredContent.status, 'running', 'a poll while it runs is no error');
  assert.match(first.structuredContent.run_id, /^\S+$/);
  const done = await until(async () => {
    const c = await client.callTool({ name: 'hermes_check', arguments: { job_id: jobId } });
    assert.equal(c.isError, false, JSON.stringify(c));
    return c.structuredContent.status === 'running' ? null : c;
  }, 'the async task to end', 10000);
  assert.equal(done.structuredContent.status, 'completed');
  const result = await client.callTool({ name: 'hermes_result', arguments: { id: jobId } });
  assert.deepEqual(done.structuredContent, result.structuredContent, 'hermes_check answers what hermes_result does');
  // hermes_cancel takes the Python server's job_id for our id.
  r = await client.callTool({ name: 'hermes_cancel', arguments: { job_id: jobId } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.already_finished, true);
  r = await client.callTool({ name: 'hermes_cancel', arguments: { job_id: jobId, id: jobId } });
  assert.equal(r.structuredContent.error, 'invalid_arguments');
  const both = r.structuredContent.message;
  // job_id is hermes_cancel's own argument: its errors name it.
  r = await client.callTool({ name: 'hermes_cancel', arguments: { job_id: 5 } });
  assert.equal(r.structuredContent.error, 'invalid_arguments');
  assert.match(r.structuredContent.message, /'job_id' must be a string/);
  r = await client.callTool({ name: 'hermes_cancel', arguments: { job_id: '../x' } });
  assert.match(r.structuredContent.message, /'job_id' must match/);
  assert.match(both, /give exactly one of 'run_id', 'id' or 'job_id'/);
  // Unknown jobs and bad arguments: clear tool errors.
  r = await client.callTool({ name: 'hermes_check', arguments: { job_id: 'no-such-job' } });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error, 'not_found');
  r = await client.callTool({ name: 'hermes_ask', arguments: { prompt: 'x', model: 'gpt' } });
  assert.equal(r.structuredContent.error, 'invalid_arguments');
  assert.match(r.structuredContent.message, /unknown field 'model'/);
  // The Python server forwarded any session_id: one that is no session name of ours (a UUID, upper
  // case) is mapped to one by a digest, the same each time; control characters are refused.
  const uuid = '3F2504E0-4F89-11D3-9A0C-0305E82C3301';
  const mapped = `gb-sess-hermes-s002-${createHash('sha256').update(uuid).digest('hex').slice(0, 32)}`;
  for (const prompt of ['uuid session one', 'uuid session two']) {
    r = await client.callTool({ name: 'hermes_ask', arguments: { prompt, session_id: uuid } });
    assert.equal(r.isError, false, JSON.stringify(r));
    const q = chats(fake).find((c) => JSON.stringify(c.body).includes(prompt));
    assert.equal(q.headers['x-hermes-session-id'], mapped, 'the same session for the same id');
  }
  r = await client.callTool({ name: 'hermes_ask', arguments: { prompt: 'x', session_id: 'a\nb' } });
  assert.equal(r.structuredContent.error, 'invalid_arguments');
  assert.match(r.structuredContent.message, /'session_id' must have no control characters/);
  r = await client.callTool({ name: 'hermes_ask', arguments: { prompt: 'x', session_id: 'x'.repeat(257) } });
  assert.equal(r.structuredContent.error, 'invalid_arguments');
}

test('the Python server\'s names by default: callable (hermes_ask, hermes_check, job_id) but not listed', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  try {
    const { client, tools } = await sdkClient(srv);
    assert.ok(!tools.hermes_ask && !tools.hermes_check, 'the aliases are not listed by default');
    assert.ok(tools.hermes_task && tools.hermes_cancel.inputSchema.properties.job_id);
    await exerciseAliases(client, fake);
    await client.close();
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('MCP_TOOL_ALIASES=1: tools/list shows hermes_ask and hermes_check as aliases with the Python server\'s schemas', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_TOOL_ALIASES: '1' });
  try {
    const { client, tools } = await sdkClient(srv);
    const ask = tools.hermes_ask, check = tools.hermes_check;
    assert.ok(ask && check, Object.keys(tools).join());
    assert.match(ask.description, /^Alias of hermes_task \(its older name and arguments\)/);
    assert.match(check.description, /^Alias of hermes_result \(its older name\)/);
    assert.deepEqual(Object.keys(ask.inputSchema.properties).sort(), ASK_PROPS);
    assert.deepEqual(ask.inputSchema.required, ['prompt']);
    assert.equal(ask.inputSchema.properties.async_mode.type, 'boolean');
    assert.equal(ask.inputSchema.properties.toolsets.type, 'array');
    assert.deepEqual(Object.keys(check.inputSchema.properties), ['job_id']);
    assert.deepEqual(check.inputSchema.required, ['job_id']);
    // The SDK client checks each result against the output schema it listed.
    await exerciseAliases(client, fake);
    await client.close();
    // smoke takes the listed aliases as ours: neither missing nor unexpected.
    const sm = spawnSync(HERMES, ['smoke', '--base', srv.base, '--env-file', srv.envFile], { encoding: 'utf8', timeout: 60000 });
    assert.match(sm.stdout, /^ok   tools\/list: the 8 bridge tools$/m, sm.stdout);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('an alias goes with its tool: bridge_tools leaving hermes_task out leaves hermes_ask out', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-dropin-'));
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams: {}\nbridge_tools: {exclude: [hermes_task]}\n');
  chmodSync(gw, 0o600);
  let srv;
  try {
    srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_TOOL_ALIASES: '1', GATEWAY_FILE: gw });
    const { client, tools } = await sdkClient(srv);
    assert.ok(!tools.hermes_task && !tools.hermes_ask, Object.keys(tools).join());
    assert.ok(tools.hermes_check, 'hermes_result is kept, so is its alias');
    await assert.rejects(client.callTool({ name: 'hermes_ask', arguments: { prompt: 'x' } }), /Unknown tool: hermes_ask/);
    await client.close();
  } finally {
    if (srv) assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

// A reload of the gateway file (SIGHUP) on a server of its own: writes text, waits for the log.
async function reloadGateway(srv, gw, text) {
  writeFileSync(gw, text);
  const mark = logMark(srv);
  srv.proc.kill('SIGHUP');
  await waitAnyEvent(srv, ['pins_reread', 'reload_rejected'], {}, { since: mark, ms: 10000 });
  return srv.proc.stderrText.slice(mark);
}

// A server with fake's agent, a gateway file (text) and MCP_TOOL_ALIASES (aliases): fn({srv, gw}).
async function withGateway(fake, text, aliases, fn) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-dropin-'));
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, text);
  chmodSync(gw, 0o600);
  let srv;
  try {
    srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_TOOL_ALIASES: aliases, GATEWAY_FILE: gw });
    await fn({ srv, gw });
  } finally {
    if (srv) assert.equal(await srv.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a reload that leaves hermes_task and hermes_result out takes their aliases away too: nothing delegates, no result is read', async () => {
  const fake = await startFake();
  try {
    await withGateway(fake, 'upstreams: {}\n', '0', async ({ srv, gw }) => {
      let { client } = await sdkClient(srv);
      const done = await client.callTool({ name: 'hermes_task', arguments: { task: 'stored before the reload', mode: 'sync' } });
      assert.equal(done.structuredContent.status, 'completed', JSON.stringify(done));
      await client.close();
      const log = await reloadGateway(srv, gw, 'upstreams: {}\nbridge_tools: {exclude: [hermes_task, hermes_result]}\n');
      assert.match(log, /bridge tool hermes_ask is no longer exposed/);
      assert.match(log, /bridge tool hermes_check is no longer exposed/);
      ({ client } = await sdkClient(srv));
      await assert.rejects(client.callTool({ name: 'hermes_task', arguments: { task: 'x' } }), /Unknown tool: hermes_task/);
      await assert.rejects(client.callTool({ name: 'hermes_ask', arguments: { prompt: 'must not reach the agent' } }),
        /Unknown tool: hermes_ask/);
      await assert.rejects(client.callTool({ name: 'hermes_check', arguments: { job_id: done.structuredContent.id } }),
        /Unknown tool: hermes_check/);
      assert.ok(!chats(fake).some((q) => JSON.stringify(q.body).includes('must not reach the agent')), 'hermes_ask delegated');
      await client.close();
      // Given back with their tools by a later reload, and still not listed (MCP_TOOL_ALIASES=0).
      await reloadGateway(srv, gw, 'upstreams: {}\n');
      let tools;
      ({ client, tools } = await sdkClient(srv));
      assert.ok(tools.hermes_task && tools.hermes_result, Object.keys(tools).join());
      assert.ok(!tools.hermes_ask && !tools.hermes_check, `given back, the aliases are listed: ${Object.keys(tools).join()}`);
      const back = await client.callTool({ name: 'hermes_check', arguments: { job_id: done.structuredContent.id } });
      assert.equal(back.structuredContent.status, 'completed', JSON.stringify(back));
      await client.close();
      const health = await (await fetch(`${srv.base}/health`)).json();
      assert.equal(health.tools, Object.keys(tools).length, 'health counts the listed tools');
    });
  } finally {
    await fake.stop();
  }
});

test('bridge_tools including hermes_task and hermes_result keeps their aliases: an alias is judged as its tool', async () => {
  const fake = await startFake();
  try {
    await withGateway(fake, 'upstreams: {}\nbridge_tools: {include: [hermes_task, hermes_result]}\n', '1', async ({ srv, gw }) => {
      let { client, tools } = await sdkClient(srv);
      assert.deepEqual(Object.keys(tools).filter((n) => !n.includes('__')).sort(),
        ['hermes_ask', 'hermes_check', 'hermes_result', 'hermes_task']);
      const r = await client.callTool({ name: 'hermes_ask', arguments: { prompt: 'kept with its tool' } });
      assert.equal(r.structuredContent.status, 'completed', JSON.stringify(r));
      await client.close();
      // Naming an alias in bridge_tools does not decide it: its tool does.
      await reloadGateway(srv, gw, 'upstreams: {}\nbridge_tools: {exclude: [hermes_ask, hermes_check]}\n');
      ({ client, tools } = await sdkClient(srv));
      assert.ok(tools.hermes_ask && tools.hermes_check, Object.keys(tools).join());
      const again = await client.callTool({ name: 'hermes_ask', arguments: { prompt: 'still kept' } });
      assert.equal(again.structuredContent.status, 'completed', JSON.stringify(again));
      await client.close();
    });
  } finally {
    await fake.stop();
  }
});

// What a caller can tell from an answer, with the id asked about written as <id> (ownership.test.mjs).
function seen(r, ...ids) {
  let text = JSON.stringify({ isError: r.isError, error: r.structuredContent?.error,
    message: r.structuredContent?.message, content: r.content });
  for (const id of ids) text = text.split(id).join('<id>');
  return text;
}

test('the aliases keep tasks to their owner: bob\'s hermes_check and hermes_cancel of alice\'s job answer as for a job that does not exist, while it runs and after', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-dropin-'));
  const tok = { alice: randomBytes(32).toString('hex'), bob: randomBytes(32).toString('hex') };
  const tokens = join(dir, 'tokens.yaml');
  writeFileSync(tokens, 'tokens:\n' +
    `  - name: alice\n    sha256: ${sha(tok.alice)}\n    scopes: [hermes:read, hermes:task]\n` +
    `  - name: bob\n    sha256: ${sha(tok.bob)}\n    scopes: [hermes:read, hermes:task]\n`);
  chmodSync(tokens, 0o600);
  let srv;
  try {
    srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', TOKENS_FILE: tokens });
    const [alice, bob] = await Promise.all([connect(srv.url, bearer(tok.alice)), connect(srv.url, bearer(tok.bob))]);
    await Promise.all([alice.listTools(), bob.listTools()]);
    const call = (c, name, args) => c.callTool({ name, arguments: args });
    const started = await call(alice, 'hermes_ask', { prompt: 'alice\'s job [delay=2500]', async_mode: true });
    assert.equal(started.structuredContent.status, 'accepted', JSON.stringify(started));
    const job = started.structuredContent.id;
    const nobodys = `no-such-${randomBytes(4).toString('hex')}`;
    // While it runs: alice sees "running", bob what a job that does not exist gets.
    assert.equal((await call(alice, 'hermes_check', { job_id: job })).structuredContent.status, 'running');
    const check = async () => {
      const [mine, none] = [await call(bob, 'hermes_check', { job_id: job }), await call(bob, 'hermes_check', { job_id: nobodys })];
      assert.equal(mine.structuredContent?.error, 'not_found', JSON.stringify(mine));
      assert.equal(seen(mine, job), seen(none, nobodys));
    };
    await check();
    const [cancelMine, cancelNone] = [await call(bob, 'hermes_cancel', { job_id: job }), await call(bob, 'hermes_cancel', { job_id: nobodys })];
    assert.equal(cancelMine.structuredContent?.error, 'not_found', JSON.stringify(cancelMine));
    assert.equal(seen(cancelMine, job), seen(cancelNone, nobodys));
    // Bob's cancel stopped nothing: alice's job runs to its end.
    const done = await until(async () => {
      const c = await call(alice, 'hermes_check', { job_id: job });
      return c.structuredContent.status === 'running' ? null : c;
    }, 'alice\'s job to end', 15000);
    assert.equal(done.structuredContent.status, 'completed', JSON.stringify(done));
    await check();
    await Promise.all([alice.close(), bob.close()]);
  } finally {
    if (srv) assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

// ---------- whoami ----------

const sha = (t) => createHash('sha256').update(t).digest('hex');

// whoami as the SDK client gets it; asserts the token and its hash appear nowhere in it.
async function whoami(client, token) {
  const r = await client.callTool({ name: 'whoami', arguments: {} });
  assert.equal(r.isError, false, JSON.stringify(r));
  const text = JSON.stringify(r);
  assert.ok(!text.includes(token) && !text.includes(sha(token)), 'the token or its hash was told');
  assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent);
  return r.structuredContent;
}

test('whoami: the owner, a TOKENS_FILE role and an OAuth client each learn who they are, never the token', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-dropin-'));
  const reader = randomBytes(32).toString('hex'), ops = randomBytes(32).toString('hex');
  const tokens = join(dir, 'tokens.yaml');
  writeFileSync(tokens, 'tokens:\n' +
    `  - name: ci-reader\n    sha256: ${sha(reader)}\n    scopes: [hermes:read]\n    agents: [hermes]\n    expires: 2099-01-31\n` +
    `  - name: ops\n    sha256: ${sha(ops)}\n    scopes: [hermes:admin]\n`);
  chmodSync(tokens, 0o600);
  const { id, secret } = mint();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  let srv;
  try {
    srv = await startHermes({ MCP_PORT: String(port), OAUTH_ISSUER_URL: issuer, OAUTH_CLIENT_ID: id,
      OAUTH_CLIENT_SECRET: secret, TOKENS_FILE: tokens, HERMES_ENV_PATH: agentEnv(fake) });
    setPassphrase(srv.envFile);
    let client = await connect(srv.url, bearer(srv.token));
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'whoami'));
    assert.deepEqual(await whoami(client, srv.token),
      { principal: 'owner', kind: 'owner', scopes: ['*'], agents: ['*'], expires_at: null, owner_key: 'p:owner' });
    await client.close();

    // /metrics: a role holding hermes:admin reads it, one without gets 403 saying what is accepted.
    const denied = await fetch(`${srv.base}/metrics`, { headers: bearer(reader) });
    assert.equal(denied.status, 403);
    assert.match((await denied.json()).message, /owner's token \(MCP_AUTH_TOKEN\) and for tokens holding hermes:admin/);
    assert.equal((await fetch(`${srv.base}/metrics`, { headers: bearer(ops) })).status, 200);

    client = await connect(srv.url, bearer(reader));
    // Listed for a role that holds none of the bridge's write scopes too.
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'whoami'));
    assert.deepEqual(await whoami(client, reader),
      { principal: 'ci-reader', kind: 'token', scopes: ['hermes:read'], agents: ['hermes'], expires_at: '2099-01-31T00:00:00Z',
        owner_key: 'p:ci-reader' });
    await client.close();

    const { tokens: got } = await oauthTokens(srv, issuer, id, secret);
    client = await connect(srv.url, bearer(got.access_token));
    const me = await whoami(client, got.access_token);
    assert.ok(!JSON.stringify(me).includes(got.refresh_token));
    assert.equal(me.kind, 'oauth');
    assert.equal(me.principal, `oauth:${id}`);
    assert.equal(me.client_id, id);
    assert.deepEqual(me.scopes, got.scope.split(' '), 'the scopes the token was granted');
    assert.ok(me.scopes.includes('hermes:read'));
    assert.deepEqual(me.agents, ['*']);
    const left = (Date.parse(me.expires_at) - Date.now()) / 1000;
    assert.ok(left > 3000 && left <= 3601, `the access token's expiry, about an hour away: ${me.expires_at}`);
    // owner_key: what its tasks are bound to, the client and a digest of its authorization:
    // not derived from the token (no digest of it), the same for the refreshed token.
    const key = /^p:oauth:[^/]+\/[0-9a-f]{16}$/.test(me.owner_key) ? me.owner_key : null;
    assert.ok(key || /^[A-Za-z0-9_-]{43}$/.test(me.owner_key), me.owner_key);
    const tokenDigest = createHash('sha256').update(Buffer.concat([Buffer.from('hermes-mcp caller v1\0'),
      Buffer.from(got.access_token)])).digest('base64url');
    assert.notEqual(me.owner_key, tokenDigest);
    const task = await client.callTool({ name: 'hermes_task', arguments: { task: 'whose is this', mode: 'async' } });
    await client.close();
    const refreshed = await (await fetch(`${issuer}/token`, { method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: got.refresh_token, client_id: id,
        client_secret: secret, resource: srv.url }).toString() })).json();
    assert.ok(refreshed.access_token && refreshed.access_token !== got.access_token, JSON.stringify(refreshed));
    client = await connect(srv.url, bearer(refreshed.access_token));
    assert.equal((await whoami(client, refreshed.access_token)).owner_key, me.owner_key, 'one authorization, one key');
    const mine = await client.callTool({ name: 'hermes_check', arguments: { job_id: task.structuredContent.id } });
    assert.equal(mine.isError, false, `the refreshed token reaches the task bound to that key: ${JSON.stringify(mine)}`);
    await client.close();
  } finally {
    if (srv) assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
