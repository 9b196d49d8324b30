// Regression tests for engine bugs found by an independent review (use-after-free on shutdown
// and on stream takeover, calls leaked when cancelled while waiting on the client, hang-ups
// treated as cancels, wrong answers for cancelled requests, GET priming, batches). Each test
// asserts the correct behaviour and drives the path that crashed or leaked, on a server of its
// own that must then exit 0 on SIGTERM; in the ASan run of the suite stop() fails on a sanitizer
// report (LeakSanitizer reports at exit), so a returning bug fails the test even where the
// release build behaves. Raw sockets where the bytes on the wire and their timing matter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startConformance, post, parseSse, INIT, until } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

const V = '2025-11-25';

// A raw connection; everything received accumulates in s.buf (latin1: one char per byte, so
// chunk sizes can be checked against string lengths).
function connect(srv, sockets) {
  return new Promise((resolve, reject) => {
    const s = net.connect(srv.port, '127.0.0.1', () => resolve(s));
    s.buf = '';
    s.gone = false;
    s.on('data', (d) => { s.buf += d.toString('latin1'); });
    s.on('close', () => { s.gone = true; });
    s.on('error', reject); // after the connect: ignored (a reset shows up as closed)
    sockets.push(s);
  });
}

function requestText(srv, method, headers, body) {
  let h = `${method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\n`;
  for (const [k, v] of Object.entries(headers)) h += `${k}: ${v}\r\n`;
  if (body !== undefined) h += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
  return h + '\r\n' + (body ?? '');
}

function send(s, srv, method, headers, msg) {
  s.write(requestText(srv, method, headers, msg === undefined ? undefined : JSON.stringify(msg)));
}

// Parses the first final (non-1xx) response in buf: {status, headers, body, complete}, where
// complete means all of the body is in (chunked: its last chunk). null until the headers are in.
function parseResponse(buf) {
  for (;;) {
    const i = buf.indexOf('\r\n\r\n');
    if (i < 0) return null;
    const [statusLine, ...lines] = buf.slice(0, i).split('\r\n');
    const status = Number(statusLine.split(' ')[1]);
    if (status >= 100 && status < 200) { buf = buf.slice(i + 4); continue; }
    const headers = {};
    for (const l of lines) {
      const k = l.indexOf(':');
      headers[l.slice(0, k).trim().toLowerCase()] = l.slice(k + 1).trim();
    }
    let rest = buf.slice(i + 4);
    let body = '';
    let complete = false;
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      for (;;) {
        const j = rest.indexOf('\r\n');
        if (j < 0) break;
        const n = parseInt(rest.slice(0, j), 16);
        if (n === 0) { complete = rest.length >= j + 4; break; }
        if (rest.length < j + 2 + n + 2) break;
        body += rest.slice(j + 2, j + 2 + n);
        rest = rest.slice(j + 2 + n + 2);
      }
    } else {
      const len = Number(headers['content-length'] ?? 0);
      body = rest.slice(0, len);
      complete = rest.length >= len;
    }
    return { status, headers, body, complete };
  }
}

// Waits for the response on s: its headers (complete = false) or all of it.
function response(s, { complete = true, ms = 3000 } = {}) {
  return until(() => {
    const r = parseResponse(s.buf);
    return r && (!complete || r.complete) ? r : null;
  }, `${complete ? 'a complete' : 'a'} response, got: ${JSON.stringify(s.buf.slice(0, 400))}`, ms);
}

// The JSON-RPC messages of an SSE body (priming events, which carry no data, left out).
const messages = (body) => parseSse(body).map((e) => e.json).filter(Boolean);
const eventIds = (body) => parseSse(body).map((e) => e.id).filter(Boolean);

const initBody = (version, caps) => ({ ...INIT(version), params: { ...INIT(version).params, capabilities: caps } });

async function session(srv, { version = V, caps = {} } = {}) {
  const r = await post(srv, initBody(version, caps));
  assert.equal(r.status, 200);
  const sid = r.headers.get('mcp-session-id');
  assert.match(sid, /^[0-9a-f]{64}$/);
  const h = { Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sid };
  if (version !== '2025-03-26') h['MCP-Protocol-Version'] = version;
  return { sid, h };
}

const call = (id, name, args = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const wait = (id, ms) => call(id, 'test_wait', { ms });
const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });
const cancelled = (requestId) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'test' } });
const samplingAnswer = (id, text) => ({ jsonrpc: '2.0', id, result: { role: 'assistant', content: { type: 'text', text }, model: 'm' } });

async function stats(srv, h) {
  h ??= (await session(srv)).h;
  const r = await post(srv, { jsonrpc: '2.0', id: 'st', method: 'resources/read', params: { uri: 'test://stats' } }, h);
  return JSON.parse(r.json.result.contents[0].text);
}

// A few full round trips on fresh connections, so that what was written (or hung up) before them
// has been read and dispatched by the single-threaded server when they come back. Used where the
// server shows nothing to wait for; the assertions hold either way, it only makes sure the test
// drives the path it is about.
async function barrier(srv, h) {
  for (let i = 0; i < 3; i++) assert.equal((await post(srv, ping(`b${i}`), h)).status, 200);
}

// Runs fn(srv, conn) against a fresh conformance-server; afterwards stops it with SIGTERM, which
// must exit 0 with no sanitizer report (stop() rejects on one, leaks included).
async function withServer(args, fn) {
  const srv = await startConformance(args);
  const sockets = [];
  let ok = false;
  try {
    await fn(srv, () => connect(srv, sockets));
    ok = true;
  } finally {
    for (const s of sockets) s.destroy();
    const code = await srv.stop('SIGTERM');
    if (ok) assert.equal(code, 0, 'SIGTERM exits 0');
  }
}

const T = { timeout: 10000 };

// Opens a session that offers sampling and calls test_sampling on a raw connection, until the
// server's sampling request arrives on that POST stream: {h, a (the connection), body (the
// stream so far), outgoing (the sampling request)}.
async function samplingCall(srv, conn) {
  const { h } = await session(srv, { caps: { sampling: {} } });
  const a = await conn();
  send(a, srv, 'POST', h, call(2, 'test_sampling', { prompt: 'hi' }));
  await until(() => /sampling\/createMessage/.test(a.buf), 'the sampling request on the POST stream');
  const body = parseResponse(a.buf).body;
  return { h, a, body, outgoing: messages(body).find((m) => m.method === 'sampling/createMessage') };
}

// A request arriving on a kept-alive connection while the shutdown drains was answered 503
// by httpd while the engine still held it: use after free when its call ended.
test('drain: a call arriving on a kept-alive connection during SIGTERM gets 503, exit 0', T, async () => {
  const srv = await startConformance();
  const sockets = [];
  try {
    const { h } = await session(srv);
    const a = await connect(srv, sockets);
    send(a, srv, 'POST', h, ping(2));
    const first = await response(a);
    assert.equal(first.status, 200);
    assert.deepEqual(JSON.parse(first.body), { jsonrpc: '2.0', id: 2, result: {} });
    a.buf = '';
    // B: headers and part of a body. It stays live, so the drain keeps running the loop.
    const b = await connect(srv, sockets);
    const bBody = JSON.stringify(ping(3));
    b.write(requestText(srv, 'POST', { ...h, Expect: '100-continue' }, bBody).slice(0, -10));
    await until(() => /^HTTP\/1\.1 100/.test(b.buf), 'B: 100 Continue (headers read)');
    const stopping = srv.stop('SIGTERM');
    await waitEvent(srv, 'stop_requested', { signal: 'TERM' });
    send(a, srv, 'POST', h, wait(4, 300));
    const r = await response(a);
    assert.equal(r.status, 503);
    assert.equal(JSON.parse(r.body).error.code, -32600);
    await until(() => a.gone, 'A closed after the drain');
    b.destroy();
    assert.equal(await stopping, 0, 'SIGTERM exits 0');
  } finally {
    for (const s of sockets) s.destroy();
    if (srv.proc.exitCode === null) await srv.stop('SIGKILL');
  }
});

// GET + Last-Event-ID took over a POST stream while the POST was attached; the exchange kept
// pointing at the POST's freed request and wrote into it when the call was answered with an error
// (the deadline test below is the one that crashed; this one checks where a result goes).
test('takeover of a live POST stream by Last-Event-ID: the POST ends, the resumed stream gets the answer', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h, a, body, outgoing } = await samplingCall(srv, conn);
    const pr = parseResponse(a.buf);
    assert.equal(pr.status, 200);
    assert.equal(pr.headers['content-type'], 'text/event-stream');
    const last = eventIds(body).at(-1);
    const g = await conn();
    send(g, srv, 'GET', { ...h, Accept: 'text/event-stream', 'Last-Event-ID': last });
    const gr = await response(g, { complete: false });
    assert.equal(gr.status, 200);
    const ended = await response(a);
    assert.equal(messages(ended.body).some((m) => m.id === 2), false, 'no answer on the old POST');
    // The client answers its request; the result must reach the resumed stream.
    const ans = await post(srv, samplingAnswer(outgoing.id, 'pong'), h);
    assert.equal(ans.status, 202);
    const done = await response(g);
    const result = messages(done.body).filter((m) => m.id === 2);
    assert.equal(result.length, 1);
    assert.equal(result[0].result.content[0].text, 'LLM response: pong');
    assert.equal(messages(done.body).some((m) => m.method === 'sampling/createMessage'), false,
      'nothing before Last-Event-ID is replayed');
  });
});

test('takeover, then the call deadline: -32001 on the resumed stream, once', T, async () => {
  await withServer(['--call-timeout', '1000'], async (srv, conn) => {
    const { h, a, body, outgoing } = await samplingCall(srv, conn);
    const last = eventIds(body).at(-1);
    const g = await conn();
    send(g, srv, 'GET', { ...h, Accept: 'text/event-stream', 'Last-Event-ID': last });
    assert.equal((await response(g, { complete: false })).status, 200);
    await response(a); // the POST response ended
    const done = await response(g, { ms: 4000 }); // ends once the deadline answered
    const answers = messages(done.body).filter((m) => m.id === 2);
    assert.equal(answers.length, 1, 'exactly one answer');
    assert.equal(answers[0].error.code, -32001);
    // The request the call waited on was dropped: a late answer is accepted and ignored.
    assert.equal((await post(srv, samplingAnswer(outgoing.id, 'late'), h)).status, 202);
    assert.equal((await post(srv, ping(9), h)).status, 200);
  });
});

// A call waiting on the client's answer, without a cancel callback, cancelled: the pending
// request was dropped without calling its reply callback, so the call and its session leaked.
test('cancel of a call waiting on the client: its stream ends without a result, nothing leaks', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h, a, outgoing } = await samplingCall(srv, conn);
    const c = await post(srv, cancelled(2), h);
    assert.equal(c.status, 202);
    const r = await response(a);
    assert.equal(r.status, 200);
    assert.equal(messages(r.body).some((m) => m.id === 2), false, 'no response to a cancelled request');
    const late = await post(srv, samplingAnswer(outgoing.id, 'late'), h);
    assert.equal(late.status, 202, 'a late answer is accepted and ignored');
    assert.equal((await post(srv, ping(3), h)).status, 200);
    const d = await fetch(srv.url, { method: 'DELETE', headers: h });
    assert.equal(d.status, 200);
  });
});

test('hang-up while a call waits on the client is not a cancel: the answer completes it for a resume', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h, a, body, outgoing } = await samplingCall(srv, conn);
    const last = eventIds(body).at(-1);
    a.destroy();
    await barrier(srv, h); // the server has seen the hang-up
    const ans = await post(srv, samplingAnswer(outgoing.id, 'after the blip'), h);
    assert.equal(ans.status, 202);
    const g = await conn();
    send(g, srv, 'GET', { ...h, Accept: 'text/event-stream', 'Last-Event-ID': last });
    const r = await response(g);
    assert.equal(r.status, 200);
    const result = messages(r.body).filter((m) => m.id === 2);
    assert.equal(result.length, 1);
    assert.equal(result[0].result.content[0].text, 'LLM response: after the blip');
  });
});

test('hang-up, then DELETE, while a call waits on the client: the call ends, nothing leaks', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h, a, outgoing } = await samplingCall(srv, conn);
    a.destroy();
    await barrier(srv, h);
    const d = await fetch(srv.url, { method: 'DELETE', headers: h });
    assert.equal(d.status, 200);
    const late = await post(srv, samplingAnswer(outgoing.id, 'late'), h);
    assert.equal(late.status, 404, 'the session is gone');
  });
});

test('SIGTERM with a hung-up call still waiting on the client exits 0 and leaks nothing', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h, a } = await samplingCall(srv, conn);
    a.destroy();
    await barrier(srv, h);
    // withServer stops it: exit 0, no sanitizer report.
  });
});

// A disconnect from a resumable POST stream cancelled the call, so the resumed stream never
// carried the response (the spec: disconnection SHOULD NOT be interpreted as cancellation).
test('hang-up from a resumable POST stream: GET with Last-Event-ID gets the rest and the result', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h } = await session(srv);
    const a = await conn();
    send(a, srv, 'POST', h, call(2, 'test_tool_with_logging'));
    await until(() => /Tool execution started/.test(a.buf), 'the first log message');
    // Resumed after the first message's event (the read may already hold the next one too).
    const last = parseSse(parseResponse(a.buf).body)
      .find((e) => e.json?.params?.data === 'Tool execution started').id;
    a.destroy(); // a network blip
    await barrier(srv, h);
    await until(async () => (await stats(srv, h)).steps_completed === 1, 'the tool to finish with no client');
    const g = await conn();
    send(g, srv, 'GET', { ...h, Accept: 'text/event-stream', 'Last-Event-ID': last });
    const r = await response(g);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/event-stream');
    const msgs = messages(r.body);
    assert.deepEqual(msgs.filter((m) => m.method === 'notifications/message').map((m) => m.params.data),
      ['Tool processing data', 'Tool execution completed'], 'the events after Last-Event-ID, once');
    assert.equal(msgs.at(-1).id, 2);
    assert.equal(msgs.at(-1).result.content[0].text, 'Tool with logging executed successfully');
    const ids = eventIds(r.body);
    assert.ok(ids.every((id) => id.split('_')[0] === last.split('_')[0]), 'same stream');
    // Delivered in full: nothing is left to resume.
    const g2 = await conn();
    send(g2, srv, 'GET', { ...h, Accept: 'text/event-stream', 'Last-Event-ID': last });
    assert.equal((await response(g2)).status, 404);
  });
});

// p5 (a): a POST whose request was cancelled was answered 202, the answer for notifications only,
// even when it accepted SSE.
test('a cancelled request gets an empty event stream when it accepted SSE, 202 only for JSON', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h } = await session(srv);
    const sh = (await session(srv)).h;
    // Cancels until the call is seen to stop (a cancel that overtook its request is ignored).
    const cancelUntilStopped = async (id) => {
      const before = (await stats(srv, sh)).cancelled;
      await until(async () => {
        assert.equal((await post(srv, cancelled(id), h)).status, 202);
        return (await stats(srv, sh)).cancelled > before;
      }, `request ${id} to be cancelled`);
    };
    const a = await conn();
    send(a, srv, 'POST', h, wait(7, 60000));
    await cancelUntilStopped(7);
    const r = await response(a);
    assert.notEqual(r.status, 202, 'a request is never answered 202');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/event-stream');
    assert.deepEqual(messages(r.body), [], 'no response to a cancelled request');
    // A client that only takes JSON: 202 with an empty body is all that can be said.
    const j = await conn();
    send(j, srv, 'POST', { ...h, Accept: 'application/json' }, wait(8, 60000));
    await cancelUntilStopped(8);
    const rj = await response(j);
    assert.equal(rj.status, 202);
    assert.equal(rj.body, '');
  });
});

test('DELETE while a request waits: its POST ends without a result (not 202 when it accepted SSE)', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h } = await session(srv);
    const before = await stats(srv);
    const b = await conn();
    send(b, srv, 'POST', h, wait(8, 60000));
    await barrier(srv, h);
    const d = await fetch(srv.url, { method: 'DELETE', headers: h });
    assert.equal(d.status, 200);
    const r = await response(b);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/event-stream');
    assert.deepEqual(messages(r.body), []);
    const after = await stats(srv);
    assert.equal(after.cancelled, before.cancelled + 1, 'the work was stopped');
    assert.equal(after.completed, before.completed);
  });
});

// p5 (b): GET streams were primed (empty data event) for every version; only 2025-11-25 allows it.
test('GET streams are primed only for 2025-11-25 sessions', T, async () => {
  await withServer([], async (srv, conn) => {
    for (const version of ['2025-03-26', '2025-06-18', '2025-11-25']) {
      const { h } = await session(srv, { version });
      const g = await conn();
      send(g, srv, 'GET', { ...h, Accept: 'text/event-stream' });
      const head = await response(g, { complete: false });
      assert.equal(head.status, 200, version);
      assert.equal(head.headers['content-type'], 'text/event-stream');
      // End the session: the stream ends, and everything it carried is in.
      assert.equal((await fetch(srv.url, { method: 'DELETE', headers: h })).status, 200);
      const r = await response(g);
      const evs = parseSse(r.body);
      if (version === '2025-11-25') {
        assert.equal(evs.length, 1, 'one priming event');
        assert.match(evs[0].id, /^\d+_\d+$/);
        assert.equal(evs[0].data, '');
        assert.ok(evs[0].retry > 0);
      } else {
        assert.deepEqual(evs, [], `${version}: no priming event`);
      }
    }
  });
});

// p5 (c): resuming the standalone GET stream by Last-Event-ID made it stop being the session's
// GET stream, so a second plain GET was allowed alongside it.
test('a plain GET after a Last-Event-ID takeover of the GET stream gets 409', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h } = await session(srv);
    const sse = { ...h, Accept: 'text/event-stream' };
    const g1 = await conn();
    send(g1, srv, 'GET', sse);
    await until(() => parseResponse(g1.buf)?.body.includes('\n\n'), 'the priming event');
    const last = eventIds(parseResponse(g1.buf).body)[0];
    const g2 = await conn();
    send(g2, srv, 'GET', { ...sse, 'Last-Event-ID': last });
    assert.equal((await response(g2, { complete: false })).status, 200);
    await response(g1); // taken over: the old response ends
    const g3 = await conn();
    send(g3, srv, 'GET', sse);
    const r3 = await response(g3, { complete: false });
    assert.equal(r3.status, 409, 'still one standalone stream per session');
    // Once the resumed stream is closed by its client, a new GET stream may open.
    g2.destroy();
    await until(async () => {
      const s = await conn();
      send(s, srv, 'GET', sse);
      const r = await response(s, { complete: false });
      s.destroy();
      assert.ok(r.status === 200 || r.status === 409, `status ${r.status}`);
      return r.status === 200;
    }, 'the GET stream slot to free up');
  });
});

// A call whose id duplicated an in-flight one was not in the in-flight table, so DELETE did not
// cancel it; ending the session detached its POST stream and left the exchange pointing at the
// freed request, which its deadline then wrote into.
test('duplicate request id, then DELETE: the orphaned call times out harmlessly', T, async () => {
  await withServer(['--call-timeout', '1000'], async (srv, conn) => {
    const { h } = await session(srv, { caps: { sampling: {} } });
    const a = await conn();
    send(a, srv, 'POST', { ...h, Accept: 'application/json' }, wait(5, 60000));
    await barrier(srv, h);
    const b = await conn();
    send(b, srv, 'POST', h, call(5, 'test_sampling', { prompt: 'x' }));
    await until(() => /sampling\/createMessage/.test(b.buf), 'the sampling request on the POST stream');
    const d = await fetch(srv.url, { method: 'DELETE', headers: h });
    assert.equal(d.status, 200);
    const ra = await response(a);
    assert.equal(ra.status, 202, 'the first call was cancelled with its session (JSON only: 202)');
    const rb = await response(b);
    assert.equal(rb.status, 200);
    assert.equal(messages(rb.body).some((m) => m.id === 5), false, 'the stream ended with its session');
    await waitEvent(srv, 'call_timed_out', { method: 'tools/call' });
    const { h: h2 } = await session(srv);
    assert.equal((await post(srv, ping(1), h2)).status, 200, 'still serving');
  });
});

// Batches with deferred members, cancels inside the batch, deadlines, hang-ups and DELETE.
test('batch: a member cancelled in the batch gets no answer, one past its deadline -32001', T, async () => {
  await withServer(['--call-timeout', '250'], async (srv, conn) => {
    const { h } = await session(srv, { version: '2025-03-26' });
    const a = await conn();
    send(a, srv, 'POST', h, [wait(1, 300), wait(2, 50), ping(3), cancelled(1), wait(4, 60000)]);
    const r = await response(a);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/json');
    const answers = JSON.parse(r.body).sort((x, y) => x.id - y.id);
    assert.deepEqual(answers.map((x) => x.id), [2, 3, 4], 'none for the cancelled request');
    assert.equal(answers[0].result.content[0].text, 'waited');
    assert.deepEqual(answers[1].result, {});
    assert.equal(answers[2].error.code, -32001);
    const st = await stats(srv);
    assert.equal(st.completed, 1);
    assert.equal(st.cancelled, 2, 'the cancelled and the timed-out call stopped');
  });
});

test('batch: a hang-up or a DELETE stops its deferred members', T, async () => {
  await withServer([], async (srv, conn) => {
    const { h } = await session(srv, { version: '2025-03-26' });
    const sh = (await session(srv)).h;
    const s0 = await stats(srv, sh);
    const b = await conn();
    send(b, srv, 'POST', h, [wait(11, 60000), wait(12, 60000)]);
    await barrier(srv, h);
    b.destroy();
    await until(async () => (await stats(srv, sh)).cancelled === s0.cancelled + 2, 'both members cancelled');
    const c = await conn();
    send(c, srv, 'POST', h, [wait(21, 60000), wait(22, 60000), ping(23)]);
    await barrier(srv, h);
    const d = await fetch(srv.url, { method: 'DELETE', headers: h });
    assert.equal(d.status, 200);
    const r = await response(c);
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body).map((x) => x.id), [23], 'only the member that was answered');
    const s1 = await stats(srv, sh);
    assert.equal(s1.cancelled, s0.cancelled + 4);
    assert.equal(s1.completed, s0.completed);
  });
});
