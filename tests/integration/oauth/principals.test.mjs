// Principals and scopes: MCP_AUTH_TOKEN is "owner"; TOKENS_FILE adds one
// principal per role with its scopes, an agents: allowlist and an expiry. Each principal sees
// only its tools (the official SDK client, listTools before callTool); a call outside its scopes
// gets 403 insufficient_scope; an expired token 401; the audit log and /metrics name principals;
// a tokens file that is not safe or not clear stops the server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, chmodSync, mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { startHermes, startFake, HERMES, JSON_HEADERS, until, modernMeta, modernHeaders,
  connectClient } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

const sha = (t) => createHash('sha256').update(t).digest('hex');
// whoami: every principal may ask who it is.
const READ_TOOLS = ['hermes_files', 'hermes_result', 'hermes_status', 'list_agents', 'whoami'];
const ALL_TOOLS = ['hermes_cancel', 'hermes_files', 'hermes_reset', 'hermes_result', 'hermes_status',
  'hermes_task', 'list_agents', 'whoami'];

// Tokens for the roles, and the YAML file that names them (hashes only).
function roles() {
  const tok = { reader: randomBytes(32).toString('hex'), worker: randomBytes(32).toString('hex'),
    old: randomBytes(32).toString('hex') };
  const yaml = 'tokens:\n' +
    `  - name: reader\n    sha256: ${sha(tok.reader)}\n    scopes: [hermes:read]\n` +
    // The worker may delegate to beta only: it is kept from reaching alpha (its own operator).
    `  - name: worker\n    sha256: ${sha(tok.worker)}\n    scopes: [hermes:read, hermes:task]\n    agents: [beta]\n` +
    `  - name: old\n    sha256: ${sha(tok.old)}\n    scopes: hermes:read\n    expires: 2020-01-01\n`;
  return { tok, yaml };
}

function tempFile(name, text, mode = 0o600) {
  const f = join(mkdtempSync(join(tmpdir(), 'hm-princ-')), name);
  writeFileSync(f, text);
  chmodSync(f, mode);
  return f;
}

// Agents alpha (the default) and beta, both at one fake agent.
function registry(fake) {
  const keyFile = tempFile('key', fake.key + '\n');
  return tempFile('agents.yaml', 'default: alpha\nagents:\n' + ['alpha', 'beta'].map((n) =>
    `  - name: ${n}\n    base_url: http://127.0.0.1:${fake.port}\n    key_file: ${keyFile}\n`).join(''));
}

const connect = (srv, token) =>
  connectClient(srv, { name: 'principals-it', version: '1', headers: { Authorization: `Bearer ${token}` } });
const names = async (client) => (await client.listTools()).tools.map((t) => t.name).sort();
const call = (client, name, args = {}) => client.callTool({ name, arguments: args });

async function rawCall(srv, token, name, args = {}) {
  const res = await fetch(srv.url, {
    method: 'POST',
    headers: { ...JSON_HEADERS, Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args } }),
  });
  return { status: res.status, www: res.headers.get('www-authenticate'), json: await res.json() };
}

test('each principal sees and calls only its tools; outside its scopes: 403 insufficient_scope', async () => {
  const fake = await startFake();
  const { tok, yaml } = roles();
  const srv = await startHermes({ AGENTS_FILE: registry(fake), TOKENS_FILE: tempFile('tokens.yaml', yaml) });
  try {
    // The reader: the four read tools, and nothing else.
    const reader = await connect(srv, tok.reader);
    assert.deepEqual(await names(reader), READ_TOOLS);
    const la = await call(reader, 'list_agents');
    assert.equal(la.isError, false);
    assert.deepEqual(la.structuredContent.agents.map((a) => a.name), ['alpha', 'beta']);
    await assert.rejects(call(reader, 'hermes_reset', { confirmed: true }), (e) => e.code === 403);
    await assert.rejects(call(reader, 'hermes_task', { task: 'x', mode: 'sync' }), (e) => e.code === 403);
    await reader.close();

    // The answer's shape, as the MCP spec's step-up asks: 403, the challenge naming the scope,
    // and a JSON-RPC error for the request's id.
    const r = await rawCall(srv, tok.reader, 'hermes_task', { task: 'x', mode: 'sync' });
    assert.equal(r.status, 403);
    assert.match(r.www, /^Bearer /);
    assert.match(r.www, /error="insufficient_scope"/);
    assert.match(r.www, /scope="hermes:task"/);
    assert.equal(r.json.id, 7);
    assert.equal(r.json.error.code, -32003);
    assert.match(r.json.error.message, /hermes:task/);
    const admin = await rawCall(srv, tok.reader, 'hermes_reset', { confirmed: true });
    assert.equal(admin.status, 403);
    assert.match(admin.www, /scope="hermes:admin"/);

    // The worker: read and task tools, no reset; only agent beta, even as the default.
    const worker = await connect(srv, tok.worker);
    assert.deepEqual(await names(worker), ALL_TOOLS.filter((n) => n !== 'hermes_reset'));
    const wla = await call(worker, 'list_agents');
    assert.deepEqual(wla.structuredContent.agents.map((a) => a.name), ['beta']);
    assert.equal(wla.structuredContent.count, 1);
    const toAlpha = await call(worker, 'hermes_task', { task: 'hello', mode: 'sync', agent: 'alpha' });
    assert.equal(toAlpha.isError, true);
    assert.equal(toAlpha.structuredContent.error, 'unknown_agent');
    const toDefault = await call(worker, 'hermes_task', { task: 'hello', mode: 'sync' });
    assert.equal(toDefault.structuredContent.error, 'unknown_agent', 'the default agent alpha is outside its list');
    const chatsBefore = fake.received().filter((q) => q.path === '/v1/chat/completions').length;
    assert.equal(chatsBefore, 0, 'nothing reached the agent for a refused task');
    const toBeta = await call(worker, 'hermes_task', { task: 'hello', mode: 'sync', agent: 'beta', id: 'worker-beta' });
    assert.equal(toBeta.isError, false, JSON.stringify(toBeta.structuredContent));
    await assert.rejects(call(worker, 'hermes_reset', { confirmed: true }), (e) => e.code === 403);
    await worker.close();

    // The owner (MCP_AUTH_TOKEN) works exactly as before: every tool, every agent.
    const owner = await connect(srv, srv.token);
    assert.deepEqual(await names(owner), ALL_TOOLS);
    const ola = await call(owner, 'list_agents');
    assert.deepEqual(ola.structuredContent.agents.map((a) => a.name), ['alpha', 'beta']);
    const ot = await call(owner, 'hermes_task', { task: 'hi', mode: 'sync', agent: 'alpha', id: 'owner-alpha' });
    assert.equal(ot.isError, false);
    assert.equal((await call(owner, 'hermes_result', { id: 'worker-beta' })).isError, false);
    await owner.close();

    // Tasks and runs of an agent outside the worker's list are not there for it: no result,
    // files, cancel or status; its own task is. Without hermes:admin a principal sees only its
    // own tasks, whatever its agents (ownership.test.mjs).
    const w2 = await connect(srv, tok.worker);
    await w2.listTools();
    for (const [tool, args] of [['hermes_result', { id: 'owner-alpha' }], ['hermes_files', { id: 'owner-alpha' }],
      ['hermes_cancel', { id: 'owner-alpha' }]]) {
      const r = await call(w2, tool, args);
      assert.equal(r.isError, true, tool);
      assert.equal(r.structuredContent.error, 'not_found', tool);
    }
    const st = await call(w2, 'hermes_status', { run_id: 'run-x', agent: 'alpha' });
    assert.equal(st.structuredContent.error, 'unknown_agent');
    const own = await call(w2, 'hermes_result', { id: 'worker-beta' });
    assert.equal(own.isError, false, JSON.stringify(own.structuredContent));
    await w2.close();
    const r2 = await connect(srv, tok.reader);
    await r2.listTools();
    assert.equal((await call(r2, 'hermes_result', { id: 'owner-alpha' })).structuredContent.error, 'not_found');
    await r2.close();

    // Expired: 401 invalid_token, saying so; the SDK client cannot connect.
    const ex = await rawCall(srv, tok.old, 'list_agents');
    assert.equal(ex.status, 401);
    assert.match(ex.www, /error="invalid_token"/);
    assert.match(ex.www, /expired/);
    await assert.rejects(connect(srv, tok.old), (e) => e.code === 401);
    // An unknown token: 401 as before.
    assert.equal((await rawCall(srv, randomBytes(32).toString('hex'), 'list_agents')).status, 401);

    // /metrics counts requests per principal, by name; the owner alone may read it.
    const m = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
    for (const who of ['owner', 'reader', 'worker']) {
      const line = m.split('\n').find((l) => l.startsWith(`hermes_mcp_principal_requests_total{principal="${who}"}`));
      assert.ok(line && Number(line.split(' ').pop()) > 0, `${who} counted:\n${m}`);
    }
    assert.ok(!m.includes('principal="old"'), 'a refused token is nobody');
    assert.equal((await fetch(`${srv.base}/metrics`, { headers: { Authorization: `Bearer ${tok.reader}` } })).status, 403);
    for (const t of Object.values(tok)) assert.ok(!m.includes(t) && !m.includes(sha(t)));

    // The audit log names the principal on each authenticated line, never a token or hash.
    await until(() => existsSync(srv.auditFile) && readFileSync(srv.auditFile, 'utf8').includes('"principal":"worker"'), 'audit lines');
    const text = readFileSync(srv.auditFile, 'utf8');
    const lines = text.trim().split('\n').map((l) => JSON.parse(l));
    const denied = lines.find((l) => l.principal === 'reader' && l.tool === 'hermes_reset');
    assert.equal(denied.status, 403);
    assert.equal(denied.error, '-32003');
    assert.ok(lines.some((l) => l.principal === 'owner' && l.tool === 'hermes_task' && l.status === 200));
    assert.ok(lines.filter((l) => l.status === 401).every((l) => l.principal === undefined));
    // Every line a credential was accepted on names its principal, refused calls included.
    const accepted = lines.filter((l) => ['/mcp', '/metrics'].includes(l.path) && l.status !== 401);
    assert.ok(accepted.length > 10 && accepted.every((l) => ['owner', 'reader', 'worker'].includes(l.principal)),
      JSON.stringify(accepted.filter((l) => !l.principal)));
    for (const t of [...Object.values(tok), srv.token]) assert.ok(!text.includes(t) && !text.includes(sha(t)));
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('token gen --name prints a token once and an entry that works when added (SIGHUP)', async () => {
  const tokens = tempFile('tokens.yaml', 'tokens: []\n');
  const srv = await startHermes({ TOKENS_FILE: tokens });
  try {
    const out = execFileSync(HERMES, ['token', 'gen', '--name', 'ops-reader', '--scopes', 'hermes:read',
      '--expires', '2999-01-01'], { encoding: 'utf8' });
    const token = out.match(/^([0-9a-f]{64})$/m)[1];
    const entry = out.slice(out.indexOf('  - name:'));
    assert.match(entry, /sha256: ([0-9a-f]{64})/);
    assert.equal(entry.match(/sha256: ([0-9a-f]{64})/)[1], sha(token));
    assert.ok(!entry.includes(token), 'the entry holds the hash, not the token');
    // Before it is added the token is nobody.
    assert.equal((await rawCall(srv, token, 'list_agents')).status, 401);
    writeFileSync(tokens, 'tokens:\n' + entry);
    srv.proc.kill('SIGHUP');
    await until(async () => (await rawCall(srv, token, 'list_agents')).status === 200, 'the new principal');
    const c = await connect(srv, token);
    assert.deepEqual(await names(c), READ_TOOLS);
    await c.close();

    // A reload with a broken file keeps the principals that were there.
    writeFileSync(tokens, 'tokens:\n  - name: x\n    sha256: nothex\n    scopes: [hermes:read]\n');
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_rejected', { config: 'env' });
    assert.equal((await rawCall(srv, token, 'list_agents')).status, 200);

    // Bad arguments: usage errors, exit 2, no token printed.
    for (const args of [['--name', 'owner', '--scopes', 'hermes:read'], ['--name', 'x', '--scopes', 'hermes:all'],
      ['--name', 'x'], ['--name', 'x', '--scopes', 'hermes:read', '--expires', '2001-01-01'],
      ['--name', 'bad name', '--scopes', 'hermes:read']]) {
      const r = spawnSync(HERMES, ['token', 'gen', ...args], { encoding: 'utf8' });
      assert.equal(r.status, 2, args.join(' '));
      assert.doesNotMatch(r.stdout, /[0-9a-f]{64}/);
    }
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

// Starts serve on an env file naming tokensFile; returns {status, stderr} of a refusal.
function serveRefuses(tokensFile) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-princ-env-'));
  const env = join(dir, 'env');
  writeFileSync(env, `MCP_PORT=0\nMCP_AUTH_TOKEN=${randomBytes(32).toString('hex')}\nTOKENS_FILE=${tokensFile}\n` +
    `AGENTS_FILE=${join(dir, 'agents.yaml')}\n`);
  chmodSync(env, 0o600);
  const r = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
  rmSync(dir, { recursive: true, force: true });
  return r;
}

test('a tokens file that is unsafe or unclear stops the server with a reason', () => {
  const h = sha('a'.repeat(64));
  const h2 = sha('b'.repeat(64));
  const good = `tokens:\n  - name: r\n    sha256: ${h}\n    scopes: [hermes:read]\n`;
  const cases = [
    ['mode 644', tempFile('t.yaml', good, 0o644), /readable or writable by others \(mode 644\); run: chmod 600/],
    ['bad YAML', tempFile('t.yaml', 'tokens: [\n  - name: r\n'), /TOKENS_FILE .*line \d+/],
    ['unknown scope', tempFile('t.yaml', `tokens:\n  - name: r\n    sha256: ${h}\n    scopes: [hermes:read, hermes:everything]\n`),
      /principal 'r': unknown scope 'hermes:everything'/],
    ['duplicate names', tempFile('t.yaml', good + `  - name: r\n    sha256: ${h2}\n    scopes: [hermes:task]\n`),
      /principal 'r' is listed twice/],
    ['duplicate tokens', tempFile('t.yaml', good + `  - name: s\n    sha256: ${h}\n    scopes: [hermes:task]\n`),
      /have the same token/],
    ['unknown key', tempFile('t.yaml', `tokens:\n  - name: r\n    sha256: ${h}\n    scopes: [hermes:read]\n    scope: hermes:admin\n`),
      /unknown key 'scope'/],
    ['named owner', tempFile('t.yaml', `tokens:\n  - name: owner\n    sha256: ${h}\n    scopes: [hermes:read]\n`),
      /'owner' is MCP_AUTH_TOKEN's/],
    ['bad expiry', tempFile('t.yaml', `tokens:\n  - name: r\n    sha256: ${h}\n    scopes: [hermes:read]\n    expires: tomorrow\n`),
      /'expires' must be a UTC date/],
    ['missing', '/nonexistent/tokens.yaml', /cannot open/],
  ];
  for (const [what, file, reason] of cases) {
    const r = serveRefuses(file);
    assert.equal(r.status, 2, `${what}: exit 2\n${r.stderr}`);
    assert.match(r.stderr, reason, what);
    assert.ok(!r.stderr.includes(h) && !r.stderr.includes(h2), `${what}: no hash quoted`);
  }
  // A FIFO in its place is refused at once (not waited on).
  const dir = mkdtempSync(join(tmpdir(), 'hm-princ-fifo-'));
  const fifo = join(dir, 'tokens.yaml');
  execFileSync('mkfifo', ['-m', '600', fifo]);
  const r = serveRefuses(fifo);
  assert.equal(r.status, 2, r.stderr);
  assert.match(r.stderr, /not a regular file/);
  rmSync(dir, { recursive: true, force: true });
});

test('2026-07-28 (stateless, _meta): tools/list per principal, private cache scope, 403 outside', async () => {
  const { tok, yaml } = roles();
  const srv = await startHermes({ TOKENS_FILE: tempFile('tokens.yaml', yaml) });
  const meta = modernMeta({}, 'principals-it');
  const rpc = async (token, method, params = {}, name) => {
    const headers = { ...modernHeaders(method, name), Authorization: `Bearer ${token}` };
    const r = await fetch(srv.url, { method: 'POST', headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method, params: { ...params, _meta: meta } }) });
    return { status: r.status, www: r.headers.get('www-authenticate'), json: await r.json() };
  };
  try {
    const mine = await rpc(tok.reader, 'tools/list');
    assert.equal(mine.status, 200);
    assert.deepEqual(mine.json.result.tools.map((t) => t.name).sort(), READ_TOOLS);
    assert.equal(mine.json.result.resultType, 'complete');
    assert.equal(mine.json.result.cacheScope, 'private', 'a per-principal list is never shared');
    const all = await rpc(srv.token, 'tools/list');
    assert.deepEqual(all.json.result.tools.map((t) => t.name).sort(), ALL_TOOLS);
    const refused = await rpc(tok.reader, 'tools/call', { name: 'hermes_cancel', arguments: { id: 'x' } }, 'hermes_cancel');
    assert.equal(refused.status, 403);
    assert.match(refused.www, /error="insufficient_scope", scope="hermes:task"/);
    assert.equal(refused.json.id, 5);
    assert.equal(refused.json.error.code, -32003);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('doctor checks TOKENS_FILE as serve would: principals counted, an unsafe file FAILs with the fix', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-princ-doc-'));
  const { yaml } = roles();
  const tokens = tempFile('tokens.yaml', yaml);
  const env = join(dir, 'env');
  writeFileSync(env, `MCP_PORT=0\nMCP_AUTH_TOKEN=${randomBytes(32).toString('hex')}\nTOKENS_FILE=${tokens}\nTASKS_DIR=${join(dir, 'tasks')}\n`);
  chmodSync(env, 0o600);
  const doctor = () => spawnSync(HERMES, ['doctor', '--env-file', env, '--no-probe'], { encoding: 'utf8', timeout: 20000 });
  let r = doctor();
  assert.match(r.stdout, new RegExp(`ok\\s+TOKENS_FILE ${tokens}: 3 principals`), r.stdout);
  chmodSync(tokens, 0o644);
  r = doctor();
  assert.equal(r.status, 1, r.stdout);
  assert.match(r.stdout, /FAIL\s+TOKENS_FILE .*readable or writable by others \(mode 644\); run: chmod 600/);
  rmSync(dir, { recursive: true, force: true });
});
