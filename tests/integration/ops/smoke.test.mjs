// `hermes-mcp smoke`: passes against the real server (stateless and with sessions) wired to the
// fake agent, and fails, with the one FAIL line that names the broken property, against broken
// servers: a wrong token, no agent, nothing listening, and an imitation MCP server in this file
// that breaks one property at a time. The token must never appear in what smoke prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { mkdtempSync, writeFileSync, chmodSync, rmSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, HERMES, startHermes, startFake, agentEnv, tokensFile } from '../../lib/lib.mjs';

const TOOLS = ['hermes_task', 'hermes_status', 'hermes_result', 'hermes_files', 'list_agents',
  'hermes_cancel', 'hermes_reset', 'whoami'];
const CHECKS = ['GET /health', 'POST /mcp without a token', 'initialize', 'tools/list',
  'hermes_task sync', 'hermes_result', 'hermes_files', 'traversal', 'absolute path', 'body limit'];

// Runs build/hermes-mcp smoke asynchronously (the imitation server lives in this process).
// env: variables added to this process's (HERMES_MCP_TOKEN is only ever the test's own).
function smoke(args, { valgrind = process.env.HM_VALGRIND === '1', env: extra = {} } = {}) {
  const vg = ['--quiet', '--error-exitcode=99', '--leak-check=full', '--errors-for-leak-kinds=definite'];
  const env = { ...process.env, ...extra };
  if (!('HERMES_MCP_TOKEN' in extra)) delete env.HERMES_MCP_TOKEN;
  const opts = { stdio: ['ignore', 'pipe', 'pipe'], env };
  const proc = valgrind ? spawn('valgrind', [...vg, HERMES, 'smoke', ...args], opts)
    : spawn(HERMES, ['smoke', ...args], opts);
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  return new Promise((resolve) => proc.on('close', (code) => {
    assert.doesNotMatch(stderr, /AddressSanitizer|LeakSanitizer|runtime error:|definitely lost/, stderr);
    resolve({ code, stdout, stderr, lines: stdout.split('\n').filter(Boolean) });
  }));
}

function tokenEnv(token, mode = 0o600, extra = '') {
  const dir = mkdtempSync(join(tmpdir(), 'hm-smoke-'));
  const file = join(dir, 'env');
  writeFileSync(file, (token ? `MCP_AUTH_TOKEN=${token}\n` : '') + extra);
  chmodSync(file, mode);
  return { file, dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function assertNoSecret(r, ...secrets) {
  for (const s of secrets) {
    assert.ok(!r.stdout.includes(s), 'token in stdout');
    assert.ok(!r.stderr.includes(s), 'token in stderr');
    assert.ok(!r.stdout.toLowerCase().includes(s.slice(0, 16).toLowerCase()), 'a piece of the token in stdout');
  }
}

// The check lines: { name: 'ok' | 'FAIL' | 'skip' }.
function verdicts(r) {
  const v = {};
  for (const l of r.lines) {
    const m = l.match(/^(ok|FAIL|skip) +([^:]+):/);
    if (m) v[m[2]] = m[1];
  }
  return v;
}

function assertAllOk(r) {
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const v = verdicts(r);
  for (const c of CHECKS) assert.equal(v[c], 'ok', `${c}:\n${r.stdout}`);
  assert.match(r.lines.at(-1), /^smoke: 10 passed, 0 failed \(/);
}

// Exit 1, the named check FAILs with a line matching re, and every other check still ran.
function assertOnlyFail(r, check, re, skipped = []) {
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const v = verdicts(r);
  const line = r.lines.find((l) => l.startsWith(`FAIL ${check}:`));
  assert.ok(line, `no FAIL ${check} line:\n${r.stdout}`);
  assert.match(line, re);
  assert.match(line, /; fix: \S/, 'the line says the fix');
  for (const c of CHECKS) {
    if (c === check) continue;
    assert.equal(v[c], skipped.includes(c) ? 'skip' : 'ok', `${c}:\n${r.stdout}`);
  }
}

async function rig(extra = {}) {
  const fake = await startFake(['--delay-scale', '0']);
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', ...extra });
  return { fake, srv, async close() { assert.equal(await srv.stop(), 0); await fake.stop(); } };
}

test('smoke --help and help smoke exit 0 and document the exit codes', async () => {
  for (const args of [['--help'], ['-h']]) {
    const r = await smoke(args);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^usage: hermes-mcp smoke --base URL/);
    assert.match(r.stdout, /Exit codes: 0 every check passed, 1 a check failed/);
  }
  const p = spawn(HERMES, ['help', 'smoke']);
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  assert.equal(await new Promise((res) => p.on('close', res)), 0);
  assert.match(out, /^usage: hermes-mcp smoke/);
});

test('usage and configuration errors exit 2 with one line saying the fix', async () => {
  const good = tokenEnv(randomBytes(32).toString('hex'));
  const open = tokenEnv(randomBytes(32).toString('hex'), 0o644);
  const none = tokenEnv(null, 0o600, 'MCP_PORT=1\n');
  const short = tokenEnv('abc');
  try {
    const cases = [
      [[], /--base URL is required/],
      [['--base'], /missing value after '--base'/],
      [['--base', 'http://127.0.0.1:1', '--bogus'], /unknown argument '--bogus'/],
      [['--base', 'ftp://127.0.0.1', '--env-file', good.file], /must start with http:\/\/ or https:\/\//],
      [['--base', 'http://mcp.example.com', '--env-file', good.file], /refusing to send the token over plain http to mcp\.example\.com; use the https:\/\/ URL/],
      [['--base', 'http://127.0.0.1:1', '--env-file', join(good.dir, 'missing')], /env file .*missing not found; point --env-file/],
      [['--base', 'http://127.0.0.1:1', '--env-file', open.file], /readable by others \(mode 644\); run: chmod 600/],
      [['--base', 'http://127.0.0.1:1', '--env-file', none.file], /^(?!.*token gen).*no MCP_AUTH_TOKEN in .*: smoke needs a bearer token; .* in HERMES_MCP_TOKEN or with --token-file FILE \(mode 600\)/],
      [['--base', 'http://127.0.0.1:1', '--env-file', short.file], /must be 64 hexadecimal characters; run: hermes-mcp token gen/],
      [['--base', 'http://127.0.0.1:1', '--env-file', good.file, '--id', '../x'], /--id must match/],
      [['--base', 'http://127.0.0.1:1', '--env-file', good.file, '--timeout', '0'], /--timeout takes 1-3600 seconds/],
      [['--base', 'https://127.0.0.1:1', '--env-file', good.file, '--cacert', join(good.dir, 'nope.pem')], /cannot read --cacert .*nope\.pem/],
    ];
    for (const [args, re] of cases) {
      const r = await smoke(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout, '', 'nothing was checked');
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, re);
      assertNoSecret(r, readToken(good.file), readToken(open.file));
    }
  } finally {
    for (const e of [good, open, none, short]) e.cleanup();
  }
});

function readToken(file) {
  return readFileSync(file, 'utf8').match(/MCP_AUTH_TOKEN=(\w+)/)[1];
}

test('a server without MCP_AUTH_TOKEN (TOKENS_FILE only): smoke says it needs a bearer, and passes with HERMES_MCP_TOKEN or --token-file (mode 600)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-smoke-'));
  const role = randomBytes(32).toString('hex');
  const tokens = tokensFile(dir, { monitor: [role, 'hermes:read, hermes:task, hermes:admin'] });
  const r0 = await rig({ MCP_AUTH_TOKEN: undefined, TOKENS_FILE: tokens });
  try {
    const base = ['--base', r0.srv.base, '--env-file', r0.srv.envFile];
    const none = await smoke(base);
    assert.equal(none.code, 2, none.stdout + none.stderr);
    assert.match(none.stderr, /no MCP_AUTH_TOKEN in .*: smoke needs a bearer token; .*HERMES_MCP_TOKEN or with --token-file FILE/);
    assert.doesNotMatch(none.stderr, /token gen/, 'no advice to add an owner token the setup chose not to have');
    const byEnv = await smoke(base, { env: { HERMES_MCP_TOKEN: role } });
    assertAllOk(byEnv);
    assertNoSecret(byEnv, role);
    const file = join(dir, 'token');
    writeFileSync(file, `${role}\n`);
    chmodSync(file, 0o644);
    const open = await smoke(['--base', r0.srv.base, '--token-file', file]);
    assert.equal(open.code, 2);
    assert.match(open.stderr, /--token-file .*token is readable by others \(mode 644\); run: chmod 600/);
    chmodSync(file, 0o600);
    const byFile = await smoke(['--base', r0.srv.base, `--token-file=${file}`]);
    assertAllOk(byFile);
    assertNoSecret(byFile, role);
    // A wrong one: 401, and the fix names where the token came from.
    const wrong = await smoke(['--base', r0.srv.base], { env: { HERMES_MCP_TOKEN: randomBytes(32).toString('hex') } });
    assert.match(wrong.stdout, /^FAIL initialize: HTTP 401 .*fix: the token in HERMES_MCP_TOKEN is not one this server accepts/m);
  } finally {
    await r0.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('passes against the real server: every check ok, the agent did the task, the token is never shown', async () => {
  const r0 = await rig();
  try {
    const id = `smoke-it-${randomBytes(4).toString('hex')}`;
    const r = await smoke(['--base', r0.srv.base, '--env-file', r0.srv.envFile, '--id', id]);
    assertAllOk(r);
    assert.match(r.stdout, /^ok   initialize: protocol 2025-11-25, server hermes-mcp .*, stateless$/m);
    assert.match(r.stdout, /^ok   tools\/list: the 8 bridge tools$/m);
    assert.match(r.stdout, /^ok   body limit: a 262145-byte body got 413$/m);
    assertNoSecret(r, r0.srv.token);
    // The task really went to the agent and was stored under the id.
    const chats = r0.fake.received().filter((q) => q.path === '/v1/chat/completions');
    assert.equal(chats.length, 1);
    assert.ok(existsSync(join(r0.srv.dir, 'tasks', id, 'result.json')));
    // The same --id again replays the stored result: still all ok, no second agent call.
    const again = await smoke(['--base', `${r0.srv.base}/mcp/`, '--env-file', r0.srv.envFile, '--id', id]);
    assertAllOk(again);
    assert.equal(r0.fake.received().filter((q) => q.path === '/v1/chat/completions').length, 1);
  } finally {
    await r0.close();
  }
});

test('passes against a real server with a GATEWAY_FILE: the gateway\'s tools are fine beside the bridge tools', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-smoke-gw-'));
  const gw = join(dir, 'gateway.yaml');
  const fake = join(ROOT, 'tests/fakes/fake-upstream.mjs');
  writeFileSync(gw, 'upstreams:\n' +
    `  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([fake])}\n` +
    '    tools: {include: [echo, slow]}\n' +
    `  files:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([fake])}\n    prefix: fs_\n` +
    '    tools: {include: [echo]}\n');
  chmodSync(gw, 0o600);
  const r0 = await rig({ GATEWAY_FILE: gw });
  try {
    const list = await (await fetch(r0.srv.url, { method: 'POST', headers: { ...r0.srv.auth,
      'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })).json();
    const names = list.result.tools.map((t) => t.name);
    for (const t of ['everything__echo', 'everything__slow', 'fs_echo', ...TOOLS]) assert.ok(names.includes(t), names.join(' '));
    const r = await smoke(['--base', r0.srv.base, '--env-file', r0.srv.envFile]);
    assertAllOk(r);
    assert.match(r.stdout, /^ok   tools\/list: the 8 bridge tools and 3 more \(gateway\)$/m);
    assertNoSecret(r, r0.srv.token);
  } finally {
    await r0.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('passes against the real server with MCP_SESSIONS=1 (carries Mcp-Session-Id)', async () => {
  const r0 = await rig({ MCP_SESSIONS: '1' });
  try {
    const r = await smoke(['--base', r0.srv.url, '--env-file', r0.srv.envFile]);
    assertAllOk(r);
    assert.match(r.stdout, /^ok   initialize: .*, session issued$/m);
    assert.match(r.lines.at(-1), /task id smoke-\d{8}-\d{6}-[0-9a-f]{8}\)$/, 'a fresh default id');
    assertNoSecret(r, r0.srv.token);
  } finally {
    await r0.close();
  }
});

test('fails on a wrong token: 401 on initialize, stops there, neither token shown', async () => {
  const r0 = await rig();
  const wrong = randomBytes(32).toString('hex');
  const env = tokenEnv(wrong);
  try {
    const r = await smoke(['--base', r0.srv.base, '--env-file', env.file]);
    assert.equal(r.code, 1, r.stdout);
    const v = verdicts(r);
    assert.equal(v['GET /health'], 'ok');
    assert.equal(v['POST /mcp without a token'], 'ok');
    assert.match(r.stdout, /^FAIL initialize: HTTP 401 \(missing or invalid bearer token\); fix: the token in .* is not the server's; point --env-file at the env file 'hermes-mcp serve' reads/m);
    assert.equal(v['tools/list'], undefined, 'nothing after initialize ran');
    assert.match(r.lines.at(-1), /^smoke: stopped after initialize; 2 passed, 1 failed/);
    assertNoSecret(r, wrong, r0.srv.token);
  } finally {
    env.cleanup();
    await r0.close();
  }
});

test('fails when no agent is running: the sync task fails, result and files are skipped', async () => {
  const fake = await startFake();
  const envPath = agentEnv(fake);
  await fake.stop(); // its port is now closed
  const srv = await startHermes({ HERMES_ENV_PATH: envPath });
  try {
    const r = await smoke(['--base', srv.base, '--env-file', srv.envFile]);
    assertOnlyFail(r, 'hermes_task sync', /tool error agent_unavailable: .*unreachable.*; fix: start the Hermes agent and check HERMES_ENV_PATH/,
      ['hermes_result', 'hermes_files']);
    assert.match(r.lines.at(-1), /^smoke: 7 passed, 3 failed or skipped/);
    assertNoSecret(r, srv.token);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('fails with one clear line when nothing listens at --base', async () => {
  const env = tokenEnv(randomBytes(32).toString('hex'));
  // A port that was free a moment ago.
  const s = http.createServer();
  await new Promise((res) => s.listen(0, '127.0.0.1', res));
  const port = s.address().port;
  await new Promise((res) => s.close(res));
  try {
    const r = await smoke(['--base', `http://127.0.0.1:${port}`, '--env-file', env.file]);
    assert.equal(r.code, 1);
    assert.equal(r.lines.length, 1, r.stdout);
    assert.match(r.lines[0], new RegExp(`^FAIL GET /health: cannot reach http://127\\.0\\.0\\.1:${port} \\(.*\\); fix: is hermes-mcp running\\? check --base$`));
    assert.equal(r.stderr, '');
  } finally {
    env.cleanup();
  }
});

// ---- an imitation MCP server that breaks one property at a time ----------------------------

// Speaks just enough MCP over Streamable HTTP like hermes-mcp with MCP_SESSIONS=1: it always
// issues a session and refuses requests without it or without MCP-Protocol-Version, so the
// baseline run also proves smoke carries both. fault names the one property to break.
async function imitation(token, fault = '') {
  const tasks = new Map();
  let session = null;
  const sc = (structured, isError = false) => fault === 'textOnly'
    ? { content: [{ type: 'text', text: JSON.stringify(structured) }], isError }
    : { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured, isError };
  const toolErr = (code, message) => sc({ error: code, message }, true);

  function toolCall(name, a) {
    if (name === 'hermes_task') {
      if (fault === 'echoToken') return toolErr('upstream_error', `agent refused header Authorization: Bearer ${token}`);
      if (fault === 'tokenAsCode') return toolErr(token, 'refused');
      const status = fault === 'taskFailed' ? 'failed' : fault === 'tokenAsStatus' ? token : 'completed';
      const r = { id: a.id, status, summary: 'up', artifacts: [], next_steps: [] };
      tasks.set(a.id, r);
      return sc(r);
    }
    if (name === 'hermes_result') {
      const r = tasks.get(a.id);
      if (!r) return toolErr('not_found', `no task with id '${a.id}'`);
      return sc(fault === 'wrongResult' ? { ...r, id: 'someone-else' } : r);
    }
    if (name === 'hermes_files') {
      if (a.path !== undefined) {
        const dotdot = a.path.split('/').includes('..');
        const abs = a.path.startsWith('/');
        if ((fault === 'traversal' && dotdot) || (fault === 'absolute' && abs))
          return sc({ id: a.id, path: a.path, content: 'root:x:0:0:root:/root:/bin/sh\n' });
        if (dotdot && fault === 'wrongCode') return toolErr('not_found', 'no such file in this task');
        if (dotdot || abs) return toolErr('invalid_arguments', "'path': not a relative path inside the task");
        return toolErr('not_found', 'no such file in this task');
      }
      const entries = [{ path: 'request.json', type: 'file' }];
      if (fault !== 'noFiles') entries.push({ path: 'result.json', type: 'file' });
      return sc({ id: a.id, path: '', entries, count: entries.length, truncated: false });
    }
    return toolErr('invalid_arguments', 'unknown tool');
  }

  function answer(req, res, msg, headers = {}) {
    if (fault === 'sse') {
      // A notification first, the response split across writes, then the stream stays open:
      // smoke must stop reading once its response is in.
      res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } })}\n\n`);
      res.write(': keepalive\n\n');
      const text = `event: message\r\ndata: ${JSON.stringify(msg)}\r\n\r\n`;
      res.write(text.slice(0, 10));
      setTimeout(() => res.write(text.slice(10)), 20);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(msg));
  }

  const server = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => { size += c.length; if (size <= 1 << 20) chunks.push(c); });
    req.on('end', () => {
      const json = (status, obj, headers = {}) => { res.writeHead(status, { 'content-type': 'application/json', ...headers }); res.end(JSON.stringify(obj)); };
      if (req.url === '/health') {
        if (fault === 'health500') return json(500, { message: 'internal' });
        return json(200, { status: 'ok', service: 'imitation', version: '9.9' });
      }
      if (req.url !== '/mcp') return json(404, { error: 'not_found' });
      if (req.headers.authorization !== `Bearer ${token}` && fault !== 'noAuth') {
        const h = fault === 'noWwwAuth' ? {} : { 'www-authenticate': 'Bearer realm="imitation"' };
        return json(401, { error: 'unauthorized', message: 'missing or invalid bearer token' }, h);
      }
      if (size > 256 * 1024 && fault !== 'noLimit') return json(413, { error: 'too_large' });
      if (req.method === 'DELETE') { session = null; res.writeHead(200); return res.end(); }
      let msg;
      try { msg = JSON.parse(Buffer.concat(chunks).toString()); } catch { return json(400, { error: 'parse' }); }
      if (msg.method === 'initialize') {
        session = `sess-${randomBytes(8).toString('hex')}`;
        const result = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'imitation', version: '9.9' } };
        if (fault === 'oldHermes') result.serverInfo = { name: 'hermes-mcp', version: '0.0.1' };
        if (fault === 'noProtocolVersion') delete result.protocolVersion;
        return answer(req, res, { jsonrpc: '2.0', id: msg.id, result }, { 'mcp-session-id': session });
      }
      if (!session || req.headers['mcp-session-id'] !== session) return json(400, { error: 'bad_session', message: 'Mcp-Session-Id header is required' });
      if (req.headers['mcp-protocol-version'] !== '2025-11-25') return json(400, { error: 'bad_version', message: 'MCP-Protocol-Version header is required' });
      if (msg.method === 'notifications/initialized') { res.writeHead(202); return res.end(); }
      let result;
      if (msg.method === 'tools/list') {
        let names = TOOLS;
        if (fault === 'toolSet') names = [...TOOLS.filter((t) => t !== 'hermes_reset'), 'run_shell'];
        if (fault === 'oldHermes') names = TOOLS.filter((t) => t !== 'hermes_reset');
        result = { tools: names.map((name) => ({ name, inputSchema: { type: 'object' } })) };
      } else if (msg.method === 'tools/call') {
        result = toolCall(msg.params.name, msg.params.arguments || {});
      } else if (msg.method === 'ping') {
        result = {};
      } else {
        return answer(req, res, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
      }
      return answer(req, res, { jsonrpc: '2.0', id: msg.id, result });
    });
  });
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((res) => { server.closeAllConnections(); server.close(res); }),
  };
}

test('the imitation server passes as is, also over SSE with a stream left open and without structuredContent', async () => {
  const token = randomBytes(32).toString('hex');
  const env = tokenEnv(token);
  try {
    for (const fault of ['', 'sse', 'textOnly']) {
      const srv = await imitation(token, fault);
      try {
        const r = await smoke(['--base', srv.base, '--env-file', env.file, '--timeout', '10']);
        assertAllOk(r);
        assert.match(r.stdout, /^ok   initialize: .*server imitation 9\.9, session issued$/m, fault);
        assertNoSecret(r, token);
      } finally {
        await srv.close();
      }
    }
  } finally {
    env.cleanup();
  }
});

const FAULTS = [
  ['health500', 'GET /health', /HTTP 500 \(internal\); fix: the server or a tunnel in front of it failed; check that hermes-mcp is running/],
  ['noAuth', 'POST /mcp without a token', /HTTP 200: the server answers without a token; fix: set MCP_AUTH_TOKEN/],
  ['noWwwAuth', 'POST /mcp without a token', /401 without a 'WWW-Authenticate: Bearer' header/],
  // A bridge tool missing fails; the extra tool does not (a gateway's would be there too). The
  // fix names what --base answers as, or the version apart.
  ['toolSet', 'tools/list', /: missing hermes_reset \(1 other tool listed\); fix: --base answers as 'imitation', not hermes-mcp; point --base at hermes-mcp serve$/],
  ['oldHermes', 'tools/list', /: missing hermes_reset \(0 other tools listed\); fix: the server runs hermes-mcp 0\.0\.1 and this smoke is \d+\.\d+\.\d+; restart the server with this build/],
  ['taskFailed', 'hermes_task sync', /status failed: up; fix: the agent did not complete the task/, ['hermes_result', 'hermes_files']],
  ['wrongResult', 'hermes_result', /got id 'someone-else' status 'completed', expected '.*' completed/],
  ['noFiles', 'hermes_files', /no entries array with result\.json/],
  ['traversal', 'traversal', /the path '\.\.\/\.\.\/etc\/passwd' was accepted \(isError false\).*; fix: do not expose this server/],
  ['wrongCode', 'traversal', /refused with 'not_found', expected invalid_arguments/],
  ['absolute', 'absolute path', /the path '\/etc\/passwd' was accepted \(isError false\)/],
  ['noLimit', 'body limit', /a 262145-byte body got HTTP 200, expected 413; fix: upgrade hermes-mcp/],
  ['echoToken', 'hermes_task sync', /tool error upstream_error: agent refused header Authorization: Bearer \[redacted\]/, ['hermes_result', 'hermes_files']],
  // Server text is cleaned before it is cut: a field holding the token must not leave a piece.
  ['tokenAsStatus', 'hermes_task sync', /status \[redacted\]: up; fix: /, ['hermes_result', 'hermes_files']],
  ['tokenAsCode', 'hermes_task sync', /tool error \[redacted\]: refused; fix: /, ['hermes_result', 'hermes_files']],
];

test('each check fails when its property breaks, and only that check', async () => {
  const token = randomBytes(32).toString('hex');
  const env = tokenEnv(token);
  try {
    for (const [fault, check, re, skipped = []] of FAULTS) {
      const srv = await imitation(token, fault);
      try {
        const r = await smoke(['--base', srv.base, '--env-file', env.file, '--timeout', '10']);
        assertOnlyFail(r, check, re, skipped);
        assertNoSecret(r, token);
      } finally {
        await srv.close();
      }
    }
  } finally {
    env.cleanup();
  }
});

test('initialize without a protocolVersion fails and stops the run', async () => {
  const token = randomBytes(32).toString('hex');
  const env = tokenEnv(token);
  const srv = await imitation(token, 'noProtocolVersion');
  try {
    const r = await smoke(['--base', srv.base, '--env-file', env.file]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^FAIL initialize: the result has no protocolVersion; fix: /m);
    assert.match(r.lines.at(-1), /^smoke: stopped after initialize; 2 passed, 1 failed/);
  } finally {
    await srv.close();
    env.cleanup();
  }
});

// ---- through an https "tunnel" -------------------------------------------------------------

// A TLS-terminating reverse proxy in front of hermes-mcp, as a tunnel or a proxy would be: it
// presents a self-signed certificate and forwards with the public Host name.
async function tlsTunnel(target, publicHost) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { encoding: 'utf8' });
  assert.equal(gen.status, 0, gen.stderr);
  // Like most proxies it reads the whole request body before it forwards it.
  const server = https.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers = { ...req.headers, host: publicHost, 'content-length': String(body.length) };
      delete headers.expect;
      let answered = false;
      const up = http.request({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers }, (ur) => {
        answered = true;
        res.writeHead(ur.statusCode, ur.headers);
        ur.pipe(res);
      });
      // An early answer (413) may come with a reset of the rest of the upload: keep the answer.
      up.on('error', () => setTimeout(() => { if (!answered) { res.writeHead(502); res.end('bad gateway'); } }, 200));
      up.end(body);
    });
  });
  await new Promise((res) => server.listen(0, '127.0.0.1', res));
  return {
    cert, base: `https://localhost:${server.address().port}`,
    close: () => new Promise((res) => { server.closeAllConnections(); server.close(() => { rmSync(dir, { recursive: true, force: true }); res(); }); }),
  };
}

test('through an https tunnel: passes with the public host allowed; 403 and untrusted certificates fail clearly', async () => {
  const r0 = await rig({ MCP_PUBLIC_HOSTS: 'mcp.example.test' });
  const tunnel = await tlsTunnel(r0.srv, 'mcp.example.test');
  const closed = await rig();
  const wrongHost = await tlsTunnel(closed.srv, 'elsewhere.example.test');
  try {
    const r = await smoke(['--base', `${tunnel.base}/mcp`, '--env-file', r0.srv.envFile, '--cacert', tunnel.cert]);
    assertAllOk(r);
    assert.match(r.lines.at(-1), new RegExp(`\\(${tunnel.base}, task id `));
    assertNoSecret(r, r0.srv.token);

    const untrusted = await smoke(['--base', tunnel.base, '--env-file', r0.srv.envFile]);
    assert.equal(untrusted.code, 1);
    assert.equal(untrusted.lines.length, 1, untrusted.stdout);
    assert.match(untrusted.lines[0], /^FAIL GET \/health: cannot reach https:\/\/localhost:\d+ \(.*certificate.*\); fix: the certificate is not trusted; .*--cacert FILE/);

    const r403 = await smoke(['--base', wrongHost.base, '--env-file', closed.srv.envFile, '--cacert', wrongHost.cert]);
    assert.equal(r403.code, 1);
    assert.match(r403.stdout, /^FAIL initialize: HTTP 403 \(Forbidden: Host '[^']+' is not allowed; add the host name to MCP_PUBLIC_HOSTS[^)]*\); fix: .*add the public host name to MCP_PUBLIC_HOSTS/m);
    assertNoSecret(r403, closed.srv.token);
  } finally {
    await tunnel.close();
    await wrongHost.close();
    await r0.close();
    await closed.close();
  }
});
