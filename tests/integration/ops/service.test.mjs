// Running as a service: the systemd notify protocol (a fake notify socket, build/notify-sink),
// socket activation (build/listen-exec puts a listening socket on fd 3), the SIGTERM drain with
// its grace period, async runs across a SIGTERM and a restart, and the units that
// scripts/install-systemd renders (checked with systemd-analyze verify where it can run).
// serial: the systemd watchdog and the SIGTERM grace run on wall-clock timers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, readFileSync, readdirSync, statSync, existsSync, rmSync,
  mkdirSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { ROOT, BUILD, HERMES, startHermes, restartHermes, startFake, agentEnv, post, parseSse, until } from '../../lib/lib.mjs';
import { events as logEvents, waitEvent } from '../../lib/events.mjs';

const SINK = join(BUILD, 'notify-sink');
const LISTEN_EXEC = join(BUILD, 'listen-exec');
const INSTALL = join(ROOT, 'scripts/install-systemd');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const exited = (proc) => (proc.exitCode !== null || proc.signalCode !== null
  ? Promise.resolve(proc.exitCode ?? proc.signalCode)
  : new Promise((res) => proc.on('close', (code, sig) => res(code ?? sig))));

// A fake notify socket: every datagram is one entry of messages (newlines restored), and the
// time its sender sent it (ms, the kernel's stamp) the same entry of times.
async function startSink(name) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-sink-'));
  const addr = name ?? join(dir, 'notify');
  const proc = spawn(SINK, ['--times', addr], { stdio: ['ignore', 'pipe', 'pipe'] });
  const messages = [];
  const times = [];
  let buf = '';
  await new Promise((res, rej) => {
    proc.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === 'notify-sink ready') { res(); continue; }
        const sp = line.indexOf(' ');
        times.push(Number(line.slice(0, sp)) * 1000);
        messages.push(line.slice(sp + 1).replaceAll('\\n', '\n'));
      }
    });
    proc.on('exit', (code) => rej(new Error(`notify-sink exited with ${code}`)));
  });
  return {
    addr, messages, times,
    async stop() { proc.kill('SIGTERM'); await exited(proc); rmSync(dir, { recursive: true, force: true }); },
  };
}

// Starts hermes-mcp on an env file written here; resolves with {code, stdout, stderr} at exit.
function runHermes(lines, { prefix = [], env = {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-svc-'));
  const envFile = join(dir, 'env');
  const token = randomBytes(32).toString('hex');
  writeFileSync(envFile, Object.entries({ MCP_PORT: '0', MCP_AUTH_TOKEN: token, AGENTS_FILE: join(dir, 'agents.yaml'), ...lines })
    .map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
  chmodSync(envFile, 0o600);
  const base = { ...process.env };
  for (const k of ['NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID', 'LISTEN_PID', 'LISTEN_FDS', 'LISTEN_FDNAMES']) delete base[k];
  const argv = [...prefix, HERMES, 'serve', '--env-file', envFile];
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...base, ...env } });
  let stdout = '', stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  return {
    proc,
    out: () => stdout,
    done: new Promise((res, rej) => proc.on('close', (code) => {
      rmSync(dir, { recursive: true, force: true });
      // The ASan run of the suite: a report fails the test here as stop() does elsewhere.
      const report = stderr.match(/(AddressSanitizer|LeakSanitizer|runtime error:)[^\n]*/);
      if (report) rej(new Error(`sanitizer report: ${report[0]}\n${stderr}`));
      else res({ code, stdout, stderr });
    })),
  };
}

// ---------------------------------------------------------------- notify protocol

test('notify: READY after listening, WATCHDOG every WATCHDOG_USEC/2, RELOADING/READY around SIGHUP, STOPPING on SIGTERM', async () => {
  const sink = await startSink();
  const srv = await startHermes({}, { env: { NOTIFY_SOCKET: sink.addr, WATCHDOG_USEC: '200000' } });
  try {
    await until(() => sink.messages.length > 0, 'the first notification');
    assert.equal(sink.messages[0], `READY=1\nSTATUS=listening on http://127.0.0.1:${srv.port}/mcp`,
      'the first message is READY=1 with the address of the listening line');
    // Ten intervals between WATCHDOG=1 messages, timed when the server sent them (a late reader
    // does not bunch them up): about 100 ms each, as a rate of 4 to 12 a second.
    const watchdogTimes = () => sink.times.filter((_, i) => sink.messages[i] === 'WATCHDOG=1');
    const w0 = watchdogTimes().length;
    await until(() => watchdogTimes().length >= w0 + 11, 'eleven more WATCHDOG=1');
    const sent = watchdogTimes().slice(w0, w0 + 11);
    const gaps = sent.slice(1).map((t, i) => t - sent[i]).sort((a, b) => a - b);
    const median = gaps[5];
    assert.ok(median >= 1000 / 12 && median <= 1000 / 4,
      `about 10 WATCHDOG=1 a second at 200 ms (median gap ${median.toFixed(1)} ms of ${gaps.map((g) => g.toFixed(0))})`);

    const before = sink.messages.length;
    srv.proc.kill('SIGHUP');
    await until(() => sink.messages.slice(before).some((m) => m.startsWith('READY=1')), 'READY=1 after the reload');
    const after = sink.messages.slice(before).filter((m) => m !== 'WATCHDOG=1');
    assert.match(after[0], /^RELOADING=1\nMONOTONIC_USEC=\d+$/);
    const usec = Number(after[0].split('=')[2]);
    assert.ok(usec > 0);
    assert.match(after[1], /^READY=1\nSTATUS=reloaded /);
  } finally {
    assert.equal(await srv.stop('SIGTERM'), 0);
    await sink.stop();
  }
  const last = sink.messages.filter((m) => m !== 'WATCHDOG=1').at(-1);
  assert.match(last, /^STOPPING=1\nSTATUS=draining/);
});

test('notify: an abstract @socket works; WATCHDOG_PID of another process means no watchdog', async () => {
  const name = `@hm-notify-${process.pid}-${Date.now()}`;
  const sink = await startSink(name);
  const srv = await startHermes({}, { env: { NOTIFY_SOCKET: name, WATCHDOG_USEC: '100000', WATCHDOG_PID: String(process.pid) } });
  try {
    await until(() => sink.messages.some((m) => m.startsWith('READY=1')), 'READY=1 on the abstract socket');
    // Reloads until the server has run for 500 ms of its own time (ten watchdog intervals) by
    // the stamps of its READY=1 messages; a watchdog would have sent WATCHDOG=1 before the last.
    const ready = () => sink.times.filter((_, i) => sink.messages[i].startsWith('READY=1'));
    const start = ready()[0];
    let asked = 1;
    await until(() => {
      const r = ready();
      if (r.length < asked) return false; // the last reload is not done yet
      if (r.at(-1) - start >= 500) return true;
      srv.proc.kill('SIGHUP');
      asked++;
      return false;
    }, 'the server running 500 ms');
    assert.equal(sink.messages.filter((m) => m === 'WATCHDOG=1').length, 0, 'the watchdog was meant for another pid');
  } finally {
    assert.equal(await srv.stop(), 0);
    await sink.stop();
  }
  assert.ok(sink.messages.some((m) => m.startsWith('STOPPING=1')));
});

test('notify: nothing is sent without NOTIFY_SOCKET, and the server behaves the same', async () => {
  const sink = await startSink();
  // WATCHDOG_USEC alone must not make it try anything.
  const srv = await startHermes({}, { env: { WATCHDOG_USEC: '100000' } });
  try {
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_applied', { config: 'env' });
    const r = await fetch(`${srv.base}/health`);
    assert.equal(r.status, 200);
    await sleep(300);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  assert.deepEqual(sink.messages, []);
  assert.doesNotMatch(srv.proc.stderrText, /notify/i, 'no warning about notifying either');
  await sink.stop();
});

// ---------------------------------------------------------------- socket activation

test('socket activation: the socket on fd 3 is served, at its own port, with its real address', async () => {
  const srv = await startHermes({ MCP_PORT: '1' }, { prefix: [LISTEN_EXEC, '--'] }); // port 1 would fail if bound
  try {
    const m = srv.proc.stderrText.match(/listen-exec: 127\.0\.0\.1 (\d+)/);
    assert.ok(m, srv.proc.stderrText);
    assert.equal(srv.port, Number(m[1]), 'the listening line shows the passed socket');
    assert.match(srv.proc.stderrText, /serving on the socket passed by systemd/);
    const h = await fetch(`${srv.base}/health`);
    assert.equal(h.status, 200);
    const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(r.status, 200);
    assert.ok(r.json.result.tools.some((t) => t.name === 'hermes_task'));
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('socket activation: a non-loopback socket needs MCP_ALLOW_NON_LOOPBACK=1; a wrong socket is refused', async () => {
  const wide = runHermes({}, { prefix: [LISTEN_EXEC, '--host', '0.0.0.0', '--'] });
  const r1 = await wide.done;
  assert.equal(r1.code, 2);
  assert.match(r1.stderr, /listens on 0\.0\.0\.0, not a loopback address.*MCP_ALLOW_NON_LOOPBACK=1/);
  assert.doesNotMatch(r1.stdout, /listening on/);

  const allowed = runHermes({ MCP_ALLOW_NON_LOOPBACK: '1' }, { prefix: [LISTEN_EXEC, '--host', '0.0.0.0', '--'] });
  await until(() => /listening on/.test(allowed.out()), 'the listening line');
  assert.match(allowed.out(), /listening on http:\/\/0\.0\.0\.0:\d+\/mcp/);
  allowed.proc.kill('SIGTERM');
  const r2 = await allowed.done;
  assert.equal(r2.code, 0);
  assert.match(r2.stderr, /LISTENING BEYOND LOOPBACK/);

  for (const flag of ['--dgram', '--no-listen']) {
    const bad = await runHermes({}, { prefix: [LISTEN_EXEC, flag, '--'] }).done;
    assert.equal(bad.code, 2, flag);
    assert.match(bad.stderr, /LISTEN_FDS: fd 3 is not a listening stream socket/, flag);
  }
  // LISTEN_PID of another process: not ours, MCP_HOST/MCP_PORT are used as usual.
  const other = runHermes({}, { prefix: [LISTEN_EXEC, '--other-pid', '--'] });
  await until(() => /listening on/.test(other.out()), 'the listening line');
  const o = other.out();
  other.proc.kill('SIGTERM');
  const r3 = await other.done;
  assert.equal(r3.code, 0);
  const passed = Number(r3.stderr.match(/listen-exec: \S+ (\d+)/)[1]);
  const used = Number(o.match(/:(\d+)\/mcp/)[1]);
  assert.notEqual(used, passed, 'a socket meant for another pid is not taken');
  assert.doesNotMatch(r3.stderr, /socket passed by systemd/);
});

// ---------------------------------------------------------------- drain

// A bridge wired to the fake agent; raw JSON-RPC calls so each test controls its connections.
async function rig(extra = {}) {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', ...extra });
  return { fake, srv };
}
const chatsStarted = (fake) => fake.received().filter((r) => r.path === '/v1/chat/completions').length;
const taskCall = (id, task, meta) => ({ jsonrpc: '2.0', id, method: 'tools/call',
  params: { name: 'hermes_task', arguments: { task, mode: 'sync' }, ...(meta ? { _meta: meta } : {}) } });

// One JSON-RPC POST on a given http.Agent (keep-alive): {status, headers, body, reused}. (A POST
// answered after its body keeps the connection open; libmicrohttpd closes it after an answer
// given before the body, which every GET is.)
function agentPost(agent, srv, msg) {
  const body = JSON.stringify(msg);
  return new Promise((res, rej) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, path: '/mcp', method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'Content-Length': Buffer.byteLength(body), ...srv.auth } }, (r) => {
      let text = '';
      r.on('data', (d) => { text += d; });
      r.on('end', () => res({ status: r.statusCode, headers: r.headers, body: text, reused: req.reusedSocket }));
    });
    req.on('error', rej);
    req.end(body);
  });
}

function connectRefused(port) {
  return new Promise((res) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => { s.destroy(); res(false); });
    s.on('error', (e) => res(e.code === 'ECONNREFUSED'));
  });
}

test('drain: a call in flight finishes; new connections are refused; a kept-alive one gets 503 + Retry-After; audit flushed; exit 0', async () => {
  const { fake, srv } = await rig({ MCP_DRAIN_GRACE_S: '8' });
  const keep = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await agentPost(keep, srv, { jsonrpc: '2.0', id: 'k1', method: 'ping' });
    assert.equal(first.status, 200);
    assert.notEqual(first.headers.connection, 'close', 'the connection stays open');
    const t0 = Date.now();
    const call = post(srv, taskCall(1, 'slow one [delay=1500] [json]'));
    await until(() => chatsStarted(fake) === 1, 'the call to reach the agent');
    srv.proc.kill('SIGTERM');
    await waitEvent(srv, 'drain_started', { calls: 1 });
    assert.equal(await connectRefused(srv.port), true, 'a new connection is refused');
    const late = await agentPost(keep, srv, { jsonrpc: '2.0', id: 'k2', method: 'ping' });
    assert.equal(late.reused, true, 'sent on the connection opened before SIGTERM');
    assert.equal(late.status, 503);
    assert.equal(late.headers['retry-after'], '5');
    assert.equal(late.headers.connection, 'close');
    assert.match(JSON.parse(late.body).error.message, /shutting down/);
    const r = await call;
    assert.equal(r.status, 200);
    assert.equal(r.json.result.structuredContent.status, 'completed', 'the call in flight completed normally');
    assert.ok(Date.now() - t0 >= 1400);
    assert.equal(await exited(srv.proc), 0);
    assert.equal(logEvents(srv, 'drain_over', { ms: /^\d+$/, finished: 1, calls: 1, cut_off: 0 }).length, 1);
    const audit = readFileSync(srv.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(audit.some((l) => l.tool === 'hermes_task' && l.status === 200), 'the finished call is in the audit log');
    assert.ok(audit.some((l) => l.path === '/mcp' && l.status === 503), 'so is the 503');
  } finally {
    keep.destroy();
    await srv.stop();
    await fake.stop();
  }
});

test('drain: past MCP_DRAIN_GRACE_S a waiting call gets 503 and a streamed one a JSON-RPC error', async () => {
  const { fake, srv } = await rig({ MCP_DRAIN_GRACE_S: '1' });
  try {
    const plain = post(srv, taskCall(1, 'long [delay=20000]'));
    // With a progress token the answer is an SSE stream that has started before SIGTERM.
    const res = await fetch(srv.url, { method: 'POST', headers: { 'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream', ...srv.auth },
    body: JSON.stringify(taskCall(2, 'long too [delay=20000] [progress=40]', { progressToken: 'p2' })) });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const streamed = res.text();
    await until(() => chatsStarted(fake) === 2, 'both calls to reach the agent');
    const t0 = Date.now();
    srv.proc.kill('SIGTERM');
    const r = await plain;
    const took = Date.now() - t0;
    assert.equal(r.status, 503);
    assert.equal(r.headers.get('retry-after'), '5');
    assert.equal(r.json.error.code, -32600);
    assert.ok(took >= 900 && took < 5000, `answered when the grace ended (${took} ms)`);
    const events = parseSse(await streamed).filter((e) => e.json);
    const answer = events.at(-1).json;
    assert.equal(answer.id, 2);
    assert.equal(answer.error.code, -32000);
    assert.match(answer.error.message, /shutting down/);
    assert.ok(events.some((e) => e.json.method === 'notifications/progress'), 'the stream had started');
    assert.equal(await exited(srv.proc), 0);
    assert.equal(logEvents(srv, 'drain_started', { calls: 2, grace_s: 1 }).length, 1);
    assert.equal(logEvents(srv, 'drain_over', { finished: 0, calls: 2, cut_off: 2 }).length, 1);
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('drain: a second SIGTERM ends the grace period at once', async () => {
  const { fake, srv } = await rig({ MCP_DRAIN_GRACE_S: '60' });
  try {
    const call = post(srv, taskCall(1, 'long [delay=30000]'));
    await until(() => chatsStarted(fake) === 1, 'the call to reach the agent');
    srv.proc.kill('SIGTERM');
    await waitEvent(srv, 'drain_started', { calls: 1 });
    await sleep(200);
    assert.equal(srv.proc.exitCode, null, 'still waiting for the call');
    const t0 = Date.now();
    srv.proc.kill('SIGINT');
    const r = await call;
    assert.equal(r.status, 503);
    assert.equal(await exited(srv.proc), 0);
    assert.ok(Date.now() - t0 < 4000, 'stopped promptly');
    assert.equal(logEvents(srv, 'drain_forced', { signal: 'INT' }).length, 1);
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('drain: MCP_DRAIN_GRACE_S=0 answers calls in flight 503 at once', async () => {
  const { fake, srv } = await rig({ MCP_DRAIN_GRACE_S: '0' });
  try {
    const call = post(srv, taskCall(1, 'long [delay=30000]'));
    await until(() => chatsStarted(fake) === 1, 'the call to reach the agent');
    const t0 = Date.now();
    srv.proc.kill('SIGTERM');
    const r = await call;
    assert.equal(r.status, 503);
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(await exited(srv.proc), 0);
  } finally {
    await srv.stop();
    await fake.stop();
  }
});

test('drain: an async run accepted before SIGTERM is followed again after the restart', async () => {
  const { fake, srv } = await rig();
  const call = (s, id, name, args) => post(s, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  const a = await call(srv, 1, 'hermes_task', { task: 'outlive [delay=1500] [json]', mode: 'async', id: 'term-1' });
  const runId = a.json.result.structuredContent.run_id;
  assert.match(runId, /^run_/);
  srv.proc.kill('SIGTERM');
  assert.equal(await exited(srv.proc), 0, 'SIGTERM exits 0 at once: a followed run is not a call in flight');
  const result = join(srv.dir, 'tasks', 'term-1', 'result.json');
  assert.equal(existsSync(result), false, 'not finished before the stop');
  const srv2 = await restartHermes(srv);
  try {
    await until(() => existsSync(result), 'the restarted server to write result.json');
    const r = await call(srv2, 2, 'hermes_result', { id: 'term-1' });
    assert.equal(r.json.result.structuredContent.status, 'completed');
    const st = await call(srv2, 3, 'hermes_status', { run_id: runId });
    assert.equal(st.json.result.structuredContent.task_id, 'term-1');
  } finally {
    assert.equal(await srv2.stop(), 0);
    await fake.stop();
  }
});

// ---------------------------------------------------------------- units and installer

const HARDENING = ['NoNewPrivileges=yes', 'PrivateTmp=yes', 'ProtectSystem=strict', 'ProtectHome=read-only',
  'ProtectKernelTunables=yes', 'ProtectControlGroups=yes', 'RestrictSUIDSGID=yes', 'LockPersonality=yes',
  // =no for the gateway's JIT children, with npx's cache in CacheDirectory (sandbox.test.mjs).
  'MemoryDenyWriteExecute=no', 'CacheDirectory=hermes-mcp',
  'Environment=npm_config_cache=%C/hermes-mcp/npm XDG_CACHE_HOME=%C/hermes-mcp', 'CapabilityBoundingSet=', 'SystemCallFilter=@system-service',
  'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX', 'UMask=0077'];

// A fresh XDG_CONFIG_HOME with an env file in it; returns paths and an install(args) runner.
function installRig(lines = {}, envDirName = 'hermes-mcp') {
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'hm-inst-')));
  const cfg = join(home, 'config');
  const envDir = join(cfg, envDirName);
  mkdirSync(envDir, { recursive: true });
  const token = randomBytes(32).toString('hex');
  const envFile = join(envDir, 'env');
  writeFileSync(envFile, Object.entries({ MCP_AUTH_TOKEN: token, ...lines }).map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
  chmodSync(envFile, 0o600);
  const unitDir = join(cfg, 'systemd', 'user');
  const env = { ...process.env, XDG_CONFIG_HOME: cfg, HOME: home };
  return {
    home, cfg, envDir, envFile, token, unitDir,
    install: (args) => spawnSync(INSTALL, args, { env, encoding: 'utf8' }),
    unit: (name) => readFileSync(join(unitDir, name), 'utf8'),
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  };
}

// "Key=value" lines of a unit, comments left out.
const directives = (text) => text.split('\n').filter((l) => l && !l.startsWith('#') && !l.startsWith('['));

test('install-systemd --no-enable renders every hardening directive, the real paths, mode 644, no secret', () => {
  const r = installRig();
  const auditDir = join(r.home, 'logs');
  mkdirSync(auditDir);
  writeFileSync(r.envFile, readFileSync(r.envFile, 'utf8') +
    `MCP_PORT=9876\nMCP_DRAIN_GRACE_S=12\nTASKS_DIR="work/tasks"   # relative: beside the env file\nAUDIT_LOG_PATH=${auditDir}/audit.jsonl\n`);
  const fakeCloudflared = join(r.home, 'cloudflared');
  writeFileSync(fakeCloudflared, '#!/bin/sh\nexit 0\n');
  chmodSync(fakeCloudflared, 0o755);
  try {
    const p = r.install(['--no-enable', '--socket', '--tunnel', '--cloudflared', fakeCloudflared]);
    assert.equal(p.status, 0, p.stderr);
    assert.deepEqual(readdirSync(r.unitDir).sort(), ['hermes-mcp-tunnel.service', 'hermes-mcp.service', 'hermes-mcp.socket'],
      'the three units and no temporary file');
    for (const f of readdirSync(r.unitDir)) {
      assert.equal(statSync(join(r.unitDir, f)).mode & 0o777, 0o644, f);
      assert.equal(r.unit(f).includes(r.token), false, `no token in ${f}`);
      assert.doesNotMatch(r.unit(f), /@[A-Z_]+@/, `every placeholder filled in ${f}`);
    }
    const svc = directives(r.unit('hermes-mcp.service'));
    for (const d of HARDENING) assert.ok(svc.includes(d), d);
    const bin = realpathSync(join(ROOT, "build/release/hermes-mcp"));
    assert.ok(svc.includes('Type=notify'));
    assert.ok(svc.includes('WatchdogSec=30'));
    assert.ok(svc.includes(`ExecStart=${bin} serve --env-file ${r.envFile}`), svc.find((l) => l.startsWith('ExecStart')));
    assert.ok(svc.includes('ExecReload=/bin/kill -HUP $MAINPID'));
    assert.ok(svc.includes('Restart=on-failure'));
    assert.ok(svc.includes('TimeoutStopSec=27'), 'longer than the 12 s grace');
    assert.ok(svc.includes(`WorkingDirectory=${r.envDir}`));
    const rw = svc.find((l) => l.startsWith('ReadWritePaths=')).slice('ReadWritePaths='.length).split(' ');
    assert.deepEqual(rw.sort(), [join(r.envDir, 'work/tasks'), auditDir, r.envDir].sort());
    assert.equal(statSync(join(r.envDir, 'work/tasks')).mode & 0o777, 0o700, 'the task directory was created');
    assert.ok(directives(r.unit('hermes-mcp.socket')).includes('ListenStream=127.0.0.1:9876'));
    const tunnel = directives(r.unit('hermes-mcp-tunnel.service'));
    assert.ok(tunnel.includes(`ExecStart=${ROOT}/scripts/tunnel.sh --cloudflared ${fakeCloudflared} --origin http://127.0.0.1:9876 --url-file ${r.envDir}/tunnel/PUBLIC_URL`),
      tunnel.find((l) => l.startsWith('ExecStart')));
    assert.ok(tunnel.includes(`InaccessiblePaths=${r.envFile}`), 'the network-facing tunnel cannot read the token');
    assert.ok(tunnel.includes('MemoryDenyWriteExecute=yes'), 'cloudflared (Go, no JIT) keeps it');
    assert.deepEqual(tunnel.filter((l) => l.startsWith('ReadWritePaths=')), [`ReadWritePaths=${r.envDir}/tunnel`],
      'the tunnel may write its own folder only, never the env file, audit log or tasks');
    assert.equal(statSync(join(r.envDir, 'tunnel')).mode & 0o777, 0o700);
    assert.equal(p.stdout.includes(r.token) || p.stderr.includes(r.token), false);
  } finally {
    r.cleanup();
  }
});

test('install-systemd: paths with spaces and % are quoted; the rendered ExecStart runs the server', async () => {
  const r = installRig({ MCP_PORT: '0' }, 'my hermes 100%');
  try {
    const p = r.install(['--no-enable', '--env-file', r.envFile]);
    assert.equal(p.status, 0, p.stderr);
    const svc = directives(r.unit('hermes-mcp.service'));
    const esc = r.envFile.replaceAll('%', '%%');
    assert.ok(svc.includes(`ExecStart=${realpathSync(join(ROOT, "build/release/hermes-mcp"))} serve --env-file "${esc}"`), svc.find((l) => l.startsWith('ExecStart')));
    assert.ok(svc.includes(`WorkingDirectory=${r.envDir.replaceAll('%', '%%')}`));
    // Undo the unit-file quoting the way systemd does and run that command line.
    const line = svc.find((l) => l.startsWith('ExecStart=')).slice('ExecStart='.length);
    const argv = [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => (m[1] ?? m[2]).replaceAll('%%', '%'));
    const proc = spawn(argv[0], argv.slice(1), { cwd: r.envDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d) => { out += d; });
    await until(() => /listening on/.test(out) || proc.exitCode !== null, 'the server to start');
    assert.match(out, /listening on http:\/\/127\.0\.0\.1:\d+\/mcp/);
    proc.kill('SIGTERM');
    assert.equal(await exited(proc), 0);
  } finally {
    r.cleanup();
  }
});

test('install-systemd: --help, and clear errors with exit code 2', () => {
  const r = installRig({ MCP_PORT: '0' });
  try {
    const help = r.install(['--help']);
    assert.equal(help.status, 0);
    for (const o of ['--env-file', '--bin', '--socket', '--tunnel', '--no-enable']) assert.ok(help.stdout.includes(o), o);
    const unknown = r.install(['--frobnicate']);
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /unknown argument '--frobnicate'/);
    const missing = r.install(['--no-enable', '--env-file', join(r.home, 'nope')]);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /not found; create it with: hermes-mcp token gen --env-file/);
    const noBin = r.install(['--no-enable', '--bin', join(r.home, 'no-such-binary')]);
    assert.equal(noBin.status, 2);
    assert.match(noBin.stderr, /--bin PATH/);
    const port0 = r.install(['--no-enable', '--socket']);
    assert.equal(port0.status, 2);
    assert.match(port0.stderr, /set a fixed MCP_PORT/);
    assert.equal(existsSync(join(r.unitDir, 'hermes-mcp.service')), false, 'nothing written on an error');
    const ok = r.install(['--no-enable']);
    assert.equal(ok.status, 0, ok.stderr);
    assert.ok(existsSync(join(r.unitDir, 'hermes-mcp.service')));
  } finally {
    r.cleanup();
  }
});

test('systemd-analyze verify accepts the rendered units', (t) => {
  const which = spawnSync('sh', ['-c', 'command -v systemd-analyze'], { encoding: 'utf8' });
  if (which.status !== 0) {
    t.skip('systemd-analyze is not installed (apt-get install systemd); units not verified');
    return;
  }
  const r = installRig({ MCP_PORT: '8765' });
  const fakeCloudflared = join(r.home, 'cloudflared');
  writeFileSync(fakeCloudflared, '#!/bin/sh\nexit 0\n');
  chmodSync(fakeCloudflared, 0o755);
  const runtime = join(r.home, 'runtime');
  mkdirSync(runtime, { mode: 0o700 });
  try {
    const p = r.install(['--no-enable', '--socket', '--tunnel', '--cloudflared', fakeCloudflared]);
    assert.equal(p.status, 0, p.stderr);
    const units = readdirSync(r.unitDir).map((f) => join(r.unitDir, f));
    const v = spawnSync('systemd-analyze', ['verify', '--user', ...units],
      { env: { ...process.env, XDG_CONFIG_HOME: r.cfg, XDG_RUNTIME_DIR: runtime }, encoding: 'utf8' });
    if (v.status !== 0 && /Failed to initialize manager|Failed to lookup RuntimeDirectory/.test(v.stderr)) {
      t.skip(`systemd-analyze cannot run here: ${v.stderr.trim().split('\n')[0]}`);
      return;
    }
    assert.equal(v.status, 0, v.stderr);
    // verify only warns (exit 0) on unknown keys or bad values: any message is a failure.
    assert.equal(v.stderr.trim(), '', v.stderr);
    // And it does catch a bad directive, so the check above means something.
    const bad = join(r.home, 'bad.service');
    writeFileSync(bad, r.unit('hermes-mcp.service').replace('ProtectSystem=strict', 'ProtectSystem=strict\nProtectNothing=yes'));
    const vb = spawnSync('systemd-analyze', ['verify', '--user', bad],
      { env: { ...process.env, XDG_CONFIG_HOME: r.cfg, XDG_RUNTIME_DIR: runtime }, encoding: 'utf8' });
    assert.match(vb.stderr, /Unknown key 'ProtectNothing'/);
  } finally {
    r.cleanup();
  }
});
