// The Hermes MCP Gateway's contract as a tested example: contrib/gateway/hermes-gateway.yaml,
// unchanged, run by the real binary. Its hermes and memory upstreams are the real hermes-tools
// server (contrib/hermes-tools, with the example's own configs hermes-tools.json and
// hermes-memory.json) under python3, importing the fake Hermes of tests/fakes/hermes/ as it would
// import Hermes, and reaching a fake Honcho (tests/fakes/hermes/honcho_fake.py) through a
// Hermes-style honcho.json; Context Mode (Streamable HTTP) and Samchon Graph are the fakes of
// tests/fakes/fake-example-upstreams.mjs. The upstreams' commands and URL come from the ${VAR}s
// the example reads, set here in the env file. With the official SDK client: the exposed list is
// exactly the contract's 44 tools (written out below, not computed from our output), a call of
// each group reaches the upstream the contract names, the hidden tools are absent and never
// reach Hermes, the guarded mutations, the delegation policy and the operator's approval hold,
// a conclusion is created, read back and deleted in Honcho, /healthz and /readyz answer once the
// smoke calls passed, `gateway check --probe` prints the 44, and the service unit that runs this
// gateway is checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFile } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync, chmodSync, mkdtempSync, mkdirSync, rmSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT, HERMES, startHermes, until, freePort, connectClient } from '../../lib/lib.mjs';

const EXAMPLE = join(ROOT, 'contrib/gateway/hermes-gateway.yaml');
const FAKE = join(ROOT, 'tests/fakes/fake-example-upstreams.mjs');
const HONCHO = join(ROOT, 'tests/fakes/hermes/honcho_fake.py');
// The interpreter itself, not a launcher script: the gateway gives its children a minimal
// environment, as it would give Hermes' venv python.
const PY = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).stdout.trim();

// The Hermes MCP Gateway's contract (docs/history.md): "the public MCP contract is 44 tools", by
// upstream.
const CONTRACT = {
  context: ['ctx_execute', 'ctx_execute_file', 'ctx_index', 'ctx_search', 'ctx_fetch_and_index',
    'ctx_batch_execute', 'ctx_stats', 'ctx_doctor', 'ctx_upgrade', 'ctx_purge', 'ctx_insight'],
  hermes: ['web_search', 'web_extract', 'vision_analyze', 'skills_list', 'skill_view',
    'read_file', 'write_file', 'patch', 'search_files', 'terminal', 'process',
    'image_generate', 'video_analyze',
    'browser_navigate', 'browser_click', 'browser_type', 'browser_press', 'browser_snapshot',
    'browser_scroll', 'browser_back', 'browser_get_images', 'browser_console', 'browser_vision'],
  guarded: ['session_search', 'delegate_task', 'cronjob'],
  graph: ['inspect_code_graph'],
  memory: ['memory_profile', 'memory_search', 'memory_context', 'memory_reasoning', 'memory_conclude'],
  gateway: ['startup_context'],
};
const CONTRACT_TOOLS = Object.values(CONTRACT).flat();
// What the contract says never to expose, and the fake Hermes offers.
const HIDDEN = ['browser_exec', 'browser_cdp', 'computer_use', 'memory', 'todo', 'text_to_speech',
  'skill_manage', 'cronjob_manage'];
const USER = 'alice'; // the user peer in Hermes' Honcho configuration
const WS = 'hermes';  // its workspace

let dir, home, pythonpath, srv, context, contextPort, honcho, honchoUrl, work, source;
const kill = [];

// Every call that reached the fake Hermes' registry ({tool, args}), in order
// (tests/fakes/hermes/fake_tools/observe.py writes them).
const reached = (file = join(dir, 'hermes.calls')) => (existsSync(file)
  ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
const reachedNames = (file) => reached(file).map((c) => c.tool);
const graphCalls = () => {
  const f = join(dir, 'graph.calls');
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n') : [];
};

// The graph upstream: its fake, with whatever arguments the example gives it.
function graphShim() {
  const path = join(dir, 'graph-mcp');
  writeFileSync(path, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE)} ` +
    `graph --calls ${JSON.stringify(join(dir, 'graph.calls'))} -- "$@"\n`);
  chmodSync(path, 0o700);
  return path;
}

// A HERMES_HOME as Hermes keeps it: honcho.json naming Honcho, the workspace and the user peer.
// fake: the fake Hermes' own settings (where it records calls, which tools fail).
function hermesHome(path, fake) {
  mkdirSync(path, { recursive: true });
  writeFileSync(join(path, 'honcho.json'), JSON.stringify({ baseUrl: honchoUrl, workspace: WS, peerName: USER }));
  writeFileSync(join(path, 'fake-hermes.json'), JSON.stringify(fake));
  return path;
}

// The example's ${...} values; the hermes and memory commands are the real hermes-tools.
const exampleEnv = (gw, hermesHomeDir) => ({
  GATEWAY_FILE: gw,
  CONTEXT_MODE_PORT: String(contextPort),
  HERMES_PY: PY,
  HERMES_TOOLS_PYTHONPATH: pythonpath,
  HERMES_TOOLS_CONFIG: join(ROOT, 'contrib/gateway/hermes-tools.json'),
  HERMES_MEMORY_CONFIG: join(ROOT, 'contrib/gateway/hermes-memory.json'),
  HERMES_HOME: hermesHomeDir,
  CAMOFOX_URL: 'http://127.0.0.1:9377',
  GRAPH_MCP_BIN: graphShim(),
  WORK_ROOT: work,
  SOURCE_ROOT: source,
});

// The gateway file must be mode 600, so a test serves a byte-for-byte copy of the example.
function copyExample(where) {
  mkdirSync(where, { recursive: true });
  const gw = join(where, 'hermes-gateway.yaml');
  writeFileSync(gw, readFileSync(EXAMPLE));
  chmodSync(gw, 0o600);
  return gw;
}

const honchoCall = async (method, path, body) => {
  const r = await fetch(`${honchoUrl}/v3/workspaces${path}`, { method,
    headers: { 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return r.status === 204 ? null : r.json();
};

const connect = () => connectClient(srv, { name: 'gw-example' });
const text = (r) => r.content.map((c) => c.text ?? '').join('');
const ok = (r, what) => { assert.notEqual(r.isError, true, `${what}: ${text(r)}`); return JSON.parse(text(r)); };

const readyz = async (base) => {
  let r;
  await until(async () => {
    r = await (await fetch(`${base}/readyz`)).json();
    return Object.values(r.upstreams).every((u) => u.smoke !== 'pending');
  }, 'smoke calls answered', 30000);
  return r;
};

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwexample-'));
  work = join(dir, 'work');
  source = join(dir, 'src');
  for (const d of [join(work, 'app', 'lib'), join(source, 'tool'), join(dir, 'elsewhere')]) mkdirSync(d, { recursive: true });
  // hermes-tools and the fake Hermes installed as the README installs hermes-tools: copied, so
  // Python's bytecode caches land here and not in the source tree.
  const noCache = { recursive: true, filter: (src) => !src.includes('__pycache__') };
  cpSync(join(ROOT, 'contrib/hermes-tools/hermes_tools'), join(dir, 'lib/hermes-tools/hermes_tools'), noCache);
  cpSync(join(ROOT, 'tests/fakes/hermes'), join(dir, 'lib/fake-hermes'), noCache);
  pythonpath = `${join(dir, 'lib/hermes-tools')}:${join(dir, 'lib/fake-hermes')}`;
  // The fake Honcho, with the workspace and user peer Hermes has already made in it.
  honcho = spawn(PY, [HONCHO], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
  kill.push(honcho);
  const port = await new Promise((resolve, reject) => {
    createInterface({ input: honcho.stdout }).once('line', (l) => resolve(Number(/^port (\d+)$/.exec(l)?.[1])));
    honcho.once('exit', (c) => reject(new Error(`honcho_fake exited ${c}`)));
  });
  honchoUrl = `http://127.0.0.1:${port}`;
  await honchoCall('POST', '', { id: WS });
  await honchoCall('POST', `/${WS}/peers`, { id: USER });
  home = hermesHome(join(dir, 'hermes-home'), { calls: join(dir, 'hermes.calls') });
  contextPort = await freePort();
  context = spawn(process.execPath, [FAKE, 'context', '--http', String(contextPort),
    '--calls', join(dir, 'context.calls')], { stdio: ['ignore', 'ignore', 'pipe'] });
  kill.push(context);
  context.stderrText = '';
  context.stderr.on('data', (d) => { context.stderrText += d; });
  await until(() => context.stderrText.includes(`listening on ${contextPort}`), 'fake Context Mode listening', 15000);
  srv = await startHermes(exampleEnv(copyExample(join(dir, 'gw')), home));
  // The smoke calls first, so the record of what reached Hermes starts with them.
  await readyz(srv.base);
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0, 'SIGTERM exits 0');
  for (const p of kill) p.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

// The operator's CLI on the server's env file (as `hermes-mcp approvals` is run by a person).
const cli = (...args) => new Promise((resolve) => {
  execFile(HERMES, [...args, '--env-file', srv.envFile], { encoding: 'utf8', timeout: 60000 },
    (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
});

test('the example file serves exactly the contract\'s 44 tools, with Hermes\' own schemas', async () => {
  assert.equal(CONTRACT_TOOLS.length, 44, 'the contract is 44 tools');
  assert.equal(new Set(CONTRACT_TOOLS).size, 44);
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...CONTRACT_TOOLS].sort());
    // Hermes' OpenAI definitions, converted by hermes-tools (not written by the gateway).
    const search = tools.find((t) => t.name === 'web_search');
    assert.deepEqual(search.inputSchema.required, ['query']);
    assert.equal(search.description, 'Search the web.');
    // The adapters' schemas, not Hermes' wider ones.
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.ok(!('profile' in byName.session_search.inputSchema.properties), 'no cross-profile override');
    assert.deepEqual(byName.delegate_task.inputSchema.properties.toolsets.items.enum,
      ['web', 'vision', 'skills', 'mcp-context-mode']);
    const graph = byName.inspect_code_graph;
    assert.ok(graph.inputSchema.properties.cwd, 'inspect_code_graph takes a cwd');
  } finally { await client.close(); }
});

test('startup_context returns the fixed Hermes startup files and names the missing ones', async () => {
  writeFileSync(join(home, 'SOUL.md'), 'soul: be kind\n');
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    const t = tools.find((x) => x.name === 'startup_context');
    assert.deepEqual(Object.keys(t.inputSchema.properties ?? {}), [], 'no path argument');
    const r = await client.callTool({ name: 'startup_context', arguments: {} });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const files = r.structuredContent.files;
    assert.equal(files.length, 5);
    assert.equal(files.find((f) => f.path.endsWith('/SOUL.md')).text, 'soul: be kind\n');
    assert.equal(files.find((f) => f.path.endsWith('/USER.md')).missing, true);
  } finally { await client.close(); }
});

// Minimal arguments each native tool's schema requires.
const ARGS = { web_search: { query: 'q' }, web_extract: { urls: ['https://example.com/'] },
  vision_analyze: { image_url: '/tmp/a.png' }, skill_view: { name: 'ponytail' }, read_file: { path: '/etc/hostname' },
  write_file: { path: '/tmp/x', content: 'x' }, patch: { path: '/tmp/x', old_string: 'a', new_string: 'b' },
  search_files: { pattern: 'main' }, terminal: { command: 'true' }, process: { action: 'list' },
  image_generate: { prompt: 'a cat' }, video_analyze: { video_url: '/tmp/a.mp4' },
  browser_navigate: { url: 'https://example.com/' }, browser_click: { ref: 'e1' }, browser_type: { ref: 'e1', text: 'hi' },
  browser_press: { key: 'Enter' }, browser_scroll: { direction: 'down' }, browser_vision: { question: 'what' } };

test('each group answers through its upstream: Context Mode, the 23 Hermes tools, the graph, memory reads', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const ctx = ok(await client.callTool({ name: 'ctx_execute', arguments: { language: 'shell', code: 'echo hi' } }), 'ctx_execute');
    assert.deepEqual([ctx.upstream, ctx.tool], ['context', 'ctx_execute']);
    // Every curated Hermes tool reaches Hermes' dispatcher by its own name with what was sent,
    // under the example's task id (the browser navigate/snapshot smoke among them).
    const before = reached().length;
    for (const name of CONTRACT.hermes) {
      const args = ARGS[name] ?? {};
      const answer = ok(await client.callTool({ name, arguments: args }), name);
      assert.deepEqual(answer, { tool: name, args, task_id: 'hermes-gateway' }, name);
    }
    assert.deepEqual(reached().slice(before).map((c) => c.tool), CONTRACT.hermes, 'each call reached Hermes once');
    const g = ok(await client.callTool({ name: 'inspect_code_graph', arguments: { cwd: join(work, 'app'), query: 'main' } }), 'graph');
    assert.deepEqual([g.upstream, g.tool], ['graph', 'inspect_code_graph']);
    // Memory reads go to Honcho as Hermes' Honcho config names it (workspace, user peer).
    const profile = await client.callTool({ name: 'memory_profile', arguments: {} });
    assert.deepEqual(ok(profile, 'memory_profile'), { peer: USER, peer_card: null });
    ok(await client.callTool({ name: 'memory_search', arguments: { query: 'tea' } }), 'memory_search');
    ok(await client.callTool({ name: 'memory_context', arguments: { query: 'tea' } }), 'memory_context');
    const why = ok(await client.callTool({ name: 'memory_reasoning', arguments: { question: 'what does alice like?' } }), 'memory_reasoning');
    assert.match(why.answer, /^About alice: /);
  } finally { await client.close(); }
});

test('the hidden tools are absent and refused as unknown without reaching Hermes', async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    const names = new Set(tools.map((t) => t.name));
    for (const name of HIDDEN) assert.ok(!names.has(name), `${name} is not listed`);
    const before = reached().length;
    for (const name of [...HIDDEN, 'hermes_task', 'list_agents']) {
      await assert.rejects(client.callTool({ name, arguments: {} }), /Unknown tool/, name);
    }
    assert.deepEqual(reached().slice(before), [], 'none reached Hermes');
  } finally { await client.close(); }
});

test('session_search reads this profile\'s sessions; another profile is out of reach', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const found = ok(await client.callTool({ name: 'session_search', arguments: { query: 'auth' } }), 'session_search');
    assert.deepEqual(found.results.map((r) => r.title), ['auth refactor']);
    // Hermes would read the other profile's session by id; the adapter withholds it.
    const other = await client.callTool({ name: 'session_search', arguments: { session_id: '20261203_120000_cccccc' } });
    assert.equal(other.isError, true);
    assert.doesNotMatch(text(other), /payroll/);
    // Hermes reads "<profile>/<id>" from that profile's database; refused before Hermes sees it.
    const searches = () => reached().filter((c) => c.tool === 'session_search').length;
    const before = searches();
    for (const args of [{ session_id: 'work/20261203_120000_cccccc' },
      { session_id: 'work/20261203_120000_cccccc', around_message_id: 4 }]) {
      const linked = await client.callTool({ name: 'session_search', arguments: args });
      assert.equal(linked.isError, true, JSON.stringify(args));
      assert.doesNotMatch(text(linked), /payroll/);
    }
    assert.equal(searches(), before, 'no profile link reached Hermes');
    const override = await client.callTool({ name: 'session_search', arguments: { query: 'payroll', profile: 'work' } });
    assert.equal(override.isError, true);
    assert.match(text(override), /'profile' is not available here/);
  } finally { await client.close(); }
});

test('cronjob: list is read-only; a mutation without confirmed never reaches Hermes; with it, it is done', async () => {
  const client = await connect();
  try {
    const tools = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t]));
    const cron = Object.keys(tools.cronjob.inputSchema.properties);
    for (const hidden of ['model', 'provider', 'base_url', 'script', 'no_agent', 'monitor', 'deliver']) assert.ok(!cron.includes(hidden), hidden);
    assert.equal(tools.cronjob.inputSchema.properties.confirmed.type, 'boolean');
    const cronCalls = () => reached().filter((c) => c.tool === 'cronjob_manage');
    let before = cronCalls().length;
    assert.deepEqual(ok(await client.callTool({ name: 'cronjob', arguments: { action: 'list' } }), 'list').jobs, []);
    const job = { action: 'create', name: 'digest', prompt: 'summarize the day', schedule: '0 18 * * *' };
    const refused = await client.callTool({ name: 'cronjob', arguments: job });
    assert.equal(refused.structuredContent.error, 'confirmation_required');
    for (const field of [{ model: 'gpt-9' }, { no_agent: true }, { monitor: 'on' }, { script: 'rm -rf /' }, { deliver: 'telegram' }]) {
      const r = await client.callTool({ name: 'cronjob', arguments: { ...job, confirmed: true, ...field } });
      assert.equal(r.structuredContent?.error, 'invalid_arguments', JSON.stringify(field));
    }
    assert.deepEqual(cronCalls().slice(before).map((c) => c.args), [{ action: 'list' }], 'only the list reached Hermes');
    before = cronCalls().length;
    const made = ok(await client.callTool({ name: 'cronjob', arguments: { ...job, confirmed: true } }), 'create');
    assert.equal(made.success, true);
    // Hermes got the job without confirmed, delivering locally, its agent limited to the allowed toolsets.
    assert.deepEqual(cronCalls().slice(before).map((c) => c.args),
      [{ action: 'create', name: 'digest', prompt: 'summarize the day', schedule: '0 18 * * *', deliver: 'local',
        enabled_toolsets: ['web', 'vision', 'skills', 'mcp-context-mode'] }]);
    const listed = ok(await client.callTool({ name: 'cronjob', arguments: { action: 'list' } }), 'list');
    assert.deepEqual(listed.jobs.map((j) => [j.job_id, j.deliver]), [[made.job_id, 'local']]);
    const noConfirm = await client.callTool({ name: 'cronjob', arguments: { action: 'remove', job_id: made.job_id } });
    assert.equal(noConfirm.structuredContent.error, 'confirmation_required');
    ok(await client.callTool({ name: 'cronjob', arguments: { action: 'remove', job_id: made.job_id, confirmed: true } }), 'remove');
    assert.deepEqual(ok(await client.callTool({ name: 'cronjob', arguments: { action: 'list' } }), 'list').jobs, []);
  } finally { await client.close(); }
});

test('delegate_task: the operator approves each call; 3 children or a terminal toolset never reach Hermes', async () => {
  const client = await connect();
  try {
    const tools = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t]));
    assert.equal(tools.delegate_task.inputSchema.properties.tasks.maxItems, 2);
    const delegations = () => reached().filter((c) => c.tool === 'delegate_task');
    const before = delegations().length;
    // Three children: refused by the gateway before any approval is asked.
    const tooMany = await client.callTool({ name: 'delegate_task',
      arguments: { tasks: [{ goal: 'a' }, { goal: 'b' }, { goal: 'c' }] } });
    assert.equal(tooMany.structuredContent.error, 'invalid_arguments');
    const pending = async () => {
      let entry;
      await until(async () => {
        const r = await cli('approvals', '--json');
        entry = r.code === 0 ? JSON.parse(r.stdout).find((p) => p.tool === 'delegate_task') : null;
        return entry;
      }, 'delegate_task in the operator queue', 15000);
      return entry;
    };
    // A terminal child: even approved, the adapter refuses it and Hermes never sees it.
    const terminal = client.callTool({ name: 'delegate_task', arguments: { goal: 'run ls', toolsets: ['terminal'] } });
    const t = await pending();
    assert.equal(delegations().length, before, 'nothing reaches Hermes before a decision');
    assert.equal((await cli('approve', t.id)).code, 0);
    const tr = await terminal;
    assert.equal(tr.isError, true);
    assert.match(text(tr), /toolset 'terminal' is not allowed/);
    // An approved leaf delegation reaches Hermes with the allowed toolsets only.
    const approved = client.callTool({ name: 'delegate_task', arguments: { goal: 'summarize', toolsets: ['web'] } });
    const first = await pending();
    assert.equal(delegations().length, before, 'still nothing before the operator decides');
    assert.equal((await cli('approve', first.id)).code, 0);
    const r = ok(await approved, 'delegate_task');
    assert.deepEqual(r.results.map((c) => [c.status, c.summary, c.toolsets]), [['completed', 'done: summarize', ['web']]]);
    assert.deepEqual(delegations().slice(before).map((c) => c.args),
      [{ role: 'leaf', background: false, goal: 'summarize', toolsets: ['web'] }]);
    // Denied: it never reaches Hermes.
    const denied = client.callTool({ name: 'delegate_task', arguments: { goal: 'spend tokens' } });
    const second = await pending();
    assert.equal((await cli('deny', second.id, '--reason', 'not today')).code, 0);
    const d = await denied;
    assert.equal(d.structuredContent.error, 'approval_denied');
    assert.equal(delegations().length, before + 1, 'the denied call never reached Hermes');
  } finally { await client.close(); }
});

test('memory_conclude: a durable conclusion is created in Honcho, read back and deleted', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const stored = async () => (await honchoCall('POST', `/${WS}/conclusions/list`, { filters: {} })).items;
    const n = (await stored()).length;
    // Refused before Honcho: no kind, a temporary kind, a secret (the gateway); text that says
    // it is temporary (the adapter).
    for (const args of [{ content: 'likes tea' }, { content: 'likes tea', kind: 'temporary' },
      { content: 'key sk-ant-api03-Zr8Qm2xWv9LpT4nB7cYh1KdFs6GjE3aU0oRi5MqXw', kind: 'decision' },
      { content: 'uses tabs for now', kind: 'preference' }]) {
      const r = await client.callTool({ name: 'memory_conclude', arguments: { action: 'create', ...args } });
      assert.equal(r.isError, true, JSON.stringify(args));
    }
    assert.equal((await stored()).length, n, 'no refused conclusion reached Honcho');
    const made = ok(await client.callTool({ name: 'memory_conclude',
      arguments: { action: 'create', content: 'prefers green tea', kind: 'preference' } }), 'create');
    const id = made.created[0].id;
    // In Honcho: by the assistant peer chatgpt about the user peer, with its kind.
    const inHoncho = (await stored()).find((c) => c.id === id);
    assert.deepEqual([inHoncho.content, inHoncho.observer_id, inHoncho.observed_id, inHoncho.workspace_id],
      ['[preference] prefers green tea', 'chatgpt', USER, WS]);
    // Read back through the gateway: the list, and the user's context.
    const listed = ok(await client.callTool({ name: 'memory_conclude', arguments: { action: 'list' } }), 'list');
    assert.deepEqual(listed.items.map((c) => [c.id, c.content]), [[id, '[preference] prefers green tea']]);
    const ctx = ok(await client.callTool({ name: 'memory_context', arguments: {} }), 'memory_context');
    assert.match(ctx.representation, /\[preference\] prefers green tea/);
    ok(await client.callTool({ name: 'memory_conclude', arguments: { action: 'delete', id } }), 'delete');
    assert.equal((await stored()).find((c) => c.id === id), undefined, 'gone from Honcho');
    assert.deepEqual(ok(await client.callTool({ name: 'memory_conclude', arguments: { action: 'list' } }), 'list').items, []);
  } finally { await client.close(); }
});

test('/healthz and /readyz: 200 once Context Mode, both web calls, the cron list and Honcho answered', async () => {
  assert.equal((await fetch(`${srv.base}/healthz`)).status, 200);
  const r = await readyz(srv.base);
  assert.deepEqual(Object.keys(r.upstreams).sort(), ['context', 'graph', 'hermes', 'memory']);
  for (const u of ['context', 'hermes', 'memory']) assert.equal(r.upstreams[u].smoke, 'passed', JSON.stringify(r));
  assert.equal((await fetch(`${srv.base}/readyz`)).status, 200);
  assert.ok(readFileSync(join(dir, 'context.calls'), 'utf8').split('\n').includes('ctx_execute'), 'the smoke call reached Context Mode');
  // The contract: "one real web_search and one real web_extract smoke call at startup".
  assert.deepEqual(reached().slice(0, 3).map((c) => [c.tool, c.args]), [['web_search', { query: 'hermes gateway readiness' }],
    ['web_extract', { urls: ['https://example.com/'] }], ['cronjob_manage', { action: 'list' }]]);
});

test('gateway check --probe starts the real upstreams and prints the 44 tools', async () => {
  const probe = await cli('gateway', 'check', '--probe');
  assert.equal(probe.code, 0, probe.stdout + probe.stderr);
  assert.match(probe.stdout, /\n  hermes: protocol 2025-11-25; smoke calls web_search, web_extract, cronjob passed\n/);
  assert.match(probe.stdout, /\n  memory: protocol 2025-11-25; smoke call memory_profile passed\n/);
  // The table of exposed names: the 43 upstream tools, each from the upstream the contract
  // names; then the gateway's own startup_context.
  const table = probe.stdout.split('exposed names (probe):\n')[1].split('\nguarded')[0].split('\n').slice(1)
    .map((l) => l.trim().split(/\s+/).slice(0, 2));
  const expected = Object.entries(CONTRACT).filter(([role]) => role !== 'gateway')
    .flatMap(([role, names]) => names.map((n) => [n, role === 'guarded' ? 'hermes' : role]));
  assert.deepEqual(table, expected);
  assert.match(probe.stdout, /\n43 of 43 tools exposed; 0 upstreams did not start\n/);
  assert.match(probe.stdout, /\n  startup_context: a tool returning 5 fixed files/);
});

test('a web_extract answering a nested provider error keeps /readyz at 503 though web_search passed', async () => {
  const sub = join(dir, 'extract-down');
  const downHome = hermesHome(join(sub, 'hermes-home'), { calls: join(sub, 'hermes.calls'), fail: ['web_extract'] });
  const down = await startHermes(exampleEnv(copyExample(sub), downHome));
  try {
    const r = await readyz(down.base);
    assert.equal(r.upstreams.hermes.smoke, 'failed', JSON.stringify(r));
    assert.equal(r.upstreams.hermes.smoke_error,
      'smoke call web_extract failed: a nested error in structuredContent.results[0].error');
    assert.equal(r.upstreams.context.smoke, 'passed');
    assert.equal((await fetch(`${down.base}/readyz`)).status, 503);
    assert.equal((await fetch(`${down.base}/healthz`)).status, 200, 'healthz stays up');
    assert.deepEqual(reachedNames(join(sub, 'hermes.calls')), ['web_search', 'web_extract'], 'the search passed, then the extract was made');
    assert.doesNotMatch(down.proc.stderrText, /Nous gateway authentication/, 'the provider\'s words stay out of the log');
  } finally {
    assert.equal(await down.stop(), 0);
  }
});

test('inspect_code_graph: cwd inside the roots reaches a graph process per project; outside, invalid_arguments', async () => {
  const client = await connect();
  try {
    await client.listTools();
    for (const cwd of [join(work, 'app', 'lib'), join(source, 'tool')]) {
      const r = ok(await client.callTool({ name: 'inspect_code_graph', arguments: { cwd, query: 'main' } }), cwd);
      assert.equal(r.arguments.cwd, cwd, 'the call reaches the graph upstream');
    }
    const before = graphCalls().length;
    for (const cwd of [join(dir, 'elsewhere'), join(work, '..', 'elsewhere'), 'relative/path', dir]) {
      const r = await client.callTool({ name: 'inspect_code_graph', arguments: { cwd, query: 'main' } });
      assert.equal(r.structuredContent.error, 'invalid_arguments', cwd);
    }
    assert.equal(graphCalls().length, before, 'a refused cwd never reaches a graph process');
    const rz = await (await fetch(`${srv.base}/readyz`)).json();
    assert.deepEqual(Object.keys(rz.upstreams.graph.instances.roots).sort(),
      [join(source, 'tool'), join(work, 'app')].sort(), 'one process per project root');
  } finally { await client.close(); }
});

test('the unit that runs this gateway: Wants and After without Requires, loopback, systemd-analyze verify', (t) => {
  // The gateway is hermes-mcp serve itself: contrib/systemd/hermes-mcp.service, rendered by
  // scripts/install-systemd for the example's env file.
  const h = join(dir, 'unit-home');
  const cfg = join(h, 'config');
  const envDir = join(cfg, 'hermes-mcp');
  mkdirSync(envDir, { recursive: true });
  const envFile = join(envDir, 'env');
  writeFileSync(envFile, readFileSync(srv.envFile, 'utf8').replace(/^MCP_PORT=.*$/m, 'MCP_PORT=3060'));
  chmodSync(envFile, 0o600);
  const env = { ...process.env, XDG_CONFIG_HOME: cfg, HOME: h };
  const p = spawnSync(join(ROOT, 'scripts/install-systemd'), ['--no-enable', '--env-file', envFile], { env, encoding: 'utf8' });
  assert.equal(p.status, 0, p.stderr);
  const unitDir = join(cfg, 'systemd', 'user');
  // The example's drop-in, installed as contrib/gateway/README.md says.
  mkdirSync(join(unitDir, 'hermes-mcp.service.d'));
  writeFileSync(join(unitDir, 'hermes-mcp.service.d', 'upstreams.conf'),
    readFileSync(join(ROOT, 'contrib/gateway/hermes-mcp.service.d/upstreams.conf')));
  const unit = readFileSync(join(unitDir, 'hermes-mcp.service'), 'utf8') +
    readFileSync(join(unitDir, 'hermes-mcp.service.d', 'upstreams.conf'), 'utf8');
  const lines = unit.split('\n').filter((l) => l && !l.startsWith('#'));
  assert.ok(lines.some((l) => l.startsWith('After=')), 'ordered after its dependencies');
  assert.ok(lines.some((l) => l === 'Wants=context-mode.service camofox.service'), 'wants the upstream services');
  assert.ok(lines.some((l) => l === 'After=context-mode.service camofox.service'), 'starts after them');
  for (const hard of ['Requires=', 'BindsTo=', 'Requisite=', 'PartOf=']) {
    assert.ok(!lines.some((l) => l.startsWith(hard)), `no ${hard}: an upstream's failure does not stop the gateway`);
  }
  assert.ok(lines.some((l) => l.startsWith('ExecStart=') && l.endsWith(`serve --env-file ${envFile}`)), 'runs serve on the env file');
  // The gateway under the example listens on loopback only: its one listening socket is
  // 127.0.0.1 (the kernel's table, not our own words).
  const hexPort = srv.port.toString(16).toUpperCase().padStart(4, '0');
  const listening = ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((f) => (existsSync(f) ? readFileSync(f, 'utf8').split('\n').slice(1) : []))
    .map((l) => l.trim().split(/\s+/)).filter((c) => c[3] === '0A' && c[1]?.endsWith(`:${hexPort}`)).map((c) => c[1]);
  assert.deepEqual(listening, [`0100007F:${hexPort}`]);
  const runtime = join(h, 'runtime');
  mkdirSync(runtime, { mode: 0o700 });
  const v = spawnSync('systemd-analyze', ['verify', '--user', join(unitDir, 'hermes-mcp.service')],
    { env: { ...env, XDG_RUNTIME_DIR: runtime }, encoding: 'utf8' });
  if (v.error || (v.status !== 0 && /Failed to initialize manager|Failed to lookup RuntimeDirectory/.test(v.stderr))) {
    t.skip(`systemd-analyze cannot run here: ${v.error?.message ?? v.stderr.trim().split('\n')[0]}`);
    return;
  }
  assert.equal(v.status, 0, v.stderr);
  assert.equal(v.stderr.trim(), '', v.stderr);
});
