// The security envelope around the engine: start-up refusals, token rotation, rate limiting,
// slowloris deadlines, header limits, the audit log, and secrets kept out of every output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, readFileSync, statSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, post, until, INIT, HERMES } from '../../lib/lib.mjs';
import { events, waitEvent } from '../../lib/events.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TOKEN = 'ab'.repeat(32);

function serveOnce(envText, mode = 0o600) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-sec-'));
  const f = join(dir, 'env');
  writeFileSync(f, envText);
  chmodSync(f, mode);
  return spawnSync(HERMES, ['serve', '--env-file', f], { encoding: 'utf8', timeout: 5000 });
}

test('start-up refuses unsafe settings with a one-line reason and exit 2', () => {
  let r = serveOnce(`MCP_PORT=0\nMCP_AUTH_TOKEN=${TOKEN}\n`, 0o644);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /readable by others.*chmod 600/);
  assert.equal(r.stderr.trim().split('\n').length, 1);
  r = serveOnce('MCP_PORT=0\nMCP_AUTH_TOKEN=abc\n');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /64 hexadecimal/);
  r = serveOnce(`MCP_PORT=0\nMCP_AUTH_TOKEN=${TOKEN}\nMCP_HOST=0.0.0.0\n`);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /not a loopback address.*MCP_ALLOW_NON_LOOPBACK/);
  r = serveOnce('MCP_PORT=0\n');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /no MCP_AUTH_TOKEN.*token gen/);
  r = spawnSync(HERMES, ['serve', '--env-file', '/nonexistent/env'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /not found/);
  for (const out of [r.stdout, r.stderr]) assert.equal(out.includes(TOKEN), false);
});

test('listening beyond loopback needs the opt-in and warns loudly', async () => {
  const srv = await startHermes({ MCP_HOST: '0.0.0.0', MCP_ALLOW_NON_LOOPBACK: '1' });
  try {
    const e = await waitEvent(srv, 'listen_exposed', { addr: '0.0.0.0' });
    assert.match(e.line, /^hermes-mcp: warn: LISTENING BEYOND LOOPBACK/);
    const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(r.status, 200);
  } finally {
    await srv.stop();
  }
});

test('token gen writes mode 600 atomically and never prints the token', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-tok-'));
  const f = join(dir, 'env');
  writeFileSync(f, 'MCP_PORT=9999\n# comment kept\n');
  const out = execFileSync(HERMES, ['token', 'gen', '--env-file', f], { encoding: 'utf8' });
  const text = readFileSync(f, 'utf8');
  const tok = text.match(/^MCP_AUTH_TOKEN=([0-9a-f]{64})$/m)[1];
  assert.equal(out.includes(tok), false);
  assert.ok(out.includes(f));
  assert.equal(statSync(f).mode & 0o777, 0o600);
  assert.match(text, /^MCP_PORT=9999$/m);
  assert.match(text, /^# comment kept$/m);
  execFileSync(HERMES, ['token', 'gen', '--env-file', f]);
  const tok2 = readFileSync(f, 'utf8').match(/^MCP_AUTH_TOKEN=([0-9a-f]{64})$/m)[1];
  assert.notEqual(tok, tok2);
  assert.equal(readFileSync(f, 'utf8').match(/MCP_AUTH_TOKEN/g).length, 1);
});

test('token rotate: the running server takes the new token without restarting', async () => {
  const srv = await startHermes();
  try {
    const pid = srv.proc.pid;
    const out = execFileSync(HERMES, ['token', 'rotate', '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.match(out, /told 1 running server to reload/);
    const fresh = readFileSync(srv.envFile, 'utf8').match(/^MCP_AUTH_TOKEN=([0-9a-f]{64})$/m)[1];
    assert.equal(out.includes(fresh), false);
    // The reload is asynchronous: its event says it is done.
    await waitEvent(srv, 'reload_applied', { config: 'env' });
    let r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(r.status, 401, 'old token refused');
    r = await post({ ...srv, auth: { Authorization: `Bearer ${fresh}` } }, { jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.equal(r.status, 200, 'new token accepted');
    assert.equal(srv.proc.pid, pid);
    assert.equal(srv.proc.exitCode, null, 'still the same process');
    // A broken file on reload keeps the current state.
    writeFileSync(srv.envFile, 'MCP_AUTH_TOKEN=broken\n');
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_rejected', { config: 'env' });
    r = await post({ ...srv, auth: { Authorization: `Bearer ${fresh}` } }, { jsonrpc: '2.0', id: 3, method: 'ping' });
    assert.equal(r.status, 200);
    assert.equal(srv.proc.stderrText.includes(fresh), false);
  } finally {
    await srv.stop();
  }
});

test('rate limit: per client for requests without a valid token, 429 with an integer Retry-After', async () => {
  const srv = await startHermes({ RATE_LIMIT_PER_MIN: '6' });
  try {
    const bad = { ...srv, auth: { Authorization: `Bearer ${'0'.repeat(64)}` } };
    const none = { ...srv, auth: {} };
    for (let i = 0; i < 3; i++) assert.equal((await post(bad, INIT())).status, 401);
    for (let i = 0; i < 2; i++) assert.equal((await post(none, INIT())).status, 401);
    assert.equal((await fetch(`${srv.base}/nope`)).status, 404, 'unknown paths count too');
    const r = await post(bad, INIT());
    assert.equal(r.status, 429);
    assert.match(r.headers.get('retry-after'), /^[1-9][0-9]*$/);
    assert.ok(Number(r.headers.get('retry-after')) <= 10, 'one token comes back in 10 s at 6/min');
    assert.equal(r.json.error, 'rate_limited');
    // The valid credential has its own bucket: guessing from this address does not lock it out.
    for (let i = 0; i < 10; i++) assert.equal((await post(srv, { jsonrpc: '2.0', id: i, method: 'ping' })).status, 200);
    assert.equal((await post(none, INIT())).status, 429, 'the address stays limited');
    const h = await fetch(`${srv.base}/health`);
    assert.equal(h.status, 200, '/health is not rate limited');
    assert.equal((await h.json()).rate_limited, 2);
    await waitEvent(srv, 'rate_limited', { who: 'client 127.0.0.1', limit: 'RATE_LIMIT_PER_MIN', per_min: 6 });
    assert.equal(events(srv, 'rate_limited', { who: /^client / }).length, 1, 'logged once a minute');
  } finally {
    await srv.stop();
  }
});

test('rate limit: authenticated requests draw on a bucket per credential (RATE_LIMIT_AUTH_PER_MIN)', async () => {
  // The defaults: an ordinary client start-up burst (mcp-remote makes 17 requests) twice over,
  // from the one address every tunnelled client shares, is not refused.
  const dflt = await startHermes({ RATE_LIMIT_PER_MIN: '30' }, { keepDefaults: true });
  try {
    for (let i = 0; i < 40; i++) assert.equal((await post(dflt, { jsonrpc: '2.0', id: i, method: 'ping' })).status, 200, `request ${i}`);
    const none = { ...dflt, auth: {} };
    for (let i = 0; i < 30; i++) assert.equal((await post(none, INIT())).status, 401);
    assert.equal((await post(none, INIT())).status, 429, 'the 31st request without a token is refused');
  } finally {
    await dflt.stop();
  }
  const srv = await startHermes({ RATE_LIMIT_AUTH_PER_MIN: '5', RATE_LIMIT_PER_MIN: '100' });
  try {
    for (let i = 0; i < 5; i++) assert.equal((await post(srv, { jsonrpc: '2.0', id: i, method: 'ping' })).status, 200);
    const r = await post(srv, { jsonrpc: '2.0', id: 9, method: 'ping' });
    assert.equal(r.status, 429);
    assert.match(r.headers.get('retry-after'), /^[1-9][0-9]*$/);
    assert.equal((await post(srv, { jsonrpc: '2.0', id: 10, method: 'ping' })).status, 429);
    await waitEvent(srv, 'rate_limited', { who: /^credential [0-9a-f]{8} from 127\.0\.0\.1$/, limit: 'RATE_LIMIT_AUTH_PER_MIN', per_min: 5 });
    assert.equal(events(srv, 'rate_limited', { who: /^credential / }).length, 1, 'logged once a minute');
    assert.equal(srv.proc.stderrText.includes(srv.token), false, 'the token is never logged');
    assert.equal(srv.proc.stderrText.includes(srv.token.slice(0, 8)), false);
  } finally {
    await srv.stop();
  }
});

test('rate limit: X-Forwarded-For only from trusted proxies', async () => {
  // Requests without a token draw on the client address's bucket: 401 while it lasts, then 429.
  const trusted = await startHermes({ RATE_LIMIT_PER_MIN: '2', TRUSTED_PROXIES: '127.0.0.1' });
  try {
    const xff = (ip) => ({ 'X-Forwarded-For': `198.51.100.7, ${ip}` });
    const anon = { ...trusted, auth: {} };
    for (let i = 0; i < 2; i++) assert.equal((await post(anon, INIT(), xff('203.0.113.1'))).status, 401);
    assert.equal((await post(anon, INIT(), xff('203.0.113.1'))).status, 429);
    assert.equal((await post(anon, INIT(), xff('203.0.113.2'))).status, 401,
      'another client behind the proxy has its own bucket');
    // An entry that is not an address is not believed (it would reach the log): the proxy's own.
    for (let i = 0; i < 2; i++) assert.equal((await post(anon, INIT(), xff('not-an-address'))).status, 401);
    assert.equal((await post(anon, INIT(), xff('not-an-address'))).status, 429);
    await waitEvent(trusted, 'rate_limited', { who: 'client 127.0.0.1' });
    assert.equal(trusted.proc.stderrText.includes('not-an-address'), false);
  } finally {
    await trusted.stop();
  }
  // Two X-Forwarded-For lines (a client's own, then the one a proxy such as HAProxy adds instead
  // of appending): only the last is the proxy's, so the client cannot pick a bucket per request,
  // and another client behind the proxy still has its own.
  const twoLines = await startHermes({ RATE_LIMIT_PER_MIN: '2', TRUSTED_PROXIES: '127.0.0.1' });
  try {
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push(await rawStatus(twoLines.port, [`X-Forwarded-For: 10.0.0.${i}`, 'X-Forwarded-For: 203.0.113.9']));
    assert.deepEqual(statuses, [401, 401, 429, 429]);
    assert.equal(await rawStatus(twoLines.port, ['X-Forwarded-For: 203.0.113.9', 'X-Forwarded-For: 203.0.113.10']), 401,
      'the last line names another client: its own bucket');
  } finally {
    await twoLines.stop();
  }
  const direct = await startHermes({ RATE_LIMIT_PER_MIN: '2' });
  try {
    const anon = { ...direct, auth: {} };
    for (let i = 0; i < 2; i++) assert.equal((await post(anon, INIT(), { 'X-Forwarded-For': `203.0.113.${i}` })).status, 401);
    assert.equal((await post(anon, INIT(), { 'X-Forwarded-For': '203.0.113.99' })).status, 429,
      'an untrusted peer cannot pick its own bucket');
  } finally {
    await direct.stop();
  }
});

// The status of an unauthenticated POST /mcp with the given raw header lines (fetch would merge
// repeated headers into one).
function rawStatus(port, lines) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(INIT());
    const s = net.connect(port, '127.0.0.1', () => s.end([`POST /mcp HTTP/1.1`, `Host: 127.0.0.1:${port}`,
      'Content-Type: application/json', 'Accept: application/json, text/event-stream', 'Connection: close',
      ...lines, `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n')));
    let data = '';
    s.on('data', (d) => { data += d; });
    s.on('end', () => resolve(Number(data.match(/^HTTP\/1\.1 (\d+)/)?.[1])));
    s.on('error', reject);
  });
}

function slowSocket(port, chunks, everyMs) {
  // Sends chunks one at a time; resolves with how long the server kept the connection.
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = net.connect(port, '127.0.0.1');
    let i = 0, data = '';
    const timer = setInterval(() => { if (i < chunks.length && !s.destroyed) s.write(chunks[i++]); }, everyMs);
    s.on('data', (d) => { data += d; });
    const end = () => { clearInterval(timer); resolve({ ms: Date.now() - t0, data }); };
    s.on('close', end);
    s.on('error', () => {});
  });
}

test('slowloris: trickled headers and bodies are cut off; waiting streams are not', async () => {
  const srv = await startHermes({ MCP_SESSIONS: '1', MCP_HEADER_TIMEOUT_S: '1', MCP_BODY_TIMEOUT_S: '1' });
  try {
    // A legitimately waiting connection: an SSE GET stream that stays open.
    const init = await post(srv, INIT());
    const sid = init.headers.get('mcp-session-id');
    const ctl = new AbortController();
    const stream = await fetch(srv.url, { headers: { ...srv.auth, Accept: 'text/event-stream', 'Mcp-Session-Id': sid }, signal: ctl.signal });
    const reader = stream.body.getReader();
    await reader.read(); // priming event

    const header = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nX-Slow: `;
    const h = await slowSocket(srv.port, [...header, ...'a'.repeat(100)], 100);
    assert.ok(h.ms >= 900 && h.ms < 4000, `header trickle cut after ${h.ms} ms`);

    const body = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nAuthorization: Bearer ${srv.token}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 200\r\n\r\n';
    const b = await slowSocket(srv.port, [body, ...'{'.repeat(100)], 100);
    assert.ok(b.ms >= 900 && b.ms < 4000, `body trickle cut after ${b.ms} ms`);

    // The stream outlived both deadlines and still works: a ping on it would be a notification;
    // the session is alive and the connection is open.
    const ping = await post(srv, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'Mcp-Session-Id': sid });
    assert.equal(ping.status, 200);
    const pending = reader.read();
    const race = await Promise.race([pending.then(() => 'data-or-end'), sleep(300).then(() => 'open')]);
    assert.equal(race, 'open', 'the GET stream is still open after the deadlines passed');
    ctl.abort();
  } finally {
    await srv.stop();
  }
});

test('oversized headers get 431 and the server keeps serving', async () => {
  const srv = await startHermes();
  try {
    const code = await new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/mcp',
        headers: { ...srv.auth, 'Content-Type': 'application/json', 'X-Big': 'x'.repeat(32 * 1024) } },
      (res) => { res.resume(); resolve(res.statusCode); });
      req.on('error', reject);
      req.end('{}');
    });
    assert.equal(code, 431);
    assert.equal((await post(srv, { jsonrpc: '2.0', id: 1, method: 'ping' })).status, 200);
  } finally {
    await srv.stop();
  }
});

test('audit log: one JSONL line per request, mode 600, no secrets or bodies', async () => {
  const auditFile = join(mkdtempSync(join(tmpdir(), 'hm-aud-')), 'audit.jsonl');
  const srv = await startHermes({ AUDIT_LOG_PATH: auditFile });
  const marker = 'SECRET-TASK-TEXT-' + Date.now();
  try {
    await post(srv, INIT());
    await post(srv, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_agents', arguments: { note: marker } } });
    await post(srv, { jsonrpc: '2.0', id: 3, method: marker });
    await post({ ...srv, auth: {} }, { jsonrpc: '2.0', id: 4, method: 'ping' });
    await post(srv, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: marker, arguments: {} } });
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  const text = readFileSync(auditFile, 'utf8');
  assert.equal(statSync(auditFile).mode & 0o777, 0o600);
  const lines = text.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.length, 5);
  for (const l of lines) {
    for (const k of ['ts', 'ip', 'method', 'path', 'status', 'duration_ms']) assert.ok(k in l, k);
    assert.match(l.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(l.ip, '127.0.0.1');
  }
  assert.deepEqual(lines.map((l) => l.status), [200, 200, 200, 401, 200]);
  assert.equal(lines[0].rpc_method, 'initialize');
  assert.equal(lines[1].tool, 'list_agents');
  assert.equal(lines[1].error, 'invalid_arguments');
  assert.equal(lines[2].rpc_method, 'unknown', 'a method name the client made up is not logged');
  assert.equal(lines[2].error, '-32601');
  assert.equal(lines[4].error, '-32602');
  assert.equal(lines[4].tool, undefined, 'an unknown tool name is not logged');
  assert.equal(text.includes(marker), false, 'no task text, method or tool name from the client');
  assert.equal(text.includes(srv.token), false);
  assert.equal(text.includes('Bearer'), false);
});

test('audit log: a full disk never blocks serving; dropped lines are counted', async () => {
  const srv = await startHermes({ AUDIT_LOG_PATH: '/dev/full' });
  try {
    for (let i = 0; i < 5; i++) assert.equal((await post(srv, { jsonrpc: '2.0', id: i, method: 'ping' })).status, 200);
    // The audit writer runs beside the loop: wait for its count, not for a time.
    const dropped = await until(async () => {
      const d = (await (await fetch(`${srv.base}/health`)).json()).audit.dropped;
      return d >= 5 ? d : null;
    }, 'five dropped audit lines');
    assert.ok(dropped >= 5, `dropped ${dropped}`);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
  assert.equal(statSync('/dev/full').mode & 0o777, 0o666, '/dev/full was not chmodded');
});

test('audit log: a disk that does not answer (FIFO without reader) never blocks serving', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-fifo-'));
  const fifo = join(dir, 'audit.fifo');
  execFileSync('mkfifo', [fifo]);
  const srv = await startHermes({ AUDIT_LOG_PATH: fifo });
  try {
    const t0 = Date.now();
    for (let i = 0; i < 20; i++) assert.equal((await post(srv, { jsonrpc: '2.0', id: i, method: 'ping' })).status, 200);
    assert.ok(Date.now() - t0 < 2000, 'requests were answered while the audit writer is stuck');
  } finally {
    const t0 = Date.now();
    assert.equal(await srv.stop(), 0);
    assert.ok(Date.now() - t0 < 5000, 'shutdown does not hang on the stuck writer');
  }
});

test('audit log path that exists with loose permissions is tightened to 600', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-aud-'));
  const f = join(dir, 'audit.jsonl');
  writeFileSync(f, '');
  chmodSync(f, 0o644);
  const srv = await startHermes({ AUDIT_LOG_PATH: f });
  try {
    await post(srv, { jsonrpc: '2.0', id: 1, method: 'ping' });
  } finally {
    await srv.stop();
  }
  assert.equal(statSync(f).mode & 0o777, 0o600);
  assert.ok(existsSync(f));
});
