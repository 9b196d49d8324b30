// Upstream requests relayed: an upstream's sampling/createMessage or elicitation/create request
// made during a call goes to the client that made the call (when it declared the capability) and
// the client's answer goes back to the upstream; a client without the capability makes the upstream
// get a JSON-RPC error at once (its tool ends, nothing hangs). The real upstream is
// @modelcontextprotocol/server-everything (trigger-sampling-request, trigger-elicitation-request),
// over stdio and over Streamable HTTP, where two clients calling at once each get their own
// request. Its log notifications go to our log, never to a client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, LoggingMessageNotificationSchema }
  from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { ROOT, startHermes, until, post, parseSse, everythingPath, startEverythingHttp,
  connectClient } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');

const EVERYTHING = everythingPath();
const RULES = '    tools: {include: [echo, trigger-sampling-request, trigger-elicitation-request, ' +
  'toggle-simulated-logging, trigger-long-running-operation]}\n';
let dir, srv, upstreamHttp;

// A client of the session era; with capabilities it answers sampling with a reply naming the
// prompt it got, and elicitation with a form filled in with its own name.
function connect(name, { capable = true, logs = [] } = {}) {
  return connectClient(srv, { name, capabilities: capable ? { sampling: {}, elicitation: {} } : {}, listTools: true,
    setup: (client) => {
      client.asked = [];
      if (capable) {
        client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
          const text = req.params.messages[0].content.text;
          client.asked.push(['sampling', text]);
          return { role: 'assistant', model: `model-of-${name}`, content: { type: 'text', text: `${name} read: ${text}` } };
        });
        client.setRequestHandler(ElicitRequestSchema, async (req) => {
          client.asked.push(['elicitation', req.params.message]);
          return { action: 'accept', content: { name: `user of ${name}`, check: true, email: 'a@example.com' } };
        });
      }
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
    } });
}

before(async () => {
  assert.ok(existsSync(EVERYTHING), `server-everything installed: ${EVERYTHING}`);
  dir = mkdtempSync(join(tmpdir(), 'hm-gwrelay-'));
  upstreamHttp = await startEverythingHttp();
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams:\n' +
    `  ev:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING)}, stdio]\n` + RULES +
    `  evh:\n    url: ${upstreamHttp.url}\n` + RULES +
    `  fake:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--prompts', '--elicit', '--calls', join(dir, 'calls')])}\n` +
    '    tools: {include: [slow, ask], prompts: true}\n');
  chmodSync(gw, 0o600);
  srv = await startHermes({ GATEWAY_FILE: gw, MCP_SESSIONS: '1' });
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0);
  upstreamHttp?.kill();
  rmSync(dir, { recursive: true, force: true });
});

for (const up of ['ev', 'evh']) {
  test(`${up}: sampling and elicitation reach the calling client, its answers reach the upstream`, async () => {
    const client = await connect(`client-${up}`);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes(`${up}__trigger-sampling-request`), names.join(' '));
      const s = await client.callTool({ name: `${up}__trigger-sampling-request`,
        arguments: { prompt: 'the tide', maxTokens: 20 } });
      assert.ok(!s.isError, JSON.stringify(s));
      assert.deepEqual(client.asked, [['sampling', 'Resource trigger-sampling-request context: the tide']]);
      assert.match(s.content[0].text, new RegExp(`client-${up} read: Resource trigger-sampling-request context: the tide`));
      assert.match(s.content[0].text, new RegExp(`model-of-client-${up}`));
      const e = await client.callTool({ name: `${up}__trigger-elicitation-request`, arguments: {} });
      assert.ok(!e.isError, JSON.stringify(e));
      assert.equal(client.asked[1][0], 'elicitation');
      assert.match(JSON.stringify(e.content), new RegExp(`user of client-${up}`));
    } finally { await client.close(); }
  });

  test(`${up}: a client without the capability: the upstream gets an error at once, no hang`, async () => {
    const client = await connect(`plain-${up}`, { capable: false });
    try {
      const started = Date.now();
      const s = await client.callTool({ name: `${up}__trigger-sampling-request`,
        arguments: { prompt: 'x', maxTokens: 5 } }).catch((err) => ({ thrown: String(err) }));
      assert.match(JSON.stringify(s), /does not support sampling/);
      const e = await client.callTool({ name: `${up}__trigger-elicitation-request`, arguments: {} })
        .catch((err) => ({ thrown: String(err) }));
      assert.match(JSON.stringify(e), /does not support elicitation/);
      assert.ok(Date.now() - started < 10000, 'answered well before any timeout');
    } finally { await client.close(); }
  });
}

test('a call that ends before its client answers (the client cancels): the upstream hears that, nothing is kept', async () => {
  let asked = 0;
  const client = new Client({ name: 'never-answers', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, () => { asked++; return new Promise(() => {}); });
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
  try {
    await client.listTools();
    const ac = new AbortController();
    const p = client.callTool({ name: 'fake__ask', arguments: {} }, undefined, { signal: ac.signal });
    await until(() => asked === 1, 'the client asked');
    ac.abort();
    await assert.rejects(p);
    // The upstream's elicitation/create gets its answer: the call ended (the relay record is
    // freed with the call; under ASan a leak fails the server's exit).
    await until(() => /fake: ask-\d+ answered: \{"code":-32603,"message":"the call ended before the client answered"\}/
      .test(srv.proc.stderrText), 'the upstream told the call ended', 5000);
  } finally { await client.close(); }
});

test('over HTTP, two clients calling at once each get their own sampling request', async () => {
  const a = await connect('alice'), b = await connect('bob');
  try {
    const [ra, rb] = await Promise.all([
      a.callTool({ name: 'evh__trigger-sampling-request', arguments: { prompt: 'from alice', maxTokens: 5 } }),
      b.callTool({ name: 'evh__trigger-sampling-request', arguments: { prompt: 'from bob', maxTokens: 5 } })]);
    assert.deepEqual(a.asked.map((x) => x[1]), ['Resource trigger-sampling-request context: from alice']);
    assert.deepEqual(b.asked.map((x) => x[1]), ['Resource trigger-sampling-request context: from bob']);
    assert.match(ra.content[0].text, /alice read: .*from alice/);
    assert.match(rb.content[0].text, /bob read: .*from bob/);
  } finally { await a.close(); await b.close(); }
});

test('over stdio with another call in flight, the request cannot be told apart: refused, not guessed', async () => {
  const a = await connect('busy-a'), b = await connect('busy-b');
  try {
    let started;
    const progressed = new Promise((r) => { started = r; });
    const long = a.callTool({ name: 'ev__trigger-long-running-operation', arguments: { duration: 2, steps: 20 } },
      undefined, { onprogress: () => started() });
    await progressed; // a's call is at the upstream now
    const s = await b.callTool({ name: 'ev__trigger-sampling-request', arguments: { prompt: 'whose?', maxTokens: 5 } })
      .catch((err) => ({ thrown: String(err) }));
    assert.match(JSON.stringify(s), /several calls are in flight/);
    assert.deepEqual([a.asked, b.asked], [[], []], 'no client was asked');
    assert.match((await long).content[0].text, /Long running operation completed/);
  } finally { await a.close(); await b.close(); }
});

test('a 2026-07-28 client that did not declare sampling: the upstream gets an error at once', async () => {
  const name = 'ev__trigger-sampling-request';
  const r = await post(srv, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name,
    arguments: { prompt: 'modern', maxTokens: 5 },
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } } },
  { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': name });
  assert.equal(r.status, 200, r.text);
  const answer = r.json ?? parseSse(r.text).map((e) => e.data).find((d) => d?.id === 7);
  assert.equal(answer.result.isError, true, r.text);
  assert.match(JSON.stringify(answer.result.content), /does not support sampling/);
});

test('upstream log notifications go to our log, never to the client', async () => {
  const logs = [];
  const client = await connect('logs', { logs });
  try {
    const r = await client.callTool({ name: 'ev__toggle-simulated-logging', arguments: {} });
    assert.match(r.content[0].text, /Started simulated/);
    // server-everything words one of its eight levels "Alert level-message", hence [- ] twice
    await until(() => /upstream ev log \(\w+\): "\w+[- ]level[- ]message/i.test(srv.proc.stderrText),
      'the upstream\'s log line in ours', 10000);
    await client.callTool({ name: 'ev__toggle-simulated-logging', arguments: {} });
    assert.deepEqual(logs.filter((l) => /level[- ]message/i.test(JSON.stringify(l.data))), []);
  } finally { await client.close(); }
});

test('stdio: a request made during one client\'s prompts/get while another client\'s call runs is refused, never relayed to the caller of the call', async () => {
  const a = await connect('a');
  const b = await connect('b');
  try {
    const slow = a.callTool({ name: 'fake__slow', arguments: { ms: 1500 } });
    await until(() => existsSync(join(dir, 'calls')) && readFileSync(join(dir, 'calls'), 'utf8').includes('slow'),
      'a\'s call at the upstream');
    const prompt = await b.getPrompt({ name: 'fake__sampler' });
    const text = prompt.messages[0].content.text;
    assert.match(text, /^sampled: \{"code":/, text);
    assert.match(text, /several calls are in flight/);
    assert.deepEqual(a.asked, [], 'a was not asked for b\'s prompt');
    assert.deepEqual(b.asked, []);
    assert.equal((await slow).content[0].text, 'slow done');
  } finally { await a.close(); await b.close(); }
});

test('stdio: url-mode elicitation and sampling with tools need those sub-capabilities; a client without them is not asked', async () => {
  const plain = await connect('plain'); // elicitation: {} (form mode only), sampling: {} (no tools)
  try {
    const url = await plain.callTool({ name: 'fake__ask', arguments: { mode: 'url' } });
    assert.match(url.content[0].text, /^error: .*-32601.*does not support url-mode elicitation/, url.content[0].text);
    const tools = await plain.callTool({ name: 'fake__ask', arguments: { mode: 'sample-tools' } });
    assert.match(tools.content[0].text, /^error: .*-32601.*does not support sampling with tools/, tools.content[0].text);
    assert.deepEqual(plain.asked, []);
    const form = await plain.callTool({ name: 'fake__ask', arguments: { message: 'your name?' } });
    assert.match(form.content[0].text, /^answer: .*user of plain/, 'form mode still relayed');
  } finally { await plain.close(); }
});
