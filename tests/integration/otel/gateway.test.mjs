// Traces across the gateway: a client's traceparent -> our SERVER span -> a CLIENT span per call
// at an upstream, whose context goes on in params._meta (stdio and HTTP upstreams) and in the
// traceparent/tracestate headers (HTTP upstreams); tests/fakes/fake-upstream.mjs records both.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, startHermes, post, jsonLines, upstreamsFile, freePort, startNodeUpstream, until, gatewayFile,
  hermesCli, waitApprovals, modernHeaders, modernMeta } from '../../lib/lib.mjs';
import { startCollector } from '../../lib/otlp.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const H = { 'MCP-Protocol-Version': '2025-11-25' };
const rid = (n) => randomBytes(n).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'hm-otelgw-'));
const children = [];
after(() => {
  for (const p of children) p.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('client -> server span -> upstream CLIENT span -> the upstream, over stdio and HTTP', async () => {
  const received = join(dir, 'received.jsonl');
  const record = join(dir, 'record.jsonl');
  const port = await freePort();
  await startNodeUpstream([FAKE, '--http', String(port), '--record', record], port, { children });
  const gw = upstreamsFile(dir, 'gw', [
    `  s:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([FAKE, '--received', received, '--received-meta'])}\n    tools: {include: [echo]}\n`,
    `  w:\n    url: http://127.0.0.1:${port}/mcp\n    tools: {include: [echo]}\n`,
  ]);
  const c = await startCollector();
  const srv = await startHermes({ GATEWAY_FILE: gw, OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '20' });
  try {
    for (const [tool, up] of [['s__echo', 's'], ['w__echo', 'w']]) {
      const trace = rid(16), parent = rid(8);
      const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: { message: 'hi' } } },
        { ...H, traceparent: `00-${trace}-${parent}-01`, tracestate: 'k=v' });
      assert.equal(r.status, 200, r.text);
      assert.match(r.text, /Echo: hi/);

      const [server] = await c.waitSpans((s) => s.name === `tools/call ${tool}`);
      const [client] = await c.waitSpans((s) => s.kind === 3 && s.traceId === trace);
      assert.equal(server.traceId, trace);
      assert.equal(server.parentSpanId, parent);
      assert.equal(client.name, 'tools/call echo');
      assert.equal(client.parentSpanId, server.spanId, 'the upstream call is a child of the request');
      assert.equal(client.attributes['gen_ai.tool.name'], 'echo');
      assert.equal(client.attributes['hermes.upstream'], up);
      assert.equal(client.traceState, 'k=v');
      assert.ok(client.start >= server.start && client.end <= server.end, 'inside its parent');

      const want = `00-${trace}-${client.spanId}-01`;
      if (up === 's') {
        const got = await until(() => jsonLines(readFileSync(received, 'utf8')).find((l) => l.meta?.traceparent?.includes(trace)), 'the call at the upstream');
        assert.equal(got.meta.traceparent, want);
        assert.equal(got.meta.tracestate, 'k=v');
      } else {
        const got = await until(() => jsonLines(readFileSync(record, 'utf8')).find((l) => l.method === 'tools/call' && l.traceparent?.includes(trace)), 'the call at the upstream');
        assert.equal(got.traceparent, want, 'in the headers');
        assert.equal(got.tracestate, 'k=v');
        assert.equal(got.meta.traceparent, want, 'and in params._meta');
      }
    }
  } finally {
    await srv.stop();
    await c.stop();
  }
});

test('an approval waited for is an INTERNAL span between the request and the upstream call', async () => {
  const gw = gatewayFile(dir, `approvals: {timeout_s: 60}\nupstreams:\n  fake:\n` +
    `    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([FAKE])}\n` +
    '    tools: {include: [echo], guard: {echo: approve}}\n', 'approve.yaml');
  const c = await startCollector();
  const srv = await startHermes({ GATEWAY_FILE: gw, OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '20' });
  try {
    const trace = rid(16);
    const call = post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'fake__echo', arguments: { message: 'ok?' } } },
      { ...H, traceparent: `00-${trace}-${rid(8)}-01` });
    const [p] = await waitApprovals(srv, 1);
    assert.equal((await hermesCli(srv, 'approve', p.id)).code, 0);
    const r = await call;
    assert.match(r.text, /Echo: ok\?/);
    const [server] = await c.waitSpans((s) => s.traceId === trace && s.kind === 2);
    const [wait] = await c.waitSpans((s) => s.traceId === trace && s.kind === 1);
    const [client] = await c.waitSpans((s) => s.traceId === trace && s.kind === 3);
    assert.equal(wait.name, 'approval fake__echo');
    assert.equal(wait.parentSpanId, server.spanId);
    assert.equal(wait.attributes['hermes.approval'], 'approved');
    assert.equal(client.parentSpanId, server.spanId);
    assert.ok(wait.end <= client.start, 'the wait ends before the call goes upstream');
  } finally {
    await srv.stop();
    await c.stop();
  }
});

test('resources/read and a task-mode tools/call pass the trace context on too, each in a CLIENT span', async () => {
  const received = join(dir, 'received-rt.jsonl');
  const gw = gatewayFile(dir, `approvals: {timeout_s: 60}\nupstreams:\n  fake:\n` +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--templates', '--received', received, '--received-meta'])}\n` +
    '    tools: {include: [echo], resources: true, guard: {echo: approve}}\n', 'rt.yaml');
  const c = await startCollector();
  const srv = await startHermes({ GATEWAY_FILE: gw, OTEL_EXPORTER_OTLP_ENDPOINT: c.endpoint, OTEL_BSP_SCHEDULE_DELAY: '20' });
  const lines = () => jsonLines(readFileSync(received, 'utf8'));
  try {
    // resources/read of a templated URI, through the upstream that offers the template
    let trace = rid(16);
    const r = await post(srv, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'fake://item/7' } },
      { ...H, traceparent: `00-${trace}-${rid(8)}-01`, tracestate: 'rr=1' });
    assert.equal(r.status, 200, r.text);
    assert.match(r.text, /read fake:\/\/item\/7/);
    let [server] = await c.waitSpans((s) => s.traceId === trace && s.kind === 2);
    let [client] = await c.waitSpans((s) => s.traceId === trace && s.kind === 3);
    assert.equal(client.name, 'resources/read');
    assert.equal(client.parentSpanId, server.spanId);
    assert.equal(client.attributes['hermes.upstream'], 'fake');
    let got = await until(() => existsSync(received) && lines().find((l) => l.method === 'resources/read' && l.meta?.traceparent?.includes(trace)),
      'the read at the upstream');
    assert.equal(got.meta.traceparent, `00-${trace}-${client.spanId}-01`);
    assert.equal(got.meta.tracestate, 'rr=1');

    // an approve-guarded call from a client of the tasks extension: a task, sent once approved
    trace = rid(16);
    const res = await fetch(srv.url, { method: 'POST',
      headers: { ...srv.auth, ...modernHeaders('tools/call', 'fake__echo'), traceparent: `00-${trace}-${rid(8)}-01` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'fake__echo',
        arguments: { message: 'as a task' }, _meta: modernMeta({ extensions: { 'io.modelcontextprotocol/tasks': {} } }) } }) });
    const task = (await res.json()).result;
    assert.equal(task?.resultType, 'task', JSON.stringify(task));
    const [p] = await waitApprovals(srv, 1);
    assert.equal((await hermesCli(srv, 'approve', p.id)).code, 0);
    got = await until(() => lines().find((l) => l.name === 'echo' && l.meta?.traceparent?.includes(trace)), 'the task\'s call at the upstream');
    [server] = await c.waitSpans((s) => s.traceId === trace && s.kind === 2);
    [client] = await c.waitSpans((s) => s.traceId === trace && s.kind === 3);
    assert.equal(client.name, 'tools/call echo');
    assert.equal(client.parentSpanId, server.spanId);
    assert.equal(client.attributes['hermes.task.id'], task.taskId);
    assert.equal(got.meta.traceparent, `00-${trace}-${client.spanId}-01`);
  } finally {
    await srv.stop();
    await c.stop();
  }
});
