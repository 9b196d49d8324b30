// "\u0000" in a JSON string is valid JSON: the engine parses it, then every
// name it matches as a C string refuses it, so "test://static-text\u0000x" never passes for
// "test://static-text" (a match by prefix). Checked on the conformance server, which has the
// resources, prompts and a cancellable tool the bridge does not; the bridge's tool arguments
// and the method, id and jsonrpc fields are in tests/hostile/hostile.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startConformance, post, INIT } from '../../lib/lib.mjs';

let cs;
let h; // the session's headers
before(async () => {
  cs = await startConformance();
  const r = await post(cs, INIT('2025-11-25'));
  h = { 'Mcp-Session-Id': r.headers.get('mcp-session-id'), 'MCP-Protocol-Version': '2025-11-25' };
});
after(async () => {
  assert.equal(await cs.stop(), 0);
});

const rpc = (method, params) => post(cs, { jsonrpc: '2.0', id: 7, method, params }, h);

// The request parsed (no -32700) and was refused for the field, not served for a prefix of it.
async function refused(method, params, field) {
  const r = await rpc(method, params);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.id, 7);
  assert.equal(r.json.result, undefined, `${method} matched a prefix: ${r.text}`);
  assert.equal(r.json.error.code, -32602, r.text);
  assert.match(r.json.error.message, new RegExp(`${field} must not contain a NUL character`));
}

test('a resource URI with a NUL is refused, never read as the shorter URI', async () => {
  const ok = await rpc('resources/read', { uri: 'test://static-text' });
  assert.ok(ok.json.result.contents[0].text, 'the resource exists');
  await refused('resources/read', { uri: 'test://static-text\u0000x' }, 'uri');
  await refused('resources/read', { uri: 'test://template/1/data\u0000' }, 'uri');
  await refused('resources/subscribe', { uri: 'test://watched-resource\u0000x' }, 'uri');
  await refused('resources/unsubscribe', { uri: 'test://watched-resource\u0000x' }, 'uri');
});

test('a prompt or tool name with a NUL is refused, never the prompt or tool before it', async () => {
  const ok = await rpc('prompts/get', { name: 'test_simple_prompt' });
  assert.ok(ok.json.result.messages.length > 0, 'the prompt exists');
  await refused('prompts/get', { name: 'test_simple_prompt\u0000x' }, 'name');
  await refused('tools/call', { name: 'test_wait\u0000', arguments: { ms: 1 } }, 'name');
});

test('a log level with a NUL is an invalid level', async () => {
  assert.deepEqual((await rpc('logging/setLevel', { level: 'debug' })).json.result, {});
  const r = await rpc('logging/setLevel', { level: 'debug\u0000x' });
  assert.equal(r.json.error?.code, -32602, r.text);
});

test('a method name with a NUL is an invalid request, not the method before it', async () => {
  const r = await post(cs, '{"jsonrpc":"2.0","id":7,"method":"prompts/list\\u0000x"}', h);
  assert.equal(r.json.result, undefined, r.text);
  assert.equal(r.json.error.code, -32600, r.text);
});

test('notifications/cancelled naming "id\\u0000x" does not cancel the call "id"', async () => {
  const pending = post(cs, { jsonrpc: '2.0', id: 'nul-1', method: 'tools/call', params: { name: 'test_wait', arguments: { ms: 1500 } } },
    { ...h, Accept: 'application/json' });
  await new Promise((r) => setTimeout(r, 200)); // the call is waiting (the answer below proves it ran)
  const c = await post(cs, '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nul-1\\u0000x"}}', h);
  assert.equal(c.status, 202);
  const r = await pending;
  assert.equal(r.status, 200, 'the call was answered, not cancelled');
  assert.equal(r.json.id, 'nul-1');
  assert.ok(r.json.result, r.text);
});
