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
import { ROOT, HERMES, startHermes, until, freePort, upstreamsFile, fakeUpstream, connectClient } from '../../lib/lib.mjs';
import { events, waitEvent } from '../../lib/events.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir;
let srv;

function gatewayFile(name, upstreams) {
  return upstreamsFile(dir, name, Object.entries(upstreams).map(([n, args]) =>
    fakeUpstream(n, ['--starts', join(dir, `${n}.starts`), ...args], '    tools: {include: ["*"]}\n')));
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

const connect = (url, auth) => connectClient(url, { name: 'gw-life', headers: auth, listTools: true });

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
    // A loop blocked in the stop would hold every call for the 2 s grace: a few answered, each
    // well inside it, show it was not (bounds loose enough for ASan on a busy machine).
    assert.ok(slowest.length >= 3, `calls answered while the child was being stopped: ${slowest.length}`);
    assert.ok(Math.max(...slowest) < 1900, `the slowest call took ${Math.max(...slowest)} ms`);
    await until(() => !childrenOf(srv.proc.pid).some((c) => c.pid === old), 'the old child reaped', 5000);
    assert.equal(events(srv, 'child_killed', { child: 'upstream stub', why: 'grace', after_ms: 2000 }).length, 1);
    await until(async () => {
      const back = await client.callTool({ name: 'stub__echo', arguments: { message: 'back' } });
      return !back.isError && back.content[0].text === 'Echo: back';
    }, 'stub serving again', 10000);
    assert.deepEqual(childrenOf(srv.proc.pid).filter((c) => c.state === 'Z'), [], 'no zombie');
  } finally { await client.close(); }
});

for (const [how, prefix] of [['a shell\'s `cmd &`', ''], ['`timeout` (its own process group in our session)', 'group:']]) {
  test(`a command that detaches from an upstream by ${how} stays below the server (subreaper) and is reaped when it exits`, async () => {
    const client = await connect(srv.url, srv.auth);
    const go = join(dir, `orphan-${randomBytes(4).toString('hex')}`);
    try {
      const r = await client.callTool({ name: 'other__detach', arguments: { message: prefix + go } });
      const orphan = Number(r.content[0].text);
      assert.ok(orphan > 0, JSON.stringify(r));
      await until(() => childrenOf(srv.proc.pid).some((c) => c.pid === orphan), 'adopted by the server, not init');
      writeFileSync(go, ''); // now it exits; SIGCHLD makes the server reap it (no zombie left)
      await until(() => !existsSync(`/proc/${orphan}`), 'the orphan reaped', 5000);
    } finally { await client.close(); }
  });
}

test('stderr bytes that are not UTF-8, or a character cut by the line cap, reach the log as valid UTF-8', async () => {
  const client = await connect(srv.url, srv.auth);
  try {
    const r = await client.callTool({ name: 'stub__badbytes', arguments: {} });
    assert.equal(r.content[0].text, 'written');
    await until(() => /upstream stub stderr: a(é)+\?*\n/.test(srv.proc.stderrText), 'the long line logged');
    assert.match(srv.proc.stderrText, /upstream stub stderr: bad \?\? bytes\n/);
    const line = srv.proc.stderrText.match(/upstream stub stderr: a(é)+\?*\n/)[0];
    assert.ok(line.length < 600, `cut at the cap: ${line.length} characters`);
    assert.ok(!srv.proc.stderrText.includes('\ufffd'), 'no byte of the log is invalid UTF-8');
  } finally { await client.close(); }
});

test('a child flooding stderr: our log is capped and counts the rest; its last partial line is logged at exit', async () => {
  const client = await connect(srv.url, srv.auth);
  try {
    const logged0 = (srv.proc.stderrText.match(/upstream stub stderr: flood line/g) || []).length;
    const t0 = Date.now();
    const r = await client.callTool({ name: 'stub__flood', arguments: { lines: 5000 } });
    assert.equal(r.content[0].text, 'flooded');
    assert.ok(await timedEcho(client) < 1900);
    const seconds = Math.ceil((Date.now() - t0) / 1000) + 1;
    const count = (re) => [...srv.proc.stderrText.matchAll(re)].reduce((n, m) => n + Number(m[1]), 0);
    const droppedRe = /upstream stub stderr: (\d+) lines? dropped \(over 50 a second\)/g;
    // The child is silent now: the count of what was dropped comes when the second ends, not
    // with its next line.
    await until(() => (srv.proc.stderrText.match(/upstream stub stderr: flood line/g) || []).length - logged0 +
      count(droppedRe) === 5000, 'the dropped lines counted without another line', 5000);
    const [pid] = pids('stub').slice(-1);
    const crash = await client.callTool({ name: 'stub__crash', arguments: {} });
    assert.equal(crash.structuredContent.error, 'upstream_unavailable');
    await until(() => srv.proc.stderrText.includes(`upstream stub stderr: last words ${pid}`),
      'the last partial line in the log');
    const logged = (srv.proc.stderrText.match(/upstream stub stderr: flood line/g) || []).length - logged0;
    assert.ok(logged > 0 && logged <= 50 * seconds, `${logged} flood lines logged in ~${seconds} s`);
    assert.equal(logged + count(droppedRe), 5000, 'every line is logged or counted');
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
  const kills = events(stopping, 'child_killed', { child: 'upstream stub', why: 'grace', after_ms: 2000 });
  assert.equal(kills.length, 2, 'the restart above, and now the exit');
  for (const pid of [...pids('stub'), ...pids('other')]) assert.ok(!existsSync(`/proc/${pid}`), `pid ${pid} is gone`);
});

test('SIGTERM: queued calls are answered at once and never sent; one past the grace is cancelled upstream', async () => {
  const received = join(dir, 'drain.received'), calls = join(dir, 'drain.calls');
  const gw = join(dir, 'drain.yaml');
  writeFileSync(gw, `upstreams:\n  one:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--received', received, '--calls', calls, '--ignore-sigterm', join(dir, 'drain.sigterm')])}\n` +
    '    max_in_flight: 2\n    tools: {include: ["*"]}\n');
  chmodSync(gw, 0o600);
  const server = await startHermes({ GATEWAY_FILE: gw, MCP_DRAIN_GRACE_S: '4' });
  const client = await connect(server.url, server.auth);
  const sent = () => (existsSync(received) ? readFileSync(received, 'utf8').trim().split('\n').map((l) => JSON.parse(l)) : []);
  const call = (ms) => client.callTool({ name: 'one__slow', arguments: { ms } });
  const within = call(800);   // in flight, ends inside the grace (4 s)
  const past = call(20000);   // in flight, still running when the grace ends
  await until(() => sent().length === 2, 'two calls at the upstream');
  const queued = [1, 2, 3, 4, 5].map(() => call(800));
  await until(async () => /^hermes_mcp_calls_in_flight 7$/m.test(
    await (await fetch(`${server.base}/metrics`, { headers: server.auth })).text()), 'five more calls waiting');
  const t0 = Date.now();
  server.proc.kill('SIGTERM');
  const early = await Promise.all(queued);
  assert.ok(Date.now() - t0 < 2500, `queued calls answered after ${Date.now() - t0} ms, not at the grace's end`);
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

test('a second SIGTERM ends the exit wait for a child ignoring the first: it is killed at once', async () => {
  const gw = join(dir, 'hurry.yaml');
  writeFileSync(gw, `upstreams:\n  one:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(dir, 'hurry.starts'), '--ignore-sigterm', join(dir, 'hurry.sigterm')])}\n` +
    '    tools: {include: ["*"]}\n');
  chmodSync(gw, 0o600);
  const server = await startHermes({ GATEWAY_FILE: gw });
  const [child] = readFileSync(join(dir, 'hurry.starts'), 'utf8').trim().split('\n').map((l) => Number(l.split(' ')[1]));
  const exited = new Promise((r) => server.proc.on('close', (code, sig) => r(code ?? sig)));
  server.proc.kill('SIGTERM');
  await until(() => existsSync(join(dir, 'hurry.sigterm')), 'the child asked to stop');
  const t0 = Date.now();
  server.proc.kill('SIGTERM');
  assert.equal(await exited, 0);
  // The first SIGTERM alone waits the 2 s grace before the SIGKILL (the test above).
  assert.ok(Date.now() - t0 < 1500, `exited ${Date.now() - t0} ms after the second SIGTERM`);
  assert.equal(events(server, 'child_killed', { child: 'upstream one', why: 'hurried' }).length, 1);
  assert.ok(!existsSync(`/proc/${child}`), 'the child is gone');
  assert.equal(await server.stop(), 0); // the sanitizer check
});

test('a guarded call arriving while the server drains is refused at once by the HTTP layer (503, before any tool runs): not queued for the operator, not sent', async () => {
  const received = join(dir, 'late.received');
  const gw = join(dir, 'late.yaml');
  writeFileSync(gw, `upstreams:\n  one:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--received', received])}\n` +
    '    tools: {include: ["*"], guard: {echo: approve}}\n');
  chmodSync(gw, 0o600);
  const server = await startHermes({ GATEWAY_FILE: gw, MCP_DRAIN_GRACE_S: '6' });
  const client = await connect(server.url, server.auth);
  try {
    // holds the drain; settled either way, so a failure below is reported as itself
    const busy = client.callTool({ name: 'one__slow', arguments: { ms: 3000 } }).catch((e) => e);
    await until(() => existsSync(received), 'the slow call at the upstream');
    server.proc.kill('SIGTERM');
    await waitEvent(server, 'drain_started');
    const t0 = Date.now();
    const late = await client.callTool({ name: 'one__echo', arguments: { message: 'late' } }).catch((e) => e);
    // The server refuses new requests while it drains, before any tool runs: 503 on a kept-alive
    // connection, a refused connection on a new one (its listening socket is closed). No
    // approval wait through the grace (the gateway checks the drain first too, for calls it
    // resumes itself).
    assert.ok(Date.now() - t0 < 2000, `answered after ${Date.now() - t0} ms`);
    assert.ok(late instanceof Error && /shutting down|fetch failed|ECONNREFUSED|ECONNRESET/.test(`${late.message} ${late.cause?.code ?? ''}`),
      String(late?.message ?? JSON.stringify(late)));
    assert.ok(!server.proc.stderrText.includes('"event":"approval"') && !/approval.*queued/i.test(server.proc.stderrText),
      'nothing queued for the operator');
    const slow = await busy;
    assert.equal(slow?.content?.[0]?.text, 'slow done', String(slow?.message ?? JSON.stringify(slow)));
    assert.deepEqual(readFileSync(received, 'utf8').trim().split('\n').map((l) => JSON.parse(l).name), ['slow']);
  } finally {
    await client.close().catch(() => {});
    assert.equal(await server.stop(), 0);
  }
});
