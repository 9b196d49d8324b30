// Hostile calls through the gateway: wrong argument types, excluded and
// unknown tools, arguments over the body cap, a result over the message cap, a NUL in a string. Each is answered
// exactly; what our side refuses never reaches the upstream (tests/fakes/fake-upstream.mjs
// --calls records every tools/call it gets); the upstream keeps serving after each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startHermes, post, gatewayFile, sdkClient } from '../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const EVERYTHING = spawnSync(join(ROOT, 'scripts/node-tools.sh'), ['everything'], { encoding: 'utf8' })
  .stdout.trim();
const V = { 'MCP-Protocol-Version': '2025-11-25' };
let dir, srv, client;

const upstreamCalls = () => (existsSync(join(dir, 'calls'))
  ? readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n') : []);
const starts = () => readFileSync(join(dir, 'fake.starts'), 'utf8').trim().split('\n').length;
const call = (name, args, id = 7) => ({ jsonrpc: '2.0', id, method: 'tools/call',
  params: { name, arguments: args } });

async function stillServes() {
  const r = await client.callTool({ name: 'fake__echo', arguments: { message: 'alive' } });
  assert.equal(r.content[0].text, 'Echo: alive');
}

before(async () => {
  assert.ok(existsSync(EVERYTHING), `server-everything installed: ${EVERYTHING}`);
  dir = mkdtempSync(join(tmpdir(), 'hm-gwhostile-'));
  const node = JSON.stringify(process.execPath);
  const gw = gatewayFile(dir, 'upstreams:\n' +
    `  fake:\n    command: ${node}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(dir, 'fake.starts'), '--calls', join(dir, 'calls'), '--huge-request'])}\n` +
    '    tools: {include: [echo, slow, huge, hugetail, hugeask], exclude: [crash, garbage]}\n' +
    `  everything:\n    command: ${node}\n    args: [${JSON.stringify(EVERYTHING)}]\n` +
    '    tools: {include: [echo, get-sum]}\n');
  srv = await startHermes({ GATEWAY_FILE: gw });
  ({ client } = await sdkClient(srv, 'gw-hostile'));
});

after(async () => {
  await client?.close();
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('excluded, never-existing and unprefixed names: the same Unknown tool refusal, nothing upstream', async () => {
  const before = upstreamCalls().length;
  const answers = [];
  for (const name of ['fake__crash', 'fake__garbage', 'fake__hang', 'fake__nosuch', 'crash', 'echo',
    'everything__get-env', 'fake__echo ', 'FAKE__ECHO', 'fake__echo\u0000']) {
    const r = await post(srv, call(name, {}), V);
    assert.equal(r.status, 200, name);
    answers.push([name, r.json?.error]);
  }
  for (const [name, error] of answers) {
    assert.ok(error, `${JSON.stringify(name)} refused`);
    assert.equal(error.code, -32602, name);
    if (!name.includes('\u0000')) assert.equal(error.message, `Unknown tool: ${name}`);
  }
  assert.equal(upstreamCalls().length, before, 'none reached the upstream');
  const listed = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(!listed.includes('fake__crash') && !listed.includes('everything__get-env'));
  await stillServes();
});

test('wrong argument shapes: refused by us (not an object) or answered by the upstream; it keeps serving', async () => {
  const before = upstreamCalls().length;
  for (const args of [[], 'text', 42, true]) {
    const r = await post(srv, call('fake__echo', args), V);
    assert.equal(r.json?.error?.code, -32602, JSON.stringify(args));
    assert.match(r.json.error.message, /arguments must be an object/);
  }
  const r = await post(srv, { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 42 } }, V);
  assert.equal(r.json?.error?.code, -32602);
  assert.equal(upstreamCalls().length, before, 'none reached the upstream');
  // Wrong field types reach the upstream, whose own validation answers (a tool error or a
  // JSON-RPC error, never a hang); both upstreams serve the next call.
  for (const args of [{ message: 123 }, { message: { nested: [1, 2] } }, {}]) {
    const e = await post(srv, call('everything__echo', args), V);
    assert.equal(e.status, 200);
    const failed = e.json?.error !== undefined || e.json?.result?.isError === true;
    assert.ok(failed, `server-everything refused ${JSON.stringify(args)}: ${e.text.slice(0, 200)}`);
  }
  const s = await post(srv, call('everything__get-sum', { a: 'two', b: null }), V);
  assert.ok(s.json?.error !== undefined || s.json?.result?.isError === true, s.text.slice(0, 200));
  const ok = await client.callTool({ name: 'everything__get-sum', arguments: { a: 2, b: 40 } });
  assert.match(ok.content[0].text, /42/);
  await stillServes();
});

test('arguments over the body cap (256 KiB) or nested past the parser: refused before the upstream', async () => {
  const before = upstreamCalls().length;
  const big = await post(srv, call('fake__echo', { message: 'x'.repeat(300 * 1024) }), V);
  assert.equal(big.status, 413);
  const deep = await post(srv, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fake__echo","arguments":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}}`, V);
  assert.equal(deep.json?.error?.code, -32700, deep.text.slice(0, 200));
  const many = {};
  for (let i = 0; i < 15000; i++) many[`k${i}`] = i; // under the cap: forwarded and answered
  const wide = await post(srv, call('fake__echo', { message: 'wide', ...many }), V);
  assert.equal(wide.json?.result?.content?.[0]?.text, 'Echo: wide');
  assert.equal(upstreamCalls().length, before + 1, 'only the one under the caps reached it');
  await stillServes();
});

test('a result over the 4 MiB message cap: a clear tool error, no restart, the upstream keeps serving', async () => {
  const before = starts();
  const calls = [];
  for (const name of ['fake__huge', 'fake__hugetail', 'fake__huge']) {
    calls.push(client.callTool({ name, arguments: {} }));
    calls.push(client.callTool({ name: 'fake__echo', arguments: { message: name } }));
  }
  const results = await Promise.all(calls);
  for (let i = 0; i < results.length; i += 2) {
    assert.equal(results[i].isError, true);
    assert.equal(results[i].structuredContent.error, 'upstream_error');
    assert.equal(results[i].structuredContent.message, 'upstream fake answered with a message larger than 4 MiB');
    assert.match(results[i + 1].content[0].text, /^Echo: fake__huge/);
  }
  assert.equal(starts(), before, 'no restart');
  await stillServes();
});

test('an echo of "x\\u0000y" is answered with the NUL kept, and a call in flight meanwhile completes', async () => {
  const before = starts();
  const slow = client.callTool({ name: 'fake__slow', arguments: { ms: 500 } });
  const r = await client.callTool({ name: 'fake__echo', arguments: { message: 'x\u0000y' } });
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal(r.content[0].text, 'Echo: x\u0000y');
  assert.equal((await slow).content[0].text, 'slow done');
  assert.equal(starts(), before, 'the upstream was not restarted');
  await stillServes();
});

test('an oversized request from the upstream (its id equal to our pending call\'s): answered -32600 under its id, our call not failed', async () => {
  const before = starts();
  const r = await client.callTool({ name: 'fake__hugeask', arguments: {} });
  assert.equal(r.isError, undefined, JSON.stringify(r).slice(0, 300));
  assert.equal(r.content[0].text, 'answered: {"code":-32600,"message":"request too large"}');
  assert.equal(starts(), before, 'no restart');
  await stillServes();
});
