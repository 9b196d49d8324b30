// The Hermes MCP Gateway's contract as a tested example: contrib/gateway/hermes-gateway.yaml,
// unchanged, run by the real binary against fakes of its four upstreams
// (tests/fakes/fake-example-upstreams.mjs: Context Mode over Streamable HTTP, Hermes, Samchon Graph
// and the memory adapter over stdio), which advertise the real tool names plus the ones the
// contract hides. The upstreams' commands and URL come from the ${VAR}s the example reads, set here
// in the env file. With the official SDK client: the exposed list is exactly the contract's tools
// (written out below from the contract, not computed from our output), each served by the upstream
// the contract names, the hidden ones absent and refused as unknown without reaching their
// upstream, /readyz 200 once the smoke calls passed, and the graph tool's cwd held inside the
// allowlisted roots (one graph process per project root).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFile } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync, chmodSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, HERMES, startHermes, until, freePort, connectClient } from '../../lib/lib.mjs';

const EXAMPLE = join(ROOT, 'contrib/gateway/hermes-gateway.yaml');
const FAKE = join(ROOT, 'tests/fakes/fake-example-upstreams.mjs');

// The Hermes MCP Gateway's contract (docs/history.md): "the public MCP contract is 44 tools", by
// upstream.
const CONTRACT = {
  context: ['ctx_execute', 'ctx_execute_file', 'ctx_index', 'ctx_search', 'ctx_fetch_and_index',
    'ctx_batch_execute', 'ctx_stats', 'ctx_doctor', 'ctx_upgrade', 'ctx_purge', 'ctx_insight'],
  hermes: ['web_search', 'web_extract', 'vision_analyze', 'skills_list', 'skill_view',
    'read_file', 'write_file', 'patch', 'search_files', 'terminal', 'process',
    'image_generate', 'video_analyze',
    'browser_navigate', 'browser_click', 'browser_type', 'browser_press', 'browser_snapshot',
    'browser_scroll', 'browser_back', 'browser_get_images', 'browser_console', 'browser_vision',
    // the three guarded capabilities
    'session_search', 'delegate_task', 'cronjob'],
  graph: ['inspect_code_graph'],
  memory: ['memory_profile', 'memory_search', 'memory_context', 'memory_reasoning', 'memory_conclude'],
  gateway: ['startup_context'],
};
const CONTRACT_TOOLS = Object.values(CONTRACT).flat();
// The contract: "Mutations require confirmed=true" (cronjob: its list does not, the test below),
// session_search guarded too.
const CONFIRM = ['cronjob', 'session_search'];
// What the contract says never to expose (and the fake Hermes offers).
const HIDDEN = ['browser_exec', 'browser_cdp', 'computer_use', 'memory', 'todo', 'text_to_speech',
  'kanban_list', 'kanban_update', 'execute_code', 'send_message'];

let dir, srv, context, contextPort, work, source;
const calls = (role) => {
  const f = join(dir, `${role}.calls`);
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n') : [];
};

// The example names one program per stdio upstream; this one runs the fake in that role with
// whatever arguments the example gives it (the fake checks they are the real upstream's).
// The calls are recorded in <calls>.calls (default: the role's name); extra: more options.
function shim(role, { calls: record = role, extra = [] } = {}) {
  const path = join(dir, `${record}-mcp`);
  writeFileSync(path, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE)} ` +
    `${role} --calls ${JSON.stringify(join(dir, `${record}.calls`))} ${extra.map((a) => JSON.stringify(a)).join(' ')} -- "$@"\n`);
  chmodSync(path, 0o700);
  return path;
}

const connect = () => connectClient(srv, { name: 'gw-example' });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwexample-'));
  mkdirSync(join(dir, 'hermes-home'));
  work = join(dir, 'work');
  source = join(dir, 'src');
  for (const d of [join(work, 'app', 'lib'), join(source, 'tool'), join(dir, 'elsewhere')]) mkdirSync(d, { recursive: true });
  const port = contextPort = await freePort();
  context = spawn(process.execPath, [FAKE, 'context', '--http', String(port),
    '--calls', join(dir, 'context.calls')], { stdio: ['ignore', 'ignore', 'pipe'] });
  context.stderrText = '';
  context.stderr.on('data', (d) => { context.stderrText += d; });
  await until(() => context.stderrText.includes(`listening on ${port}`), 'fake Context Mode listening', 15000);
  // The gateway file must be mode 600, so the test serves a byte-for-byte copy of the example.
  const gw = join(dir, 'hermes-gateway.yaml');
  writeFileSync(gw, readFileSync(EXAMPLE));
  chmodSync(gw, 0o600);
  srv = await startHermes({
    GATEWAY_FILE: gw,
    CONTEXT_MODE_PORT: String(port),
    HERMES_BIN: shim('hermes'),
    HERMES_HOME: join(dir, 'hermes-home'),
    CAMOFOX_URL: 'http://127.0.0.1:9377',
    GRAPH_MCP_BIN: shim('graph'),
    MEMORY_MCP_BIN: shim('memory'),
    WORK_ROOT: work,
    SOURCE_ROOT: source,
  });
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0, 'SIGTERM exits 0');
  context?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('the example file serves exactly the contract\'s tools', async () => {
  assert.equal(CONTRACT_TOOLS.length, 44, 'the contract is 44 tools');
  assert.equal(new Set(CONTRACT_TOOLS).size, 44);
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, [...CONTRACT_TOOLS].sort());
    // The upstreams' schemas are passed on (a plausible schema, not an empty one).
    const search = tools.find((t) => t.name === 'web_search');
    assert.deepEqual(search.inputSchema.required, ['query']);
    const graph = tools.find((t) => t.name === 'inspect_code_graph');
    assert.ok(graph.inputSchema.properties.cwd, 'inspect_code_graph takes a cwd');
  } finally { await client.close(); }
});

test('startup_context returns the fixed Hermes startup files and names the missing ones', async () => {
  const home = join(dir, 'hermes-home');
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'SOUL.md'), 'soul: be kind\n');
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    const t = tools.find((x) => x.name === 'startup_context');
    assert.ok(t, 'listed');
    assert.deepEqual(Object.keys(t.inputSchema.properties ?? {}), [], 'no path argument');
    const r = await client.callTool({ name: 'startup_context', arguments: {} });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const files = r.structuredContent.files;
    assert.equal(files.length, 5);
    assert.equal(files.find((f) => f.path.endsWith('/SOUL.md')).text, 'soul: be kind\n');
    assert.equal(files.find((f) => f.path.endsWith('/USER.md')).missing, true);
  } finally { await client.close(); }
});

test('each tool is served by the upstream the contract names', async () => {
  const client = await connect();
  try {
    await client.listTools();
    for (const [role, names] of Object.entries(CONTRACT)) {
      for (const name of names) {
        if (role === 'gateway') continue; // startup_context: the test above
        // The graph tool needs a cwd inside the roots (the last test); confirm-guarded tools
        // need confirmed; delegate_task waits for the operator (its own test); the rest take {}.
        if (name === 'delegate_task') continue;
        const args = name === 'inspect_code_graph' ? { cwd: join(work, 'app'), query: 'main' }
          : name === 'memory_conclude' ? { action: 'list' } // without action a kind is required
          : CONFIRM.includes(name) ? { confirmed: true } : {};
        const r = await client.callTool({ name, arguments: args });
        assert.notEqual(r.isError, true, `${name}: ${JSON.stringify(r.content)}`);
        const answer = JSON.parse(r.content[0].text);
        assert.deepEqual([answer.upstream, answer.tool], [role, name], name);
      }
    }
  } finally { await client.close(); }
});

test('the hidden tools are absent and refused as unknown without reaching Hermes', async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    const names = new Set(tools.map((t) => t.name));
    for (const name of HIDDEN) assert.ok(!names.has(name), `${name} is not listed`);
    for (const name of [...HIDDEN, 'hermes_task', 'list_agents']) {
      await assert.rejects(client.callTool({ name, arguments: {} }), /Unknown tool/, name);
    }
    const reached = calls('hermes');
    for (const name of HIDDEN) assert.ok(!reached.includes(name), `${name} never reached the upstream`);
    assert.ok(reached.includes('web_search'), 'the record of calls works');
  } finally { await client.close(); }
});

test('/readyz is 200 once the Context Mode and both web smoke calls passed', async () => {
  let r;
  await until(async () => {
    r = await (await fetch(`${srv.base}/readyz`)).json();
    return Object.values(r.upstreams).every((u) => u.smoke !== 'pending');
  }, 'smoke calls answered', 15000);
  assert.deepEqual(Object.keys(r.upstreams).sort(), ['context', 'graph', 'hermes', 'memory']);
  assert.equal(r.upstreams.context.smoke, 'passed', JSON.stringify(r));
  assert.equal(r.upstreams.hermes.smoke, 'passed', JSON.stringify(r));
  assert.equal((await fetch(`${srv.base}/readyz`)).status, 200);
  assert.ok(calls('context').includes('ctx_execute'), 'the smoke call reached Context Mode');
  // The contract: "one real web_search and one real web_extract smoke call at startup".
  assert.deepEqual(calls('hermes').slice(0, 2), ['web_search', 'web_extract'], 'both smoke calls, in order');
  // gateway check --probe makes them as serve does and names both
  const probe = await cli('gateway', 'check', '--probe');
  assert.equal(probe.code, 0, probe.stdout + probe.stderr);
  assert.match(probe.stdout, /\n  hermes: protocol 2025-11-25; smoke calls web_search, web_extract passed\n/);
});

test('a failing web_extract keeps /readyz at 503 though web_search passed', async () => {
  // The same example with a Hermes whose web_extract answers a nested provider error, as
  // Firecrawl does before the Nous gateway's auth works.
  const sub = join(dir, 'extract-down');
  mkdirSync(sub);
  const gw = join(sub, 'hermes-gateway.yaml');
  writeFileSync(gw, readFileSync(EXAMPLE));
  chmodSync(gw, 0o600);
  const down = await startHermes({
    GATEWAY_FILE: gw, CONTEXT_MODE_PORT: String(contextPort),
    HERMES_BIN: shim('hermes', { calls: 'hermes-down', extra: ['--fail', 'web_extract'] }),
    HERMES_HOME: join(dir, 'hermes-home'), CAMOFOX_URL: 'http://127.0.0.1:9377',
    GRAPH_MCP_BIN: shim('graph'), MEMORY_MCP_BIN: shim('memory'), WORK_ROOT: work, SOURCE_ROOT: source,
  });
  try {
    let r;
    await until(async () => {
      r = await (await fetch(`${down.base}/readyz`)).json();
      return Object.values(r.upstreams).every((u) => u.smoke !== 'pending');
    }, 'smoke calls answered', 15000);
    assert.equal(r.upstreams.hermes.smoke, 'failed', JSON.stringify(r));
    assert.equal(r.upstreams.hermes.smoke_error,
      'smoke call web_extract failed: a nested error in content[0] (JSON text): success');
    assert.equal(r.upstreams.context.smoke, 'passed');
    assert.equal((await fetch(`${down.base}/readyz`)).status, 503);
    assert.deepEqual(calls('hermes-down'), ['web_search', 'web_extract'], 'the search passed, then the extract was made');
    assert.doesNotMatch(down.proc.stderrText, /Nous gateway authentication/, 'the provider\'s words stay out of the log');
    const probe = spawnSync(HERMES, ['gateway', 'check', '--probe', '--env-file', down.envFile], { encoding: 'utf8', timeout: 60000 });
    assert.equal(probe.status, 1, probe.stdout + probe.stderr);
    assert.match(probe.stdout, /\n  hermes: protocol 2025-11-25; smoke call web_extract failed: a nested error in content\[0\] \(JSON text\): success\n/);
  } finally {
    assert.equal(await down.stop(), 0);
  }
});

test('inspect_code_graph: cwd inside the roots reaches a graph process per project; outside, invalid_arguments', async () => {
  const client = await connect();
  try {
    await client.listTools();
    for (const cwd of [join(work, 'app', 'lib'), join(source, 'tool')]) {
      const r = await client.callTool({ name: 'inspect_code_graph', arguments: { cwd, query: 'main' } });
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      assert.equal(JSON.parse(r.content[0].text).arguments.cwd, cwd, 'the call reaches the graph upstream');
    }
    const before = calls('graph').length;
    for (const cwd of [join(dir, 'elsewhere'), join(work, '..', 'elsewhere'), 'relative/path', dir]) {
      const r = await client.callTool({ name: 'inspect_code_graph', arguments: { cwd, query: 'main' } });
      assert.equal(r.isError, true, cwd);
      assert.equal(r.structuredContent.error, 'invalid_arguments', cwd);
      assert.match(r.structuredContent.message, /argument cwd/);
    }
    assert.equal(calls('graph').length, before, 'a refused cwd never reaches a graph process');
    const rz = await (await fetch(`${srv.base}/readyz`)).json();
    assert.deepEqual(Object.keys(rz.upstreams.graph.instances.roots).sort(),
      [join(source, 'tool'), join(work, 'app')].sort(), 'one process per project root');
  } finally { await client.close(); }
});

test('the guarded capabilities: confirm, the operator for delegate_task, and the argument policies', async () => {
  const client = await connect();
  try {
    const tools = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t]));
    // The schemas say what the policies enforce.
    for (const name of CONFIRM) assert.equal(tools[name].inputSchema.properties.confirmed?.type, 'boolean', name);
    const cron = Object.keys(tools.cronjob.inputSchema.properties);
    // The contract: "Model/provider/base-URL overrides and script/no-agent/monitor execution fields
    // are not exposed".
    for (const hidden of ['model', 'provider', 'base_url', 'script', 'no_agent', 'monitor', 'deliver']) assert.ok(!cron.includes(hidden), hidden);
    assert.equal(tools.delegate_task.inputSchema.properties.tasks.maxItems, 2);
    assert.deepEqual(tools.memory_conclude.inputSchema.properties.kind.enum,
      ['preference', 'decision', 'architecture', 'project_state']);
    // Creating a conclusion needs its durable kind (list and delete do not): the schema says so.
    assert.deepEqual(tools.memory_conclude.inputSchema.allOf, [{ if: { properties: { action: { enum: ['create'] } },
      required: ['action'] }, then: { required: ['kind'] } }]);
    const before = calls('hermes').length;
    // confirm: refused without confirmed, never reaching Hermes.
    const refused = await client.callTool({ name: 'cronjob', arguments: { action: 'create', prompt: 'x' } });
    assert.equal(refused.structuredContent.error, 'confirmation_required');
    const override = await client.callTool({ name: 'cronjob',
      arguments: { action: 'create', prompt: 'x', model: 'gpt-9', confirmed: true } });
    assert.equal(override.structuredContent.error, 'invalid_arguments');
    for (const field of [{ no_agent: true }, { monitor: 'on' }, { script: 'rm -rf /' }]) {
      const r = await client.callTool({ name: 'cronjob', arguments: { action: 'create', prompt: 'x', confirmed: true, ...field } });
      assert.equal(r.structuredContent?.error, 'invalid_arguments', JSON.stringify(field));
    }
    const tooMany = await client.callTool({ name: 'delegate_task',
      arguments: { tasks: [{ goal: 'a' }, { goal: 'b' }, { goal: 'c' }] } });
    assert.equal(tooMany.structuredContent.error, 'invalid_arguments');
    assert.equal(calls('hermes').length, before, 'no refused call reached Hermes');
    // confirmed: sent without confirmed, delivery forced local.
    const ok = await client.callTool({ name: 'cronjob', arguments: { action: 'create', prompt: 'x', confirmed: true } });
    assert.notEqual(ok.isError, true, JSON.stringify(ok.content));
    assert.deepEqual(JSON.parse(ok.content[0].text).arguments, { action: 'create', prompt: 'x', deliver: 'local' });
    // memory_conclude: durable kinds only, no secrets.
    const mem = calls('memory').length;
    // The contract: "Conclusion writes require a durable kind": absent (or null) is refused too.
    for (const args of [{ content: 'likes tea', kind: 'temporary' }, { content: 'likes tea' }, { content: 'likes tea', kind: null },
      { content: 'key sk-ant-api03-Zr8Qm2xWv9LpT4nB7cYh1KdFs6GjE3aU0oRi5MqXw', kind: 'decision' }]) {
      const r = await client.callTool({ name: 'memory_conclude', arguments: { action: 'create', ...args } });
      assert.equal(r.structuredContent?.error, 'invalid_arguments', JSON.stringify(args));
    }
    assert.equal(calls('memory').length, mem, 'refused conclusions never reach the memory adapter');
    const kept = await client.callTool({ name: 'memory_conclude', arguments: { action: 'create', content: 'likes tea', kind: 'preference' } });
    assert.notEqual(kept.isError, true, JSON.stringify(kept.content));
    // leaving action out does not skip the durable kind (the adapter may default to create)
    const bare = await client.callTool({ name: 'memory_conclude', arguments: { content: 'no action, no kind' } });
    assert.equal(bare.structuredContent?.error, 'invalid_arguments', JSON.stringify(bare));
    assert.match(bare.structuredContent.message, /'kind' is required/);
    const listed = await client.callTool({ name: 'memory_conclude', arguments: { action: 'list' } });
    assert.notEqual(listed.isError, true, JSON.stringify(listed.content));
    assert.equal(calls('memory').length, mem + 2, 'the kept conclusion and the list reached the memory adapter');
  } finally { await client.close(); }
});

test('cronjob: the read-only list needs no confirmation, its mutations do', async () => {
  const client = await connect();
  try {
    const tools = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t]));
    const schema = tools.cronjob.inputSchema;
    // confirmed is offered, required only for the mutations, and its description says when.
    const MUTATIONS = ['create', 'update', 'pause', 'resume', 'remove', 'run'];
    assert.equal(schema.properties.confirmed.type, 'boolean');
    assert.match(schema.properties.confirmed.description, /when action is create, update, pause, resume, remove or run/);
    assert.ok(!(schema.required ?? []).includes('confirmed'), 'confirmed is not always required');
    assert.deepEqual(schema.allOf, [{ if: { properties: { action: { enum: MUTATIONS } }, required: ['action'] },
      then: { required: ['confirmed'] } }]);
    const cronCalls = () => calls('hermes').filter((n) => n === 'cronjob').length;
    // list without confirmed reaches Hermes (confirmed, when given anyway, is not sent).
    let before = cronCalls();
    for (const args of [{ action: 'list' }, { action: 'list', confirmed: true }]) {
      const r = await client.callTool({ name: 'cronjob', arguments: args });
      assert.notEqual(r.isError, true, JSON.stringify(r.content));
      assert.deepEqual(JSON.parse(r.content[0].text).arguments, { action: 'list', deliver: 'local' });
    }
    assert.equal(cronCalls(), before + 2, 'both lists reached Hermes');
    // each mutation without confirmed (or with a look-alike of it) is refused before Hermes;
    // so is a call whose action is missing, not a string, or a variant of a mutation's name.
    before = cronCalls();
    const refused = [
      ...MUTATIONS.map((action) => ({ action, job_id: 'j1' })),
      { action: 'create', prompt: 'x', confirmed: 'true' },
      { action: 'remove', job_id: 'j1', confirmed: 1 },
      { action: 'remove', job_id: 'j1', _meta: { confirmed: true } },
      { prompt: 'x', schedule: '1h' },
      { action: null, prompt: 'x' },
      { action: 5, prompt: 'x' },
      { action: ['create'], prompt: 'x' },
      { action: { create: true }, prompt: 'x' },
      { action: 'CREATE', prompt: 'x' },
      { action: ' re-move ', job_id: 'j1' },
      { action: 'create\u0000list', prompt: 'x' },
    ];
    for (const args of refused) {
      const r = await client.callTool({ name: 'cronjob', arguments: args });
      assert.equal(r.isError, true, JSON.stringify(args));
      assert.equal(r.structuredContent?.error, 'confirmation_required', JSON.stringify(args));
    }
    assert.equal(cronCalls(), before, 'no unconfirmed mutation reached Hermes');
    // confirmed: true lets a mutation through.
    const ok = await client.callTool({ name: 'cronjob', arguments: { action: 'pause', job_id: 'j1', confirmed: true } });
    assert.notEqual(ok.isError, true, JSON.stringify(ok.content));
    assert.deepEqual(JSON.parse(ok.content[0].text).arguments, { action: 'pause', job_id: 'j1', deliver: 'local' });
    assert.equal(cronCalls(), before + 1);
  } finally { await client.close(); }
});

// The operator's CLI on the server's env file (as `hermes-mcp approvals` is run by a person).
const cli = (...args) => new Promise((resolve) => {
  execFile(HERMES, [...args, '--env-file', srv.envFile], { encoding: 'utf8' },
    (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
});

test('delegate_task waits for the operator: approved it reaches Hermes, denied it never does', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const asked = async (goal) => {
      let entry;
      await until(async () => {
        const r = await cli('approvals', '--json');
        entry = r.code === 0 ? JSON.parse(r.stdout).find((p) => p.tool === 'delegate_task') : null;
        return entry;
      }, 'delegate_task in the operator queue', 15000);
      assert.equal(calls('hermes').filter((n) => n === 'delegate_task').length, goal, 'nothing upstream before a decision');
      return entry;
    };
    const before = calls('hermes').filter((n) => n === 'delegate_task').length;
    const approved = client.callTool({ name: 'delegate_task', arguments: { goal: 'summarize' } });
    const first = await asked(before);
    assert.equal((await cli('approve', first.id)).code, 0);
    const r = await approved;
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    assert.equal(JSON.parse(r.content[0].text).tool, 'delegate_task');
    const denied = client.callTool({ name: 'delegate_task', arguments: { goal: 'spend tokens' } });
    const second = await asked(before + 1);
    assert.equal((await cli('deny', second.id, '--reason', 'not today')).code, 0);
    const d = await denied;
    assert.equal(d.structuredContent.error, 'approval_denied');
    assert.match(d.structuredContent.message, /not today/);
    assert.equal(calls('hermes').filter((n) => n === 'delegate_task').length, before + 1, 'the denied call never reached Hermes');
  } finally { await client.close(); }
});
