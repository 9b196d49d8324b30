// Resumption of a url upstream's answer stream (MCP 2025-11-25 Streamable HTTP): when the SSE
// stream answering a proxied call closes after an event with an id and before the result, the
// gateway resumes it with GET + Last-Event-ID (the session, the protocol version and the file's
// headers with it), after the stream's retry: (bounded) or a short backoff, a bounded number of
// times, within the call's timeout. The upstream is a real SDK 1.x server with its event store
// (tests/fakes/resumable-upstream.mjs), whose tools close the stream mid-call the way the SDK's
// closeSSEStream does. The official SDK client calls through us and gets the result and the
// progress sent while no stream was open; a resume that cannot succeed ends the call, no hang.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ROOT, startHermes, until, jsonLines, freePort, gatewayFile, sdkClient } from '../../lib/lib.mjs';
import { events, waitEvent } from '../../lib/events.mjs';

const FAKE = join(ROOT, 'tests/fakes/resumable-upstream.mjs');
const TOKEN = 'resume-secret-5c1d';
let dir;
const children = [];

before(() => { dir = mkdtempSync(join(tmpdir(), 'hm-gwresume-')); });
after(() => {
  for (const p of children) p.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const recorded = (file) => jsonLines(existsSync(file) ? readFileSync(file, 'utf8') : '');

// The fake on a free port; its record file; hermes-mcp in front of it (timeout in seconds).
async function setUp(name, { retry, timeout = 20, env = {} } = {}) {
  const port = await freePort();
  const record = join(dir, `${name}.jsonl`);
  const argv = [FAKE, '--port', String(port), '--record', record];
  if (retry !== undefined) argv.push('--retry', String(retry));
  const p = spawn(process.execPath, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  children.push(p);
  await until(() => err.includes(`listening on ${port}`), 'the resumable upstream', 15000);
  const srv = await startHermes({ UPSTREAM_TOKEN: TOKEN, GATEWAY_FILE: gatewayFile(dir,
    `upstreams:\n  up:\n    url: http://127.0.0.1:${port}/mcp\n` +
    '    headers: {Authorization: "Bearer ${UPSTREAM_TOKEN}"}\n' +
    `    timeout: ${timeout}\n    tools: {include: ["*"]}\n`, `${name}.yaml`), ...env });
  return { srv, record, upstream: p };
}

test('a stream closed mid-call is resumed with GET + Last-Event-ID: the result and the progress sent meanwhile arrive', async () => {
  const { srv, record } = await setUp('pause');
  try {
    const { client } = await sdkClient(srv);
    try {
      const seen = [];
      const r = await client.callTool({ name: 'up__pause', arguments: { message: 'hello', ms: 300 } },
        undefined, { onprogress: (p) => seen.push(p.progress) });
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.equal(r.content[0].text, 'resumed: hello');
      assert.deepEqual(seen, [1, 2], 'progress from before the close and from the resumed stream');
      const gets = recorded(record).filter((l) => l.method === 'GET');
      assert.ok(gets.length >= 1, 'at least one GET');
      const post = recorded(record).find((l) => l.method === 'POST' && l.session);
      for (const g of gets) {
        assert.ok(g.last_event_id, 'GET carries Last-Event-ID');
        assert.equal(g.session, post.session, 'and the session');
        assert.equal(g.protocol, '2025-11-25', 'and the protocol version');
      }
      // The call after it goes on as usual, on the same session.
      const again = await client.callTool({ name: 'up__pause', arguments: { message: 'twice', ms: 50 } });
      assert.equal(again.content[0].text, 'resumed: twice');
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('a request for the client on the resumed stream is relayed to the caller, and its answer goes back', async () => {
  const { srv, record } = await setUp('ask', { env: { MCP_SESSIONS: '1' } }); // a request needs a session
  try {
    const client = new Client({ name: 'asked', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    const asked = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { ok: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
    try {
      await client.listTools();
      const r = await client.callTool({ name: 'up__ask', arguments: { message: 'after the cut?' } });
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.deepEqual(asked, ['after the cut?']);
      assert.deepEqual(JSON.parse(r.content[0].text.replace(/^answer: /, '')), { action: 'accept', content: { ok: true } });
      assert.ok(recorded(record).some((l) => l.method === 'GET' && l.last_event_id), 'it came on a resumed stream');
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('the stream\'s retry: is honoured before resuming', async () => {
  const { srv, record } = await setUp('retry', { retry: 1200 });
  try {
    const { client } = await sdkClient(srv);
    try {
      const r = await client.callTool({ name: 'up__pause', arguments: { message: 'later', ms: 100 } });
      assert.equal(r.content[0].text, 'resumed: later');
      const lines = recorded(record);
      const closed = lines.find((l) => l.closed === 'pause');
      const get = lines.find((l) => l.method === 'GET');
      assert.ok(closed && get, JSON.stringify(lines));
      assert.ok(get.t - closed.t >= 1100, `GET ${get.t - closed.t} ms after the close, retry: 1200`);
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('a resumed stream that keeps closing with nothing new ends the call after a few tries, well before its timeout', async () => {
  const { srv, record } = await setUp('flaky', { timeout: 30 });
  try {
    const { client } = await sdkClient(srv);
    try {
      const t0 = Date.now();
      const r = await client.callTool({ name: 'up__flaky', arguments: {} });
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent?.error, 'upstream_error', JSON.stringify(r));
      assert.match(r.content[0].text, /without a result/);
      assert.ok(Date.now() - t0 < 15000, 'no wait for the 30 s timeout');
      const gets = recorded(record).filter((l) => l.method === 'GET').length;
      assert.ok(gets >= 2 && gets <= 6, `a bounded number of resumes: ${gets}`);
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('a resume that finds no server ends the call with upstream_unavailable, no hang', async () => {
  const { srv } = await setUp('vanish', { timeout: 30 });
  try {
    const { client } = await sdkClient(srv);
    try {
      const t0 = Date.now();
      const r = await client.callTool({ name: 'up__vanish', arguments: {} });
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent?.error, 'upstream_unavailable', JSON.stringify(r));
      assert.ok(Date.now() - t0 < 15000, 'no wait for the 30 s timeout');
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('the call\'s timeout ends a wait for a resume (a long retry:), and the call is cancelled upstream', async () => {
  const { srv, record } = await setUp('late', { retry: 20000, timeout: 1 });
  try {
    const { client } = await sdkClient(srv);
    try {
      const t0 = Date.now();
      const r = await client.callTool({ name: 'up__pause', arguments: { ms: 100 } });
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent?.error, 'upstream_timeout', JSON.stringify(r));
      assert.ok(Date.now() - t0 < 10000, 'at the 1 s timeout, not after the 20 s retry:');
      assert.ok(recorded(record).some((l) => l.closed === 'pause'), 'the stream was closed');
      await until(() => recorded(record).some((l) => l.method === 'POST' && l.cancelled), 'the cancel upstream');
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('the server stops cleanly while a call waits to resume its stream', async () => {
  const { srv, record } = await setUp('stopping', { retry: 20000, timeout: 60,
    env: { MCP_DRAIN_GRACE_S: '1' } }); // the drain's grace, then the call is cut off
  const { client } = await sdkClient(srv);
  const call = client.callTool({ name: 'up__pause', arguments: { ms: 100 } }).catch((e) => e);
  // Stopped while the wait is armed, not before it: the log line says it is.
  await waitEvent(srv, 'upstream_stream_resuming', { delay_ms: 20000 });
  assert.ok(recorded(record).some((l) => l.closed === 'pause'), 'the stream closed');
  assert.equal(await srv.stop(), 0); // under ASan: no leak, no use of the freed wait
  const outcome = await call;
  // The call does not succeed: it ends with an error result or its connection is cut.
  assert.ok(outcome instanceof Error || outcome.isError === true, JSON.stringify(outcome));
  assert.equal(recorded(record).filter((l) => l.method === 'GET').length, 0, 'no resume after the stop');
  await client.close().catch(() => {});
});

// ---------- an upstream abusing resumption (tests/fakes/evil-upstream.mjs) ----------

const EVIL = join(ROOT, 'tests/fakes/evil-upstream.mjs');

async function setUpEvil(mode, { timeout = 20, extra = '' } = {}) {
  const port = await freePort();
  const record = join(dir, `evil-${mode}.jsonl`);
  const p = spawn(process.execPath, [EVIL, '--port', String(port), '--mode', mode, '--record', record],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  children.push(p);
  await until(() => err.includes(`listening on ${port}`), 'the evil upstream', 15000);
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile(dir,
    `upstreams:\n  up:\n    url: http://127.0.0.1:${port}/mcp\n` +
    `    timeout: ${timeout}\n${extra}    tools: {include: ["*"]}\n`, `evil-${mode}.yaml`) });
  return { srv, record };
}

async function callSpin(srv) {
  const { client } = await sdkClient(srv);
  try {
    const t0 = Date.now();
    const r = await client.callTool({ name: 'up__spin', arguments: {} });
    return { r, took: Date.now() - t0 };
  } finally { await client.close(); }
}

const gets = (record) => recorded(record).filter((l) => l.method === 'GET');

test('an answer stream the upstream keeps open after the answer is closed by the gateway: later calls never run out of connections', async () => {
  const { srv, record } = await setUpEvil('open', { timeout: 5, extra: '    max_in_flight: 1\n' });
  try {
    const { client } = await sdkClient(srv);
    try { // max_in_flight 1 allows 9 connections: each open stream would hold one for good
      for (let i = 0; i < 12; i++) {
        const r = await client.callTool({ name: 'up__spin', arguments: {} });
        assert.equal(r.isError, undefined, `call ${i}: ${JSON.stringify(r)}`);
        assert.equal(r.content[0].text, 'ok');
      }
    } finally { await client.close(); }
    await until(() => recorded(record).filter((l) => l.closed !== undefined).length === 12, 'every answered stream closed');
  } finally { assert.equal(await srv.stop(), 0); }
});

test('retry: 0 and a new data-less event on every stream do not make a resume storm: a few GETs, then upstream_error', async () => {
  const { srv, record } = await setUpEvil('zero', { timeout: 20 });
  try {
    const { r, took } = await callSpin(srv);
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.error, 'upstream_error', JSON.stringify(r));
    assert.ok(took < 10000, `ended in ${took} ms, not at the 20 s timeout`);
    const n = gets(record).length;
    assert.ok(n >= 1 && n <= 6, `a bounded number of resumes: ${n}`);
    const g = gets(record);
    for (let i = 1; i < g.length; i++)
      assert.ok(g[i].t - g[i - 1].t >= 80, `resumes ${g[i].t - g[i - 1].t} ms apart despite retry: 0`);
    const lines = events(srv, 'upstream_stream_resuming');
    assert.ok(lines.length <= 1, `one "resuming" line at the default level, not ${lines.length}`);
  } finally { assert.equal(await srv.stop(), 0); }
});

test('resumes that each bring a message but never the answer are capped per call', async () => {
  const { srv, record } = await setUpEvil('chatty', { timeout: 60 });
  try {
    const { r, took } = await callSpin(srv);
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.error, 'upstream_error', JSON.stringify(r));
    assert.ok(took < 30000, `ended in ${took} ms, not at the 60 s timeout`);
    const n = gets(record).length;
    assert.ok(n >= 8 && n <= 32, `capped at 32 resumes: ${n}`);
  } finally { assert.equal(await srv.stop(), 0); }
});

test('an id-only priming event (no data) still sets the resume point', async () => {
  const { srv, record } = await setUpEvil('idonly', { timeout: 20 });
  try {
    const { r } = await callSpin(srv);
    assert.equal(r.isError, true);
    const g = gets(record);
    assert.ok(g.length >= 1, 'the stream was resumed');
    assert.equal(g[0].lei, 'only1');
  } finally { assert.equal(await srv.stop(), 0); }
});

for (const [mode, why] of [['longid', 'over-long (it would be cut short)'], ['ctlid', 'with a control character']]) {
  test(`an event id ${why} is never sent as Last-Event-ID: the call fails, no resume`, async () => {
    const { srv, record } = await setUpEvil(mode, { timeout: 20 });
    try {
      const { r, took } = await callSpin(srv);
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent?.error, 'upstream_error', JSON.stringify(r));
      assert.ok(took < 10000, `ended in ${took} ms`);
      assert.equal(gets(record).length, 0, JSON.stringify(gets(record)));
    } finally { assert.equal(await srv.stop(), 0); }
  });
}

test('an id with a CR in it is cut at the line end (a field of its own), no header injected', async () => {
  const { srv, record } = await setUpEvil('crid', { timeout: 20 });
  try {
    await callSpin(srv);
    const g = gets(record);
    assert.ok(g.length >= 1, 'resumed with the id before the CR');
    for (const l of g) {
      assert.equal(l.lei, 'abc');
      assert.ok(!l.hdrs.includes('x-injected'), JSON.stringify(l.hdrs));
    }
  } finally { assert.equal(await srv.stop(), 0); }
});
