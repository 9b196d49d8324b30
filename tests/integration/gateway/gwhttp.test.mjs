// Streamable HTTP upstreams (url: + headers:) behind the gateway. A real one first:
// @modelcontextprotocol/server-everything in its streamableHttp mode (it answers over SSE), which
// the official SDK client reaches through us: the configured surface, echo, progress from its
// long-running tool. Then the misbehaving fake (tests/fakes/fake-upstream.mjs --http) records
// what we send it (headers, session, cancels, DELETE) and drives the recovery: a session it
// forgets (404) is initialized anew and the call sent again once, a 500 is upstream_unavailable
// and a restart, a hanging call times out, an answer over 4 MiB (JSON or one SSE event) fails only
// its call. Hostile: an upstream that is down at start, or never answers initialize.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHermes, until, jsonLines, freePort, upstreamsFile, connectClient, probeJson,
  startNodeUpstream } from '../../lib/lib.mjs';

const EVERYTHING = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything'], { encoding: 'utf8' })
  .stdout.trim().split('\n')[0];
const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const TOKEN = 'upstream-secret-7f3a';
let dir;
const children = [];

// A port nothing listens on (yet): the upstream URL is written before its server starts.
// Starts a Node server (server-everything or the fake) and waits until it listens on port.
const startUpstream = (argv, port, env = {}) => startNodeUpstream(argv, port, { env, children });

function gatewayFile(name, upstreams) {
  return upstreamsFile(dir, name, Object.entries(upstreams).map(([n, { port, extra = '' }]) =>
    `  ${n}:\n    url: http://127.0.0.1:${port}/mcp\n${extra}`));
}

// The fake's record, whole lines only: it may be appending one while the test reads.
const recorded = (file) => jsonLines(existsSync(file) ? readFileSync(file, 'utf8') : '');

const probe = probeJson;

const connect = (srv) => connectClient(srv, { name: 'gw-http', listTools: true });

before(() => {
  assert.ok(existsSync(EVERYTHING), `server-everything installed: ${EVERYTHING}`);
  dir = mkdtempSync(join(tmpdir(), 'hm-gwhttp-'));
});

after(() => {
  for (const p of children) p.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('server-everything over Streamable HTTP: the configured surface, echo, progress', async () => {
  const port = await freePort();
  await startUpstream([EVERYTHING, 'streamableHttp'], port, { PORT: String(port) });
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile('everything', { everything: { port,
    extra: '    tools:\n      include: [echo, get-sum, trigger-long-running-operation]\n' } }) });
  try {
    const client = await connect(srv);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name).filter((n) => n.startsWith('everything__'));
      assert.deepEqual(names.sort(), ['everything__echo', 'everything__get-sum',
        'everything__trigger-long-running-operation']);
      const r = await client.callTool({ name: 'everything__echo', arguments: { message: 'over http' } });
      assert.equal(r.isError, undefined);
      assert.equal(r.content[0].text, 'Echo: over http');
      const s = await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 40 } });
      assert.match(s.content[0].text, /42/);
      const seen = [];
      const long = await client.callTool({ name: 'everything__trigger-long-running-operation',
        arguments: { duration: 1, steps: 3 } }, undefined, { onprogress: (p) => seen.push(p) });
      assert.match(long.content[0].text, /Long running operation completed/);
      assert.deepEqual(seen.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]]);
      const excluded = await client.callTool({ name: 'everything__get-env', arguments: {} }).catch((e) => e);
      assert.match(String(excluded.message ?? excluded.content?.[0]?.text), /get-env/);
      const ready = await probe(srv, '/readyz');
      assert.equal(ready.status, 200, JSON.stringify(ready.body));
      assert.equal(ready.body.upstreams.everything.state, 'ready');
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

// One gateway in front of the fake for the recovery tests; each test reads the fake's record.
let fake, fakeRecord, fakePort;
async function fakeGateway() {
  if (fake) return fake;
  fakePort = await freePort();
  fakeRecord = join(dir, 'fake.jsonl');
  await startUpstream([FAKE, '--http', String(fakePort), '--record', fakeRecord, '--expire-after', '3'], fakePort);
  fake = await startHermes({ UPSTREAM_TOKEN: TOKEN, GATEWAY_FILE: gatewayFile('fake', { fake: { port: fakePort,
    extra: '    headers: {Authorization: "Bearer ${UPSTREAM_TOKEN}"}\n    timeout: 1\n    tools: {include: ["*"]}\n' } }) });
  return fake;
}
after(async () => { if (fake) assert.equal(await fake.stop(), 0); });

test('what we send: both Accept types, the file\'s headers, the session and protocol version after initialize', async () => {
  const srv = await fakeGateway();
  const client = await connect(srv);
  try {
    const r = await client.callTool({ name: 'fake__echo', arguments: { message: 'hi' } });
    assert.equal(r.content[0].text, 'Echo: hi');
    const rec = recorded(fakeRecord);
    const init = rec.find((e) => e.method === 'initialize');
    assert.equal(init.session, undefined);
    assert.equal(init.authorization, `Bearer ${TOKEN}`, '${UPSTREAM_TOKEN} interpolated');
    const call = rec.find((e) => e.method === 'tools/call' && e.tool === 'echo');
    assert.match(call.accept, /application\/json/);
    assert.match(call.accept, /text\/event-stream/);
    assert.ok(call.session, 'the session from initialize');
    assert.equal(call.version, '2025-11-25');
    assert.equal(call.authorization, `Bearer ${TOKEN}`);
    assert.ok(rec.some((e) => e.method === 'notifications/initialized' && e.session === call.session));
    assert.ok(!srv.proc.stderrText.includes(TOKEN), 'the token never in our log');
  } finally { await client.close(); }
});

test('progress over the fake\'s SSE answer reaches the caller', async () => {
  const srv = await fakeGateway();
  const client = await connect(srv);
  try {
    const seen = [];
    const r = await client.callTool({ name: 'fake__progress', arguments: {} }, undefined,
      { onprogress: (p) => seen.push(p) });
    assert.equal(r.content[0].text, 'done');
    assert.deepEqual(seen.map((p) => [p.progress, p.total, p.message]),
      [[1, 3, 'step 1'], [2, 3, 'step 2'], [3, 3, 'step 3']]);
  } finally { await client.close(); }
});

test('a session the upstream forgot (404) is initialized anew and the call sent again, once', async () => {
  const srv = await fakeGateway();
  const client = await connect(srv);
  try {
    // --expire-after 3: within a few calls the fake forgets the session; every call still answers.
    for (let i = 0; i < 5; i++) {
      const r = await client.callTool({ name: 'fake__echo', arguments: { message: `n${i}` } });
      assert.equal(r.content[0].text, `Echo: n${i}`);
    }
    const rec = recorded(fakeRecord);
    const expired = rec.find((e) => e.method === 'tools/call' && e.status === 404);
    assert.ok(expired, 'the fake answered 404 for its session');
    const again = rec.filter((e) => e.method === 'tools/call' && e.id === expired.id);
    assert.equal(again.length, 2, 'the call was sent twice');
    assert.notEqual(again[1].session, expired.session, 'the second time with the new session');
    assert.equal(again[1].status, 200);
    assert.ok(rec.filter((e) => e.method === 'initialize').length >= 2, 'initialized again');
    const ready = await probe(srv, '/readyz');
    assert.equal(ready.body.upstreams.fake.state, 'ready');
    assert.equal(ready.body.upstreams.fake.restarts, 0, 'a new session is not a restart');
  } finally { await client.close(); }
});

test('a call past timeout gets upstream_timeout and is cancelled upstream; others keep going', async () => {
  const srv = await fakeGateway();
  const client = await connect(srv);
  try {
    const [hung, ok] = await Promise.all([
      client.callTool({ name: 'fake__hang', arguments: {} }),
      client.callTool({ name: 'fake__slow', arguments: { ms: 200 } })]);
    assert.equal(hung.structuredContent.error, 'upstream_timeout');
    assert.match(hung.structuredContent.message, /did not answer hang within 1 s/);
    assert.equal(ok.content[0].text, 'slow done');
    const rec = recorded(fakeRecord);
    const call = rec.filter((e) => e.method === 'tools/call' && e.tool === 'hang').pop();
    await until(() => recorded(fakeRecord).some((e) => e.method === 'notifications/cancelled' &&
      e.requestId === call.id), 'notifications/cancelled with our id');
  } finally { await client.close(); }
});

test('an answer over 4 MiB (JSON or one SSE event) ends that call with upstream_error only', async () => {
  // A gateway of its own: the shared one's 1 s timeout can pass while a loaded machine makes
  // the 4 MiB, and the call would end upstream_timeout instead.
  const port = await freePort();
  await startUpstream([FAKE, '--http', String(port)], port);
  const srv = await startHermes({ UPSTREAM_TOKEN: TOKEN, GATEWAY_FILE: gatewayFile('huge', { fake: { port,
    extra: '    headers: {Authorization: "Bearer ${UPSTREAM_TOKEN}"}\n    timeout: 60\n    tools: {include: ["*"]}\n' } }) });
  const client = await connect(srv);
  try {
    for (const name of ['fake__huge', 'fake__hugesse']) {
      const r = await client.callTool({ name, arguments: {} });
      assert.equal(r.structuredContent.error, 'upstream_error', name);
      assert.match(r.structuredContent.message, /upstream fake answered with a message larger than 4 MiB/);
    }
    const e = await client.callTool({ name: 'fake__echo', arguments: { message: 'small' } });
    assert.equal(e.content[0].text, 'Echo: small');
    assert.equal((await probe(srv, '/readyz')).body.upstreams.fake.restarts, 0);
  } finally { await client.close(); assert.equal(await srv.stop(), 0); }
});

test('HTTP 500: upstream_unavailable, then a restart (new initialize, re-listed) and it serves again', async () => {
  const srv = await fakeGateway();
  const client = await connect(srv);
  try {
    const r = await client.callTool({ name: 'fake__fail500', arguments: {} });
    assert.equal(r.structuredContent.error, 'upstream_unavailable');
    assert.match(r.structuredContent.message, /upstream fake is not available \(answered HTTP 500\)/);
    let last;
    await until(async () => {
      last = await client.callTool({ name: 'fake__echo', arguments: { message: 'back' } });
      return !last.isError;
    }, 'echo answering again', 10000);
    assert.equal(last.content[0].text, 'Echo: back');
    const rec = recorded(fakeRecord);
    const after500 = rec.slice(rec.findIndex((e) => e.status === 500));
    assert.ok(after500.some((e) => e.method === 'initialize' && e.session === undefined), 'initialized again');
    assert.ok(after500.some((e) => e.method === 'tools/list'), 'listed again (pins re-checked)');
    const ready = await probe(srv, '/readyz');
    assert.equal(ready.status, 200);
    assert.ok(ready.body.upstreams.fake.restarts >= 1);
  } finally { await client.close(); }
});

test('at shutdown the session is ended with DELETE', async () => {
  const srv = await fakeGateway();
  const session = recorded(fakeRecord).filter((e) => e.method === 'tools/call' && e.status === 200).pop().session;
  assert.equal(await srv.stop(), 0);
  fake = undefined;
  const del = recorded(fakeRecord).filter((e) => e.http === 'DELETE');
  assert.equal(del.length, 1);
  assert.equal(del[0].session, session);
  assert.equal(del[0].authorization, `Bearer ${TOKEN}`);
});

test('max_in_flight 1 over SSE answers: each waiting call is sent as the one before is answered', async () => {
  // The answer arrives inside curl's write callback; the next call starts from there.
  const port = await freePort();
  await startUpstream([FAKE, '--http', String(port), '--sse'], port);
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile('queue', { q: { port,
    extra: '    max_in_flight: 1\n    tools: {include: ["*"]}\n' } }) });
  try {
    const client = await connect(srv);
    try {
      const rs = await Promise.all([1, 2, 3, 4].map((i) =>
        client.callTool({ name: 'q__echo', arguments: { message: `q${i}` } })));
      assert.deepEqual(rs.map((r) => r.content[0].text), ['Echo: q1', 'Echo: q2', 'Echo: q3', 'Echo: q4']);
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('hostile: a url upstream down at start makes readyz 503 naming it; up later, it stays 503: its tools are not served before a restart', async () => {
  const port = await freePort();
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile('down', {
    late: { port, extra: '    connect_timeout: 2\n    tools: {include: ["*"]}\n' } }) });
  try {
    const r = await probe(srv, '/readyz');
    assert.equal(r.status, 503);
    assert.equal(r.body.upstreams.late.required, true);
    assert.notEqual(r.body.upstreams.late.state, 'ready');
    assert.match(r.body.upstreams.late.error, /cannot be reached/);
    // /readyz is unauthenticated: it names no internal host, address or port (curl's own text,
    // which does, goes to the operator's log only).
    assert.doesNotMatch(r.body.upstreams.late.error, new RegExp(`127\\.0\\.0\\.1|localhost|${port}`));
    assert.match(srv.proc.stderrText, new RegExp(`upstream late: .*127\\.0\\.0\\.1.*${port}`));
    assert.equal((await probe(srv, '/healthz')).status, 200);
    await startUpstream([FAKE, '--http', String(port)], port);
    await until(async () => (await probe(srv, '/readyz')).body.upstreams.late.state === 'ready', 'up', 20000);
    const up = await probe(srv, '/readyz');
    assert.equal(up.status, 503, 'discovery is frozen: clients are not served its tools');
    assert.equal(up.body.upstreams.late.served, false);
    assert.match(up.body.upstreams.late.error, /down when the server started: its tools are served after a restart/);
    const client = await connect(srv);
    try {
      assert.ok(!(await client.listTools()).tools.some((t) => t.name.startsWith('late__')), 'none of its tools listed');
    } finally { await client.close(); }
  } finally { assert.equal(await srv.stop(), 0); }
});

test('hostile: an upstream that never answers initialize is down at connect_timeout', async () => {
  const port = await freePort();
  await startUpstream([FAKE, '--http', String(port), '--hang-init'], port);
  const srv = await startHermes({ GATEWAY_FILE: gatewayFile('stuck', {
    stuck: { port, extra: '    connect_timeout: 1\n    tools: {include: ["*"]}\n' } }) });
  try {
    const r = await probe(srv, '/readyz');
    assert.equal(r.status, 503);
    assert.match(r.body.upstreams.stuck.error, /not initialized and listed within connect_timeout \(1 s\)/);
  } finally { assert.equal(await srv.stop(), 0); }
});
