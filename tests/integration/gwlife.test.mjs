// The life of a stdio upstream's child around its end (tests/fakes/fake-upstream.mjs): a child
// being stopped gets SIGTERM, then SIGKILL of its group after 2 s, and the event loop keeps
// serving everyone else meanwhile (it never waits for a child); no zombie is left. A child that
// floods stderr cannot flood our log (lines a second are capped, the rest counted), and its last
// line without a newline reaches the log at its exit. A server started with fds 0-2 closed holds
// them with /dev/null (its log would otherwise write into its epoll or signal fd, or worse) and
// still runs its stdio upstreams (the pipes on 0-2 themselves: tests/unit/test_child.c).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, readdirSync, readlinkSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, HERMES, startHermes, until, freePort } from './lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir;
let srv;

function gatewayFile(name, upstreams) {
  const gw = join(dir, `${name}.yaml`);
  writeFileSync(gw, 'upstreams:\n' + Object.entries(upstreams).map(([n, args]) =>
    `  ${n}:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(dir, `${n}.starts`), ...args])}\n` +
    '    tools: {include: ["*"]}\n').join(''));
  chmodSync(gw, 0o600);
  return gw;
}

const pids = (n) => (existsSync(join(dir, `${n}.starts`))
  ? readFileSync(join(dir, `${n}.starts`), 'utf8').trim().split('\n').map((l) => Number(l.split(' ')[1])) : []);
const sigterms = () => (existsSync(join(dir, 'sigterm')) ? readFileSync(join(dir, 'sigterm'), 'utf8') : '');

// The children of pid, with their state letter (Z: a zombie, exited and not reaped).
function childrenOf(pid) {
  const out = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let stat;
    try { stat = readFileSync(`/proc/${e}/stat`, 'utf8'); } catch { continue; }
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) === pid) out.push({ pid: Number(e), state });
  }
  return out;
}

async function connect(url, auth) {
  const client = new Client({ name: 'gw-life', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
  await client.listTools();
  return client;
}

async function timedEcho(client) {
  const t0 = Date.now();
  const r = await client.callTool({ name: 'other__echo', arguments: { message: 'hi' } });
  assert.equal(r.content[0].text, 'Echo: hi');
  return Date.now() - t0;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwlife-'));
  srv = await startHermes({ GATEWAY_FILE: gatewayFile('a', {
    stub: ['--ignore-sigterm', join(dir, 'sigterm'), '--flood'],
    other: ['--detach'],
  }) });
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('a child ignoring SIGTERM is SIGKILLed 2 s later; others are served meanwhile; no zombie', async () => {
  const client = await connect(srv.url, srv.auth);
  try {
    const [old] = pids('stub');
    const r = await client.callTool({ name: 'stub__garbage', arguments: {} });
    assert.equal(r.structuredContent.error, 'upstream_unavailable');
    await until(() => sigterms().includes(`sigterm ${old}\n`), 'SIGTERM to the old child');
    // It is still there (it ignores SIGTERM) while the loop keeps answering other upstreams.
    const slowest = [];
    while (existsSync(`/proc/${old}`) && childrenOf(srv.proc.pid).some((c) => c.pid === old && c.state !== 'Z'))
      slowest.push(await timedEcho(client));
    assert.ok(slowest.length >= 3, `calls answered while the child was being stopped: ${slowest.length}`);
    assert.ok(Math.max(...slowest) < 1000, `the slowest call took ${Math.max(...slowest)} ms`);
    await until(() => !childrenOf(srv.proc.pid).some((c) => c.pid === old), 'the old child reaped', 5000);
    assert.match(srv.proc.stderrText, /upstream stub: still running 2000 ms after SIGTERM: killed/);
    await until(async () => {
      const back = await client.callTool({ name: 'stub__echo', arguments: { message: 'back' } });
      return !back.isError && back.content[0].text === 'Echo: back';
    }, 'stub serving again', 10000);
    assert.deepEqual(childrenOf(srv.proc.pid).filter((c) => c.state === 'Z'), [], 'no zombie');
  } finally { await client.close(); }
});

test('a command that detaches from an upstream stays below the server (subreaper) and is reaped when it exits', async () => {
  const client = await connect(srv.url, srv.auth);
  try {
    const r = await client.callTool({ name: 'other__detach', arguments: {} });
    const orphan = Number(r.content[0].text);
    assert.ok(orphan > 0, JSON.stringify(r));
    assert.ok(childrenOf(srv.proc.pid).some((c) => c.pid === orphan), 'adopted by the server, not init');
    // It exits after 0.5 s; SIGCHLD makes the server reap it (no zombie is left behind).
    await until(() => !existsSync(`/proc/${orphan}`), 'the orphan reaped', 5000);
  } finally { await client.close(); }
});

test('a child flooding stderr: our log is capped and counts the rest; its last partial line is logged at exit', async () => {
  const client = await connect(srv.url, srv.auth);
  try {
    const logged0 = (srv.proc.stderrText.match(/upstream stub stderr: flood line/g) || []).length;
    const t0 = Date.now();
    const r = await client.callTool({ name: 'stub__flood', arguments: { lines: 5000 } });
    assert.equal(r.content[0].text, 'flooded');
    assert.ok(await timedEcho(client) < 1000);
    const seconds = Math.ceil((Date.now() - t0) / 1000) + 1;
    const [pid] = pids('stub').slice(-1);
    const crash = await client.callTool({ name: 'stub__crash', arguments: {} });
    assert.equal(crash.structuredContent.error, 'upstream_unavailable');
    await until(() => srv.proc.stderrText.includes(`upstream stub stderr: last words ${pid}`),
      'the last partial line in the log');
    const logged = (srv.proc.stderrText.match(/upstream stub stderr: flood line/g) || []).length - logged0;
    assert.ok(logged > 0 && logged <= 50 * seconds, `${logged} flood lines logged in ~${seconds} s`);
    const dropped = [...srv.proc.stderrText.matchAll(/upstream stub stderr: (\d+) lines? dropped \(over 50 a second\)/g)]
      .reduce((n, m) => n + Number(m[1]), 0);
    assert.equal(logged + dropped, 5000, 'every line is logged or counted');
  } finally { await client.close(); }
});

test('started with fds 0-2 closed, the server still runs a stdio upstream', async () => {
  const port = await freePort();
  const token = randomBytes(32).toString('hex');
  const envFile = join(dir, 'closed.env');
  writeFileSync(envFile, `MCP_PORT=${port}\nMCP_AUTH_TOKEN=${token}\nAGENTS_FILE=${join(dir, 'agents.yaml')}\n` +
    `GATEWAY_FILE=${gatewayFile('closed', { other: [] })}\n`);
  chmodSync(envFile, 0o600);
  const proc = spawn('sh', ['-c', 'exec "$0" serve --env-file "$1" <&- >&- 2>&-', HERMES, envFile],
    { stdio: 'ignore' });
  const exited = new Promise((r) => proc.on('exit', (code, sig) => r(code ?? sig)));
  try {
    const base = `http://127.0.0.1:${port}`;
    await until(async () => (await fetch(`${base}/readyz`).catch(() => null))?.status === 200,
      'the server ready with its upstream', 20000);
    // Held by /dev/null: our log (fd 2) never writes into a socket, pipe or file of ours.
    for (const fd of [0, 1, 2]) assert.equal(readlinkSync(`/proc/${proc.pid}/fd/${fd}`), '/dev/null', `fd ${fd}`);
    const client = await connect(`${base}/mcp`, { Authorization: `Bearer ${token}` });
    try {
      const r = await client.callTool({ name: 'other__echo', arguments: { message: 'closed' } });
      assert.equal(r.content[0].text, 'Echo: closed');
    } finally { await client.close(); }
  } finally {
    proc.kill('SIGTERM');
    assert.equal(await exited, 0);
  }
});

test('at exit a child ignoring SIGTERM is SIGKILLed within the bound; none outlives the server', async () => {
  const client = await connect(srv.url, srv.auth);
  try { // the stub restarted after the crash above: serving again before the stop
    await until(async () => !(await client.callTool({ name: 'stub__echo', arguments: { message: 'x' } })).isError,
      'stub serving again', 10000);
  } finally { await client.close(); }
  const [live] = pids('stub').slice(-1);
  const t0 = Date.now();
  const stopping = srv;
  srv = null;
  assert.equal(await stopping.stop(), 0);
  assert.ok(Date.now() - t0 < 6000, `stopped in ${Date.now() - t0} ms`);
  assert.ok(sigterms().includes(`sigterm ${live}\n`), 'asked to stop first');
  const kills = stopping.proc.stderrText.match(/upstream stub: still running 2000 ms after SIGTERM: killed/g);
  assert.equal(kills?.length, 2, 'the restart above, and now the exit');
  for (const pid of [...pids('stub'), ...pids('other')]) assert.ok(!existsSync(`/proc/${pid}`), `pid ${pid} is gone`);
});

test('SIGTERM: queued calls are answered at once and never sent; one past the grace is cancelled upstream', async () => {
  const received = join(dir, 'drain.received'), calls = join(dir, 'drain.calls');
  const gw = join(dir, 'drain.yaml');
  writeFileSync(gw, `upstreams:\n  one:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--received', received, '--calls', calls, '--ignore-sigterm', join(dir, 'drain.sigterm')])}\n` +
    '    max_in_flight: 2\n    tools: {include: ["*"]}\n');
  chmodSync(gw, 0o600);
  const server = await startHermes({ GATEWAY_FILE: gw, MCP_DRAIN_GRACE_S: '2' });
  const client = await connect(server.url, server.auth);
  const sent = () => (existsSync(received) ? readFileSync(received, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : []);
  const call = (ms) => client.callTool({ name: 'one__slow', arguments: { ms } });
  const within = call(800);   // in flight, ends inside the grace
  const past = call(20000);   // in flight, still running when the grace ends
  await until(() => sent().length === 2, 'two calls at the upstream');
  const queued = [1, 2, 3, 4, 5].map(() => call(800));
  await until(async () => /^hermes_mcp_calls_in_flight 7$/m.test(
    await (await fetch(`${server.base}/metrics`, { headers: server.auth })).text()), 'five more calls waiting');
  const t0 = Date.now();
  server.proc.kill('SIGTERM');
  const early = await Promise.all(queued);
  assert.ok(Date.now() - t0 < 1000, `queued calls answered after ${Date.now() - t0} ms`);
  for (const r of early) {
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.error, 'upstream_unavailable');
    assert.match(r.structuredContent.message, /server is stopping/);
  }
  assert.equal((await within).content[0].text, 'slow done');
  await assert.rejects(past); // cut off at the grace's end: an error on its stream, or 503
  const code = await server.stop();
  assert.equal(code, 0);
  assert.deepEqual(sent().map((c) => c.arguments.ms).sort((x, y) => x - y), [800, 20000], 'only the two in flight reached the upstream');
  assert.match(readFileSync(calls, 'utf8'), /^cancelled \d+$/m, 'the one past the grace was cancelled upstream');
  await client.close().catch(() => {});
});
