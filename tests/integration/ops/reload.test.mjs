// SIGHUP: the token, the agent settings and the contract change under a running server without
// dropping a connection or a call in flight; a bad new file keeps the old state and says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, chmodSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, startFake, agentEnv, until } from '../../lib/lib.mjs';
import { events, logMark, waitAnyEvent, waitEvent } from '../../lib/events.mjs';

// One JSON-RPC POST over a given keep-alive agent; resolves {status, json, reused}.
function rpc(srv, agent, token, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? '' : JSON.stringify(body);
    const req = http.request({
      host: '127.0.0.1', port: srv.port, path: body === undefined ? '/metrics' : '/mcp',
      method: body === undefined ? 'GET' : 'POST', agent,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        Authorization: `Bearer ${token}`, 'Content-Length': Buffer.byteLength(data) },
    }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode, json, reused: req.reusedSocket, port: req.socket?.localPort });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

const task = (id, text) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call',
  params: { name: 'hermes_task', arguments: { task: text, mode: 'sync', id } } });
const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
const chats = (fake) => fake.received().filter((r) => r.path === '/v1/chat/completions');
const body = (rec) => (typeof rec.body === 'string' ? JSON.parse(rec.body) : rec.body);
const systemText = (rec) => body(rec).messages[0].content;

test('token rotate + new agent + new contract: nothing in flight is dropped', async () => {
  const fakeA = await startFake();
  const fakeB = await startFake();
  const agentFile = agentEnv(fakeA);
  const contract = join(mkdtempSync(join(tmpdir(), 'hm-contract-')), 'contract.md');
  writeFileSync(contract, 'Contract version one.\n');
  const srv = await startHermes({ HERMES_ENV_PATH: agentFile, HERMES_CONTRACT_PATH: contract });
  const keep = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const other = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    let r = await rpc(srv, keep, srv.token, ping);
    assert.equal(r.status, 200);
    const socketPort = r.port;
    await until(async () => {
      const res = await rpc(srv, other, srv.token, task('before', 'first'));
      return res.json?.result?.isError === false && systemText(chats(fakeA).at(-1)).includes('Contract version one');
    }, 'the contract to be in use');

    // A call held at agent A across the reload.
    const held = rpc(srv, other, srv.token, task('held', 'slow one [delay=1500]'));
    await until(() => chats(fakeA).some((c) => body(c).messages[1].content.includes('slow one')), 'the held call to reach agent A');

    writeFileSync(agentFile, `API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=${fakeB.port}\nAPI_SERVER_KEY=${fakeB.key}\n`);
    writeFileSync(contract, 'Contract version two.\n');
    const rot = spawnSync(HERMES, ['token', 'rotate', '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.equal(rot.status, 0, rot.stderr);
    assert.match(rot.stdout, /told 1 running server to reload/);
    const newToken = readFileSync(srv.envFile, 'utf8').match(/^MCP_AUTH_TOKEN=([0-9a-f]{64})$/m)[1];
    assert.notEqual(newToken, srv.token);
    assert.ok(!rot.stdout.includes(newToken) && !rot.stderr.includes(newToken));

    // The old token stops working at once (asked on a connection of its own: an early refusal
    // closes its connection, since the request is not read to its end).
    const fresh = new http.Agent({ keepAlive: false });
    await until(async () => (await rpc(srv, fresh, srv.token, ping)).status === 401, 'the old token to be refused');
    // The connection kept alive from before the reload carries on with the new token.
    r = await rpc(srv, keep, newToken, ping);
    assert.equal(r.status, 200);
    assert.equal(r.reused, true, 'the kept-alive connection was not dropped');
    assert.equal(r.port, socketPort, 'still the first socket');

    // The call in flight finishes at agent A, with the token it came with.
    const h = await held;
    assert.equal(h.status, 200);
    assert.equal(h.json.result.isError, false, JSON.stringify(h.json));
    assert.equal(h.json.result.structuredContent.status, 'completed');

    // New calls go to agent B with its key and the new contract.
    r = await rpc(srv, keep, newToken, task('after', 'second'));
    assert.equal(r.json.result.isError, false, JSON.stringify(r.json));
    const atB = chats(fakeB);
    assert.equal(atB.length, 1);
    assert.ok(systemText(atB[0]).includes('Contract version two'));
    assert.equal(chats(fakeA).filter((c) => body(c).messages[1].content === 'second').length, 0);
  } finally {
    keep.destroy();
    other.destroy();
    assert.equal(await srv.stop(), 0);
    await fakeA.stop();
    await fakeB.stop();
  }
});

test('a bad env file, agent env file or contract on reload keeps what is in use and says why', async () => {
  const fake = await startFake();
  const agentFile = agentEnv(fake);
  const contract = join(mkdtempSync(join(tmpdir(), 'hm-contract-')), 'contract.md');
  writeFileSync(contract, 'The contract in use.\n');
  const srv = await startHermes({ HERMES_ENV_PATH: agentFile, HERMES_CONTRACT_PATH: contract });
  const agent = new http.Agent({ keepAlive: true });
  const good = readFileSync(srv.envFile, 'utf8');
  const works = async (id) => {
    const r = await rpc(srv, agent, srv.token, task(id, 'still there?'));
    return r.status === 200 && r.json.result.isError === false;
  };
  try {
    assert.ok(await works('t0'));
    const logLen = () => logMark(srv);

    // The env file opened to others: refused, the old token stays.
    let mark = logLen();
    chmodSync(srv.envFile, 0o644);
    srv.proc.kill('SIGHUP');
    let e = await waitEvent(srv, 'reload_rejected', { config: 'env' }, { since: mark });
    assert.match(e.line, /(mode|readable)/);
    assert.ok(await works('t1'));
    chmodSync(srv.envFile, 0o600);

    // A token of the wrong form.
    mark = logLen();
    writeFileSync(srv.envFile, good.replace(/^MCP_AUTH_TOKEN=.*$/m, 'MCP_AUTH_TOKEN=short'));
    srv.proc.kill('SIGHUP');
    e = await waitEvent(srv, 'reload_rejected', { config: 'env' }, { since: mark });
    assert.match(e.line, /MCP_AUTH_TOKEN/);
    assert.ok(await works('t2'));
    assert.equal((await rpc(srv, agent, 'short', ping)).status, 401);
    // A key that needs a restart: applied later, and said so.
    mark = logLen();
    writeFileSync(srv.envFile, good.replace(/^MCP_PORT=.*$/m, 'MCP_PORT=1') + 'RATE_LIMIT_PER_MIN=7\n');
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_restart_needed', { config: 'env', keys: 'MCP_PORT, RATE_LIMIT_PER_MIN' }, { since: mark });
    assert.ok(await works('t2b'));
    writeFileSync(srv.envFile, good);

    // The agent env file gone: the agent keeps its key.
    mark = logLen();
    rmSync(agentFile);
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'agent_env_rejected', { file: agentFile }, { since: mark });
    assert.ok(await works('t3'));

    // The contract gone: the previous one is still sent.
    mark = logLen();
    rmSync(contract);
    assert.ok(await works('t4'));
    assert.match(srv.proc.stderrText.slice(mark), /HERMES_CONTRACT_PATH .*; using the previous contract/);
    assert.ok(systemText(chats(fake).at(-1)).includes('The contract in use.'));

    // Nothing secret in what the server said about it.
    assert.ok(!srv.proc.stderrText.includes(srv.token) && !srv.proc.stderrText.includes(fake.key));
  } finally {
    agent.destroy();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('a reload of an env file without MCP_AUTH_TOKEN keeps the token: authentication never turns off', async () => {
  const srv = await startHermes();
  const agent = new http.Agent({ keepAlive: false });
  try {
    assert.equal((await rpc(srv, agent, srv.token, ping)).status, 200);
    const mark = srv.proc.stderrText.length;
    const good = readFileSync(srv.envFile, 'utf8');
    writeFileSync(srv.envFile, good.replace(/^MCP_AUTH_TOKEN=.*\n/m, ''));
    srv.proc.kill('SIGHUP');
    const e = await waitAnyEvent(srv, ['reload_applied', 'reload_rejected'], { config: 'env' }, { since: mark });
    // Anyone without the token is still refused; the token in use still works.
    assert.equal((await rpc(srv, agent, 'no-token-at-all', ping)).status, 401);
    assert.equal((await rpc(srv, agent, srv.token, ping)).status, 200);
    assert.equal(e.event, 'reload_rejected');
    assert.match(e.line, /no MCP_AUTH_TOKEN, TOKENS_FILE or OAUTH_ISSUER_URL in .*; set TOKENS_FILE again, or create a token with: hermes-mcp token gen/);
  } finally {
    agent.destroy();
    assert.equal(await srv.stop(), 0);
  }
});

test('MCP_DRAIN_GRACE_S changed on reload is applied or named, never silently ignored', async () => {
  const srv = await startHermes({ MCP_DRAIN_GRACE_S: '1' });
  const mark = logMark(srv);
  writeFileSync(srv.envFile, readFileSync(srv.envFile, 'utf8').replace(/^MCP_DRAIN_GRACE_S=.*$/m, 'MCP_DRAIN_GRACE_S=7'));
  srv.proc.kill('SIGHUP');
  await waitEvent(srv, 'reload_applied', { config: 'env' }, { since: mark });
  const named = events(srv, 'reload_restart_needed', { keys: /MCP_DRAIN_GRACE_S/ }, mark).length > 0;
  assert.equal(await srv.stop(), 0);
  if (!named) assert.equal(events(srv, 'drain_started', { calls: 0, grace_s: 7 }, mark).length, 1);
});

test('MCP_PUBLIC_HOSTS added on reload is allowed at once (the tunnel recipes say: add it, reload)', async () => {
  const srv = await startHermes();
  const viaTunnel = () => new Promise((resolve, reject) => {
    const data = JSON.stringify(ping);
    const req = http.request({ host: '127.0.0.1', port: srv.port, path: '/mcp', method: 'POST',
      headers: { Host: 'mcp.example.com', 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        Authorization: `Bearer ${srv.token}`, 'Content-Length': Buffer.byteLength(data) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(data);
  });
  try {
    assert.equal(await viaTunnel(), 403);
    const mark = logMark(srv);
    writeFileSync(srv.envFile, readFileSync(srv.envFile, 'utf8') + 'MCP_PUBLIC_HOSTS=mcp.example.com\n');
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_applied', { config: 'env' }, { since: mark });
    assert.equal(await viaTunnel(), 200);
    assert.deepEqual(events(srv, 'reload_restart_needed', { keys: /MCP_PUBLIC_HOSTS/ }, mark), []);
    // And taken away again.
    writeFileSync(srv.envFile, readFileSync(srv.envFile, 'utf8').replace(/^MCP_PUBLIC_HOSTS=.*\n/m, ''));
    const mark2 = logMark(srv);
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_applied', { config: 'env' }, { since: mark2 });
    assert.equal(await viaTunnel(), 403);
  } finally {
    assert.equal(await srv.stop(), 0);
  }
});

test('a FIFO as the registry or the contract is refused, never read: the event loop does not hang', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-fifo-'));
  const contract = join(dir, 'contract.md');
  assert.equal(spawnSync('mkfifo', ['-m', '600', contract]).status, 0);
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_CONTRACT_PATH: contract });
  const agent = new http.Agent({ keepAlive: false });
  try {
    const call = rpc(srv, agent, srv.token, task('fifo-1', 'hello'));
    const r = await Promise.race([call, new Promise((res) => setTimeout(() => res('hung'), 8000))]);
    assert.notEqual(r, 'hung', 'the server hung opening the FIFO contract');
    assert.equal(r.json.result.isError, false, JSON.stringify(r.json));
    assert.ok(systemText(chats(fake).at(-1)).startsWith('You are a Hermes agent'), 'the built-in contract');
    // The registry (AGENTS_FILE, re-checked before every call) becomes a FIFO.
    const reg = srv.dir + '/agents.yaml';
    assert.equal(spawnSync('mkfifo', ['-m', '600', reg]).status, 0);
    const h = await Promise.race([fetch(`${srv.base}/health`).then((x) => x.json()),
      new Promise((res) => setTimeout(() => res('hung'), 8000))]);
    assert.notEqual(h, 'hung', 'the server hung opening the FIFO registry');
    assert.match(h.registry_error, /not a regular file/);
  } finally {
    agent.destroy();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a SIGHUP during the drain is ignored; the call in flight still finishes', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_DRAIN_GRACE_S: '10' });
  const agent = new http.Agent({ keepAlive: false });
  try {
    const held = rpc(srv, agent, srv.token, task('drain-1', 'slow [delay=1200]'));
    await until(() => chats(fake).length === 1, 'the call to reach the agent');
    srv.proc.kill('SIGTERM');
    await waitEvent(srv, 'stop_requested', { signal: 'TERM' });
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'reload_ignored');
    const h = await held;
    assert.equal(h.status, 200);
    assert.equal(h.json.result.structuredContent.status, 'completed');
    assert.deepEqual(events(srv, 'reload_applied'), [], 'no reload happened');
  } finally {
    agent.destroy();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});
