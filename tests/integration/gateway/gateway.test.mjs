// The gateway with a real upstream: @modelcontextprotocol/server-everything over stdio (installed
// by scripts/node-tools.sh everything), behind build/hermes-mcp, driven by the official SDK
// client. The upstream runs under a recording shim (gwtee.mjs) so the tests can see what the
// gateway sent it: remapped ids, the forwarded cancel, progress tokens.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHermes, until, jsonLines, connectClient } from '../../lib/lib.mjs';
import { events } from '../../lib/events.mjs';

const EVERYTHING = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything'], { encoding: 'utf8' })
  .stdout.trim().split('\n')[0];
const TEE = join(ROOT, 'tests/integration/gateway/gwtee.mjs');

let srv, dir, logs, served;

// One upstream per name, each its own child under the shim with its own log.
function upstream(name, rules) {
  const log = join(dir, `${name}.log`);
  logs[name] = log;
  return `  ${name}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: [${JSON.stringify(TEE)}, ${JSON.stringify(log)}, ${JSON.stringify(EVERYTHING)}, "stdio"]\n` +
    rules;
}

const sent = (name) => jsonLines(existsSync(logs[name]) ? readFileSync(logs[name], 'utf8') : '');

const connect = () => connectClient(srv, { name: 'gw-it', capabilities: {} });

before(async () => {
  assert.ok(existsSync(EVERYTHING), `server-everything installed: ${EVERYTHING}`);
  dir = mkdtempSync(join(tmpdir(), 'hm-gw-it-'));
  logs = {};
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams:\n' +
    upstream('everything', '    max_in_flight: 1\n    tools:\n' +
      '      include: [echo, get-sum, trigger-long-running-operation]\n' +
      '      exclude: [get-env]\n') +
    upstream('plain', '    prefix: p_\n    tools: {exclude: ["*-*"]}\n') +
    upstream('denied', '') +
    upstream('slow', '    prefix: slow_\n    timeout: 1\n' +
      '    tools: {include: [trigger-long-running-operation]}\n') +
    upstream('victim', '    tools: {include: [echo, trigger-long-running-operation]}\n') +
    'bridge_tools: {exclude: [hermes_reset]}\n');
  chmodSync(gw, 0o600);
  served = Object.keys(logs);
  // Sessions: a client's notifications/cancelled is attributed to its call (bridge.test.mjs).
  srv = await startHermes({ GATEWAY_FILE: gw, MCP_SESSIONS: '1' });
});

after(async () => {
  if (srv && !(srv instanceof Error)) {
    const pids = served.map((n) => logs[n]).flatMap((l) =>
      existsSync(`${l}.pids`) ? readFileSync(`${l}.pids`, 'utf8').trim().split(' ').map(Number) : []);
    assert.equal(await srv.stop(), 0, 'SIGTERM exits 0');
    assert.equal(pids.length, 10, 'five shims and five servers started');
    // Children are killed with their process group: the shim and the server it started.
    for (const pid of pids) {
      await until(() => { try { process.kill(pid, 0); return false; } catch { return true; } },
        `process ${pid} gone after the gateway stopped`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

test('tools/list is exactly the configured surface: included present, excluded and denied absent', async () => {
  const client = await connect();
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      'everything__echo', 'everything__get-sum', 'everything__trigger-long-running-operation',
      'hermes_cancel', 'hermes_files', 'hermes_result', 'hermes_status', 'hermes_task',
      'list_agents', 'p_echo', 'slow_trigger-long-running-operation', 'victim__echo',
      'victim__trigger-long-running-operation', 'whoami']);
    const echo = tools.find((t) => t.name === 'everything__echo');
    assert.equal(echo.inputSchema.type, 'object');
    assert.ok(echo.inputSchema.properties.message, 'the upstream schema is passed on');
    assert.match(echo.description, /echo/i);
    assert.match(srv.proc.stderrText, /upstream everything stderr: Starting default \(STDIO\) server/,
      'the child\'s stderr goes to our log');
    assert.match(srv.proc.stderrText, /upstream denied: no tools\.include or tools\.exclude: none of its \d+ tools is exposed \(default deny\)/);
  } finally { await client.close(); }
});

test('calls go through; an excluded tool is refused as unknown', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const r = await client.callTool({ name: 'everything__echo', arguments: { message: 'hi there' } });
    assert.deepEqual(r.content, [{ type: 'text', text: 'Echo: hi there' }]);
    const p = await client.callTool({ name: 'p_echo', arguments: { message: 'plain' } });
    assert.equal(p.content[0].text, 'Echo: plain');
    const s = await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 40 } });
    assert.match(s.content[0].text, /42/);
    for (const name of ['everything__get-env', 'denied__echo', 'hermes_reset', 'p_get-sum']) {
      await assert.rejects(client.callTool({ name, arguments: {} }), /Unknown tool/, name);
    }
    // The upstream saw our ids, not the client's, and the original tool name.
    const calls = sent('everything').filter((m) => m.method === 'tools/call');
    assert.ok(calls.some((m) => m.params.name === 'echo' && m.params.arguments.message === 'hi there'));
    assert.ok(!sent('everything').some((m) => m.params?.name === 'get-env'), 'excluded never forwarded');
  } finally { await client.close(); }
});

test('progress from the long-running tool reaches the caller under its own token', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const seen = [];
    const r = await client.callTool({ name: 'everything__trigger-long-running-operation',
      arguments: { duration: 1, steps: 3 } }, undefined, { onprogress: (p) => seen.push(p) });
    assert.match(r.content[0].text, /Long running operation completed/);
    assert.deepEqual(seen.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]]);
    const call = sent('everything').find((m) => m.method === 'tools/call' && m.params.arguments.steps === 3);
    assert.equal(call.params._meta.progressToken, call.id, 'upstream token is our wire id');
  } finally { await client.close(); }
});

test('a cancelled call is cancelled upstream with the remapped id; the slot is freed', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const ctl = new AbortController();
    let progressed = 0;
    const long = client.callTool({ name: 'everything__trigger-long-running-operation',
      arguments: { duration: 60, steps: 60 } }, undefined,
    { signal: ctl.signal, onprogress: () => { progressed++; } });
    await until(() => progressed >= 1, 'first progress', 10000);
    ctl.abort('changed my mind');
    await assert.rejects(long);
    const call = sent('everything').find((m) => m.method === 'tools/call' && m.params.arguments.steps === 60);
    await until(() => sent('everything').some((m) => m.method === 'notifications/cancelled' &&
      m.params.requestId === call.id), 'notifications/cancelled with the remapped id');
    // max_in_flight is 1: had the cancelled call kept its slot, this call would wait forever.
    const r = await client.callTool({ name: 'everything__echo', arguments: { message: 'after' } });
    assert.equal(r.content[0].text, 'Echo: after');
  } finally { await client.close(); }
});

test('two clients at once share the one child; every answer goes to its caller', async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  try {
    await Promise.all([a.listTools(), b.listTools()]);
    const jobs = [];
    for (let i = 0; i < 20; i++) {
      for (const [c, who] of [[a, 'a'], [b, 'b']]) {
        jobs.push(c.callTool({ name: 'everything__echo', arguments: { message: `${who}-${i}` } })
          .then((r) => assert.equal(r.content[0].text, `Echo: ${who}-${i}`)));
      }
    }
    await Promise.all(jobs);
    // With max_in_flight 1 these also went through the wait queue, in order.
    const ids = sent('everything').filter((m) => m.method === 'tools/call').map((m) => m.id);
    assert.equal(new Set(ids).size, ids.length, 'ids on the wire are unique');
    const pids = readFileSync(`${logs.everything}.pids`, 'utf8');
    assert.equal(pids.split(' ').length, 2, 'one shim, one server: a single child for all');
  } finally { await Promise.all([a.close(), b.close()]); }
});

test('a call past the upstream timeout gets upstream_timeout and is cancelled upstream', async () => {
  const client = await connect();
  try {
    await client.listTools();
    const t0 = Date.now();
    const r = await client.callTool({ name: 'slow_trigger-long-running-operation',
      arguments: { duration: 5, steps: 1 } });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.error, 'upstream_timeout');
    assert.match(r.structuredContent.message, /upstream slow did not answer trigger-long-running-operation within 1 s/);
    assert.ok(Date.now() - t0 < 4000, 'answered at the deadline, not when the upstream finished');
    const call = sent('slow').find((m) => m.method === 'tools/call');
    await until(() => sent('slow').some((m) => m.method === 'notifications/cancelled' &&
      m.params.requestId === call.id), 'the upstream told to stop');
  } finally { await client.close(); }
});

test('a child that exits answers its calls in flight upstream_unavailable, the others keep serving, it comes back', async () => {
  const client = await connect();
  try {
    await client.listTools();
    let progressed = 0;
    const long = client.callTool({ name: 'victim__trigger-long-running-operation',
      arguments: { duration: 60, steps: 60 } }, undefined, { onprogress: () => { progressed++; } });
    await until(() => progressed >= 1, 'the call running upstream', 10000);
    const [, server] = readFileSync(`${logs.victim}.pids`, 'utf8').trim().split(' ').map(Number);
    process.kill(server, 'SIGKILL');
    const r = await long;
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.error, 'upstream_unavailable');
    assert.match(r.structuredContent.message, /upstream victim is not available \(exited with status \d+\)/);
    const other = await client.callTool({ name: 'everything__echo', arguments: { message: 'still here' } });
    assert.equal(other.content[0].text, 'Echo: still here');
    assert.match(events(srv, 'upstream_down', { upstream: 'victim' })[0]?.line ?? '', /exited with status/);
    // Restarted (backoff from 0.5 s) and re-initialized: the same frozen tool answers again.
    let again;
    await until(async () => {
      again = await client.callTool({ name: 'victim__echo', arguments: { message: 'x' } });
      return !again.isError;
    }, 'victim back', 10000);
    assert.equal(again.content[0].text, 'Echo: x');
    await until(() => readFileSync(`${logs.victim}.pids`, 'utf8').trim().split(' ')[1] !== String(server),
      'a new server process');
  } finally { await client.close(); }
});

// A surface clients would refuse stops the start, naming what and why.
async function refusedStart(yaml) {
  const gw = join(dir, 'refused.yaml');
  writeFileSync(gw, yaml);
  chmodSync(gw, 0o600);
  const err = await startHermes({ GATEWAY_FILE: gw }).then(async (s) => { await s.stop(); return null; },
    (e) => e.message);
  assert.ok(err, 'serve did not start');
  return err;
}

test('colliding exposed names and names clients would refuse stop the start', async () => {
  const both = await refusedStart('upstreams:\n' +
    upstream('one', '    prefix: ""\n    tools: {include: [echo]}\n') +
    upstream('two', '    prefix: ""\n    tools: {include: [echo]}\n'));
  assert.match(both, /exited with 1/);
  assert.match(both, /upstream two, tool 'echo' would be exposed as 'echo', which is taken by upstream one, tool 'echo'/);
  const long = await refusedStart('upstreams:\n' +
    upstream('three', `    prefix: "${'p'.repeat(62)}"\n    tools: {include: [echo]}\n`));
  assert.match(long, new RegExp(`upstream three, tool 'echo': the exposed name '${'p'.repeat(62)}echo' is not allowed`));
});
