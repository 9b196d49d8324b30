// A reloaded gateway file: on SIGHUP the server reads GATEWAY_FILE
// again. What only restricts applies to every call that starts after the reload (an approve
// guard: the next call waits for `hermes-mcp approve`; an argument policy; an include that
// leaves a tool out); a call in flight keeps what it started with. What needs a new process (a
// new upstream, another args) is not applied: one warn line each, and `doctor` and `gateway
// check` say "restart needed" (they ask the running server on its control socket) until the
// file asks for nothing of the kind again. An invalid file keeps the running configuration and
// says why in one warn line. And the one validation serve makes of the file beyond its syntax
// (approvals.timeout_s below MCP_CALL_TIMEOUT_S) is made alike by serve, its reload, doctor and
// gateway check. The upstream is tests/fakes/fake-upstream.mjs, which writes each call's tool
// name to a file: a call that waits for the operator has not reached it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { ROOT, HERMES, startHermes, until, gatewayFile, sdkClient, hermesCli, pendingApprovals,
  waitApprovals, modernMeta, modernHeaders } from '../../lib/lib.mjs';
import { events, logMark, waitAnyEvent } from '../../lib/events.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir, srv, gwPath;

const upstream = (name, extraArgs = []) => `  ${name}:\n` +
  `    command: ${JSON.stringify(process.execPath)}\n` +
  `    args: ${JSON.stringify([FAKE, '--calls', join(dir, 'calls'), ...extraArgs])}\n`;
const BASE = () => 'upstreams:\n' + upstream('fake') + '    tools:\n      include: [echo, slow]\n';
const upstreamCalls = (tool) => (existsSync(join(dir, 'calls'))
  ? readFileSync(join(dir, 'calls'), 'utf8').split('\n').filter((l) => l === tool) : []);

// Writes the gateway file, sends SIGHUP and returns the log lines the reload wrote (it ends
// with the pins line the server has always written after a SIGHUP).
async function reloadWith(text) {
  writeFileSync(gwPath, text);
  chmodSync(gwPath, 0o600);
  const mark = logMark(srv);
  srv.proc.kill('SIGHUP');
  await waitAnyEvent(srv, ['pins_reread', 'reload_rejected'], {}, { since: mark, ms: 10000 });
  return srv.proc.stderrText.slice(mark);
}

let nextId = 1;
// One 2026-07-28 request of a client that declared the tasks extension (an approve-guarded call
// becomes a task).
async function taskRpc(s, method, params) {
  const id = nextId++;
  const r = await fetch(s.url, { method: 'POST', signal: AbortSignal.timeout(30000),
    headers: { ...s.auth, ...modernHeaders(method, params.name ?? params.taskId) },
    body: JSON.stringify({ jsonrpc: '2.0', id, method,
      params: { ...params, _meta: modernMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } }, 'gwreload-it') } }) });
  return (await r.json()).result;
}

// A server of a test's own, with its own gateway file (text) in its own directory: fn gets
// {s, reload(text)} (reload as reloadWith); the server must stop cleanly.
async function ownServer(prefix, text, fn) {
  const d = mkdtempSync(join(tmpdir(), prefix));
  const s = await startHermes({ GATEWAY_FILE: gatewayFile(d, text) });
  const reload = async (t) => {
    writeFileSync(join(d, 'gateway.yaml'), t);
    const mark = logMark(s);
    s.proc.kill('SIGHUP');
    await waitAnyEvent(s, ['pins_reread', 'reload_rejected'], {}, { since: mark, ms: 10000 });
    return s.proc.stderrText.slice(mark);
  };
  try {
    await fn({ s, reload });
  } finally {
    assert.equal(await s.stop(), 0);
    rmSync(d, { recursive: true, force: true });
  }
}

function run(...args) {
  return new Promise((resolve) => {
    execFile(HERMES, args, { encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
  });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwreload-'));
  gwPath = gatewayFile(dir, BASE());
  srv = await startHermes({ GATEWAY_FILE: gwPath, MCP_SESSIONS: '1' });
});
after(async () => {
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('an approve guard added to the file and SIGHUP: the next call waits for `hermes-mcp approve`; a call in flight keeps its policy', async () => {
  const { client } = await sdkClient(srv, 'gwreload-it');
  const before = await client.callTool({ name: 'fake__echo', arguments: { message: 'before' } });
  assert.equal(before.content[0].text, 'Echo: before', 'unguarded before the reload');
  const inFlight = client.callTool({ name: 'fake__slow', arguments: { ms: 1500 } });
  await until(() => upstreamCalls('slow').length === 1, 'the slow call at the upstream');
  const log = await reloadWith(BASE() + '      guard: {"*": approve}\n');
  const r0 = await inFlight;
  assert.equal(r0.content[0].text, 'slow done', 'the call that started before the guard was not held');
  assert.deepEqual(await pendingApprovals(srv), []);

  const echoesBefore = upstreamCalls('echo').length;
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'guarded' } },
    undefined, { timeout: 60000 });
  const [p] = await waitApprovals(srv, 1);
  assert.equal(p.tool, 'fake__echo');
  assert.equal(upstreamCalls('echo').length, echoesBefore, 'not upstream before the approval');
  const ok = await hermesCli(srv, 'approve', p.id);
  assert.equal(ok.code, 0, ok.stderr);
  const r = await call;
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal(r.content[0].text, 'Echo: guarded');
  await client.close();
  assert.match(log, /info: gateway: reloaded .*gateway\.yaml/);
  assert.doesNotMatch(log, /restart to apply/);
});

test('an argument policy added applies to the next call; an include or bridge_tools that leaves a tool out hides it and refuses its calls', async () => {
  const { client: early, tools: listed } = await sdkClient(srv, 'gwreload-it');
  assert.ok(listed.hermes_reset && listed.fake__slow, 'both listed before the reload');
  await reloadWith(BASE().replace('[echo, slow]', '[echo]') +
    '      args: {echo: {max_length: {message: 5}}}\nbridge_tools: {exclude: [hermes_reset]}\n');
  await assert.rejects(early.callTool({ name: 'hermes_reset', arguments: {} }), /Unknown tool: hermes_reset/);
  await early.close();
  const { client, tools } = await sdkClient(srv, 'gwreload-it');
  assert.equal(tools.hermes_reset, undefined, 'the bridge tool left out is no longer listed');
  assert.ok(tools.hermes_task, 'the others stay');
  assert.ok(tools.fake__echo);
  assert.equal(tools.fake__slow, undefined, 'slow is no longer listed');
  assert.equal(tools.fake__echo.inputSchema.properties.message.maxLength, 5, 'the schema clients see says so');
  const long = await client.callTool({ name: 'fake__echo', arguments: { message: 'far too long' } });
  assert.equal(long.isError, true);
  assert.equal(long.structuredContent.error, 'invalid_arguments');
  assert.match(long.content[0].text, /message/);
  const slow = await client.callTool({ name: 'fake__slow', arguments: { ms: 1 } });
  assert.equal(slow.isError, true);
  assert.equal(slow.structuredContent.error, 'not_found');
  assert.match(slow.content[0].text, /no longer exposed/);
  const short = await client.callTool({ name: 'fake__echo', arguments: { message: 'hi' } });
  assert.equal(short.content[0].text, 'Echo: hi', 'no guard any more, and within the policy');
  await client.close();
});

test('a call waiting for the operator when a reload leaves its tool out: denied at once, never sent upstream, even if approved', async () => {
  await reloadWith(BASE() + '      guard: {echo: approve}\n');
  const { client } = await sdkClient(srv, 'gwreload-it');
  const echoes = upstreamCalls('echo').length;
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'gone' } }, undefined, { timeout: 60000 });
  const [p] = await waitApprovals(srv, 1);
  await reloadWith(BASE().replace('[echo, slow]', '[slow]') + '      guard: {echo: approve}\n');
  await hermesCli(srv, 'approve', p.id); // too late: the request is no longer pending
  const r = await call;
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.error, 'approval_denied', JSON.stringify(r));
  assert.match(r.content[0].text, /the tool is no longer exposed \(gateway file reloaded\)/);
  assert.deepEqual(await pendingApprovals(srv), []);
  await new Promise((res) => setTimeout(res, 300));
  assert.equal(upstreamCalls('echo').length, echoes, 'the upstream never got the call');
  await client.close();
  await reloadWith(BASE());
  // The same for a task (tasks serve only where a tool was guarded approve at start).
  const text = (include) => 'upstreams:\n' + upstream('fake') +
    `    tools:\n      include: ${include}\n      guard: {echo: approve}\n`;
  await ownServer('hm-gwreload-droptask-', text('[echo, slow]'), async ({ s, reload }) => {
    const before = upstreamCalls('echo').length;
    const task = await taskRpc(s, 'tools/call', { name: 'fake__echo', arguments: { message: 'gone' } });
    assert.equal(task.resultType, 'task', JSON.stringify(task));
    const [q] = await waitApprovals(s, 1);
    await reload(text('[slow]'));
    await hermesCli(s, 'approve', q.id);
    const done = await until(async () => {
      const t = await taskRpc(s, 'tasks/get', { taskId: task.taskId });
      return t.status === 'completed' && t;
    }, 'the task to end', 15000);
    assert.equal(done.result.structuredContent.error, 'approval_denied', JSON.stringify(done));
    assert.match(done.result.content[0].text, /the tool is no longer exposed \(gateway file reloaded\)/);
    assert.equal(upstreamCalls('echo').length, before, 'the upstream never got the call');
  });
});

test('while an upstream restarts (its listing empty), a reload checks its policies and rules against what it listed at start', async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-gwreload-starts-')); // the upstream's starts file
  const text = (rules, include = '[echo, crash]') => 'upstreams:\n  flaky:\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(d, 'starts'), '--fail-starts', '1000'])}\n` +
    `    tools:\n      include: ${include}\n${rules}`;
  try {
    await ownServer('hm-gwreload-down-', text(''), async ({ s, reload }) => {
      const { client } = await sdkClient(s, 'gwreload-it');
      await client.callTool({ name: 'flaky__crash', arguments: {} }).catch(() => {});
      await client.close();
      await until(() => readFileSync(join(d, 'starts'), 'utf8').split('\n').filter(Boolean).length >= 2,
        'a restart that fails');
      const log = await reload(text('      guard: {echo: approve}\n      args: {echo: {max_length: {message: 5}}}\n'));
      assert.deepEqual(events(log, 'reload_rejected'), []);
      const [applied] = events(log, 'reload_applied', { config: 'gateway' });
      assert.match(applied.line, /guards, argument policies and tools rules of 1 tool changed/);
      const typo = await reload(text('      args: {ecoh: {max_length: {message: 5}}}\n'));
      assert.match(events(typo, 'reload_rejected', { config: 'gateway' })[0].line, /tools\.args names tool 'ecoh'/);
      const wider = await reload(text('', '["*"]'));
      assert.equal(events(wider, 'reload_restart_needed', { config: 'gateway', keys: /^upstream flaky: tools\.include or tools\.exclude widened \(it would expose \w+\)$/ }).length, 1, wider);
    });
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('the notes of start are written on reload too: include with exclude, an include glob that matches nothing', async () => {
  const log = await reloadWith(BASE().replace('[echo, slow]', '[echo, slow, nosuch]') +
    '      exclude: [slow]\nbridge_tools: {include: ["*"], exclude: [hermes_reset]}\n');
  assert.match(log, /warn: gateway: upstream fake has both tools\.include and tools\.exclude: include alone decides/);
  assert.match(log, /warn: gateway: bridge_tools has both include and exclude/);
  assert.match(log, /warn: gateway: upstream fake: tools\.include 'nosuch' matches none of its \d+ tools/);
  const clean = await reloadWith(BASE());
  assert.doesNotMatch(clean, /include alone decides|matches none/);
});

test('what a reload loosens applies too, each loosening one warn line', async () => {
  await reloadWith(BASE().replace('[echo, slow]', '[echo]') + '      guard: {echo: approve}\n' +
    '      args: {echo: {max_length: {message: 5}}}\n');
  const log = await reloadWith(BASE());
  assert.match(log, /warn: gateway: reload: fake__echo: guard approve -> none/);
  assert.match(log, /warn: gateway: reload: fake__echo: args max_length message -> none/);
  assert.match(log, /warn: gateway: reload: fake__slow is exposed again/);
  const { client } = await sdkClient(srv, 'gwreload-it');
  const r = await client.callTool({ name: 'fake__echo', arguments: { message: 'longer than five' } });
  assert.equal(r.content[0].text, 'Echo: longer than five', 'no guard, no cap any more');
  await client.close();
});

test('a new upstream and a changed args: one warn line each, not applied, doctor and gateway check say restart needed until the file asks for nothing new', async () => {
  const log = await reloadWith('upstreams:\n' + upstream('fake', ['--pages']) +
    '    tools:\n      include: [echo, slow]\n' + upstream('extra') + '    tools: {include: ["*"]}\n');
  assert.deepEqual(events(log, 'reload_restart_needed', { config: 'gateway' }).map((e) => e.fields.keys).sort(),
    ['upstream extra is new', 'upstream fake: args changed']);
  const { client, tools } = await sdkClient(srv, 'gwreload-it');
  assert.deepEqual(Object.keys(tools).filter((n) => n.startsWith('extra__')), [], 'the new upstream is not exposed');
  assert.ok(tools.fake__slow, 'the include in the file is applied all the same');
  await client.close();

  const doctor = await run('doctor', '--no-probe', '--env-file', srv.envFile);
  assert.doesNotMatch(doctor.stderr, /Sanitizer/);
  assert.match(doctor.stdout, /restart needed \(upstream extra is new; upstream fake: args changed\)/);
  const check = await run('gateway', 'check', '--env-file', srv.envFile);
  assert.equal(check.code, 0, check.stderr);
  assert.doesNotMatch(check.stderr, /Sanitizer/);
  assert.match(check.stdout, /running server: restart needed: .*upstream extra is new; upstream fake: args changed/);

  await reloadWith(BASE());
  const again = await sdkClient(srv, 'gwreload-it');
  assert.ok(again.tools.hermes_reset, 'a bridge tool left out by an earlier reload is back');
  await again.client.close();
  const doctor2 = await run('doctor', '--no-probe', '--env-file', srv.envFile);
  assert.doesNotMatch(doctor2.stdout, /restart needed/);
  const check2 = await run('gateway', 'check', '--env-file', srv.envFile);
  assert.doesNotMatch(check2.stdout, /restart needed/);
});

test('enabled: false on a running upstream: its tools are taken away at once (its process until a restart); a disabled one enabled: named as such, not applied until a restart', async () => {
  const log = await reloadWith(BASE() + '    enabled: false\n' + upstream('spare') +
    '    enabled: false\n');
  assert.deepEqual(events(log, 'reload_restart_needed', { config: 'gateway' }).map((e) => e.fields.keys),
    ['upstream fake was disabled (enabled: false)']);
  assert.match(log, /gateway: reload: fake__echo is no longer exposed/);
  assert.doesNotMatch(log, /upstream spare/, 'a disabled upstream added disabled asks for nothing');
  const { client, tools } = await sdkClient(srv, 'gwreload-it');
  assert.equal(tools.fake__echo, undefined, 'the disabled upstream\'s tools are no longer listed');
  const echoes = upstreamCalls('echo').length;
  const r = await client.callTool({ name: 'fake__echo', arguments: { message: 'off' } });
  assert.equal(r.structuredContent?.error, 'not_found', JSON.stringify(r));
  assert.equal(upstreamCalls('echo').length, echoes, 'not sent upstream');
  await client.close();
  await reloadWith(BASE());
  const back = await sdkClient(srv, 'gwreload-it');
  assert.ok(back.tools.fake__echo, 'enabled again: exposed again');
  await back.client.close();
  const log2 = await reloadWith(BASE() + upstream('spare') + '    tools: {include: ["*"]}\n');
  assert.deepEqual(events(log2, 'reload_restart_needed', { config: 'gateway' }).map((e) => e.fields.keys),
    ['upstream spare is new']);
  await reloadWith(BASE());
});

test('an invalid file keeps the running configuration and says why in one warn line', async () => {
  await reloadWith(BASE() + '      guard: {echo: approve}\n');
  const log = await reloadWith(BASE() + '      guard: {echo: approve}\n    bogus: 1\n');
  const failed = events(log, 'reload_rejected', { config: 'gateway' });
  assert.equal(failed.length, 1, log);
  assert.match(failed[0].line, /warn: .*gateway file .*gateway\.yaml: .*bogus/);
  // A policy naming a tool the upstream does not offer is refused whole, as at start.
  const typo = await reloadWith(BASE() + '      args: {ecoh: {drop: [message]}}\n');
  assert.match(events(typo, 'reload_rejected', { config: 'gateway' })[0].line, /tools\.args names tool 'ecoh'/);
  // The guard of the last good file still holds.
  const { client } = await sdkClient(srv, 'gwreload-it');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'still' } }, undefined, { timeout: 60000 });
  const [p] = await waitApprovals(srv, 1);
  assert.equal((await hermesCli(srv, 'deny', p.id, '--reason', 'kept')).code, 0);
  const r = await call;
  assert.equal(r.structuredContent.error, 'approval_denied');
  await client.close();
});

test('a shorter approvals.timeout_s applies to the next approval request', async () => {
  await reloadWith(BASE() + '      guard: {echo: approve}\napprovals: {timeout_s: 1}\n');
  const { client } = await sdkClient(srv, 'gwreload-it');
  const started = Date.now();
  const r = await client.callTool({ name: 'fake__echo', arguments: { message: 'late' } });
  assert.equal(r.structuredContent.error, 'approval_denied');
  assert.match(r.content[0].text, /no operator answered within 1 s/);
  assert.ok(Date.now() - started < 10000, 'not the 600 s default');
  await client.close();
});

test('a request waiting for the operator keeps the timeout it was queued with: its timed-out message says so after a reload changed it', async () => {
  await reloadWith(BASE() + '      guard: {echo: approve}\napprovals: {timeout_s: 2}\n');
  const { client } = await sdkClient(srv, 'gwreload-it');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'kept' } }, undefined, { timeout: 60000 });
  await waitApprovals(srv, 1);
  await reloadWith(BASE() + '      guard: {echo: approve}\napprovals: {timeout_s: 900}\n');
  const r = await call;
  assert.equal(r.structuredContent.error, 'approval_denied');
  assert.match(r.content[0].text, /no operator answered within 2 s/);
  await client.close();
  // The same for a task: its ttlMs and its outcome keep the timeout it was created with. Tasks
  // serve only where a tool was guarded approve at start: a server of its own.
  const text = (t) => 'upstreams:\n' + upstream('fake') +
    `    tools:\n      include: [echo]\n      guard: {echo: approve}\napprovals: {timeout_s: ${t}}\n`;
  await ownServer('hm-gwreload-task-', text(2), async ({ s, reload }) => {
    const task = await taskRpc(s, 'tools/call', { name: 'fake__echo', arguments: { message: 'task' } });
    assert.equal(task.resultType, 'task', JSON.stringify(task));
    await waitApprovals(s, 1);
    assert.match(await reload(text(900)), /approvals wait 900 s/);
    const during = await taskRpc(s, 'tasks/get', { taskId: task.taskId });
    assert.equal(during.ttlMs, task.ttlMs, 'ttlMs counts the timeout the task was created with');
    const done = await until(async () => {
      const t = await taskRpc(s, 'tasks/get', { taskId: task.taskId });
      return t.status === 'completed' && t;
    }, 'the task to end', 15000);
    assert.equal(done.ttlMs, task.ttlMs);
    assert.match(done.result.content[0].text, /no operator answered within 2 s/);
  });
});

test('a file serve would refuse (approvals.timeout_s at or above MCP_CALL_TIMEOUT_S) is refused by the reload too: the running configuration stays', async () => {
  const log = await reloadWith(BASE() + '      guard: {echo: approve}\napprovals: {timeout_s: 3600}\n');
  const [failed] = events(log, 'reload_rejected', { config: 'gateway' });
  assert.match(failed.line, /gateway file .*: approvals\.timeout_s \(3600 s\) must be shorter than MCP_CALL_TIMEOUT_S \(1800 s\)/);
});

test('serve, doctor and gateway check refuse a file with approvals.timeout_s at or above MCP_CALL_TIMEOUT_S with the same message', async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-gwvalid-'));
  try {
    const file = gatewayFile(d, 'upstreams:\n  fake:\n    command: /bin/true\n' +
      '    tools: {include: [echo], guard: {echo: approve}}\napprovals: {timeout_s: 60}\n');
    const env = join(d, 'env');
    writeFileSync(env, `MCP_PORT=0\nMCP_AUTH_TOKEN=${'ab'.repeat(32)}\nMCP_CALL_TIMEOUT_S=60\n` +
      `GATEWAY_FILE=${file}\nAGENTS_FILE=${join(d, 'agents.yaml')}\nTASKS_DIR=${join(d, 'tasks')}\n`);
    chmodSync(env, 0o600);
    const serve = await run('serve', '--env-file', env);
    assert.equal(serve.code, 2);
    const line = serve.stderr.split('\n').find((l) => l.includes('approvals.timeout_s (60 s) must be shorter than MCP_CALL_TIMEOUT_S (60 s)'));
    assert.ok(line, serve.stderr);
    const message = line.replace(/^hermes-mcp: /, '');
    const doctor = await run('doctor', '--no-probe', '--env-file', env);
    assert.ok(doctor.stdout.split('\n').some((l) => /FAIL/.test(l) && l.includes(message)), doctor.stdout);
    assert.equal(doctor.code, 1, doctor.stdout);
    const check = await run('gateway', 'check', '--env-file', env);
    assert.equal(check.stderr.trim(), `hermes-mcp: ${message}`, check.stdout);
    assert.equal(check.code, 1, check.stdout);
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
