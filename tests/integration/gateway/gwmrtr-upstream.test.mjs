// Upstream requests relayed, with the input-required results of MCP 2026-07-28: an upstream of MCP
// 2026-07-28 asks for input by answering a tools/call with resultType "input_required"
// (inputRequests + requestState) and forgetting the call. The gateway relays it: to a
// 2026-07-28 caller as its own input_required result (the same requests under the same keys,
// the upstream's requestState inside our sealed state, resumable once, bound to the caller and
// the call); to a session-era caller as requests on the call's stream. Either way the call is
// then sent again with the answers and the upstream's requestState, and the upstream's final
// result comes back; a cap on rounds ends a call that keeps asking. Upstream: our own
// build/conformance-server over HTTP, which serves the conformance suite's 2026-07-28
// input-required tools (elicitation, sampling, roots, request state, multi-round,
// capabilities). Clients: the TypeScript SDK v2 client pinned to 2026-07-28, the SDK 1.x
// client (session era), and raw requests for what a real client would not send.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema }
  from '@modelcontextprotocol/sdk/types.js';
import { startHermes, startConformance, until, parseSse, modernMeta, modernHeaders, MODERN,
  connectV2Client, modernToolCall, tokensFile } from '../../lib/lib.mjs';

const T = (n) => `conf__test_input_required_result_${n}`;
const ROUNDS_MAX = 8; // relay.c INPUT_ROUNDS_MAX
let dir, conf, srv, other;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hm-gwmrtr-up-'));
  conf = await startConformance();
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams:\n' +
    `  conf:\n    url: ${conf.url}\n    tools: {include: ["test_input_required_result_*"], prompts: true}\n`);
  chmodSync(gw, 0o600);
  other = randomBytes(32).toString('hex');
  const tokens = tokensFile(dir, { other: [other, 'gateway:conf'] });
  srv = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens, MCP_SESSIONS: '1' });
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0, srv?.proc.stderrText);
  if (conf) await conf.stop();
  rmSync(dir, { recursive: true, force: true });
});

// The SDK v2 client pinned to 2026-07-28; answers: its handlers (each records what it was asked).
const connectV2 = (name, answers, capabilities = { elicitation: { form: {} }, sampling: {}, roots: {} }) =>
  connectV2Client(srv, name, { answers, capabilities });

// The SDK 1.x client (session era); answers as above.
async function connectV1(name, answers, capabilities = { elicitation: {}, sampling: {}, roots: {} }) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  client.asked = [];
  for (const [schema, kind] of [[ElicitRequestSchema, 'elicitation'], [CreateMessageRequestSchema, 'sampling'], [ListRootsRequestSchema, 'roots']]) {
    if (!answers[kind]) continue;
    client.setRequestHandler(schema, async (req) => { client.asked.push([kind, req.params]); return answers[kind](req.params); });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: srv.auth } }));
  return client;
}

// Answers each form's one field: name Ada, color teal, ok false (request_state asks again).
const FIELDS = { name: 'Ada', color: 'teal', ok: false, value: 'v' };
const names = { elicitation: (p) => {
  const field = Object.keys(p.requestedSchema.properties)[0];
  return { action: 'accept', content: { [field]: FIELDS[field] } };
} };

test('SDK v2 (2026-07-28): the upstream\'s elicitation reaches the handler, its answer the upstream, the final result the client', async () => {
  const client = await connectV2('v2-elicit', names);
  try {
    const listed = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(listed.includes(T('elicitation')), listed.join(' '));
    const res = await client.callTool({ name: T('elicitation'), arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.equal(res.content[0].text, 'Hello, Ada!');
    assert.deepEqual(client.asked.map((a) => a[0]), ['elicitation']);
    assert.equal(client.asked[0][1].message, 'What is your name?');
    assert.equal(client.wire.length, 2, 'an input-required round, then the retry');
    const first = JSON.parse(await client.wire[0].text);
    assert.equal(first.result.resultType, 'input_required', JSON.stringify(first));
    assert.deepEqual(Object.keys(first.result.inputRequests), ['user_name'], 'the upstream\'s key kept');
    assert.equal(typeof first.result.requestState, 'string');
  } finally { await client.close(); }
});

test('SDK v2: two rounds, sampling, roots, several requests at once, and the caller\'s capabilities told upstream', async () => {
  const client = await connectV2('v2-multi', {
    ...names,
    sampling: (p) => ({ role: 'assistant', model: 'm', content: { type: 'text', text: `sampled: ${p.messages[0].content.text}` } }),
    roots: () => ({ roots: [{ uri: 'file:///a', name: 'a' }, { uri: 'file:///b', name: 'b' }] }),
  });
  try {
    await client.listTools();
    const multi = await client.callTool({ name: T('multi_round'), arguments: {} });
    assert.equal(multi.content[0].text, 'Multi-round complete for Ada who likes teal', JSON.stringify(multi));
    assert.equal(client.wire.length, 3, 'two input rounds, then the result');
    const sampled = await client.callTool({ name: T('sampling'), arguments: {} });
    assert.equal(sampled.content[0].text, 'Sampling result: sampled: What is the capital of France?');
    const roots = await client.callTool({ name: T('list_roots'), arguments: {} });
    assert.equal(roots.content[0].text, 'Found 2 root(s)');
    const several = await client.callTool({ name: T('multiple_inputs'), arguments: {} });
    assert.equal(several.content[0].text, 'Name: Ada; Greeting: sampled: Generate a greeting; Roots: 2');
    const caps = await client.callTool({ name: T('capabilities'), arguments: {} });
    assert.equal(caps.content[0].text, 'capabilities-ok: received elicit_input,sample_input');
  } finally { await client.close(); }
});

test('SDK 1.x (session era): the upstream\'s requests come on the call\'s stream, the answers go upstream, over rounds', async () => {
  const client = await connectV1('v1-elicit', {
    ...names,
    sampling: (p) => ({ role: 'assistant', model: 'm', content: { type: 'text', text: `v1: ${p.messages[0].content.text}` } }),
    roots: () => ({ roots: [{ uri: 'file:///only', name: 'only' }] }),
  });
  try {
    await client.listTools();
    const res = await client.callTool({ name: T('elicitation'), arguments: {} });
    assert.equal(res.content[0].text, 'Hello, Ada!', JSON.stringify(res));
    assert.equal(client.asked[0][1].message, 'What is your name?');
    const multi = await client.callTool({ name: T('multi_round'), arguments: {} });
    assert.equal(multi.content[0].text, 'Multi-round complete for Ada who likes teal', JSON.stringify(multi));
    const several = await client.callTool({ name: T('multiple_inputs'), arguments: {} });
    assert.equal(several.content[0].text, 'Name: Ada; Greeting: v1: Generate a greeting; Roots: 1');
    const state = await client.callTool({ name: T('request_state'), arguments: {} },
      undefined, { timeout: 10000 }).catch((e) => e);
    // request_state asks until confirm.content.ok is true; names answers false: the cap stops it.
    assert.equal(state.isError, true, JSON.stringify(state));
    assert.match(state.content[0].text, new RegExp(`more than ${ROUNDS_MAX} rounds of input`));
    assert.equal(client.asked.filter((a) => a[1].message === 'Please confirm').length, ROUNDS_MAX);
  } finally { await client.close(); }
});

test('decline reaches the upstream (both eras)', async () => {
  const v2 = await connectV2('v2-decline', { elicitation: () => ({ action: 'decline' }) });
  const v1 = await connectV1('v1-decline', { elicitation: () => ({ action: 'decline' }) });
  try {
    for (const c of [v2, v1]) {
      await c.listTools();
      const res = await c.callTool({ name: T('elicitation'), arguments: {} });
      assert.equal(res.content[0].text, 'Hello, unknown!', JSON.stringify(res));
      assert.equal(c.asked.length, 1);
    }
  } finally { await v2.close(); await v1.close(); }
});

test('a caller without the capability is not asked: a clear tool error (both eras)', async () => {
  const v2 = await connectV2('v2-nocap', {}, {});
  const v1 = await connectV1('v1-nocap', {}, {});
  try {
    for (const c of [v2, v1]) {
      await c.listTools();
      const res = await c.callTool({ name: T('elicitation'), arguments: {} });
      assert.equal(res.isError, true, JSON.stringify(res));
      assert.match(res.content[0].text, /elicitation\/create not relayed: the calling client does not support elicitation/);
      // The upstream was told what the caller declares: nothing to ask for.
      const caps = await c.callTool({ name: T('capabilities'), arguments: {} });
      assert.equal(caps.content[0].text, 'No supported capabilities declared', JSON.stringify(caps));
    }
  } finally { await v2.close(); await v1.close(); }
});

test('SDK 1.x: an error answer ends the call with a clear tool error; a hang-up while it is asked frees the call', async () => {
  let hang;
  const client = await connectV1('v1-refuse', { elicitation: (p) => {
    if (p.message === 'Please confirm') return new Promise((res) => { hang = res; });
    throw new Error('the user closed the form');
  } });
  try {
    await client.listTools();
    const res = await client.callTool({ name: T('elicitation'), arguments: {} });
    assert.equal(res.isError, true, JSON.stringify(res));
    assert.match(res.content[0].text, /upstream conf asked for input: the calling client refused it: .*the user closed the form/);
    const aborter = new AbortController();
    const pending = client.callTool({ name: T('request_state'), arguments: {} }, undefined, { signal: aborter.signal });
    await until(() => hang, 'the confirm request reached the client');
    aborter.abort();
    await assert.rejects(pending);
    hang({ action: 'accept', content: { ok: true } }); // too late: no one waits for it
    // The gateway still serves this client (the freed call left nothing behind).
    const after = await client.callTool({ name: T('elicitation'), arguments: {} });
    assert.equal(after.isError, true);
  } finally { await client.close(); }
});

// One raw 2026-07-28 tools/call (as token's caller, to server at); extra: inputResponses and
// requestState.
const rawCall = (name, args, extra = {}, token = null, at = srv) => modernToolCall(at, name, args, extra, token);
const confirm = (state, ok = true, token = null, tool = T('request_state'), at = srv) =>
  rawCall(tool, {}, { inputResponses: { confirm: { action: 'accept', content: { ok } } }, requestState: state }, token, at);

test('raw: a forged or altered state, another caller\'s, another tool\'s, and a second resume are refused', async () => {
  const first = await rawCall(T('request_state'), {});
  assert.equal(first.answer?.result?.resultType, 'input_required', first.text);
  const state = first.answer.result.requestState;
  const i = 12, altered = state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1);
  const forged = await confirm(altered);
  assert.equal(forged.answer?.error?.code, -32602, forged.text);
  const stolen = await confirm(state, true, other);
  assert.equal(stolen.answer?.error?.code, -32602, stolen.text);
  const moved = await confirm(state, true, null, T('tampered_state'));
  assert.equal(moved.answer?.error?.code, -32602, moved.text);
  const done = await confirm(state);
  assert.equal(done.answer?.result?.content?.[0]?.text, 'state-ok: requestState validated', done.text);
  const again = await confirm(state);
  assert.equal(again.answer?.result?.isError, true, again.text);
  assert.equal(again.answer.result.structuredContent.error, 'not_found', again.text);
  assert.match(again.answer.result.structuredContent.message, /already answered, or it expired/);
});

// One sample of /metrics (0 when absent).
async function metric(name) {
  const text = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

test('raw: an answered round is no error in /metrics; it is counted as input_required', async () => {
  const label = '{upstream="conf"}';
  const errors = await metric(`hermes_mcp_gateway_call_errors_total${label}`);
  const rounds = await metric('hermes_mcp_gateway_calls_total{upstream="conf",outcome="input_required"}');
  const first = await rawCall(T('request_state'), {});
  const done = await confirm(first.answer.result.requestState);
  assert.equal(done.answer?.result?.content?.[0]?.text, 'state-ok: requestState validated', done.text);
  assert.equal(await metric('hermes_mcp_gateway_calls_total{upstream="conf",outcome="input_required"}'), rounds + 1);
  assert.equal(await metric(`hermes_mcp_gateway_call_errors_total${label}`), errors);
});

test('raw: the round cap holds across a 2026-07-28 caller\'s retries', async () => {
  let r = await rawCall(T('request_state'), {});
  let rounds = 0;
  while (r.answer?.result?.resultType === 'input_required' && rounds < ROUNDS_MAX + 2) {
    rounds++;
    r = await confirm(r.answer.result.requestState, false);
  }
  assert.equal(rounds, ROUNDS_MAX, r.text);
  assert.equal(r.answer?.result?.isError, true, r.text);
  assert.match(r.answer.result.structuredContent.message, new RegExp(`more than ${ROUNDS_MAX} rounds of input`));
});

test('SDK 1.x: a session-era caller that does not answer within the timeout: its own tool error, no cancel sent for an answered id', async () => {
  const gw = join(dir, 'short.yaml');
  writeFileSync(gw, 'upstreams:\n' +
    `  conf:\n    url: ${conf.url}\n    timeout: 2\n    tools: {include: ["test_input_required_result_*"]}\n`);
  chmodSync(gw, 0o600);
  const short = await startHermes({ GATEWAY_FILE: gw, MCP_SESSIONS: '1' });
  const client = new Client({ name: 'v1-silent', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {}));
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(short.url), { requestInit: { headers: short.auth } }));
    await client.listTools();
    const res = await client.callTool({ name: T('elicitation'), arguments: {} }, undefined, { timeout: 20000 });
    assert.equal(res.structuredContent?.error, 'upstream_timeout', JSON.stringify(res));
    assert.match(res.content[0].text, /the calling client did not answer the input upstream conf asked for .* within 2 s/);
    const m = await (await fetch(`${short.base}/metrics`, { headers: short.auth })).text();
    assert.match(m, /hermes_mcp_gateway_calls_in_flight\{upstream="conf"\} 0/, 'its slot is free');
  } finally {
    await client.close();
    assert.equal(await short.stop(), 0);
  }
});

test('raw: one caller cannot hold all of an upstream\'s open rounds: past 64 it gets busy, another caller still gets its round', async () => {
  const gw = join(dir, 'gateway.yaml');
  const tokens = join(dir, 'tokens.yaml');
  const own = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens });
  try {
    const states = [];
    let r;
    for (let i = 0; i < 100; i++) {
      r = await rawCall(T('request_state'), {}, {}, null, own);
      if (r.answer?.result?.resultType !== 'input_required') break;
      states.push(r.answer.result.requestState);
    }
    assert.equal(states.length, 64, 'relay.c OPEN_ROUNDS_PER_CALLER rounds, then no more');
    assert.equal(r.answer?.result?.structuredContent?.error, 'busy', r.text);
    assert.match(r.answer.result.structuredContent.message, /64 of its input rounds already wait for your answers/);
    const second = await rawCall(T('request_state'), {}, {}, other, own);
    assert.equal(second.answer?.result?.resultType, 'input_required', second.text);
    // An answered round frees its place: the first caller gets a round again.
    const done = await confirm(states[0], true, null, T('request_state'), own);
    assert.equal(done.answer?.result?.content?.[0]?.text, 'state-ok: requestState validated', done.text);
    const again = await rawCall(T('request_state'), {}, {}, null, own);
    assert.equal(again.answer?.result?.resultType, 'input_required', again.text);
  } finally { assert.equal(await own.stop(), 0, own.proc.stderrText); }
});

// A 2026-07-28 upstream of our own (plain JSON over HTTP) whose tools ask one confirm round with
// a requestState of a chosen size; it can go away and come back on the same port.
const BIG = 'b'.repeat(8192), SMALL = 'small-state-1', DOC = 'state://doc';
function startStateUpstream() {
  const states = { big_state: BIG, small_state: SMALL };
  const confirmReq = { method: 'elicitation/create', params: { message: 'Please confirm',
    requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] } } };
  const answer = (msg) => {
    if (msg.method === 'server/discover')
      return { supportedVersions: [MODERN], capabilities: { tools: {}, resources: {} }, serverInfo: { name: 'states', version: '1.0.0' } };
    if (msg.method === 'tools/list')
      return { tools: Object.keys(states).map((name) => ({ name, inputSchema: { type: 'object' } })) };
    if (msg.method === 'resources/list') return { resources: [{ uri: DOC, name: 'doc' }] };
    if (msg.method === 'resources/templates/list') return { resourceTemplates: [] };
    const p = msg.params;
    if (msg.method === 'resources/read') {
      if (p.requestState === SMALL && p.inputResponses?.confirm?.content?.ok === true)
        return { contents: [{ uri: DOC, text: 'doc-ok' }] };
      return { resultType: 'input_required', inputRequests: { confirm: confirmReq }, requestState: SMALL };
    }
    if (msg.method !== 'tools/call') return {};
    const want = states[p.name];
    if (p.requestState === want && p.inputResponses?.confirm?.content?.ok === true)
      return { content: [{ type: 'text', text: `${p.name}-ok` }] };
    return { resultType: 'input_required', inputRequests: { confirm: confirmReq }, requestState: want };
  };
  const up = { calls: 0 };
  up.server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      const msg = JSON.parse(body);
      if (msg.id === undefined) { res.writeHead(202).end(); return; }
      if (msg.method === 'tools/call') up.calls++;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: answer(msg) }));
    });
  });
  up.listen = (port = 0) => new Promise((ok) => up.server.listen(port, '127.0.0.1', () => ok(up.server.address().port)));
  up.close = () => new Promise((ok) => { up.server.close(ok); up.server.closeAllConnections(); });
  return up;
}

async function withStateGateway(fn) {
  const up = startStateUpstream();
  const port = await up.listen();
  const gw = join(dir, 'states.yaml');
  writeFileSync(gw, `upstreams:\n  st:\n    url: http://127.0.0.1:${port}/mcp\n    tools: {include: ["*"], resources: true}\n`);
  chmodSync(gw, 0o600);
  const own = await startHermes({ GATEWAY_FILE: gw, MCP_SESSIONS: '1' });
  try { await fn(own, up, port); } finally {
    assert.equal(await own.stop(), 0, own.proc.stderrText);
    await up.close();
  }
}

test('an upstream requestState over 4 KiB: a session-era caller\'s round keeps it here and works; a 2026-07-28 caller gets a clear error', async () => {
  await withStateGateway(async (own) => {
    const v1 = new Client({ name: 'v1-big', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    v1.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { ok: true } }));
    await v1.connect(new StreamableHTTPClientTransport(new URL(own.url), { requestInit: { headers: own.auth } }));
    try {
      await v1.listTools();
      const res = await v1.callTool({ name: 'st__big_state', arguments: {} });
      assert.equal(res.content?.[0]?.text, 'big_state-ok', JSON.stringify(res));
    } finally { await v1.close(); }
    const modern = await rawCall('st__big_state', {}, {}, null, own);
    assert.equal(modern.answer?.result?.structuredContent?.error, 'upstream_error', modern.text);
    assert.match(modern.answer.result.structuredContent.message,
      /requestState \(8192 bytes\) is larger than the 4096 bytes a 2026-07-28 caller's state can carry back/);
  });
});

test('raw: a retry refused before it is sent (upstream known down) keeps its round; one that fails at the wire uses it up (the upstream may have acted)', async () => {
  await withStateGateway(async (own, up, port) => {
    const ready = async () => (await fetch(`${own.base}/readyz`)).status === 200;
    // Known down: a new call fails first, then the retry is refused before its round is taken.
    const first = await rawCall('st__small_state', {}, {}, null, own);
    assert.equal(first.answer?.result?.resultType, 'input_required', first.text);
    const state = first.answer.result.requestState;
    await up.close();
    const probe = await rawCall('st__small_state', {}, {}, null, own);
    assert.equal(probe.answer?.result?.structuredContent?.error, 'upstream_unavailable', probe.text);
    await until(async () => !(await ready()), 'the gateway knows the upstream is down');
    const refused = await confirm(state, true, null, 'st__small_state', own);
    assert.equal(refused.answer?.result?.structuredContent?.error, 'upstream_unavailable', refused.text);
    const callsBefore = up.calls;
    await up.listen(port);
    await until(ready, 'the upstream is back', 15000);
    const done = await confirm(state, true, null, 'st__small_state', own);
    assert.equal(done.answer?.result?.content?.[0]?.text, 'small_state-ok', done.text);
    assert.equal(up.calls, callsBefore + 1, 'the answers reached the upstream');
    const again = await confirm(state, true, null, 'st__small_state', own);
    assert.equal(again.answer?.result?.structuredContent?.error, 'not_found', again.text);
    // Gone at the wire: the gateway cannot tell whether the upstream ran it, so the round is
    // used up (the same answers never go twice); the caller calls the tool again.
    const second = await rawCall('st__small_state', {}, {}, null, own);
    const state2 = second.answer.result.requestState;
    await up.close();
    const cut = await confirm(state2, true, null, 'st__small_state', own);
    assert.equal(cut.answer?.result?.structuredContent?.error, 'upstream_unavailable', cut.text);
    await up.listen(port);
    await until(ready, 'the upstream is back again', 15000);
    const used = await confirm(state2, true, null, 'st__small_state', own);
    assert.equal(used.answer?.result?.structuredContent?.error, 'not_found', used.text);
  });
});

// One raw 2026-07-28 request (method, params; name: its Mcp-Name) to server at.
async function rawRequest(method, name, params, at = srv) {
  const id = randomBytes(4).readUInt32BE();
  const r = await fetch(at.url, { method: 'POST', headers: { ...modernHeaders(method, name), ...at.auth },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta({ elicitation: { form: {} } }) } }) });
  const text = await r.text();
  let answer;
  try { answer = JSON.parse(text); } catch { answer = parseSse(text).map((e) => e.json).find((m) => m?.id === id); }
  return { answer, text };
}

test('input asked during prompts/get is relayed: SDK 1.x on its stream, a 2026-07-28 caller as an input round (once)', async () => {
  const PROMPT = 'conf__test_input_required_result_prompt';
  const v1 = await connectV1('v1-prompt', { elicitation: () => ({ action: 'accept', content: { context: 'ctx-1' } }) });
  try {
    const listed = (await v1.listPrompts()).prompts.map((p) => p.name);
    assert.ok(listed.includes(PROMPT), listed.join(' '));
    const got = await v1.getPrompt({ name: PROMPT });
    assert.equal(got.messages?.[0]?.content?.text, 'Prompt with context: ctx-1', JSON.stringify(got));
    assert.equal(v1.asked[0][1].message, 'What context should the prompt use?');
  } finally { await v1.close(); }
  const first = await rawRequest('prompts/get', PROMPT, { name: PROMPT });
  assert.equal(first.answer?.result?.resultType, 'input_required', first.text);
  assert.deepEqual(Object.keys(first.answer.result.inputRequests), ['user_context']);
  const retry = { name: PROMPT, inputResponses: { user_context: { action: 'accept', content: { context: 'ctx-2' } } },
    requestState: first.answer.result.requestState };
  const done = await rawRequest('prompts/get', PROMPT, retry);
  assert.equal(done.answer?.result?.messages?.[0]?.content?.text, 'Prompt with context: ctx-2', done.text);
  const again = await rawRequest('prompts/get', PROMPT, retry);
  assert.equal(again.answer?.error?.code, -32602, again.text);
  assert.match(again.answer.error.message, /no input round of upstream conf matches this requestState/);
});

test('input asked during resources/read is relayed, the upstream\'s requestState carried back (both eras)', async () => {
  await withStateGateway(async (own) => {
    const v1 = new Client({ name: 'v1-read', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    v1.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { ok: true } }));
    await v1.connect(new StreamableHTTPClientTransport(new URL(own.url), { requestInit: { headers: own.auth } }));
    try {
      const { resources } = await v1.listResources();
      assert.deepEqual(resources.map((r) => r.uri), [DOC]);
      const read = await v1.readResource({ uri: DOC });
      assert.equal(read.contents?.[0]?.text, 'doc-ok', JSON.stringify(read));
    } finally { await v1.close(); }
    const refuser = new Client({ name: 'v1-read-refuse', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    refuser.setRequestHandler(ElicitRequestSchema, async () => { throw new Error('the user closed the form'); });
    await refuser.connect(new StreamableHTTPClientTransport(new URL(own.url), { requestInit: { headers: own.auth } }));
    try {
      await assert.rejects(refuser.readResource({ uri: DOC }),
        /upstream st asked for input: the calling client refused it: .*the user closed the form/);
    } finally { await refuser.close(); }
    const first = await rawRequest('resources/read', DOC, { uri: DOC }, own);
    assert.equal(first.answer?.result?.resultType, 'input_required', first.text);
    const done = await rawRequest('resources/read', DOC, { uri: DOC, requestState: first.answer.result.requestState,
      inputResponses: { confirm: { action: 'accept', content: { ok: true } } } }, own);
    assert.equal(done.answer?.result?.contents?.[0]?.text, 'doc-ok', done.text);
  });
});
