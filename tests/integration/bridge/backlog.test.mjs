// A client that stops reading its SSE response while the agent streams a flood of progress:
// past the server's per-response backlog cap (8 MiB) the response is dropped, and with it the
// call and its agent request. The drop is decided deep inside libcurl's write callback and the
// SSE decoder (agent data -> progress notification -> stream write), so freeing anything there
// pulls the floor from under them: run it under ASan (make SANITIZE=1) to see that it does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHermes, startFake, agentEnv, until } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

async function gauges(srv) {
  const text = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
  const v = (name) => Number(text.match(new RegExp(`^${name} (\\S+)$`, 'm'))?.[1]);
  return { calls: v('hermes_mcp_calls_in_flight'), agent: v('hermes_mcp_agent_requests_in_flight') };
}

test('a client that stops reading a flood of progress is dropped; call and agent request are freed; the server keeps serving', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  const sock = net.connect(srv.port, '127.0.0.1');
  try {
    await once(sock, 'connect');
    // 60,000 tool calls: 120,000 progress frames, each a progress notification of ~170 bytes
    // on this response, ~20 MB in all: far past the cap plus what the socket buffers hold.
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {
      name: 'hermes_task', arguments: { task: 'flood [progress=60000] [delay=500]', mode: 'sync', id: 'flood-1' },
      _meta: { progressToken: 'f' } } });
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nAuthorization: Bearer ${srv.token}\r\n` +
      'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
      `MCP-Protocol-Version: 2025-06-18\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    sock.pause(); // and never read again
    sock.on('error', () => {});

    await waitEvent(srv, 'stream_dropped', { peer: /127\.0\.0\.1/ }, { ms: 60000 });
    await until(() => fake.received().some((x) => x.event === 'interrupted'), 'the agent request to be closed', 10000);
    await until(() => existsSync(join(srv.dir, 'tasks', 'flood-1', 'result.json')), 'the task\'s result.json');
    assert.equal(JSON.parse(readFileSync(join(srv.dir, 'tasks', 'flood-1', 'result.json'), 'utf8')).status, 'cancelled');
    await until(async () => { const g = await gauges(srv); return g.calls === 0 && g.agent === 0; },
      'no call and no agent request left in flight');

    // Another client is served as usual.
    const client = new Client({ name: 'after', version: '1' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
    await client.listTools();
    const r = await client.callTool({ name: 'hermes_task', arguments: { task: 'after the flood [progress=3]', mode: 'sync', id: 'after-1' } });
    assert.equal(r.isError, false, JSON.stringify(r));
    assert.equal(r.structuredContent.status, 'completed');
    await client.close();
  } finally {
    sock.destroy();
    await fake.stop();
    assert.equal(await srv.stop(), 0, 'clean exit, no sanitizer report');
  }
});

// In session mode the dropped response's events stay in the replay ring: a resume gets them and
// the result; once a resume has delivered everything, the stream is forgotten (a second resume
// of it is 404), not kept until the session ends.
test('session mode: a stream dropped for backlog is resumed to its end once, then forgotten', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_SESSIONS: '1' });
  const V = '2025-06-18';
  const H = { ...srv.auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': V };
  const init = await fetch(srv.url, { method: 'POST', headers: H, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: V, capabilities: {}, clientInfo: { name: 'bl', version: '1' } } }) });
  const sid = init.headers.get('mcp-session-id');
  await init.text();
  assert.ok(sid);
  await (await fetch(srv.url, { method: 'POST', headers: { ...H, 'Mcp-Session-Id': sid }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  const sock = net.connect(srv.port, '127.0.0.1');
  await once(sock, 'connect');
  sock.on('error', () => {});
  const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hermes_task', arguments: { task: 'flood [progress=60000] [delay=500]', mode: 'sync', id: 'flood-s' }, _meta: { progressToken: 'f' } } });
  let first = '';
  // Read up to the first event id, then stop reading.
  const gotStream = new Promise((res) => sock.on('data', function h(d) { first += d; const m = first.match(/id: (\d+)_(\d+)/); if (m) { sock.pause(); sock.off('data', h); res(m[1]); } }));
  sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nAuthorization: Bearer ${srv.token}\r\nMcp-Session-Id: ${sid}\r\n` +
    `Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: ${V}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  const no = await gotStream;
  try {
    await waitEvent(srv, 'stream_dropped', { peer: /127\.0\.0\.1/ }, { ms: 60000 });
    await until(() => existsSync(join(srv.dir, 'tasks', 'flood-s', 'result.json')), 'the result', 60000);
    const resume = async () => {
      const r = await fetch(srv.url, { headers: { ...srv.auth, Accept: 'text/event-stream', 'Mcp-Session-Id': sid, 'Last-Event-ID': `${no}_0`, 'MCP-Protocol-Version': V } });
      const t = await r.text();
      return { status: r.status, result: /"result"/.test(t) };
    };
    assert.deepEqual(await resume(), { status: 200, result: true }, 'the resume delivers the result');
    assert.equal((await resume()).status, 404, 'delivered: forgotten');
  } finally {
    sock.destroy();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});
