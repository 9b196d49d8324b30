// The nginx configuration of docs/guides/deployment.md, taken from the page itself, in front of the real server:
// smoke passes through it, the public host name and the client address come through, and
// progress events stream (proxy_buffering off) instead of arriving with the result. Needs
// nginx (nginx-light, from deps.apt); without it the test skips, which fails the run (tests/integration/run.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, HERMES, startHermes, startFake, agentEnv, until } from '../../lib/lib.mjs';
import { NGINX, nginxBlocks, substitute, startNginx } from '../../lib/nginx.mjs';

// The TypeScript SDK v2 client (scripts/node-tools.sh client), which speaks 2026-07-28.
const V2 = join(ROOT, 'tools/client/node_modules/@modelcontextprotocol/client/dist/index.mjs');
const { Client: ClientV2, StreamableHTTPClientTransport: HttpV2 } = await import(V2);

// The server block of the deployment guide's ```nginx fence, on plain HTTP at a test port.
function readmeServerBlock(listenPort, upstreamPort) {
  const [block] = nginxBlocks('docs/guides/deployment.md');
  assert.ok(block, 'docs/guides/deployment.md has an nginx block');
  return substitute(block, [['listen 443 ssl;', `listen 127.0.0.1:${listenPort};`],
    ['proxy_pass http://127.0.0.1:8765;', `proxy_pass http://127.0.0.1:${upstreamPort};`]]);
}

const startProxy = (upstreamPort) => startNginx((port) => readmeServerBlock(port, upstreamPort));

// A POST through nginx with a chosen Host and X-Forwarded-For; the body arrives piece by piece
// in chunks[] with the time each came.
function postVia(px, srv, headers, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const t0 = Date.now();
    const req = http.request({ host: '127.0.0.1', port: px.port, path: '/mcp', method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        Authorization: `Bearer ${srv.token}`, 'Content-Length': Buffer.byteLength(data), ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push({ at: Date.now() - t0, text: d.toString() }));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, chunks,
        text: chunks.map((c) => c.text).join(''), total: Date.now() - t0 }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

test('the deployment guide\'s nginx config: smoke passes through it; host, client address and SSE come through', { skip: NGINX ? false : 'nginx not installed (scripts/deps.sh installs nginx-light)' }, async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_PUBLIC_HOSTS: 'mcp.example.com',
    TRUSTED_PROXIES: '127.0.0.1,::1' });
  const px = await startProxy(srv.port);
  try {
    const smoke = spawnSync(HERMES, ['smoke', '--base', px.base, '--env-file', srv.envFile], { encoding: 'utf8' });
    assert.equal(smoke.status, 0, smoke.stdout + smoke.stderr);
    assert.doesNotMatch(smoke.stdout, /FAIL/);

    // The public name passes the Host check; another name does not.
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    let r = await postVia(px, srv, { Host: 'mcp.example.com', 'X-Forwarded-For': '203.0.113.7' }, ping);
    assert.equal(r.status, 200, r.text);
    r = await postVia(px, srv, { Host: 'evil.example.net' }, ping);
    assert.equal(r.status, 403);

    // The audit log names the client nginx forwarded for, not nginx.
    await until(() => existsSync(srv.auditFile) && readFileSync(srv.auditFile, 'utf8').includes('203.0.113.7'), 'the audit line');
    const lines = readFileSync(srv.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(lines.some((l) => l.ip === '203.0.113.7' && l.status === 200 && l.rpc_method === 'ping'));

    // Progress events reach the client while the task runs, not all at the end.
    r = await postVia(px, srv, { Host: 'mcp.example.com' }, { jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'hermes_task', arguments: { task: 'stream me [delay=1500] [progress=3]', mode: 'sync', id: 'px-1' },
        _meta: { progressToken: 'p1' } } });
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /text\/event-stream/);
    const firstProgress = r.chunks.find((c) => c.text.includes('notifications/progress'));
    assert.ok(firstProgress, 'progress arrived');
    assert.ok(r.text.includes('"id":2') && r.text.includes('completed'), 'the result arrived');
    assert.ok(firstProgress.at < r.total - 400, `progress streamed (first at ${firstProgress.at} ms of ${r.total} ms)`);
  } finally {
    await px.stop();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

// Two SDK clients behind the deployment guide's proxy: every peer the server sees is 127.0.0.1 and both
// clients number their requests alike, so nothing on the wire tells them apart without a session.
async function sdkClient(px, srv, name) {
  const transport = new StreamableHTTPClientTransport(new URL(`${px.base}/mcp`), { requestInit: { headers: srv.auth } });
  const client = new Client({ name, version: '1' }, { capabilities: {} });
  await client.connect(transport);
  await client.listTools();
  return client;
}

const interrupted = (fake) => fake.received().filter((x) => x.event === 'interrupted');
const taskCall = (client, id, task, opts) =>
  client.callTool({ name: 'hermes_task', arguments: { task, mode: 'sync', id } }, undefined, opts);

test('behind the proxy, one client cannot cancel another client\'s call (stateless)', { skip: NGINX ? false : 'nginx not installed' }, async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), TRUSTED_PROXIES: '127.0.0.1,::1' });
  const px = await startProxy(srv.port);
  const a = await sdkClient(px, srv, 'client-a');
  const b = await sdkClient(px, srv, 'client-b');
  try {
    // A's long call and B's call carry the same JSON-RPC id (each client's third request).
    const pa = taskCall(a, 'px-a', 'long [delay=1500]', { timeout: 8000 });
    await until(() => fake.received().some((x) => x.body?.messages?.[1]?.content?.includes('long')), 'A at the agent');
    // B gives up on its own call: the SDK sends notifications/cancelled for that id.
    await assert.rejects(taskCall(b, 'px-b', 'short [delay=800]', { timeout: 150 }), /timed out/i);
    // And B names A's id outright.
    await b.notification({ method: 'notifications/cancelled', params: { requestId: 2, reason: 'not mine' } });
    const ra = await pa;
    assert.equal(ra.isError, false, JSON.stringify(ra));
    assert.equal(ra.structuredContent.status, 'completed');
    assert.match(srv.proc.stderrText, /notifications\/cancelled ignored/, 'the ignored cancels are logged');
    assert.deepEqual(interrupted(fake), [], 'no agent work was interrupted');
    // The client's own cancel without a session: it closes its POST, and that call stops.
    const req = http.request({ host: '127.0.0.1', port: px.port, path: '/mcp', method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...srv.auth } });
    req.on('error', () => {});
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hermes_task', arguments: { task: 'hang [delay=20000]', mode: 'sync', id: 'px-h' } } }));
    await until(() => fake.received().some((x) => x.body?.messages?.[1]?.content?.includes('hang')), 'the hang-up call at the agent');
    req.destroy();
    await until(() => interrupted(fake).length === 1, 'the hung-up call\'s agent work to be interrupted');
    await until(() => existsSync(join(srv.dir, 'tasks', 'px-h', 'result.json')), 'its result.json');
    assert.equal(JSON.parse(readFileSync(join(srv.dir, 'tasks', 'px-h', 'result.json'), 'utf8')).status, 'cancelled');
  } finally {
    await a.close().catch(() => {}); await b.close().catch(() => {});
    await px.stop();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('behind the proxy, a client\'s own cancel works in its session, and only there', { skip: NGINX ? false : 'nginx not installed' }, async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), TRUSTED_PROXIES: '127.0.0.1,::1', MCP_SESSIONS: '1' });
  const px = await startProxy(srv.port);
  const a = await sdkClient(px, srv, 'client-a');
  const b = await sdkClient(px, srv, 'client-b');
  try {
    const pa = taskCall(a, 'sx-a', 'long [delay=1500]', { timeout: 20000 });
    await until(() => fake.received().filter((x) => x.path === '/v1/chat/completions').length === 1, 'A at the agent');
    // B's own call, same id as A's, cancelled by B's SDK on its timeout: only B's work stops.
    await assert.rejects(taskCall(b, 'sx-b', 'forever [delay=20000]', { timeout: 400 }), /timed out/i);
    await until(() => interrupted(fake).length === 1, 'B\'s agent work to be interrupted');
    const ra = await pa;
    assert.equal(ra.isError, false, JSON.stringify(ra));
    assert.equal(ra.structuredContent.status, 'completed');
    assert.equal(interrupted(fake).length, 1, 'A\'s work ran to its end');
    await until(() => existsSync(join(srv.dir, 'tasks', 'sx-b', 'result.json')), 'B\'s result.json');
    assert.equal(JSON.parse(readFileSync(join(srv.dir, 'tasks', 'sx-b', 'result.json'), 'utf8')).status, 'cancelled');
  } finally {
    await a.close().catch(() => {}); await b.close().catch(() => {});
    await px.stop();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

// A 2026-07-28 client behind the deployment guide's proxy: the per-request headers (MCP-Protocol-Version,
// Mcp-Method, Mcp-Name) pass nginx and still match the body, progress streams through it, and
// two such clients each get their own answers with nothing on the wire but their requests.
test('behind the proxy, SDK v2 clients pinned to 2026-07-28: list, call with progress, two at once', { skip: NGINX ? false : 'nginx not installed' }, async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_PUBLIC_HOSTS: 'mcp.example.com',
    TRUSTED_PROXIES: '127.0.0.1,::1' });
  const px = await startProxy(srv.port);
  const clients = [];
  try {
    for (const name of ['px-v2-a', 'px-v2-b']) {
      const wire = [];
      const fetchRec = async (url, init) => {
        const res = await fetch(url, init);
        wire.push({ headers: new Headers(init?.headers), status: res.status, type: res.headers.get('content-type') });
        return res;
      };
      const transport = new HttpV2(new URL(`${px.base}/mcp`), { requestInit: { headers: srv.auth }, fetch: fetchRec });
      const client = new ClientV2({ name, version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(transport);
      clients.push({ client, wire, name });
    }
    for (const { client } of clients) {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'hermes_task'), 'tools listed through the proxy');
    }
    const results = await Promise.all(clients.map(({ client, name }) => {
      const seen = [];
      return client.callTool({ name: 'hermes_task',
        arguments: { task: `via proxy [delay=800] [progress=3] [text=answer for ${name}]`, mode: 'sync', id: `px-${name}` } },
      { onprogress: (p) => seen.push(p.progress) }).then((res) => ({ res, seen, name }));
    }));
    for (const { res, seen, name } of results) {
      assert.equal(res.isError, false, JSON.stringify(res));
      assert.equal(res.structuredContent.id, `px-${name}`);
      assert.match(res.structuredContent.summary, new RegExp(`answer for ${name}`), 'each client gets its own answer');
      assert.ok(seen.length >= 1, `progress reached ${name} through the proxy`);
    }
    for (const { wire, name } of clients) {
      const calls = wire.filter((e) => e.headers.get('mcp-method') === 'tools/call');
      assert.ok(calls.length >= 1, `${name} sent its calls as 2026-07-28 requests`);
      for (const e of wire) {
        assert.equal(e.headers.get('mcp-protocol-version'), '2026-07-28');
        assert.equal(e.headers.get('mcp-session-id'), null, 'stateless: no session');
        assert.equal(e.status, 200, `${name}: every request answered 200 through the proxy`);
      }
      assert.ok(calls.some((e) => /text\/event-stream/.test(e.type || '')), `${name}: the call with progress streamed`);
    }
  } finally {
    for (const { client } of clients) await client.close().catch(() => {});
    await px.stop();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});
