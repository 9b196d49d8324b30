// hermes_task as an MCP task (the tasks extension of MCP 2026-07-28, io.modelcontextprotocol/tasks),
// against the real binary and the fake agent: a client that declares the extension gets a
// CreateTaskResult, follows it with tasks/get to the same result hermes_result gives, cancels a
// long one (the agent's run is really stopped), and finds its task again after the server was
// killed and restarted. Without the extension the same call is answered as before; the task
// methods refuse a client without it, and tasks/result and tasks/list (the 2025 draft) are gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { startHermes, restartHermes, startFake, agentEnv, until, modernMeta, modernHeaders, tokensFile } from '../../lib/lib.mjs';

const EXT = 'io.modelcontextprotocol/tasks';
const meta = (caps) => modernMeta(caps, 'mcptasks-it');

let nextId = 1;
// One 2026-07-28 request with the headers a client of that revision sends.
async function rpc(srv, method, params, { caps = { extensions: { [EXT]: {} } }, name } = {}) {
  const n = name ?? params.name ?? params.taskId;
  const headers = { ...srv.auth, ...modernHeaders(method, n || undefined) };
  const id = nextId++;
  const r = await fetch(srv.url, { method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(caps) } }) });
  const json = await r.json();
  assert.equal(json.id, id);
  return { status: r.status, json };
}

// Opens subscriptions/listen for taskIds; returns { frames, next(pred), close() }: frames are
// the JSON-RPC messages of the SSE response as they arrive.
async function listen(srv, taskIds, { caps = { extensions: { [EXT]: {} } } } = {}) {
  const ac = new AbortController();
  const id = nextId++;
  const r = await fetch(srv.url, { method: 'POST', signal: ac.signal,
    headers: { ...srv.auth, ...modernHeaders('subscriptions/listen') },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen',
      params: { notifications: { taskIds, toolsListChanged: true }, _meta: meta(caps) } }) });
  const frames = [];
  if (!(r.headers.get('content-type') || '').startsWith('text/event-stream'))
    return { id, status: r.status, json: await r.json(), frames, close() {} };
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let k;
        while ((k = buf.indexOf('\n\n')) >= 0) {
          const ev = buf.slice(0, k);
          buf = buf.slice(k + 2);
          const data = ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
          if (data) frames.push(JSON.parse(data));
        }
      }
    } catch { /* aborted */ }
  })();
  return { id, status: r.status, frames,
    next: (pred, what) => until(() => frames.find(pred), what, 10000),
    close: () => ac.abort() };
}

const call = (srv, args, opts) => rpc(srv, 'tools/call', { name: 'hermes_task', arguments: args }, opts);
const get = async (srv, taskId) => (await rpc(srv, 'tasks/get', { taskId })).json;

async function terminal(srv, taskId, ms = 10000) {
  return until(async () => {
    const t = (await get(srv, taskId)).result;
    return ['completed', 'failed', 'cancelled'].includes(t.status) && t;
  }, `task ${taskId} to end`, ms);
}

test('a client of the tasks extension gets a task; tasks/get follows it to the result hermes_result gives', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' });
  try {
    const created = (await call(srv, { task: 'what is 6 * 7 [delay=300]', mode: 'sync', id: 'mt-1' })).json.result;
    assert.equal(created.resultType, 'task');
    assert.equal(created.taskId, 'mt-1');
    assert.equal(created.status, 'working');
    assert.equal(typeof created.createdAt, 'string');
    assert.equal(typeof created.pollIntervalMs, 'number');
    assert.equal(created.requestState, undefined);
    // Durable before the answer: asked at once, it is there.
    const now = (await get(srv, 'mt-1')).result;
    assert.equal(now.resultType, 'complete');
    assert.ok(['working', 'completed'].includes(now.status), now.status);
    assert.equal(now.createdAt, created.createdAt);
    const done = await terminal(srv, 'mt-1');
    assert.equal(done.status, 'completed');
    assert.equal(done.result.isError, false);
    assert.match(done.result.structuredContent.summary, /42/);
    // It ran as an agent run (POST /v1/runs), not a chat.
    assert.ok(fake.received().some((r) => r.method === 'POST' && r.path.endsWith('/v1/runs')));
    // The same record hermes_result returns.
    const stored = (await rpc(srv, 'tools/call', { name: 'hermes_result', arguments: { id: 'mt-1' } })).json.result;
    assert.deepEqual(done.result.structuredContent, stored.structuredContent);

    // A retry of the same request is the same task, as it is now.
    const again = (await call(srv, { task: 'what is 6 * 7 [delay=300]', mode: 'sync', id: 'mt-1' })).json.result;
    assert.equal(again.resultType, 'task');
    assert.equal(again.taskId, 'mt-1');
    assert.equal(again.status, 'completed');
    assert.equal(again.createdAt, created.createdAt);
    // Without the extension the call is answered as before (sync: the result itself).
    const plain = (await call(srv, { task: 'what is 2 + 2', mode: 'sync', id: 'mt-plain' }, { caps: {} })).json.result;
    assert.equal(plain.resultType, 'complete');
    assert.equal(plain.structuredContent.status, 'completed');
    // ... and it is no MCP task: not found, like an id that never was.
    const notTask = (await get(srv, 'mt-plain'));
    assert.equal(notTask.error.code, -32602);
    assert.equal((await get(srv, 'no-such-task')).error.code, -32602);
    // The task methods need the extension; the 2025 draft's are gone.
    const noExt = await rpc(srv, 'tasks/get', { taskId: 'mt-1' }, { caps: {} });
    assert.equal(noExt.status, 400);
    assert.equal(noExt.json.error.code, -32021);
    for (const m of ['tasks/result', 'tasks/list']) {
      const gone = await rpc(srv, m, { taskId: 'mt-1' });
      assert.equal(gone.status, 404, m);
      assert.equal(gone.json.error.code, -32601, m);
    }
    // tasks/update: nothing to answer for a Hermes run; acknowledged.
    const upd = await rpc(srv, 'tasks/update', { taskId: 'mt-1', inputResponses: {} });
    assert.deepEqual(Object.keys(upd.json.result).filter((k) => k !== '_meta'), ['resultType']);
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('tasks/cancel stops the agent run; the task ends cancelled; cancelling again is the same ack', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' });
  try {
    const created = (await call(srv, { task: 'a long job [delay=60000]', mode: 'async', id: 'mt-cancel' })).json.result;
    assert.equal(created.resultType, 'task');
    const ack = (await rpc(srv, 'tasks/cancel', { taskId: 'mt-cancel' })).json.result;
    assert.equal(ack.resultType, 'complete');
    const stop = fake.received().find((r) => r.method === 'POST' && /\/v1\/runs\/[^/]+\/stop$/.test(r.path));
    assert.ok(stop, 'the agent was asked to stop the run');
    const end = await terminal(srv, 'mt-cancel');
    assert.equal(end.status, 'cancelled');
    assert.equal(end.result, undefined);
    const again = (await rpc(srv, 'tasks/cancel', { taskId: 'mt-cancel' })).json.result;
    assert.equal(again.resultType, 'complete');
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('tasks/cancel while the run is being submitted: the run the agent starts anyway is stopped once its id is known', async () => {
  const fake = await startFake();
  // A proxy that holds the agent's answer to POST /v1/runs, so the cancel comes while the
  // submission is on the wire.
  const proxy = http.createServer((req, res) => {
    const hold = req.method === 'POST' && req.url.endsWith('/v1/runs') ? 800 : 0;
    const up = http.request({ host: '127.0.0.1', port: fake.port, path: req.url, method: req.method, headers: req.headers }, (ur) => {
      setTimeout(() => { res.writeHead(ur.statusCode, ur.headers); ur.pipe(res); }, hold);
    });
    req.pipe(up);
  });
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv({ port: proxy.address().port, key: fake.key }), HERMES_POLL_MS: '50' });
  try {
    const creating = call(srv, { task: 'a long job [delay=60000]', mode: 'async', id: 'mt-early' });
    await until(() => fake.received().some((r) => r.method === 'POST' && r.path.endsWith('/v1/runs')), 'the submission to reach the agent');
    const ack = (await rpc(srv, 'tasks/cancel', { taskId: 'mt-early' })).json.result;
    assert.equal(ack.resultType, 'complete');
    const created = (await creating).json.result;
    assert.equal(created.taskId, 'mt-early');
    await until(() => fake.received().some((r) => r.method === 'POST' && /\/v1\/runs\/[^/]+\/stop$/.test(r.path)),
      'the agent to be asked to stop the run it started');
    const end = await terminal(srv, 'mt-early');
    assert.equal(end.status, 'cancelled');
  } finally {
    await srv.stop();
    await fake.stop();
    proxy.close();
  }
});

test('a task survives a kill -9 of the server: after the restart tasks/get finds it and its result', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' });
  let srv2;
  try {
    const created = (await call(srv, { task: 'what is 6 * 7 [delay=1500]', mode: 'sync', id: 'mt-restart' })).json.result;
    assert.equal(created.resultType, 'task');
    srv.proc.kill('SIGKILL');
    await new Promise((res) => srv.proc.on('close', res));
    srv2 = await restartHermes(srv);
    const done = await terminal(srv2, 'mt-restart');
    assert.equal(done.status, 'completed');
    assert.match(done.result.structuredContent.summary, /42/);
    assert.equal(done.createdAt, created.createdAt);
  } finally {
    await (srv2 ?? srv).stop();
    await fake.stop();
  }
});

test('notifications/tasks: a stream that watches a task hears of its end, also when the run ends after a restart', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' });
  let srv2;
  try {
    // Watching needs the extension.
    const refused = await listen(srv, ['x'], { caps: {} });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.error.code, -32021);

    const created = (await call(srv, { task: 'what is 6 * 7 [delay=600]', mode: 'sync', id: 'mt-watch' })).json.result;
    const l = await listen(srv, [created.taskId, 'mt-other']);
    assert.equal(l.status, 200);
    const ack = await l.next(() => true, 'the first frame');
    assert.equal(ack.method, 'notifications/subscriptions/acknowledged');
    assert.equal(ack.params._meta['io.modelcontextprotocol/subscriptionId'], l.id);
    // Only what will be sent: task ids, not tool-list changes (the list never changes).
    assert.deepEqual(ack.params.notifications.taskIds.sort(), ['mt-other', 'mt-watch']);
    assert.equal(ack.params.notifications.toolsListChanged, undefined);
    const note = await l.next((f) => f.method === 'notifications/tasks', 'notifications/tasks');
    assert.equal(note.params.taskId, 'mt-watch');
    assert.equal(note.params.status, 'completed');
    assert.equal(note.params._meta['io.modelcontextprotocol/subscriptionId'], l.id);
    assert.match(note.params.result.structuredContent.summary, /42/);
    // It is what tasks/get says.
    const got = (await get(srv, 'mt-watch')).result;
    assert.deepEqual(note.params.result, got.result);
    l.close();

    // Across a restart: the run ends while nobody runs the bridge; a new stream hears of it
    // when the restarted bridge's follow writes the result.
    const slow = (await call(srv, { task: 'what is 6 * 7 [delay=2000]', mode: 'sync', id: 'mt-watch-2' })).json.result;
    srv.proc.kill('SIGKILL');
    await new Promise((res) => srv.proc.on('close', res));
    srv2 = await restartHermes(srv, { env: { ...process.env } });
    const l2 = await listen(srv2, [slow.taskId]);
    const note2 = await l2.next((f) => f.method === 'notifications/tasks', 'notifications/tasks after the restart');
    assert.equal(note2.params.status, 'completed');
    l2.close();
  } finally {
    await (srv2 ?? srv).stop();
    await fake.stop();
  }
});

test("a task's owner is its token, however the Authorization header writes the scheme", async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' });
  try {
    const created = (await call(srv, { task: 'what is 6 * 7', mode: 'sync', id: 'mt-mine' })).json.result;
    await terminal(srv, created.taskId);
    // The same server, the same token written differently: still the owner.
    const same = { ...srv, auth: { Authorization: `bearer  ${srv.token}` } };
    assert.equal((await get(same, 'mt-mine')).result.status, 'completed');
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('SIGTERM with a subscription open: the stream ends with a complete result at once, the drain does not wait for it', async () => {
  const srv = await startHermes({ MCP_DRAIN_GRACE_S: '20' });
  const l = await listen(srv, ['t-none']);
  await l.next((f) => f.method === 'notifications/subscriptions/acknowledged', 'the acknowledgement');
  const t0 = Date.now();
  await srv.stop();
  assert.ok(Date.now() - t0 < 5000, `stopped in ${Date.now() - t0} ms`);
  const end = await l.next((f) => f.id === l.id, 'the closing result');
  assert.equal(end.result.resultType, 'complete');
  assert.equal(end.result._meta['io.modelcontextprotocol/subscriptionId'], l.id);
});

test("tasks are their principal's: another principal gets 'not found' from the task methods and the hermes_* tools", async () => {
  const fake = await startFake();
  const other = randomBytes(32).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'hm-mt-'));
  const tokens = tokensFile(dir, { other: [other, 'hermes:read, hermes:task'] });
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', TOKENS_FILE: tokens });
  const them = { ...srv, auth: { Authorization: `Bearer ${other}` } };
  try {
    const created = (await call(srv, { task: 'what is 6 * 7', mode: 'async', id: 'mt-owner' })).json.result;
    await terminal(srv, created.taskId);
    const theirs = await rpc(them, 'tasks/get', { taskId: 'mt-owner' });
    assert.equal(theirs.json.error.code, -32602);
    assert.equal(theirs.json.error.message, (await get(them, 'no-such-task')).error.message, 'indistinguishable from a missing task');
    assert.equal((await rpc(them, 'tasks/cancel', { taskId: 'mt-owner' })).json.error.code, -32602);
    const res = (await rpc(them, 'tools/call', { name: 'hermes_result', arguments: { id: 'mt-owner' } })).json.result;
    assert.equal(res.structuredContent.error, 'not_found');
    const files = (await rpc(them, 'tools/call', { name: 'hermes_files', arguments: { id: 'mt-owner' } })).json.result;
    assert.equal(files.structuredContent.error, 'not_found');
    const cancel = (await rpc(them, 'tools/call', { name: 'hermes_cancel', arguments: { id: 'mt-owner' } })).json.result;
    assert.equal(cancel.structuredContent.error, 'not_found', JSON.stringify(cancel));
    const mine = (await rpc(srv, 'tools/call', { name: 'hermes_result', arguments: { id: 'mt-owner' } })).json.result;
    const runId = mine.structuredContent.run_id;
    assert.ok(runId, JSON.stringify(mine));
    const status = (await rpc(them, 'tools/call', { name: 'hermes_status', arguments: { run_id: runId } })).json.result;
    assert.equal(status.structuredContent.error, 'not_found', JSON.stringify(status));
    // Nor can they take the id over with a task of their own.
    const reuse = (await call(them, { task: 'what is 6 * 7', mode: 'async', id: 'mt-owner' })).json.result;
    assert.equal(reuse.structuredContent.error, 'duplicate_id');
    // The owner still has it.
    assert.equal((await get(srv, 'mt-owner')).result.status, 'completed');
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test("the owner token and a hermes:admin principal reach another principal's task: tasks/get, tasks/cancel", async () => {
  const fake = await startFake();
  const tok = { alice: randomBytes(32).toString('hex'), admin: randomBytes(32).toString('hex') };
  const dir = mkdtempSync(join(tmpdir(), 'hm-mt-'));
  const tokens = tokensFile(dir, { alice: [tok.alice, 'hermes:read, hermes:task'],
    auditor: [tok.admin, 'hermes:read, hermes:task, hermes:admin'] });
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', TOKENS_FILE: tokens });
  const as = (t) => ({ ...srv, auth: { Authorization: `Bearer ${t}` } });
  const [alice, admin] = [as(tok.alice), as(tok.admin)];
  try {
    const created = (await call(alice, { task: 'a long job [delay=60000]', mode: 'async', id: 'mt-alice' })).json.result;
    assert.equal(created?.resultType, 'task', JSON.stringify(created));
    for (const who of [srv, admin]) {
      const got = await get(who, 'mt-alice');
      assert.equal(got.result?.taskId, 'mt-alice', JSON.stringify(got));
      assert.equal(got.result.status, 'working');
    }
    const ack = (await rpc(admin, 'tasks/cancel', { taskId: 'mt-alice' })).json;
    assert.ok(ack.result && !ack.error, JSON.stringify(ack));
    await until(() => fake.received().some((q) => q.path.endsWith('/stop')), 'the agent\'s run to be stopped');
    assert.equal((await terminal(alice, 'mt-alice')).status, 'cancelled', 'hers, cancelled by the administrator');
    // The owner token cancels too (an ack for a task that already ended).
    assert.ok((await rpc(srv, 'tasks/cancel', { taskId: 'mt-alice' })).json.result);
  } finally {
    await srv.stop();
    await fake.stop();
  }
});
