// An approve-guarded gateway call as an MCP task: a
// 2026-07-28 client that declared io.modelcontextprotocol/tasks gets a CreateTaskResult at once
// instead of holding its connection while the operator decides; the approval is queued as for a
// held call and decided with the real CLI (`hermes-mcp approvals --json | approve ID | deny ID
// --reason TEXT`). tasks/get follows it: approved, the upstream really gets the call and its
// result is the task's (a tool error stays a completed task with isError; a JSON-RPC error
// fails it); denied, it completes with approval_denied and the reason, the upstream never
// called. tasks/cancel withdraws the request (audit "withdrawn") or cancels the upstream call.
// Another principal gets "not found". A listen stream watching the task hears notifications/
// tasks when it ends. A request without the extension keeps the held call. The upstream's
// deadline holds; per-root instances serve tasks without evicting each other. SIGTERM denies what
// waits and lets a running call finish within the drain. The upstream is
// tests/fakes/fake-upstream.mjs, which writes each call's tool name (and each
// notifications/cancelled) to a file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, HERMES, startHermes, until, jsonLines, gatewayFile, modernMeta, modernHeaders,
  hermesCli, pendingApprovals, waitApprovals, tokensFile } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const EXT = 'io.modelcontextprotocol/tasks';
const OTHER = 'c'.repeat(64);
const ADMIN = 'd'.repeat(64);
let dir, srv;

const cli = hermesCli;
const pending = (s = srv) => pendingApprovals(s);
const waitListed = (n = 1, s = srv) => waitApprovals(s, n);
const audit = () => (existsSync(join(dir, 'audit.jsonl'))
  ? jsonLines(readFileSync(join(dir, 'audit.jsonl'), 'utf8')) : []);
const linesOf = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);
const upstreamLines = () => linesOf(join(dir, 'calls'));

// A second gateway for a test that needs its own upstreams. setup(d) makes what it needs in its own
// temporary directory d and returns the gateway file's text; fn(s, d) runs with srv set to that
// server, which must then stop cleanly.
async function withGateway(setup, fn) {
  const d = realpathSync(mkdtempSync(join(tmpdir(), 'hm-apprtasks-gw-')));
  const s = await startHermes({ GATEWAY_FILE: gatewayFile(d, setup(d)) });
  const saved = srv;
  srv = s;
  try {
    await fn(s, d);
  } finally {
    srv = saved;
    assert.equal(await s.stop(), 0);
    rmSync(d, { recursive: true, force: true });
  }
}

let nextId = 1;
// One 2026-07-28 request as a client of that revision sends it; ext: whether it declares the
// tasks extension.
async function rpc(method, params, { ext = true, auth = srv.auth } = {}) {
  const name = params.name ?? params.taskId;
  const id = nextId++;
  const caps = ext ? { extensions: { [EXT]: {} } } : {};
  const r = await fetch(srv.url, { method: 'POST', signal: AbortSignal.timeout(30000), // a held call fails, not hangs
    headers: { ...auth, ...modernHeaders(method, name) },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta(caps, 'apprtasks-it') } }) });
  const json = await r.json();
  assert.equal(json.id, id);
  return json;
}
const call = (name, args, opts) => rpc('tools/call', { name, arguments: args }, opts);
const get = async (taskId, opts) => rpc('tasks/get', { taskId }, opts);
const ended = (taskId) => until(async () => {
  const t = (await get(taskId)).result;
  return ['completed', 'failed', 'cancelled'].includes(t.status) && t;
}, `task ${taskId} to end`, 15000);

// A task created for a guarded call: its CreateTaskResult and the queue entry it made.
async function created(name, args) {
  const r = await call(name, args);
  assert.equal(r.result?.resultType, 'task', JSON.stringify(r));
  const [p] = await waitListed(1);
  return { task: r.result, approval: p };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-apprtasks-'));
  const tokens = tokensFile(dir, { other: [OTHER, 'gateway:fake'], auditor: [ADMIN, 'gateway:fake, hermes:admin'] });
  const gw = gatewayFile(dir, 'approvals: {timeout_s: 600}\nupstreams:\n  fake:\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--smoke-tools', '--elicit', '--calls', join(dir, 'calls')])}\n` +
    '    tools: {include: [echo, slow, iserror, rpcerror, ask, hang], ' +
    'guard: {echo: approve, slow: approve, iserror: approve, rpcerror: approve, ask: approve}}\n' +
    '  short:\n    timeout: 1\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--calls', join(dir, 'short-calls')])}\n` +
    '    tools: {include: [hang], guard: {hang: approve}}\n');
  srv = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens, AUDIT_LOG_PATH: join(dir, 'audit.jsonl') });
});
after(async () => {
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('a call from a client of the tasks extension is a task at once; approved, the upstream gets it and the task completes with its result', async () => {
  const { task, approval } = await created('fake__echo', { message: 'as a task', api_key: 'sk-live-999' });
  assert.match(task.taskId, /^gw:[0-9a-f]{32}$/);
  assert.equal(task.status, 'working');
  assert.match(task.statusMessage, new RegExp(`waiting for the operator's approval: request ${approval.id}`));
  assert.ok(task.createdAt && task.lastUpdatedAt && task.ttlMs > 0 && task.pollIntervalMs > 0, JSON.stringify(task));
  assert.equal(approval.tool, 'fake__echo');
  assert.equal(approval.principal, 'owner');
  assert.doesNotMatch(approval.summary, /sk-live/);
  const now = (await get(task.taskId)).result;
  assert.equal(now.status, 'working');
  assert.equal(upstreamLines().filter((l) => l === 'echo').length, 0, 'not upstream before the approval');
  const ok = await cli(srv, 'approve', approval.id);
  assert.equal(ok.code, 0, ok.stderr);
  const done = await ended(task.taskId);
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.equal(done.result.resultType, 'complete');
  assert.equal(done.result.content[0].text, 'Echo: as a task');
  assert.equal(done.result.isError, undefined);
  assert.equal(upstreamLines().filter((l) => l === 'echo').length, 1);
  assert.deepEqual(await pending(), []);
  const line = await until(() => audit().find((l) => l.event === 'approval' && l.status === 'approved'), 'the approved audit line');
  assert.equal(line.tool, 'fake__echo');
  assert.equal(line.principal, 'owner');
  assert.match(line.decided_by, /^uid \d+/);
  await until(() => audit().find((l) => l.event !== 'approval' && l.tool === 'fake__echo' && l.status === 'ok'), 'the call audit line');
});

test('deny with a reason: the task completes with approval_denied and the reason; the upstream never gets it', async () => {
  const before = upstreamLines().length;
  const { task, approval } = await created('fake__echo', { message: 'deny me' });
  const d = await cli(srv, 'deny', approval.id, '--reason', 'not during the freeze');
  assert.equal(d.code, 0, d.stderr);
  const done = await ended(task.taskId);
  assert.equal(done.status, 'completed');
  assert.equal(done.result.isError, true);
  assert.equal(done.result.structuredContent.error, 'approval_denied');
  assert.match(done.result.content[0].text, /not during the freeze/);
  assert.equal(upstreamLines().length, before);
});

test('tasks/cancel before the decision withdraws the request: cancelled, the queue empty, audited, a late approve finds nothing', async () => {
  const { task, approval } = await created('fake__echo', { message: 'withdraw me' });
  const c = await rpc('tasks/cancel', { taskId: task.taskId });
  assert.ok(c.result && !c.error, JSON.stringify(c));
  assert.equal((await get(task.taskId)).result.status, 'cancelled');
  assert.deepEqual(await pending(), []);
  await until(() => audit().find((l) => l.event === 'approval' && l.status === 'withdrawn'), 'the withdrawn audit line');
  assert.equal((await cli(srv, 'approve', approval.id)).code, 1);
  assert.equal(upstreamLines().filter((l) => l === 'echo').length, 1, 'only the first test\'s call went upstream');
});

test('another principal gets "not found" for the task, cannot cancel it, and the owner still can decide it', async () => {
  const { task, approval } = await created('fake__echo', { message: 'mine' });
  const other = { Authorization: `Bearer ${OTHER}` };
  for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
    const r = await rpc(method, { taskId: task.taskId, ...(method === 'tasks/update' ? { inputResponses: {} } : {}) }, { auth: other });
    assert.equal(r.error?.code, -32602, `${method}: ${JSON.stringify(r)}`);
    assert.match(r.error.message, /not found/i);
  }
  const unknown = await get(`gw:${'0'.repeat(32)}`);
  assert.equal(unknown.error?.message, (await rpc('tasks/get', { taskId: task.taskId }, { auth: other })).error.message,
    'the same answer as an id that does not exist');
  assert.equal((await pending()).length, 1);
  assert.equal((await cli(srv, 'deny', approval.id)).code, 0);
  assert.equal((await ended(task.taskId)).result.structuredContent.error, 'approval_denied');
});

test('the owner token and a hermes:admin principal reach another principal\'s task (the bridge\'s rule): tasks/get and tasks/cancel', async () => {
  const other = { Authorization: `Bearer ${OTHER}` };
  const admin = { Authorization: `Bearer ${ADMIN}` };
  const r = await call('fake__echo', { message: 'theirs' }, { auth: other });
  assert.equal(r.result?.resultType, 'task', JSON.stringify(r));
  const { taskId } = r.result;
  await waitListed(1);
  for (const auth of [srv.auth, admin]) {
    const g = await rpc('tasks/get', { taskId }, { auth });
    assert.equal(g.result?.taskId, taskId, JSON.stringify(g));
    assert.equal(g.result.status, (await rpc('tasks/get', { taskId }, { auth: other })).result.status);
  }
  const c = await rpc('tasks/cancel', { taskId }, { auth: admin });
  assert.ok(c.result && !c.error, JSON.stringify(c));
  assert.equal((await rpc('tasks/get', { taskId }, { auth: other })).result.status, 'cancelled');
  assert.equal((await pending()).length, 0, 'the request was withdrawn');
});

test('a listen stream watching the task hears notifications/tasks with the completed task', async () => {
  const { task, approval } = await created('fake__echo', { message: 'watched' });
  const ac = new AbortController();
  const id = nextId++;
  const r = await fetch(srv.url, { method: 'POST', signal: ac.signal,
    headers: { ...srv.auth, ...modernHeaders('subscriptions/listen') },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen',
      params: { notifications: { taskIds: [task.taskId] }, _meta: modernMeta({ extensions: { [EXT]: {} } }, 'apprtasks-it') } }) });
  assert.match(r.headers.get('content-type') || '', /^text\/event-stream/);
  const reader = r.body.getReader();
  let text = '';
  const reading = (async () => {
    try { for (;;) { const { value, done } = await reader.read(); if (done) break; text += new TextDecoder().decode(value); } } catch { /* aborted */ }
  })();
  try {
    assert.equal((await cli(srv, 'approve', approval.id)).code, 0);
    const frame = await until(() => text.split('\n').filter((l) => l.startsWith('data:'))
      .map((l) => JSON.parse(l.slice(5))).find((m) => m.method === 'notifications/tasks'), 'notifications/tasks', 15000);
    assert.equal(frame.params.taskId, task.taskId);
    assert.equal(frame.params.status, 'completed');
    assert.equal(frame.params.result.content[0].text, 'Echo: watched');
  } finally {
    ac.abort();
    await reading;
  }
});

test('the upstream\'s tool error stays a completed task with isError; its JSON-RPC error fails the task', async () => {
  const a = await created('fake__iserror', {});
  assert.equal((await cli(srv, 'approve', a.approval.id)).code, 0);
  const t1 = await ended(a.task.taskId);
  assert.equal(t1.status, 'completed');
  assert.equal(t1.result.isError, true);
  const b = await created('fake__rpcerror', {});
  assert.equal((await cli(srv, 'approve', b.approval.id)).code, 0);
  const t2 = await ended(b.task.taskId);
  assert.equal(t2.status, 'failed', JSON.stringify(t2));
  assert.equal(typeof t2.error.code, 'number');
  assert.equal(t2.result, undefined);
});

test('tasks/cancel of an approved call the upstream is running tells the upstream (notifications/cancelled)', async () => {
  const { task, approval } = await created('fake__slow', { ms: 60000 });
  assert.equal((await cli(srv, 'approve', approval.id)).code, 0);
  await until(() => upstreamLines().includes('slow'), 'the upstream got the call');
  assert.match((await get(task.taskId)).result.statusMessage, /approved; upstream fake is running/);
  await rpc('tasks/cancel', { taskId: task.taskId });
  assert.equal((await get(task.taskId)).result.status, 'cancelled');
  await until(() => upstreamLines().some((l) => l.startsWith('cancelled ')), 'notifications/cancelled upstream');
});

test('the upstream asking for input during a task\'s call is refused, never relayed to another caller whose call is in flight', async () => {
  // another client's call in flight at the same stdio upstream: a request the upstream makes
  // must not reach that caller as if it were its own
  const ac = new AbortController();
  const id = nextId++;
  const other = fetch(srv.url, { method: 'POST', signal: ac.signal,
    headers: { ...srv.auth, ...modernHeaders('tools/call', 'fake__hang') },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'fake__hang', arguments: {}, _meta: modernMeta({ elicitation: { form: {} } }, 'apprtasks-other') } }) })
    .then((r) => r.json(), () => null);
  await until(() => upstreamLines().includes('hang'), 'the other call at the upstream');
  try {
    const { task, approval } = await created('fake__ask', { message: 'your password?' });
    assert.equal((await cli(srv, 'approve', approval.id)).code, 0);
    const done = await ended(task.taskId);
    assert.equal(done.status, 'completed');
    assert.match(done.result.content[0].text, /^error: /, JSON.stringify(done.result));
  } finally {
    ac.abort();
  }
  assert.equal(await other, null, 'the other caller got no input request of the task\'s call');
});

test('an approved task\'s call has the upstream\'s deadline: upstream_timeout, the upstream told', async () => {
  const r = await call('short__hang', {});
  const [p] = await waitListed(1);
  assert.equal((await cli(srv, 'approve', p.id)).code, 0);
  const done = await ended(r.result.taskId);
  assert.equal(done.status, 'completed');
  assert.equal(done.result.structuredContent.error, 'upstream_timeout', JSON.stringify(done.result));
  await until(() => existsSync(join(dir, 'short-calls')) &&
    readFileSync(join(dir, 'short-calls'), 'utf8').includes('cancelled '), 'notifications/cancelled upstream');
});

test('per-root instances: a task holds its instance while it starts; a second root over max gets busy, no restart storm', async () => {
  const setup = (d) => {
    for (const w of ['a', 'b']) mkdirSync(join(d, 'work', w), { recursive: true });
    return 'upstreams:\n  graph:\n' +
      `    command: ${JSON.stringify(process.execPath)}\n` +
      `    args: ${JSON.stringify([FAKE, '--where', '--starts', join(d, 'starts')])}\n` +
      `    tools: {include: [where], guard: {where: approve}}\n    instances: {by: cwd, roots: [${JSON.stringify(join(d, 'work'))}], max: 1}\n`;
  };
  await withGateway(setup, async (s, d) => {
    const work = join(d, 'work');
    const a = await call('graph__where', { cwd: join(work, 'a'), ms: 1500 });
    const b = await call('graph__where', { cwd: join(work, 'b') });
    const list = await waitListed(2, s);
    for (const p of list) assert.equal((await cli(s, 'approve', p.id)).code, 0);
    const [ta, tb] = [await ended(a.result.taskId), await ended(b.result.taskId)];
    const results = [ta, tb].map((t) => t.result.structuredContent?.error ?? JSON.parse(t.result.content[0].text).cwd);
    assert.ok(results.includes('busy'), JSON.stringify(results));
    assert.ok(results.some((x) => x === join(work, 'a') || x === join(work, 'b')), JSON.stringify(results));
    const starts = readFileSync(join(d, 'starts'), 'utf8').trim().split('\n').length;
    assert.ok(starts <= 3, `${starts} starts: the discovery process and one instance`);
  });
});

test('an approved task waiting for a slot (max_in_flight 1) gets the next one freed, before the calls queued there', async () => {
  const setup = (d) => 'upstreams:\n  one:\n    max_in_flight: 1\n' +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--calls', join(d, 'calls')])}\n` +
    '    tools: {include: [echo, slow], guard: {echo: approve}}\n';
  await withGateway(setup, async (s, d) => {
    const lines = () => linesOf(join(d, 'calls'));
    const t = await call('one__echo', { message: 'approved' });
    const [p] = await waitListed(1, s);
    const first = call('one__slow', { ms: 1500 }, { ext: false }); // holds the one slot
    await until(() => lines().includes('slow'), 'the first slow call at the upstream');
    assert.equal((await cli(s, 'approve', p.id)).code, 0); // the task now waits for the slot
    await new Promise((r) => setTimeout(r, 200));
    const queued = call('one__slow', { ms: 1 }, { ext: false }); // queued behind it, after the task
    const done = await ended(t.result.taskId);
    assert.equal(done.result.content[0].text, 'Echo: approved', JSON.stringify(done));
    await first;
    await queued;
    assert.deepEqual(lines(), ['slow', 'echo', 'slow'], 'the task went before the call queued after it');
  });
});

test('per-root instances: tasks respect max_in_flight while their instance starts', async () => {
  // each process takes a second to start, so both tasks are approved while the instance starts
  const setup = (d) => {
    mkdirSync(join(d, 'work', 'a'), { recursive: true });
    return 'upstreams:\n  graph:\n    max_in_flight: 1\n    connect_timeout: 20\n' +
      '    command: /bin/sh\n' +
      `    args: ${JSON.stringify(['-c', 'sleep 1; exec "$0" "$@"', process.execPath, FAKE, '--where'])}\n` +
      `    tools: {include: [where], guard: {where: approve}}\n    instances: {by: cwd, roots: [${JSON.stringify(join(d, 'work'))}], max: 2}\n`;
  };
  await withGateway(setup, async (s, d) => {
    const work = join(d, 'work');
    const ids = [];
    for (let i = 0; i < 2; i++) ids.push((await call('graph__where', { cwd: join(work, 'a'), ms: 1000 })).result.taskId);
    for (const p of await waitListed(2, s)) assert.equal((await cli(s, 'approve', p.id)).code, 0);
    const endedAt = {};
    await until(async () => {
      for (const id of ids) {
        if (endedAt[id]) continue;
        const t = (await get(id)).result;
        if (t.status !== 'working') endedAt[id] = { t: Date.now(), task: t };
      }
      return Object.keys(endedAt).length === 2;
    }, 'both tasks to end', 30000);
    for (const id of ids) assert.equal(JSON.parse(endedAt[id].task.result.content[0].text).cwd, join(work, 'a'));
    const gap = Math.abs(endedAt[ids[0]].t - endedAt[ids[1]].t);
    assert.ok(gap >= 700, `one at a time: the second ended ${gap} ms after the first`);
  });
});

test('per-root instances: a task woken for a slot goes where it was routed, never routed again (a path swapped meanwhile cannot stop the instance it waits on)', async () => {
  const setup = (d) => {
    for (const w of ['a/x', 'b']) mkdirSync(join(d, 'work', w), { recursive: true });
    return 'upstreams:\n  graph:\n    max_in_flight: 1\n' +
      `    command: ${JSON.stringify(process.execPath)}\n` +
      `    args: ${JSON.stringify([FAKE, '--where', '--calls', join(d, 'calls')])}\n` +
      `    tools: {include: [where, slow], guard: {where: approve}}\n    instances: {by: cwd, roots: [${JSON.stringify(join(d, 'work'))}], max: 1}\n`;
  };
  await withGateway(setup, async (s, d) => {
    const work = join(d, 'work');
    const lines = () => linesOf(join(d, 'calls'));
    const t = await call('graph__where', { cwd: join(work, 'a/x') });
    const [p] = await waitListed(1, s);
    const holder = call('graph__slow', { cwd: join(work, 'a'), ms: 1500 }, { ext: false }); // the one slot of a
    await until(() => lines().includes('slow'), 'the slow call at instance a');
    assert.equal((await cli(s, 'approve', p.id)).code, 0); // the task waits on instance a
    await new Promise((r) => setTimeout(r, 200));
    rmSync(join(work, 'a/x'), { recursive: true });
    symlinkSync(join(work, 'b'), join(work, 'a/x')); // routed again, it would go to b, evicting a
    await holder;
    const done = await ended(t.result.taskId);
    assert.equal(JSON.parse(done.result.content[0].text).cwd, join(work, 'a'), JSON.stringify(done.result));
  });
});

test('without the extension the call is held as before: it waits on its connection until decided', async () => {
  let settled = false;
  const held = call('fake__echo', { message: 'held' }, { ext: false }).then((r) => { settled = true; return r; });
  const [p] = await waitListed(1);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(settled, false, 'still held while the operator has not decided');
  assert.equal((await cli(srv, 'approve', p.id)).code, 0);
  const r = await held;
  assert.equal(r.result.resultType, 'complete');
  assert.equal(r.result.content[0].text, 'Echo: held');
});

test('SIGTERM: a task waiting for the operator is denied ("shutdown" in the audit); a running one finishes within the drain; clean exit', async () => {
  const running = await created('fake__slow', { ms: 1500 });
  assert.equal((await cli(srv, 'approve', running.approval.id)).code, 0);
  await until(() => upstreamLines().filter((l) => l === 'slow').length >= 2, 'the slow call at the upstream');
  await created('fake__echo', { message: 'at the stop' });
  const s = srv;
  srv = null;
  assert.equal(await s.stop(), 0);
  const line = audit().find((l) => l.event === 'approval' && l.decided_by === 'shutdown');
  assert.equal(line?.status, 'denied', JSON.stringify(audit().filter((l) => l.event === 'approval')));
  const calls = audit().filter((l) => l.event !== 'approval' && l.tool === 'fake__slow');
  assert.equal(calls.at(-1)?.status, 'ok', `the running call finished in the drain: ${JSON.stringify(calls)}`);
});
