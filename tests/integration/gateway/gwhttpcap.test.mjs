// Streamable HTTP upstreams at their limits: with 64 calls held open at one upstream
// (server-everything over HTTP, max_in_flight 64, each POST an open SSE answer), a sampling
// request relayed to the client still gets its answer back: connections to an origin are capped
// at max_in_flight + 8, so the answer's POST never queues behind the held ones. And an HTTP upstream
// that fails (502, connection refused, a name that does not resolve) gives its callers and
// /readyz a generic reason only: its host, address and port (curl's text) stay in our log.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ROOT, startHermes, until, freePort, startEverythingHttp, upstreamsFile, connectClient,
  startNodeUpstream } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const HELD = 63; // calls held open at the upstream, beside the one relaying a request
let dir;
const children = [];

async function startFakeHttp(port, record) {
  return startNodeUpstream([FAKE, '--http', String(port), '--record', record], port, { children });
}

function gatewayFile(name, upstreams) {
  return upstreamsFile(dir, name, Object.entries(upstreams).map(([n, { url, extra = '' }]) =>
    `  ${n}:\n    url: ${url}\n${extra.includes('tools:') ? '' : '    tools: {include: ["*"]}\n'}${extra}`));
}

const connect = (srv) => connectClient(srv, { name: 'gw-httpcap', listTools: true });

before(() => { dir = mkdtempSync(join(tmpdir(), 'hm-gwhttpcap-')); });
after(() => {
  for (const p of children) p.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('63 calls held open at an HTTP upstream (max_in_flight 64): a relayed sampling answer still gets through', async () => {
  const upstream = await startEverythingHttp();
  children.push(upstream.proc);
  const srv = await startHermes({ MCP_SESSIONS: '1', GATEWAY_FILE: gatewayFile('cap', { evh: { url: upstream.url,
    extra: '    max_in_flight: 64\n    timeout: 120\n    tools: {include: [trigger-long-running-operation, trigger-sampling-request]}\n' } }) });
  const client = new Client({ name: 'gw-httpcap', version: '1.0.0' }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async () =>
    ({ role: 'assistant', model: 'm', content: { type: 'text', text: 'answered through the cap' } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
  await client.listTools();
  try {
    Array.from({ length: HELD }, () => client.callTool({ name: 'evh__trigger-long-running-operation',
      arguments: { duration: 60, steps: 1 } }, undefined, { timeout: 120000 }).catch((e) => e));
    await until(async () => new RegExp(`^hermes_mcp_gateway_calls_in_flight\\{upstream="evh"\\} ${HELD}$`, 'm').test(
      await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text()), `${HELD} calls at the upstream`, 15000);
    // The 64th call's POST stays open too; the upstream's sampling request arrives on it, and our
    // POST of the client's answer needs a connection of its own beyond the 64.
    const t0 = Date.now();
    const s = await client.callTool({ name: 'evh__trigger-sampling-request', arguments: { prompt: 'cap', maxTokens: 5 } },
      undefined, { timeout: 15000 });
    assert.ok(!s.isError, JSON.stringify(s));
    assert.match(JSON.stringify(s.content), /answered through the cap/);
    assert.ok(Date.now() - t0 < 10000, `answered after ${Date.now() - t0} ms`);
  } finally {
    await client.close();
    assert.equal(await srv.stop(), 0);
  }
});

test('an HTTP upstream failing (502, refused, unknown host): callers and /readyz never see its host or address', async () => {
  const badPort = await freePort();
  const bad = createServer((req, res) => { req.resume(); res.writeHead(502); res.end(`bad gateway at 10.9.8.7:${badPort}`); });
  await new Promise((r) => bad.listen(badPort, '127.0.0.1', r));
  const refusedPort = await freePort(); // nothing listens there
  const upPort = await freePort(); // serves at start, then is killed: refused mid-life
  const wasup = await startFakeHttp(upPort, join(dir, 'wasup.jsonl'));
  const upstreams = {
    wasup: { url: `http://127.0.0.1:${upPort}/mcp` },
    gw502: { url: `http://127.0.0.1:${badPort}/mcp` },
    refused: { url: `http://127.0.0.1:${refusedPort}/mcp` },
    nodns: { url: 'http://hm-no-such-host.invalid:8123/mcp' },
  };
  for (const u of Object.values(upstreams)) u.extra = '    required: false\n    connect_timeout: 2\n';
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile('bad', upstreams) });
  const leaks = (text) => [String(badPort), String(refusedPort), String(upPort), '127.0.0.1', '10.9.8.7', 'hm-no-such-host',
    '8123', 'Failed to connect', 'Could not resolve'].filter((s) => text.includes(s));
  try {
    await until(async () => {
      const body = await (await fetch(`${srv.base}/readyz`)).json();
      return ['gw502', 'refused', 'nodns'].every((n) => body.upstreams[n]?.error) && body.upstreams.wasup.state === 'ready';
    }, 'each upstream failed once', 15000);
    const ready = await (await fetch(`${srv.base}/readyz`)).text();
    assert.deepEqual(leaks(ready), [], ready);
    assert.match(ready, /answered HTTP 502/);
    // A tool error of an upstream gone mid-life (connection refused): the generic reason only.
    const client = await connect(srv);
    try {
      assert.equal((await client.callTool({ name: 'wasup__echo', arguments: { message: 'x' } })).content[0].text, 'Echo: x');
      wasup.kill('SIGKILL');
      let r;
      await until(async () => {
        r = await client.callTool({ name: 'wasup__echo', arguments: { message: 'x' } });
        return r.isError;
      }, 'a call failing once the upstream is gone');
      assert.equal(r.structuredContent.error, 'upstream_unavailable');
      assert.deepEqual(leaks(JSON.stringify(r)), [], JSON.stringify(r));
      const again = await client.callTool({ name: 'wasup__echo', arguments: { message: 'x' } });
      assert.deepEqual(leaks(JSON.stringify(again)), [], JSON.stringify(again));
    } finally { await client.close(); }
    // The operator's log has the details.
    assert.match(srv.proc.stderrText, new RegExp(`upstream refused: .*127\\.0\\.0\\.1.*${refusedPort}|upstream refused: .*Failed to connect`));
    assert.match(srv.proc.stderrText, /upstream nodns: .*hm-no-such-host/);
  } finally {
    assert.equal(await srv.stop(), 0);
    bad.close();
  }
});
