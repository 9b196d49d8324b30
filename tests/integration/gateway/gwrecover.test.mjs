// Gateway recovery and readiness with a misbehaving upstream (tests/fakes/fake-upstream.mjs):
// a child that crashes mid-call or writes garbage answers its call upstream_unavailable and is
// restarted (backoff from 0.5 s) and re-initialized; a child stuck before initialize is killed
// at connect_timeout and retried; GET /healthz is 200 throughout, GET /readyz is 200 only when
// every required upstream is ready, and both name each upstream's state. No auth on either.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, readdirSync, readlinkSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { spawn } from 'node:child_process';
import { HERMES, startHermes, until, upstreamsFile, fakeUpstream, connectClient, probeJson } from '../../lib/lib.mjs';
import { events, waitEvent } from '../../lib/events.mjs';

let dir;

function gatewayFile(name, upstreams) {
  return upstreamsFile(dir, name, Object.entries(upstreams).map(([n, { args, extra = '' }]) =>
    fakeUpstream(n, ['--starts', join(dir, `${n}.starts`), ...args], `    tools: {include: ["*"]}\n${extra}`)));
}

const starts = (n) => (existsSync(join(dir, `${n}.starts`))
  ? readFileSync(join(dir, `${n}.starts`), 'utf8').trim().split('\n').length : 0);

const probe = probeJson;

const connect = (srv) => connectClient(srv, { name: 'gw-rec', listTools: true });

// Calls echo until the upstream answers again (it is restarting meanwhile).
async function untilEchoes(client, name) {
  let last;
  await until(async () => {
    last = await client.callTool({ name, arguments: { message: 'back' } });
    return !last.isError;
  }, `${name} answering again`, 10000);
  assert.equal(last.content[0].text, 'Echo: back');
}

let srv;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwrec-'));
  srv = await startHermes({ GATEWAY_FILE: gatewayFile('a', {
    fake: { args: ['--pages', '--notify'], extra: '    timeout: 2\n' },
    stuck: { args: ['--hang-init'], extra: '    connect_timeout: 1\n    required: false\n' },
  }) });
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('tools/list is followed through nextCursor: every page of the upstream is exposed', async () => {
  const client = await connect(srv);
  try {
    const names = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('fake__'));
    assert.deepEqual(names.sort(), ['fake__crash', 'fake__echo', 'fake__garbage', 'fake__hang',
      'fake__huge', 'fake__hugetail', 'fake__notify', 'fake__slow']);
  } finally { await client.close(); }
});

test("an upstream's list_changed and log messages reach our log (capped, one line), never a client; we announce no listChanged", async () => {
  const client = new Client({ name: 'gw-rec-notify', version: '1.0.0' });
  const heard = [];
  client.fallbackNotificationHandler = async (n) => { heard.push(n.method); };
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
  try {
    assert.ok(!client.getServerCapabilities().tools?.listChanged, 'discovery is frozen: no listChanged announced');
    const before = (await client.listTools()).tools.map((t) => t.name);
    const r = await client.callTool({ name: 'fake__notify', arguments: {} });
    assert.equal(r.content[0].text, 'notified');
    await waitEvent(srv, 'upstream_notification_ignored', { upstream: 'fake', method: 'notifications/tools/list_changed' });
    const line = await until(() => srv.proc.stderrText.split('\n').find((l) => l.includes('upstream fake log (')), 'the log message');
    assert.ok(line.length < 700, `capped: ${line.length} characters`);
    assert.ok(line.includes('z'.repeat(400)) && !line.includes('END'), 'its data cut at 500 bytes');
    assert.ok(!srv.proc.stderrText.split('\n').some((l) => l.startsWith('INJECTED')), "the upstream's level cannot start a log line of its own");
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), before, 'the surface unchanged');
    assert.deepEqual(heard.filter((m) => /list_changed|notifications\/message/.test(m)), [], 'nothing relayed to the client');
  } finally { await client.close(); }
});

test('healthz and readyz without auth: ready when every required upstream is; states named', async () => {
  const h = await probe(srv, '/healthz');
  assert.equal(h.status, 200);
  assert.equal(h.body.status, 'ok');
  assert.equal(h.body.upstreams.fake.state, 'ready');
  const r = await probe(srv, '/readyz');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.status, 'ready');
  assert.deepEqual(r.body.upstreams.fake, { state: 'ready', required: true, restarts: 0 });
  assert.equal(r.body.upstreams.stuck.required, false);
  assert.notEqual(r.body.upstreams.stuck.state, 'ready');
  assert.match(r.body.upstreams.stuck.error, /not initialized and listed within connect_timeout \(1 s\)/);
  const post = await fetch(`${srv.base}/readyz`, { method: 'POST' });
  assert.equal(post.status, 405);
});

test('a child stuck before initialize is killed at connect_timeout and retried with backoff', async () => {
  await until(() => starts('stuck') >= 3, 'three starts of the stuck upstream', 15000);
  const r = await probe(srv, '/readyz');
  assert.ok(r.body.upstreams.stuck.restarts >= 2, JSON.stringify(r.body));
  assert.ok(events(srv, 'upstream_restart_scheduled', { upstream: 'stuck', delay_ms: /^\d+$/ }).length >= 2);
});

test('a crash mid-call answers upstream_unavailable; the child is restarted and serves again', async () => {
  const client = await connect(srv);
  try {
    const before = starts('fake');
    const r = await client.callTool({ name: 'fake__crash', arguments: {} });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.error, 'upstream_unavailable');
    assert.match(r.structuredContent.message, /upstream fake is not available \(exited with status 3\)/);
    await untilEchoes(client, 'fake__echo');
    assert.equal(starts('fake'), before + 1, 'started once more');
    const ready = await probe(srv, '/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.upstreams.fake.state, 'ready');
    assert.ok(ready.body.upstreams.fake.restarts >= 1);
  } finally { await client.close(); }
});

test('a line that is not JSON: the call is answered upstream_unavailable and the child restarted', async () => {
  const client = await connect(srv);
  try {
    const before = starts('fake');
    const r = await client.callTool({ name: 'fake__garbage', arguments: {} });
    assert.equal(r.structuredContent.error, 'upstream_unavailable');
    assert.match(r.structuredContent.message, /wrote a line that is not a JSON-RPC message/);
    await untilEchoes(client, 'fake__echo');
    assert.equal(starts('fake'), before + 1);
  } finally { await client.close(); }
});

test('an answer over 4 MiB ends that call with upstream_error; the upstream keeps serving', async () => {
  const client = await connect(srv);
  try {
    const before = starts('fake');
    for (const [name, spaced] of [['fake__huge', false], ['fake__hugetail', false], ['fake__huge', true], ['fake__hugetail', true]]) {
      // spaced: "id": 7 as Python writes it; its id must be found too, or the call waits out its timeout
      const r = await client.callTool({ name, arguments: { spaced } });
      assert.equal(r.structuredContent.error, 'upstream_error', `${name} spaced: ${spaced}`);
      assert.match(r.structuredContent.message, /upstream fake answered with a message larger than 4 MiB/);
    }
    const e = await client.callTool({ name: 'fake__echo', arguments: { message: 'small' } });
    assert.equal(e.content[0].text, 'Echo: small');
    assert.equal(starts('fake'), before, 'no restart: the stream stayed in step');
  } finally { await client.close(); }
});

test('a call that hangs gets upstream_timeout; the upstream keeps serving', async () => {
  const client = await connect(srv);
  try {
    const r = await client.callTool({ name: 'fake__hang', arguments: {} });
    assert.equal(r.structuredContent.error, 'upstream_timeout');
    const e = await client.callTool({ name: 'fake__echo', arguments: { message: 'still' } });
    assert.equal(e.content[0].text, 'Echo: still');
  } finally { await client.close(); }
});

test('readyz is 503 naming the required upstream that is not ready; healthz stays 200', async () => {
  const b = await startHermes({ GATEWAY_FILE: gatewayFile('b', {
    good: { args: [] },
    late: { args: ['--crash-init'], extra: '    connect_timeout: 2\n' },
  }) });
  try {
    const r = await probe(b, '/readyz');
    assert.equal(r.status, 503);
    assert.equal(r.body.status, 'not_ready');
    assert.equal(r.body.upstreams.good.state, 'ready');
    assert.equal(r.body.upstreams.late.required, true);
    assert.match(r.body.upstreams.late.state, /^(restarting|starting|down)$/);
    const h = await probe(b, '/healthz');
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'ok');
  } finally { assert.equal(await b.stop(), 0); }
});

test('kill -9 of the child during 100 calls from 4 clients: every call answered, it comes back, no fd leaks', async () => {
  const c = await startHermes({ GATEWAY_FILE: gatewayFile('c', {
    busy: { args: [], extra: '    max_in_flight: 50\n' } }) });
  // The fds a child costs us: its three pipes and its pidfd (client sockets come and go).
  const fds = () => readdirSync(`/proc/${c.proc.pid}/fd`).filter((f) => {
    try { return /^pipe:|pidfd/.test(readlinkSync(`/proc/${c.proc.pid}/fd/${f}`)); } catch { return false; }
  }).length;
  try {
    const baseline = fds();
    const clients = await Promise.all([1, 2, 3, 4].map(() => connect(c)));
    const calls = [];
    for (let i = 0; i < 100; i++) {
      calls.push(clients[i % 4].callTool({ name: 'busy__slow', arguments: { ms: 1500 } }));
    }
    const pid = Number(readFileSync(join(dir, 'busy.starts'), 'utf8').trim().split(' ').pop());
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, 'SIGKILL');
    const results = await Promise.all(calls);
    const codes = results.map((r) => (r.isError ? r.structuredContent.error : 'ok'));
    assert.equal(codes.length, 100);
    assert.ok(codes.every((x) => x === 'upstream_unavailable'), `all cut off: ${[...new Set(codes)]}`);
    await untilEchoes(clients[0], 'busy__echo');
    assert.equal(starts('busy'), 2, 'restarted once');
    await Promise.all(clients.map((x) => x.close()));
    // The dead child's pipes and pidfd are closed; the new child holds as many as the first.
    assert.ok(baseline >= 4, `a child's pipes and pidfd seen: ${baseline}`);
    assert.equal(fds(), baseline);
  } finally { assert.equal(await c.stop(), 0); }
});

test('SIGTERM while the upstreams start: exits 0 without listening, the children go too', async () => {
  const gw = gatewayFile('d', { slowstart: { args: ['--hang-init'], extra: '    connect_timeout: 60\n' } });
  const env = join(dir, 'd.env');
  writeFileSync(env, `MCP_PORT=0\nMCP_AUTH_TOKEN=${'b'.repeat(64)}\nGATEWAY_FILE=${gw}\n` +
    `TASKS_DIR=${join(dir, 'd-tasks')}\nAGENTS_FILE=${join(dir, 'd-agents.yaml')}\n`);
  chmodSync(env, 0o600);
  const proc = spawn(HERMES, ['serve', '--env-file', env], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
  await until(() => starts('slowstart') === 1, 'the upstream started', 10000);
  const t0 = Date.now();
  proc.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.ok(Date.now() - t0 < 5000, 'no wait for connect_timeout (60 s)');
  assert.doesNotMatch(out, /listening on/);
  const pid = Number(readFileSync(join(dir, 'slowstart.starts'), 'utf8').trim().split(' ').pop());
  await until(() => { try { process.kill(pid, 0); return false; } catch { return true; } }, 'child gone');
});

test('max_in_flight calls at the upstream, 64 more wait in order, the next is busy', async () => {
  const e = await startHermes({ GATEWAY_FILE: gatewayFile('e', {
    one: { args: [], extra: '    max_in_flight: 1\n    timeout: 2\n' } }) });
  try {
    const client = await connect(e);
    const stuck = client.callTool({ name: 'one__hang', arguments: {} }); // holds the one slot
    await new Promise((r) => setTimeout(r, 200));
    const rest = [];
    for (let i = 0; i < 65; i++) rest.push(client.callTool({ name: 'one__slow', arguments: { ms: 5 } }));
    const results = await Promise.all(rest);
    const busy = results.filter((r) => r.isError);
    assert.equal(busy.length, 1, 'only the 66th call is refused');
    assert.equal(busy[0].structuredContent.error, 'busy');
    assert.equal(busy[0].structuredContent.retry_after, 1);
    assert.ok(results.filter((r) => !r.isError).every((r) => r.content[0].text === 'slow done'));
    assert.equal((await stuck).structuredContent.error, 'upstream_timeout');
    await client.close();
  } finally { assert.equal(await e.stop(), 0); }
});
