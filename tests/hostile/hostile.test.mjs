// The hostile-input suite: every case sends something a careless or malicious client might, and
// asserts the exact HTTP status and JSON-RPC or tool error code; after each case the server must
// still answer /health and a normal call. At the end every log, audit line, stdout and stderr of
// the run is searched for the bearer token and the agent key: neither may appear.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readFileSync, writeFileSync, mkdirSync, symlinkSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startHermes, startFake, agentEnv } from '../lib/lib.mjs';

let srv, fake;
const cases = [];
const kase = (name, spec) => cases.push({ name, ...spec });

// Raw HTTP/1.1 over a socket, so any byte can be sent. Returns {status, headers, body}.
function rawRequest(port, text, { timeout = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(text));
    let buf = Buffer.alloc(0);
    const done = () => {
      s.destroy();
      const str = buf.toString('latin1');
      const head = str.split('\r\n\r\n')[0];
      const m = head.match(/^HTTP\/1\.[01] (\d{3})/);
      const headers = {};
      for (const line of head.split('\r\n').slice(1)) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      let body = str.slice(head.length + 4);
      if (/chunked/i.test(headers['transfer-encoding'] || '')) {
        let out = '', rest = body;
        for (;;) {
          const nl = rest.indexOf('\r\n');
          if (nl < 0) break;
          const n = parseInt(rest.slice(0, nl), 16);
          if (!n) break;
          out += rest.slice(nl + 2, nl + 2 + n);
          rest = rest.slice(nl + 2 + n + 2);
        }
        body = out;
      }
      resolve({ status: m ? Number(m[1]) : 0, headers, body });
    };
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const str = buf.toString('latin1');
      const end = str.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = str.slice(0, end);
      const cl = head.match(/content-length: *(\d+)/i);
      if (cl && buf.length >= end + 4 + Number(cl[1])) done();
      else if (/transfer-encoding: *chunked/i.test(head) && str.endsWith('0\r\n\r\n')) done();
      else if (!cl && !/chunked/i.test(head) && /^HTTP\/1\.[01] (1\d\d|204|304)/.test(head)) done();
    });
    s.on('end', done);
    s.on('error', (e) => (e.code === 'ECONNRESET' || e.code === 'EPIPE' ? done() : reject(e)));
    s.setTimeout(timeout, () => { s.destroy(); reject(new Error('timeout')); });
  });
}

// headOnly: announce the body's length but do not send it. The server answers 413 from the
// Content-Length alone and closes; a client still writing could see a reset before the answer.
function httpText({ method = 'POST', path = '/mcp', headers = {}, body = '', auth = true, ct = 'application/json', host, headOnly = false }) {
  const h = { Host: host ?? `127.0.0.1:${srv.port}`, Accept: 'application/json, text/event-stream' };
  if (auth) h.Authorization = `Bearer ${srv.token}`;
  if (ct) h['Content-Type'] = ct;
  Object.assign(h, headers);
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  if (!('Content-Length' in h) && !('Transfer-Encoding' in h) && (method === 'POST' || b.length)) h['Content-Length'] = b.length;
  let text = `${method} ${path} HTTP/1.1\r\n`;
  for (const [k, v] of Object.entries(h)) if (v !== null) text += `${k}: ${v}\r\n`;
  return Buffer.concat([Buffer.from(text + '\r\n', 'latin1'), headOnly ? Buffer.alloc(0) : b]);
}

const rpc = (method, params, id = 1) => JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
const call = (name, args) => rpc('tools/call', { name, arguments: args });

async function runCase(c) {
  const text = c.raw ? c.raw(srv) : httpText(typeof c.req === 'function' ? c.req(srv) : c.req);
  const r = await rawRequest(srv.port, text, { timeout: c.timeout ?? 5000 });
  if (c.status !== undefined) assert.equal(r.status, c.status, `${c.name}: HTTP status`);
  let json;
  if (c.rpc !== undefined || c.tool !== undefined || c.check) {
    const body = r.headers['content-type']?.startsWith('text/event-stream')
      ? r.body.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => l.slice(6)).at(-1)
      : r.body;
    json = JSON.parse(body);
  }
  if (c.rpc !== undefined) {
    const err = Array.isArray(json) ? json.map((x) => x.error?.code ?? 0) : json.error?.code;
    assert.deepEqual(err, c.rpc, `${c.name}: JSON-RPC code`);
  }
  if (c.tool !== undefined) {
    assert.equal(json.result?.isError, true, `${c.name}: isError`);
    assert.equal(json.result.structuredContent.error, c.tool, `${c.name}: tool error code`);
  }
  if (c.check) c.check(r, json);
}

async function stillServing() {
  const h = await fetch(`${srv.base}/health`);
  assert.equal(h.status, 200, 'health after the case');
  const p = await fetch(srv.url, { method: 'POST', headers: { ...srv.auth, 'Content-Type': 'application/json', Accept: 'application/json' },
    body: rpc('tools/call', { name: 'list_agents', arguments: {} }, 'after') });
  assert.equal(p.status, 200, 'a normal call after the case');
  assert.equal((await p.json()).result.isError, false);
}

// ---------- authentication (checked before anything else) ----------
const ping = rpc('ping');
kase('no Authorization header', { req: { body: ping, auth: false }, status: 401 });
kase('empty bearer', { req: { body: ping, auth: false, headers: { Authorization: 'Bearer ' } }, status: 401 });
kase('scheme only', { req: { body: ping, auth: false, headers: { Authorization: 'Bearer' } }, status: 401 });
kase('wrong token', { req: { body: ping, auth: false, headers: { Authorization: `Bearer ${'0'.repeat(64)}` } }, status: 401 });
kase('token one char short', { req: (s) => ({ body: ping, auth: false, headers: { Authorization: `Bearer ${s.token.slice(0, 63)}` } }), status: 401 });
kase('token plus a char', { req: (s) => ({ body: ping, auth: false, headers: { Authorization: `Bearer ${s.token}0` } }), status: 401 });
kase('token in upper case', { req: (s) => ({ body: ping, auth: false, headers: { Authorization: `Bearer ${s.token.toUpperCase()}` } }), status: 401 });
kase('Basic scheme with the token', { req: (s) => ({ body: ping, auth: false, headers: { Authorization: `Basic ${s.token}` } }), status: 401 });
kase('token in the query string', { req: (s) => ({ path: `/mcp?access_token=${s.token}`, body: ping, auth: false }), status: 401 });
kase('token in the body', { req: (s) => ({ body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', token: s.token }), auth: false }), status: 401 });
kase('10 KiB token', { req: { body: ping, auth: false, headers: { Authorization: `Bearer ${'a'.repeat(10240)}` } }, status: 401 });
kase('token with trailing junk after space', { req: (s) => ({ body: ping, auth: false, headers: { Authorization: `Bearer ${s.token} x` } }), status: 401 });
kase('lower-case scheme is fine', { req: (s) => ({ body: ping, auth: false, headers: { Authorization: `bearer ${s.token}` } }), status: 200 });
kase('401 before parsing a broken body', { req: { body: '{{{{', auth: false }, status: 401 });
kase('401 before the body cap', { req: { body: 'x'.repeat(300 * 1024), auth: false, headOnly: true }, status: 401 });
kase('401 carries WWW-Authenticate', { req: { body: ping, auth: false }, status: 401, check: (r) => assert.equal(r.headers['www-authenticate'], 'Bearer realm="hermes-mcp"') });

// ---------- methods and paths ----------
for (const m of ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
  kase(`${m} /mcp in stateless mode`, { req: { method: m, body: '', ct: null }, status: 405, check: (r) => assert.equal(r.headers.allow, 'POST') });
for (const p of ['/mcp/', '/MCP', '//mcp', '/mcp/../health/x', '/%2e%2e/etc/passwd', '/etc/passwd', '/health/', '/mcp%00'])
  kase(`unknown path ${p}`, { req: { path: p, body: ping }, status: 404 });
kase('query string on /mcp is ignored', { req: { path: '/mcp?x=1', body: ping }, status: 200, rpc: undefined });
kase('POST /health', { req: { path: '/health', body: '', ct: null }, status: 405 });

// ---------- content types ----------
for (const ct of ['text/plain', 'application/jsonx', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'json', ''])
  kase(`Content-Type "${ct}"`, { req: { body: ping, ct: ct || null }, status: 415 });
kase('Content-Type with charset', { req: { body: ping, ct: 'application/json; charset=utf-8' }, status: 200 });
kase('Content-Type in capitals', { req: { body: ping, ct: 'APPLICATION/JSON' }, status: 200 });
kase('Accept without JSON or SSE', { req: { body: ping, headers: { Accept: 'text/html' } }, status: 406 });

// ---------- malformed bodies ----------
const bodyCases = [
  ['empty body', '', 400, -32700], ['truncated JSON', '{"jsonrpc":"2.0","id":1,', 400, -32700],
  ['null', 'null', 400, -32600], ['empty array', '[]', 400, -32600], ['a number', '123', 400, -32600],
  ['a string', '"ping"', 400, -32600], ['trailing garbage', ping + 'x', 400, -32700],
  ['UTF-8 BOM', '\ufeff' + ping, 400, -32700], ['duplicate keys', '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}', 400, -32700],
  ['nesting 10000 deep', '['.repeat(10000) + ']'.repeat(10000), 400, -32700],
  ['number too large', '{"jsonrpc":"2.0","id":1e400,"method":"ping"}', 400, -32700],
  ['fractional id', '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', 400, -32600],
  ['object id', '{"jsonrpc":"2.0","id":{},"method":"ping"}', 400, -32600],
  ['boolean id', '{"jsonrpc":"2.0","id":true,"method":"ping"}', 400, -32600],
  ['null id', '{"jsonrpc":"2.0","id":null,"method":"ping"}', 400, -32600],
  ['method is a number', '{"jsonrpc":"2.0","id":1,"method":5}', 400, -32600],
  ['empty method', '{"jsonrpc":"2.0","id":1,"method":""}', 400, -32600],
  ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":1,"method":"ping"}', 400, -32600],
  ['no jsonrpc', '{"id":1,"method":"ping"}', 400, -32600],
  ['jsonrpc as number', '{"jsonrpc":2.0,"id":1,"method":"ping"}', 400, -32600],
  ['params is an array', '{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}', 400, -32602],
  ['params is a string', '{"jsonrpc":"2.0","id":1,"method":"ping","params":"x"}', 400, -32602],
  ['result and error together', '{"jsonrpc":"2.0","id":1,"result":{},"error":{}}', 400, -32600],
  ['request with result', '{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}', 400, -32600],
];
for (const [name, body, status, code] of bodyCases) kase(`body: ${name}`, { req: { body }, status, rpc: code });
// Found by fuzz_jrpc: jansson's error text quoted half a UTF-8 character and the reply crashed.
kase('body: escape before a multi-byte character', { req: { body: Buffer.from([0x22, 0x5c, 0xd0, 0x9a]) }, status: 400, rpc: -32700 });
kase('body: invalid UTF-8', { req: { body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]) }, status: 400, rpc: -32700 });
// "\u0000" is valid JSON: parsed, then refused by the field it is in, never
// read as a shorter string ("pi\u0000ng" is not "pi").
kase('body: NUL inside the method', { req: { body: '{"jsonrpc":"2.0","id":1,"method":"ping\\u0000x"}' }, status: 400, rpc: -32600, check: (r) => assert.match(r.body, /method must not contain a NUL character/) });
kase('body: NUL inside a string id', { req: { body: '{"jsonrpc":"2.0","id":"a\\u0000b","method":"ping"}' }, status: 400, rpc: -32600, check: (r) => assert.match(r.body, /"id":null/) });
kase('body: NUL inside jsonrpc', { req: { body: '{"jsonrpc":"2.0\\u0000","id":1,"method":"ping"}' }, status: 400, rpc: -32600 });
kase('body: NUL in an ignored string', { req: { body: '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"note":"a\\u0000b"}}}' }, status: 200, check: (r) => assert.match(r.body, /"result":\{\}/) });
// A NUL in an object key is valid JSON too, but jansson cannot hold such a key (and no key of
// MCP has one): the request is invalid, not unparsable, and the answer says why.
for (const [where, body] of [['the envelope', '{"jsonrpc":"2.0","id":1,"method":"ping","a\\u0000b":1}'],
  ['_meta', '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a\\u0000":1}}}'],
  ['tool arguments', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_agents","arguments":{"x\\u0000":1}}}']])
  kase(`body: NUL inside an object key in ${where}`, { req: { body }, status: 400, rpc: -32600, check: (r) => {
    assert.match(r.body, /object key holds a NUL character/);
    assert.match(r.body, /"id":1[,}]/, 'the id is given back, so the client can match the error');
  } });
kase('body: NUL in a key and in the string id: no id rather than another one', { req: { body: '{"jsonrpc":"2.0","id":"a\\u0000","method":"ping","k\\u0000":1}' }, status: 400, rpc: -32600, check: (r) => assert.match(r.body, /"id":null/) });
kase('body: NUL in a key, the id beside an escaped backslash', { req: { body: '{"jsonrpc":"2.0","id":"x\\\\u0000","method":"ping","k\\u0000":1}' }, status: 400, rpc: -32600, check: (r) => assert.match(r.body, /"id":"x\\\\u0000"/) });
kase('tools/call: tool name with a NUL', { req: { body: rpc('tools/call', { name: 'list_agents\u0000x', arguments: {} }) }, status: 200, rpc: -32602, check: (r) => assert.match(r.body, /name must not contain a NUL character/) });
kase('initialize: protocolVersion with a NUL', { req: { body: rpc('initialize', { protocolVersion: '2025-11-25\u0000', capabilities: {}, clientInfo: { name: 'h', version: '1' } }) }, status: 200, rpc: -32602 });
kase('body: 20-digit integer id', { req: { body: '{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}' }, status: 400, rpc: -32700 });
kase('body: big but exact integer id echoed', { req: { body: '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}' }, status: 200, check: (r) => assert.ok(r.body.includes('9007199254740993')) });
kase('body: 1 MiB id string', { req: { body: JSON.stringify({ jsonrpc: '2.0', id: 'x'.repeat(1024 * 1024), method: 'ping' }), headOnly: true }, status: 413 });
kase('body: exactly 256 KiB', { req: { body: ping + ' '.repeat(256 * 1024 - ping.length) }, status: 200 });
kase('body: 256 KiB + 1', { req: { body: ping + ' '.repeat(256 * 1024 - ping.length + 1), headOnly: true }, status: 413 });
kase('body: Content-Length says 10 GB', { req: { body: '', headers: { 'Content-Length': '10000000000' } }, status: 413 });
kase('body: chunked past the cap', { req: { body: (() => { const c = 'x'.repeat(65536); let s = ''; for (let i = 0; i < 5; i++) s += `10000\r\n${c}\r\n`; return s + '0\r\n\r\n'; })(), headers: { 'Transfer-Encoding': 'chunked' } }, status: 413 });
kase('body: conflicting Content-Length', { req: { body: ping, headers: { 'Content-Length': `${ping.length}\r\nContent-Length: ${ping.length + 1}` } }, status: 400 });
kase('body: negative Content-Length', { req: { body: ping, headers: { 'Content-Length': '-1' } }, status: 400 });

// ---------- batches ----------
const v0326 = { 'MCP-Protocol-Version': '2025-03-26' };
const many = (n) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })));
kase('batch of 21', { req: { body: many(21), headers: v0326 }, status: 400, rpc: -32600 });
kase('batch of 1000', { req: { body: many(1000), headers: v0326 }, status: 400, rpc: -32600 });
kase('batch of 20', { req: { body: many(20), headers: v0326 }, status: 200, check: (r, j) => assert.equal(j.length, 20) });
kase('batch in a 2025-11-25 request', { req: { body: many(2), headers: { 'MCP-Protocol-Version': '2025-11-25' } }, status: 400, rpc: -32600 });
kase('batch in a 2025-06-18 request', { req: { body: many(2), headers: { 'MCP-Protocol-Version': '2025-06-18' } }, status: 400, rpc: -32600 });
kase('batch with initialize', { req: { body: JSON.stringify([JSON.parse(rpc('initialize', { protocolVersion: '2025-03-26' }))]), headers: v0326 }, status: 200, rpc: [-32600] });
kase('batch with a nested array', { req: { body: '[[1]]', headers: v0326 }, status: 200, rpc: [-32600] });
kase('batch of scalars', { req: { body: '[1,2,3]', headers: v0326 }, status: 200, rpc: [-32600, -32600, -32600] });
kase('batch of notifications only', { req: { body: '[{"jsonrpc":"2.0","method":"notifications/initialized"}]', headers: v0326 }, status: 202 });

// ---------- methods and params ----------
kase('unknown method', { req: { body: rpc('no/such') }, status: 200, rpc: -32601 });
kase('method with a trailing space', { req: { body: rpc('tools/list ') }, status: 200, rpc: -32601 });
kase('10 KiB method name', { req: { body: rpc('m'.repeat(10240)) }, status: 200, rpc: -32601, check: (r) => assert.ok(r.body.length < 1000, 'the name is not echoed whole') });
kase('tools/call without name', { req: { body: rpc('tools/call', {}) }, status: 200, rpc: -32602 });
kase('tools/call name is a number', { req: { body: rpc('tools/call', { name: 5 }) }, status: 200, rpc: -32602 });
kase('tools/call unknown tool', { req: { body: rpc('tools/call', { name: 'rm_rf' }) }, status: 200, rpc: -32602 });
kase('tools/call arguments is an array', { req: { body: rpc('tools/call', { name: 'list_agents', arguments: [] }) }, status: 200, rpc: -32602 });
kase('tools/call arguments is a string', { req: { body: rpc('tools/call', { name: 'list_agents', arguments: 'x' }) }, status: 200, rpc: -32602 });
kase('resources/read unknown', { req: { body: rpc('resources/read', { uri: 'file:///etc/passwd' }) }, status: 200, rpc: -32002 });
kase('prompts/get unknown', { req: { body: rpc('prompts/get', { name: 'x' }) }, status: 200, rpc: -32602 });
kase('logging/setLevel bad level', { req: { body: rpc('logging/setLevel', { level: 'verbose' }) }, status: 200, rpc: -32602 });
kase('completion/complete without a provider', { req: { body: rpc('completion/complete', { ref: { type: 'ref/prompt', name: 'x' }, argument: { name: 'a', value: '' } }) }, status: 200, rpc: -32601 });
kase('notifications/cancelled for nothing', { req: { body: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}' }, status: 202 });
kase('response to a request never sent', { req: { body: '{"jsonrpc":"2.0","id":424242,"result":{}}' }, status: 202 });

// ---------- protocol versions ----------
for (const v of ['2099-01-01', 'garbage', '2025-11-25 ', '1'])
  kase(`MCP-Protocol-Version "${v}"`, { req: { body: ping, headers: { 'MCP-Protocol-Version': v } }, status: 400 });
kase('initialize with a numeric version', { req: { body: rpc('initialize', { protocolVersion: 20251125 }) }, status: 200, rpc: -32602 });
kase('initialize with an unknown version', { req: { body: rpc('initialize', { protocolVersion: '1.0' }) }, status: 200, check: (r, j) => assert.equal(j.result.protocolVersion, '2025-11-25') });

// ---------- Host and Origin (DNS rebinding) ----------
for (const host of ['evil.example.com', 'evil.example.com:80', 'localhost.evil.com', '127.0.0.1.nip.io', 'user@localhost', 'localhost:99999', 'localhost:1', '', '[::1', 'local host'])
  kase(`Host "${host}"`, { req: { body: ping, host }, status: host === '' ? 400 : 403 });
kase('no Host header (HTTP/1.1 requires one)', { raw: (s) => Buffer.from(`POST /mcp HTTP/1.1\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${ping.length}\r\n\r\n${ping}`), status: 400 });
kase('Host localhost with our port', { req: (s) => ({ body: ping, host: `localhost:${s.port}` }), status: 200 });
for (const origin of ['http://evil.example.com', 'null', 'file://', 'http://localhost.evil.com', 'http://127.0.0.1@evil.com', 'javascript:alert(1)', 'http://[::1', ''])
  kase(`Origin "${origin}"`, { req: { body: ping, headers: { Origin: origin } }, status: 403 });
kase('Origin of our own page', { req: (s) => ({ body: ping, headers: { Origin: `http://127.0.0.1:${s.port}` } }), status: 200 });

// ---------- header attacks ----------
kase('header flood (2000 headers)', { req: { body: ping, headers: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`X-H${i}`, 'v'])) }, status: 431 });
kase('one 64 KiB header', { req: { body: ping, headers: { 'X-Big': 'v'.repeat(65536) } }, status: 431 });
kase('64 KiB URL', { req: { path: '/mcp?' + 'a'.repeat(65536), body: ping }, status: 414 });
kase('header with a bare CR', { raw: (s) => Buffer.from(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nX-A: a\rb\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/json\r\nContent-Length: ${ping.length}\r\n\r\n${ping}`), status: 400 });
kase('Transfer-Encoding and Content-Length together', { req: { body: `${ping.length.toString(16)}\r\n${ping}\r\n0\r\n\r\n`, headers: { 'Transfer-Encoding': 'chunked', 'Content-Length': '5' } }, status: 400 });
kase('unknown Transfer-Encoding', { req: { body: ping, headers: { 'Transfer-Encoding': 'gzip' } }, status: 400 });
kase('HTTP/0.9 style request', { raw: () => Buffer.from('GET /health\r\n\r\n'), status: 400 });
// Not HTTP (a TLS ClientHello): there is no HTTP answer to give; the connection is closed.
kase('not HTTP at all', { raw: () => Buffer.from('\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03' + 'x'.repeat(64) + '\r\n\r\n', 'latin1'), status: 0 });

// ---------- hermes_task arguments ----------
const task = (args) => call('hermes_task', args);
const taskBad = [
  ['no task', { mode: 'sync' }], ['no mode', { task: 'x' }], ['mode "later"', { task: 'x', mode: 'later' }],
  ['task is a number', { task: 1, mode: 'sync' }], ['task is null', { task: null, mode: 'sync' }], ['task is empty', { task: '', mode: 'sync' }],
  ['task over 64 KiB', { task: 'x'.repeat(65537), mode: 'sync' }], ['context over 64 KiB', { task: 'x', mode: 'sync', context: 'c'.repeat(65537) }],
  ['deliverable over 8 KiB', { task: 'x', mode: 'sync', deliverable: 'd'.repeat(8193) }], ['unknown field', { task: 'x', mode: 'sync', shell: 'rm -rf /' }],
  ['21 constraints', { task: 'x', mode: 'sync', constraints: Array(21).fill('c') }], ['constraints not an array', { task: 'x', mode: 'sync', constraints: 'c' }],
  ['constraint not a string', { task: 'x', mode: 'sync', constraints: [{}] }], ['constraint over 2000 bytes', { task: 'x', mode: 'sync', constraints: ['c'.repeat(2001)] }],
];
for (const [name, args] of taskBad) kase(`hermes_task: ${name}`, { req: { body: task(args) }, status: 200, tool: 'invalid_arguments' });
for (const id of ['../x', '/abs', 'a\\b', '%2e%2e', '.hidden', '', '-x', 'a/b', 'a b', 'ü', 'x'.repeat(129), '..', 'a\nb'])
  kase(`hermes_task: id ${JSON.stringify(id).slice(0, 20)}`, { req: { body: task({ task: 'x', mode: 'sync', id }) }, status: 200, tool: 'invalid_arguments' });
for (const session of ['Upper', 'a b', '-a', 's'.repeat(65), '../x', 'a/b', '', 'ä'])
  kase(`hermes_task: session ${JSON.stringify(session).slice(0, 20)}`, { req: { body: task({ task: 'x', mode: 'sync', session }) }, status: 200, tool: 'invalid_arguments' });
// Both run_id tables say minLength 1: an empty run_id is refused as the schema says, whether the
// field is required (hermes_status) or one of two (hermes_cancel).
kase('hermes_cancel: empty run_id', { req: { body: call('hermes_cancel', { run_id: '' }) }, status: 200, tool: 'invalid_arguments', check: (r) => assert.match(r.body, /'run_id' must not be empty/) });
kase('hermes_status: empty run_id', { req: { body: call('hermes_status', { run_id: '' }) }, status: 200, tool: 'invalid_arguments', check: (r) => assert.match(r.body, /'run_id' must not be empty/) });
// Lengths are characters, as the schema's maxLength: 65,536 two-byte characters pass the check.
kase('hermes_task: a task of 65,536 non-ASCII characters is not refused as too long', { req: { body: task({ task: 'é'.repeat(65536), mode: 'sync', agent: 'mallory' }) }, status: 200, tool: 'unknown_agent' });
kase('hermes_task: unknown agent', { req: { body: task({ task: 'x', mode: 'sync', agent: 'mallory' }) }, status: 200, tool: 'unknown_agent' });
kase('hermes_task: agent name with traversal', { req: { body: task({ task: 'x', mode: 'sync', agent: '../../etc' }) }, status: 200, tool: 'unknown_agent' });

// A NUL in any field of a tool is invalid_arguments naming the field; free text too (the agent's
// API and the task files would cut it short).
const nulField = (r, field) => assert.match(JSON.parse(r.body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).at(-1) ?? r.body).result.structuredContent.message, new RegExp(`'${field}'`));
for (const [field, args] of [['task', { task: 'a\u0000b', mode: 'sync' }], ['context', { task: 'x', mode: 'sync', context: 'c\u0000' }],
  ['deliverable', { task: 'x', mode: 'sync', deliverable: '\u0000' }], ['constraints', { task: 'x', mode: 'sync', constraints: ['ok', 'a\u0000b'] }],
  ['id', { task: 'x', mode: 'sync', id: 'a\u0000b' }], ['session', { task: 'x', mode: 'sync', session: 's\u0000' }],
  ['agent', { task: 'x', mode: 'sync', agent: 'hermes\u0000x' }], ['mode', { task: 'x', mode: 'sync\u0000' }]])
  kase(`hermes_task: ${field} with a NUL`, { req: { body: task(args) }, status: 200, tool: 'invalid_arguments', check: (r) => nulField(r, field) });
kase('hermes_files: path with a NUL', { req: { body: call('hermes_files', { id: 'hostile-files', path: 'x\u0000' }) }, status: 200, tool: 'invalid_arguments', check: (r) => nulField(r, 'path') });
kase('hermes_result: id with a NUL', { req: { body: call('hermes_result', { id: 'a\u0000' }) }, status: 200, tool: 'invalid_arguments', check: (r) => nulField(r, 'id') });
kase('hermes_status: run_id with a NUL', { req: { body: call('hermes_status', { run_id: 'run\u0000' }) }, status: 200, tool: 'invalid_arguments', check: (r) => nulField(r, 'run_id') });
kase('hermes_cancel: id with a NUL', { req: { body: call('hermes_cancel', { id: 'a\u0000' }) }, status: 200, tool: 'invalid_arguments', check: (r) => nulField(r, 'id') });

// ---------- the other tools ----------
for (const id of ['../x', '/etc', '', 'a\\b', '%2e%2e'])
  kase(`hermes_result: id ${JSON.stringify(id)}`, { req: { body: call('hermes_result', { id }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_result: unknown id', { req: { body: call('hermes_result', { id: 'never' }) }, status: 200, tool: 'not_found' });
kase('hermes_result: extra field', { req: { body: call('hermes_result', { id: 'x', path: '/etc' }) }, status: 200, tool: 'invalid_arguments' });
const filesBad = ['..', '../x', 'a/../../b', '/etc/passwd', '\\etc\\passwd', 'a\\..\\b', '%2e%2e/x', 'a%2fb', '....//../', 'out/../../x', '.././result.json'];
for (const path of filesBad)
  kase(`hermes_files: path ${JSON.stringify(path)}`, { req: { body: call('hermes_files', { id: 'hostile-files', path }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_files: symlink out of the task', { req: { body: call('hermes_files', { id: 'hostile-files', path: 'escape' }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_files: symlinked directory', { req: { body: call('hermes_files', { id: 'hostile-files', path: 'etcdir/passwd' }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_files: file over 200 KiB', { req: { body: call('hermes_files', { id: 'hostile-files', path: 'big.txt' }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_files: binary file', { req: { body: call('hermes_files', { id: 'hostile-files', path: 'bin.dat' }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_files: unknown task', { req: { body: call('hermes_files', { id: 'nope', path: 'x' }) }, status: 200, tool: 'not_found' });
kase('hermes_files: path is a number', { req: { body: call('hermes_files', { id: 'hostile-files', path: 1 }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_status: run id with a slash', { req: { body: call('hermes_status', { run_id: '../../v1/models' }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_status: run id with ?', { req: { body: call('hermes_status', { run_id: 'run_x?stop=1' }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_status: unknown run', { req: { body: call('hermes_status', { run_id: 'run_' + 'f'.repeat(32) }) }, status: 200, tool: 'not_found' });
kase('hermes_status: no run id', { req: { body: call('hermes_status', {}) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_cancel: both run_id and id', { req: { body: call('hermes_cancel', { run_id: 'a', id: 'b' }) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_cancel: neither', { req: { body: call('hermes_cancel', {}) }, status: 200, tool: 'invalid_arguments' });
kase('hermes_cancel: unknown id', { req: { body: call('hermes_cancel', { id: 'never' }) }, status: 200, tool: 'not_found' });
kase('hermes_reset: not confirmed', { req: { body: call('hermes_reset', {}) }, status: 200, tool: 'confirmation_required' });
kase('hermes_reset: confirmed as a string', { req: { body: call('hermes_reset', { confirmed: 'true' }) }, status: 200, tool: 'invalid_arguments' });
kase('list_agents: with arguments', { req: { body: call('list_agents', { all: true }) }, status: 200, tool: 'invalid_arguments' });

// ---------- slow clients ----------
kase('slowloris headers', { raw: () => null, slow: 'headers' });
kase('slowloris body', { raw: () => null, slow: 'body' });

async function slow(kind) {
  const t0 = Date.now();
  await new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1');
    const head = kind === 'headers' ? `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nX-Slow: ` :
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nAuthorization: Bearer ${srv.token}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n`;
    s.write(head);
    const t = setInterval(() => s.write('a'), 200);
    s.on('close', () => { clearInterval(t); resolve(); });
    s.on('error', () => {});
  });
  const ms = Date.now() - t0;
  assert.ok(ms < 4000, `${kind} trickle cut off after ${ms} ms`);
}

before(async () => {
  fake = await startFake();
  srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_HEADER_TIMEOUT_S: '1', MCP_BODY_TIMEOUT_S: '1' });
  // A task with hostile files in it, for hermes_files.
  const dir = join(srv.dir, 'tasks', 'hostile-files');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'big.txt'), 'x'.repeat(200 * 1024 + 1));
  writeFileSync(join(dir, 'bin.dat'), Buffer.from([0, 159, 146, 150]));
  symlinkSync('/etc/passwd', join(dir, 'escape'));
  symlinkSync('/etc', join(dir, 'etcdir'));
});

after(async () => {
  const stdout = srv.proc.stdoutText ?? '';
  assert.equal(await srv.stop(), 0);
  await fake.stop();
});

test(`hostile input: ${cases.length} cases, each answered exactly, the server serving after each`, async (t) => {
  assert.ok(cases.length >= 150, `at least 150 cases (have ${cases.length})`);
  for (const c of cases) {
    await t.test(c.name, async () => {
      if (c.slow) await slow(c.slow);
      else await runCase(c);
      await stillServing();
    });
  }
});

test('no secret in any output of the run', async () => {
  // A real task so that the agent key is used, then look everywhere.
  const r = await fetch(srv.url, { method: 'POST', headers: { ...srv.auth, 'Content-Type': 'application/json', Accept: 'application/json' },
    body: call('hermes_task', { task: 'hello [json]', mode: 'sync', id: 'secret-check' }) });
  assert.equal((await r.json()).result.isError, false);
  const outputs = {
    'server stderr': srv.proc.stderrText,
    'fake stderr': fake.proc.stderrText,
    'audit log': existsSync(join(srv.dir, 'audit.jsonl')) ? readFileSync(join(srv.dir, 'audit.jsonl'), 'utf8') : '',
    'fake record': readFileSync(fake.record, 'utf8'),
    'result.json': readFileSync(join(srv.dir, 'tasks', 'secret-check', 'result.json'), 'utf8'),
  };
  assert.ok(outputs['audit log'].length > 1000, 'the audit log recorded the run');
  for (const [where, text] of Object.entries(outputs)) {
    assert.equal(text.includes(srv.token), false, `bearer token in ${where}`);
    assert.equal(text.includes(fake.key), false, `agent key in ${where}`);
  }
});
