// The HTTP and JSON-RPC surface of the engine, checked with raw requests against the real
// binaries: status codes, error codes, version negotiation, batches, limits, Host/Origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { startHermes, startConformance, post, parseSse, INIT } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

let hm; // build/hermes-mcp, stateless
let cs; // build/conformance-server, sessions on

before(async () => {
  hm = await startHermes();
  cs = await startConformance();
});
after(async () => {
  assert.equal(await hm.stop(), 0);
  assert.equal(await cs.stop(), 0);
});

// A request with full control of the headers (fetch forbids Host).
function raw(srv, { method = 'POST', path = '/mcp', headers = {}, body = '' }) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, method, path, headers }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: data }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// Raw bytes on a socket; resolves with the status line's code.
function rawBytes(srv, bytes) {
  return new Promise((resolve, reject) => {
    const s = net.connect(srv.port, '127.0.0.1', () => s.write(bytes));
    let data = '';
    s.on('data', (d) => { data += d; if (/\r\n\r\n/.test(data)) { s.destroy(); resolve(Number(data.split(' ')[1])); } });
    s.on('error', reject);
    s.setTimeout(5000, () => { s.destroy(); reject(new Error('timeout')); });
  });
}

test('health: GET and HEAD without auth, other methods 405', async () => {
  let r = await fetch(`${hm.base}/health`);
  assert.equal(r.status, 200);
  const h = await r.json();
  assert.equal(h.status, 'ok');
  assert.equal(h.service, 'hermes-mcp');
  assert.equal(h.tools, 8);
  assert.equal(JSON.stringify(h).includes(hm.token), false);
  r = await fetch(`${hm.base}/health`, { method: 'HEAD' });
  assert.equal(r.status, 200);
  r = await fetch(`${hm.base}/health`, { method: 'POST' });
  assert.equal(r.status, 405);
  assert.equal(r.headers.get('allow'), 'GET, HEAD');
});

test('unknown path is 404', async () => {
  const r = await fetch(`${hm.base}/nope`, { headers: hm.auth });
  assert.equal(r.status, 404);
});

test('auth: missing and wrong tokens get 401 with WWW-Authenticate', async () => {
  let r = await post({ ...hm, auth: {} }, INIT());
  assert.equal(r.status, 401);
  assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="hermes-mcp"');
  assert.equal(r.json.error, 'unauthorized');
  r = await post({ ...hm, auth: { Authorization: `Bearer ${'f'.repeat(64)}` } }, INIT());
  assert.equal(r.status, 401);
  assert.match(r.headers.get('www-authenticate'), /error="invalid_token"/);
  r = await post({ ...hm, auth: { Authorization: `Basic ${hm.token}` } }, INIT());
  assert.equal(r.status, 401);
  // Checked before the body: a garbage body still gets 401, not a parse error.
  r = await post({ ...hm, auth: {} }, '{not json');
  assert.equal(r.status, 401);
});

test('initialize negotiates every supported version, else offers the newest', async () => {
  for (const v of ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']) {
    const r = await post(hm, INIT(v));
    assert.equal(r.status, 200);
    assert.equal(r.json.result.protocolVersion, v);
    assert.equal(r.json.result.serverInfo.name, 'hermes-mcp');
  }
  const r = await post(hm, INIT('1999-01-01'));
  assert.equal(r.json.result.protocolVersion, '2025-11-25');
  const caps = r.json.result.capabilities;
  assert.deepEqual(Object.keys(caps).sort(), ['logging', 'tools'], 'only what is provided');
  const bad = await post(hm, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} });
  assert.equal(bad.json.error.code, -32602);
});

test('MCP-Protocol-Version header: supported ones accepted, others 400', async () => {
  for (const v of ['2025-03-26', '2025-06-18', '2025-11-25']) {
    const r = await post(hm, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'MCP-Protocol-Version': v });
    assert.equal(r.status, 200, v);
  }
  const r = await post(hm, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'MCP-Protocol-Version': '2099-01-01' });
  assert.equal(r.status, 400);
});

test('JSON-RPC errors carry the request id or null', async () => {
  let r = await post(hm, '{"jsonrpc":"2.0","id":1,');
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32700);
  assert.equal(r.json.id, null);
  r = await post(hm, { jsonrpc: '2.0', id: 5 });
  assert.equal(r.json.error.code, -32600);
  assert.equal(r.json.id, 5);
  r = await post(hm, { jsonrpc: '2.0', id: 'x', method: 'no/such' });
  assert.equal(r.status, 200);
  assert.equal(r.json.error.code, -32601);
  assert.equal(r.json.id, 'x');
  r = await post(hm, { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'nope' } });
  assert.equal(r.json.error.code, -32602);
  r = await post(hm, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_agents', arguments: [] } });
  assert.equal(r.json.error.code, -32602);
  r = await post(hm, { jsonrpc: '2.0', id: 8, method: 'ping', params: [1] });
  assert.equal(r.json.error.code, -32602);
  r = await post(hm, '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}');
  assert.equal(r.json.error.code, -32700, 'duplicate keys are refused');
  r = await post(hm, '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}');
  assert.ok(r.text.includes('"id":9007199254740993'), 'big integer ids are echoed exactly');
  r = await post(hm, '[' + '['.repeat(5000) + ']'.repeat(5000) + ']');
  assert.equal(r.json.error.code, -32700, 'nesting deeper than the parser allows');
});

test('notifications and client responses get 202 with an empty body', async () => {
  let r = await post(hm, { jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(r.status, 202);
  assert.equal(r.text, '');
  r = await post(hm, { jsonrpc: '2.0', id: 77, result: {} });
  assert.equal(r.status, 202);
});

test('tool failures are isError results with a code', async () => {
  const r = await post(hm, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_agents', arguments: { x: 1 } } });
  assert.equal(r.json.result.isError, true);
  assert.equal(r.json.result.structuredContent.error, 'invalid_arguments');
});

test('batches: only in 2025-03-26, at most 20', async () => {
  const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });
  const v = { 'MCP-Protocol-Version': '2025-03-26' };
  let r = await post(hm, [ping(1), { jsonrpc: '2.0', method: 'notifications/initialized' }, ping(2)], v);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.map((x) => x.id).sort(), [1, 2]);
  r = await post(hm, Array.from({ length: 20 }, (_, i) => ping(i)), v);
  assert.equal(r.json.length, 20);
  r = await post(hm, Array.from({ length: 21 }, (_, i) => ping(i)), v);
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32600);
  r = await post(hm, [ping(1)], { 'MCP-Protocol-Version': '2025-11-25' });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, -32600);
  r = await post(hm, [ping(1), 5, { jsonrpc: '2.0', id: 3, method: 'nope' }], v);
  assert.deepEqual(r.json.map((x) => x.error?.code ?? 0).sort(), [-32601, -32600, 0].sort());
  r = await post(hm, [INIT()], v);
  assert.equal(r.json[0].error.code, -32600, 'initialize cannot be batched');
  r = await post(hm, [], v);
  assert.equal(r.json.error.code, -32600);
});

// A lone tools/list (and the other list methods, and ping) is answered from text made without
// jansson, the request's id spliced in; a batch member takes the plain JSON path. Both must agree,
// for any id, and every answer must carry its own request's id.
test('list methods and ping: the direct answer carries each id and equals the JSON path', async () => {
  const ids = [0, 7, -3, 9007199254740991, 'a', '', 'q"uo\\te\n\u0001', 'é✓𝄞'];
  for (const srv of [hm, cs]) {
    const methods = srv === hm ? ['tools/list', 'ping']
      : ['tools/list', 'resources/list', 'resources/templates/list', 'prompts/list', 'ping'];
    const h = srv === cs ? (await session(cs, '2025-03-26')).h : {};
    for (const method of methods) {
      const batch = await post(srv, [{ jsonrpc: '2.0', id: 'b', method }], h);
      assert.equal(batch.status, 200, batch.text);
      const expected = batch.json[0].result;
      if (method !== 'ping') assert.ok(Object.values(expected)[0].length > 0, `${method} lists something`);
      else assert.deepEqual(expected, {});
      for (const id of ids) {
        const r = await post(srv, { jsonrpc: '2.0', id, method }, h);
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('content-type'), 'application/json');
        assert.deepEqual(r.json, { jsonrpc: '2.0', id, result: expected }, `${method} id ${JSON.stringify(id)}`);
      }
    }
  }
});

test('HTTP errors: 415 content type, 406 accept, 405 with Allow when stateless', async () => {
  let r = await post(hm, '{}', { 'Content-Type': 'text/plain' });
  assert.equal(r.status, 415);
  r = await post(hm, INIT(), { Accept: 'text/html' });
  assert.equal(r.status, 406);
  r = await post(hm, INIT(), { 'Content-Type': 'application/json; charset=utf-8' });
  assert.equal(r.status, 200);
  for (const method of ['GET', 'DELETE', 'PUT']) {
    const g = await fetch(hm.url, { method, headers: { ...hm.auth, Accept: 'text/event-stream' } });
    assert.equal(g.status, 405, method);
    assert.equal(g.headers.get('allow'), 'POST');
    const msg = (await g.json()).error.message;
    assert.match(msg, /send JSON-RPC requests with POST/, method);
    if (method === 'GET') assert.match(msg, /GET streams need MCP_SESSIONS=1/, 'a GET is told how to get a stream');
  }
});

test('body limit: exactly 256 KiB accepted, one byte more is 413', async () => {
  const base = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const exact = base + ' '.repeat(256 * 1024 - base.length);
  let r = await post(hm, exact);
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.result, {});
  r = await post(hm, exact + ' ');
  assert.equal(r.status, 413);
  // httpd's own answers speak the endpoint's protocol, worded by the engine: a JSON-RPC error.
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.equal(r.text, '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large"}}');
  // The same limit on streamed (chunked) bodies.
  const big = Buffer.from(exact + '  ');
  const code = await new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: hm.port, method: 'POST', path: '/mcp',
      headers: { ...hm.auth, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } },
    (res) => { res.resume(); resolve(res.statusCode); });
    req.on('error', (e) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? resolve('reset') : reject(e)));
    for (let i = 0; i < big.length; i += 65536) req.write(big.subarray(i, i + 65536));
    req.end();
  });
  assert.equal(code, 413);
  assert.equal((await post(hm, { jsonrpc: '2.0', id: 2, method: 'ping' })).status, 200, 'still serving');
});

test('conflicting Content-Length headers are 400', async () => {
  const body = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
  const code = await rawBytes(hm, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${hm.port}\r\n` +
    `Authorization: Bearer ${hm.token}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\nContent-Length: ${body.length + 5}\r\n\r\n${body}`);
  assert.equal(code, 400);
});

test('Host and Origin: own names allowed, others refused (DNS rebinding)', async () => {
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const hdr = (extra) => ({ ...hm.auth, 'Content-Type': 'application/json', ...extra });
  for (const host of [`localhost:${hm.port}`, `127.0.0.1:${hm.port}`, 'localhost']) {
    const r = await raw(hm, { headers: hdr({ Host: host }), body: ping });
    assert.equal(r.status, 200, host);
  }
  for (const host of ['evil.example.com', `evil.example.com:${hm.port}`, 'localhost:1', '[::1]:1']) {
    const r = await raw(hm, { headers: hdr({ Host: host }), body: ping });
    assert.equal(r.status, 403, host);
    // The error names the refused host and the setting that allows it; the log says it too.
    const msg = JSON.parse(r.text).error.message;
    assert.ok(msg.includes(`Host '${host}' is not allowed`), msg);
    assert.match(msg, /MCP_PUBLIC_HOSTS/);
  }
  await waitEvent(hm, 'name_refused', { header: 'Host', value: 'evil.example.com' });
  let r = await raw(hm, { headers: hdr({ Origin: 'http://evil.example.com' }), body: ping });
  assert.equal(r.status, 403);
  assert.ok(JSON.parse(r.text).error.message.includes("Origin 'http://evil.example.com' is not allowed"));
  // A hostile value is quoted cut and printable only.
  r = await raw(hm, { headers: hdr({ Origin: `http://${'a'.repeat(300)}.example` }), body: ping });
  assert.equal(r.status, 403);
  assert.ok(JSON.parse(r.text).error.message.includes(`'http://${'a'.repeat(93)}...'`));
  r = await raw(hm, { headers: hdr({ Origin: 'null' }), body: ping });
  assert.equal(r.status, 403);
  r = await raw(hm, { headers: hdr({ Origin: `http://localhost:${hm.port}` }), body: ping });
  assert.equal(r.status, 200);
});

test('configured public host names are allowed', async () => {
  const srv = await startHermes({ MCP_PUBLIC_HOSTS: 'mcp.example.com, other.example.org' });
  try {
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const h = { ...srv.auth, 'Content-Type': 'application/json' };
    let r = await raw(srv, { headers: { ...h, Host: 'mcp.example.com', Origin: 'https://mcp.example.com' }, body: ping });
    assert.equal(r.status, 200);
    r = await raw(srv, { headers: { ...h, Host: 'other.example.org:443' }, body: ping });
    assert.equal(r.status, 200);
    r = await raw(srv, { headers: { ...h, Host: 'example.com' }, body: ping });
    assert.equal(r.status, 403);
  } finally {
    await srv.stop();
  }
});

test('a public host name with a leading dot allows the names under it', async () => {
  const srv = await startHermes({ MCP_PUBLIC_HOSTS: '.trycloudflare.com' });
  try {
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const h = { ...srv.auth, 'Content-Type': 'application/json' };
    const status = async (host, origin) => (await raw(srv, {
      headers: { ...h, Host: host, ...(origin ? { Origin: origin } : {}) }, body: ping })).status;
    assert.equal(await status('able-fox-12.trycloudflare.com', 'https://able-fox-12.trycloudflare.com'), 200);
    assert.equal(await status('a.b.trycloudflare.com:443'), 200);
    assert.equal(await status('trycloudflare.com'), 403, 'the suffix itself is not a name under it');
    assert.equal(await status('eviltrycloudflare.com'), 403, 'a label boundary is required');
    assert.equal(await status('x.trycloudflare.com.evil.net'), 403);
  } finally {
    await srv.stop();
  }
});

async function session(srv, version = '2025-11-25') {
  const r = await post(srv, INIT(version));
  const sid = r.headers.get('mcp-session-id');
  return { sid, h: { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': version } };
}

test('sessions: issued on initialize, required (400), unknown or ended (404), DELETE', async () => {
  const { sid, h } = await session(cs);
  assert.match(sid, /^[0-9a-f]{64}$/);
  const { sid: sid2 } = await session(cs);
  assert.notEqual(sid, sid2);
  let r = await post(cs, { jsonrpc: '2.0', id: 1, method: 'ping' });
  assert.equal(r.status, 400, 'no session id');
  r = await post(cs, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'Mcp-Session-Id': 'f'.repeat(64) });
  assert.equal(r.status, 404, 'unknown session id');
  r = await post(cs, { jsonrpc: '2.0', id: 1, method: 'ping' }, h);
  assert.equal(r.status, 200);
  const d = await fetch(cs.url, { method: 'DELETE', headers: h });
  assert.equal(d.status, 200);
  r = await post(cs, { jsonrpc: '2.0', id: 1, method: 'ping' }, h);
  assert.equal(r.status, 404, 'ended session');
  const d2 = await fetch(cs.url, { method: 'DELETE', headers: h });
  assert.equal(d2.status, 404);
});

test('batches follow the session version', async () => {
  const old = await session(cs, '2025-03-26');
  let r = await post(cs, [{ jsonrpc: '2.0', id: 1, method: 'ping' }], old.h);
  assert.equal(r.status, 200);
  assert.equal(r.json.length, 1);
  const cur = await session(cs, '2025-11-25');
  r = await post(cs, [{ jsonrpc: '2.0', id: 1, method: 'ping' }], cur.h);
  assert.equal(r.status, 400);
});

test('GET /mcp opens an SSE stream with a priming event; needs Accept', async () => {
  const { h } = await session(cs);
  let r = await fetch(cs.url, { headers: { ...h, Accept: 'application/json' } });
  assert.equal(r.status, 406);
  const ctl = new AbortController();
  r = await fetch(cs.url, { headers: { ...h, Accept: 'text/event-stream' }, signal: ctl.signal });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/event-stream');
  const reader = r.body.getReader();
  const { value } = await reader.read();
  const ev = parseSse(Buffer.from(value).toString())[0];
  assert.ok(ev.id, 'priming event has an id');
  assert.equal(ev.data, '');
  assert.ok(ev.retry > 0);
  const second = await fetch(cs.url, { headers: { ...h, Accept: 'text/event-stream' } });
  assert.equal(second.status, 409, 'one standalone stream per session');
  ctl.abort();
});

test('SSE response: priming, strictly increasing progress for the given token, then the result', async () => {
  const { h } = await session(cs);
  const r = await post(cs, { jsonrpc: '2.0', id: 3, method: 'tools/call',
    params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 'tok-1' } } }, h);
  assert.equal(r.headers.get('content-type'), 'text/event-stream');
  const evs = parseSse(r.text);
  assert.equal(evs[0].data, '', 'priming first');
  const msgs = evs.slice(1).map((e) => e.json);
  const prog = msgs.filter((m) => m.method === 'notifications/progress');
  assert.deepEqual(prog.map((m) => m.params.progress), [0, 50, 100]);
  assert.ok(prog.every((m) => m.params.progressToken === 'tok-1' && m.params.total === 100));
  assert.equal(msgs.at(-1).id, 3, 'result last, nothing after it');
  assert.equal(msgs.at(-1).result.content[0].text, 'tok-1');
  const ids = evs.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, 'event ids unique');
  // Without a token: no progress at all.
  const r2 = await post(cs, { jsonrpc: '2.0', id: 4, method: 'tools/call',
    params: { name: 'test_tool_with_progress', arguments: {} } }, h);
  const m2 = parseSse(r2.text).map((e) => e.json).filter(Boolean);
  assert.equal(m2.filter((m) => m.method === 'notifications/progress').length, 0);
});

test('logging/setLevel filters notifications/message', async () => {
  const { h } = await session(cs);
  let r = await post(cs, { jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'warning' } }, h);
  assert.deepEqual(r.json.result, {});
  r = await post(cs, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'test_tool_with_logging', arguments: {} } }, h);
  let logs = parseSse(r.text).map((e) => e.json).filter((m) => m?.method === 'notifications/message');
  assert.equal(logs.length, 0, 'info messages filtered at warning');
  await post(cs, { jsonrpc: '2.0', id: 3, method: 'logging/setLevel', params: { level: 'debug' } }, h);
  r = await post(cs, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'test_tool_with_logging', arguments: {} } }, h);
  logs = parseSse(r.text).map((e) => e.json).filter((m) => m?.method === 'notifications/message');
  assert.equal(logs.length, 3);
  r = await post(cs, { jsonrpc: '2.0', id: 5, method: 'logging/setLevel', params: { level: 'loud' } }, h);
  assert.equal(r.json.error.code, -32602);
});

test('a client that only accepts JSON gets the deferred result as JSON', async () => {
  const { h } = await session(cs);
  const r = await post(cs, { jsonrpc: '2.0', id: 9, method: 'tools/call',
    params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 1 } } },
  { ...h, Accept: 'application/json' });
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.equal(r.json.id, 9);
  assert.equal(r.json.result.content[0].text, '1');
});

async function stats(srv, h) {
  const r = await post(srv, { jsonrpc: '2.0', id: 'st', method: 'resources/read', params: { uri: 'test://stats' } }, h);
  return JSON.parse(r.json.result.contents[0].text);
}

test('notifications/cancelled stops the call; its stream ends without a result', async () => {
  const { h } = await session(cs);
  const before = await stats(cs, h);
  const pending = post(cs, { jsonrpc: '2.0', id: 'long-1', method: 'tools/call', params: { name: 'test_wait', arguments: { ms: 60000 } } }, { ...h, Accept: 'application/json' });
  await new Promise((r) => setTimeout(r, 100));
  const c = await post(cs, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long-1', reason: 'test' } }, h);
  assert.equal(c.status, 202);
  const r = await pending;
  assert.equal(r.status, 202, 'no answer for a cancelled request');
  const after = await stats(cs, h);
  assert.equal(after.cancelled, before.cancelled + 1);
  assert.equal(after.completed, before.completed);
});

test('a client hanging up stops its waiting call; the server keeps serving', async () => {
  const { h } = await session(cs);
  const before = await stats(cs, h);
  const ctl = new AbortController();
  const p = fetch(cs.url, { method: 'POST', signal: ctl.signal,
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...h },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'hang', method: 'tools/call', params: { name: 'test_wait', arguments: { ms: 60000 } } }) });
  await new Promise((r) => setTimeout(r, 100));
  ctl.abort();
  await assert.rejects(p);
  let after;
  for (let i = 0; i < 50; i++) {
    after = await stats(cs, h);
    if (after.cancelled > before.cancelled) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(after.cancelled, before.cancelled + 1);
  const ok = await post(cs, { jsonrpc: '2.0', id: 1, method: 'ping' }, h);
  assert.equal(ok.status, 200);
});

test('many calls wait at once without blocking each other', async () => {
  const { h } = await session(cs);
  let firstDone = 0;
  const calls = Array.from({ length: 200 }, (_, i) => post(cs, { jsonrpc: '2.0', id: i, method: 'tools/call',
    params: { name: 'test_wait', arguments: { ms: 1500 } } }, { ...h, Accept: 'application/json' })
    .then((r) => { firstDone ||= Date.now(); return r; }));
  const ping = await post(cs, { jsonrpc: '2.0', id: 'p', method: 'ping' }, h);
  const pingAt = Date.now();
  assert.equal(ping.status, 200);
  assert.equal(firstDone, 0, 'ping answered while all 200 calls were still waiting');
  const res = await Promise.all(calls);
  assert.ok(firstDone > pingAt);
  assert.ok(res.every((r, i) => r.json.id === i && r.json.result.content[0].text === 'waited'));
});

test('SIGTERM answers waiting calls with 503, closes streams, and exits 0', async () => {
  const srv = await startConformance();
  const { h } = await session(srv);
  const held = Array.from({ length: 5 }, (_, i) => post(srv, { jsonrpc: '2.0', id: i, method: 'tools/call',
    params: { name: 'test_wait', arguments: { ms: 60000 } } }, { ...h, Accept: 'application/json' }));
  const stream = fetch(srv.url, { headers: { ...h, Accept: 'text/event-stream' } }).then((r) => r.text());
  await new Promise((r) => setTimeout(r, 150));
  const t0 = Date.now();
  const code = await srv.stop('SIGTERM');
  assert.equal(code, 0);
  assert.ok(Date.now() - t0 < 3000, 'drained promptly');
  for (const r of await Promise.all(held)) {
    assert.equal(r.status, 503);
    assert.equal(r.json.error.code, -32600);
  }
  const text = await stream;
  assert.ok(text.startsWith('id: '), 'the GET stream ended cleanly after its priming event');
});

test('a call past its deadline is stopped and answered with -32001', async () => {
  const srv = await startConformance(['--call-timeout', '300']);
  try {
    const { h } = await session(srv);
    const t0 = Date.now();
    const r = await post(srv, { jsonrpc: '2.0', id: 'slow', method: 'tools/call',
      params: { name: 'test_wait', arguments: { ms: 60000 } } }, { ...h, Accept: 'application/json' });
    const took = Date.now() - t0;
    assert.equal(r.json.id, 'slow');
    assert.equal(r.json.error.code, -32001);
    assert.ok(took >= 280 && took < 5000, `answered at the deadline (${took} ms)`);
    const st = await stats(srv, h);
    assert.equal(st.cancelled, 1, 'the work was stopped');
    assert.equal(st.completed, 0);
    const quick = await post(srv, { jsonrpc: '2.0', id: 'q', method: 'tools/call',
      params: { name: 'test_wait', arguments: { ms: 10 } } }, { ...h, Accept: 'application/json' });
    assert.equal(quick.json.result.content[0].text, 'waited');
  } finally {
    await srv.stop();
  }
});

// A refused request says what to change: the name it saw and the setting that allows it.
test('403 for Host names the host and MCP_PUBLIC_HOSTS (and logs it); 403 for Origin names the origin', async () => {
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const hdr = (extra) => ({ ...hm.auth, 'Content-Type': 'application/json', ...extra });
  let r = await raw(hm, { headers: hdr({ Host: 'mcp.example.com' }), body: ping });
  assert.equal(r.status, 403);
  let msg = JSON.parse(r.text).error.message;
  assert.match(msg, /mcp\.example\.com/);
  assert.match(msg, /MCP_PUBLIC_HOSTS/);
  const logged = await waitEvent(hm, 'name_refused', { header: 'Host', value: 'mcp.example.com' });
  assert.match(logged.line, /warn: .*MCP_PUBLIC_HOSTS/);
  r = await raw(hm, { headers: hdr({ Origin: 'https://evil.example.net' }), body: ping });
  assert.equal(r.status, 403);
  msg = JSON.parse(r.text).error.message;
  assert.match(msg, /https:\/\/evil\.example\.net/);
  assert.match(msg, /MCP_PUBLIC_HOSTS/);
  // What a client sent comes back sanitised: printable ASCII only, length capped, valid JSON.
  r = await raw(hm, { headers: hdr({ Host: `x"\\\t${'a'.repeat(500)}.evil` }), body: ping });
  assert.equal(r.status, 403);
  msg = JSON.parse(r.text).error.message;
  assert.ok(msg.length < 300, `capped: ${msg.length}`);
  assert.doesNotMatch(msg, /[\t"\\]/);
  r = await raw(hm, { headers: hdr({ Origin: 'http://\u00e9vil.example' }), body: ping });
  assert.equal(r.status, 403);
  assert.match(JSON.parse(r.text).error.message, /^[\x20-\x7e]+$/);
});

test('GET /mcp says to POST, or that GET streams need MCP_SESSIONS=1', async () => {
  const g = await fetch(hm.url, { headers: { ...hm.auth, Accept: 'text/event-stream' } });
  assert.equal(g.status, 405);
  const msg = (await g.json()).error.message;
  assert.match(msg, /POST/);
  assert.match(msg, /MCP_SESSIONS=1/);
  // With sessions on, a GET without a session says how to get one.
  const c = await fetch(cs.url, { headers: { ...cs.auth, Accept: 'text/event-stream' } });
  assert.equal(c.status, 400);
  assert.match((await c.json()).error.message, /Mcp-Session-Id.*initialize/);
});
