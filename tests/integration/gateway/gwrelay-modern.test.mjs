// Upstream requests relayed to clients of MCP 2026-07-28: such a client takes no request
// during a call, so an upstream's elicitation/create or sampling/createMessage reaches it as an
// input_required result carrying the upstream's request, with sealed state naming the held
// upstream call; the client's retry with inputResponses sends its answer to the upstream, and
// the retry takes over the call (its final result). Upstreams: server-everything
// (trigger-sampling-request, trigger-elicitation-request) over stdio and over Streamable HTTP
// (where its request comes on the call's stream), and over stdio tests/fakes/fake-upstream.mjs
// --elicit (tool ask; its --calls file shows the cancels it got). Clients: the TypeScript SDK v2
// client pinned to 2026-07-28, and raw requests for what a real client would not send (a
// forged state, another caller's state, a second resume, no resume at all).
// HERMES_TEST_STATE_TTL_MS shortens the sealed state's lifetime, so the held call's too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT, startHermes, until, everythingPath, startEverythingHttp, connectV2Client,
  modernToolCall, tokensFile } from '../../lib/lib.mjs';
import { events, waitEvent } from '../../lib/events.mjs';

const EVERYTHING = everythingPath();
const FAKE_UPSTREAM = join(ROOT, 'tests/fakes/fake-upstream.mjs');
const TTL_MS = 3000;
let dir, srv, calls, callsT, other, upstreamHttp;

before(async () => {
  assert.ok(existsSync(EVERYTHING), `server-everything installed: ${EVERYTHING}`);
  dir = mkdtempSync(join(tmpdir(), 'hm-gwrelay-modern-'));
  calls = join(dir, 'calls');
  callsT = join(dir, 'calls-fkt');
  upstreamHttp = await startEverythingHttp();
  const gw = join(dir, 'gateway.yaml');
  writeFileSync(gw, 'upstreams:\n' +
    `  ev:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING)}, stdio]\n` +
    '    tools: {include: [echo, trigger-sampling-request, trigger-elicitation-request]}\n' +
    `  evh:\n    url: ${upstreamHttp.url}\n    tools: {include: [trigger-sampling-request]}\n` +
    `  fk:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: [${JSON.stringify(FAKE_UPSTREAM)}, --elicit, --calls, ${JSON.stringify(calls)}]\n` +
    '    max_in_flight: 1\n    tools: {include: [ask, echo]}\n' +
    `  fkt:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: [${JSON.stringify(FAKE_UPSTREAM)}, --elicit, --calls, ${JSON.stringify(callsT)}]\n` +
    '    timeout: 1\n    tools: {include: [ask]}\n');
  chmodSync(gw, 0o600);
  other = randomBytes(32).toString('hex');
  const tokens = tokensFile(dir, { other: [other, 'gateway:ev, gateway:evh, gateway:fk, gateway:fkt'] });
  srv = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens },
    { env: { HERMES_TEST_STATE_TTL_MS: String(TTL_MS) } });
});

after(async () => {
  if (srv) assert.equal(await srv.stop(), 0, srv?.proc.stderrText);
  upstreamHttp?.kill();
  rmSync(dir, { recursive: true, force: true });
});

// The SDK v2 client pinned to 2026-07-28, declaring elicitation and sampling; answers: what its
// handlers return (each records what it was asked).
const connectV2 = (name, answers) => connectV2Client(srv, name,
  { answers, capabilities: { elicitation: { form: {} }, sampling: {} } });

// One raw 2026-07-28 tools/call (as token's caller); extra: inputResponses and requestState.
const rawCall = (name, args, extra = {}, token = null) => modernToolCall(srv, name, args, extra, token);

const callsFile = (f = calls) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
const cancelLines = (f = calls) => callsFile(f).split('\n').filter((l) => l.startsWith('cancelled'));

for (const up of ['ev', 'evh']) test(`SDK v2 (2026-07-28), ${up}: the upstream's sampling request reaches its handler, the answer the upstream`, async () => {
  const client = await connectV2(`v2-sampling-${up}`, {
    sampling: (p) => ({ role: 'assistant', model: 'model-v2', content: { type: 'text', text: `v2 read: ${p.messages[0].content.text}` } }),
    elicitation: () => ({ action: 'cancel' }),
  });
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes(`${up}__trigger-sampling-request`), names.join(' '));
    const res = await client.callTool({ name: `${up}__trigger-sampling-request`, arguments: { prompt: 'the moon', maxTokens: 20 } });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.equal(client.asked.length, 1, JSON.stringify(client.asked));
    assert.equal(client.asked[0][0], 'sampling');
    assert.equal(client.asked[0][1].messages[0].content.text, 'Resource trigger-sampling-request context: the moon');
    assert.equal(client.asked[0][1].maxTokens, 20, 'the params as the upstream sent them');
    assert.match(res.content[0].text, /v2 read: Resource trigger-sampling-request context: the moon/);
    assert.match(res.content[0].text, /model-v2/);
    // Two rounds on the wire: input_required with a state, then the retry carrying it.
    assert.equal(client.wire.length, 2, 'an input-required round, then the retry');
    const first = JSON.parse(await client.wire[0].text);
    assert.equal(first.result.resultType, 'input_required', JSON.stringify(first));
    assert.equal(typeof first.result.requestState, 'string');
    assert.equal(client.wire[1].body.params.requestState, first.result.requestState);
  } finally { await client.close(); }
});

test('SDK v2 (2026-07-28): elicitation accepted, and declined, each reach the upstream', async () => {
  let action = 'accept';
  const client = await connectV2('v2-elicit', {
    sampling: () => { throw new Error('not asked'); },
    elicitation: () => (action === 'accept'
      ? { action, content: { name: 'Ada of v2', check: true, email: 'ada@example.com' } } : { action }),
  });
  try {
    await client.listTools();
    const accepted = await client.callTool({ name: 'ev__trigger-elicitation-request', arguments: {} });
    assert.ok(!accepted.isError, JSON.stringify(accepted));
    assert.equal(client.asked[0]?.[0], 'elicitation', JSON.stringify(client.asked));
    assert.equal(typeof client.asked[0][1].requestedSchema, 'object');
    assert.match(JSON.stringify(accepted.content), /Ada of v2/);
    action = 'decline';
    const declined = await client.callTool({ name: 'ev__trigger-elicitation-request', arguments: {} });
    assert.equal(client.asked.length, 2);
    assert.match(JSON.stringify(declined.content), /declined to provide/);
    assert.doesNotMatch(JSON.stringify(declined.content), /Ada of v2/);
  } finally { await client.close(); }
});

// A first round of fk__ask: the input_required result.
async function ask(message, token = null, tool = 'fk__ask') {
  const r = await rawCall(tool, { message }, {}, token);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.answer?.result?.resultType, 'input_required', r.text);
  const requests = Object.values(r.answer.result.inputRequests);
  assert.equal(requests.length, 1, r.text);
  assert.equal(requests[0].method, 'elicitation/create');
  assert.equal(requests[0].params.message, message);
  return { key: Object.keys(r.answer.result.inputRequests)[0], state: r.answer.result.requestState };
}
const resume = (message, key, state, content, token = null) =>
  rawCall('fk__ask', { message }, { inputResponses: { [key]: { action: 'accept', content } }, requestState: state }, token);

test('a forged or altered state, and another caller\'s, are refused; the held call stays its caller\'s, once', async () => {
  const { key, state } = await ask('who are you?');
  // Altered: one character of the payload changed.
  const i = 10, altered = state.slice(0, i) + (state[i] === 'A' ? 'B' : 'A') + state.slice(i + 1);
  const forged = await resume('who are you?', key, altered, { name: 'mallory' });
  assert.equal(forged.answer?.error?.code, -32602, forged.text);
  // Another principal with the owner's state (it learned it somehow): refused.
  const stolen = await resume('who are you?', key, state, { name: 'other' }, other);
  assert.equal(stolen.answer?.error?.code, -32602, stolen.text);
  assert.doesNotMatch(stolen.text, /answer:/);
  // The owner still can: its answer reaches the upstream, whose result comes back.
  const done = await resume('who are you?', key, state, { name: 'owner' });
  assert.equal(done.answer?.result?.isError ?? false, false, done.text);
  assert.match(done.answer.result.content[0].text, /^answer: .*"name":"owner"/);
  // One handle resumes once: the same state again gets a clear tool error.
  const again = await resume('who are you?', key, state, { name: 'owner' });
  assert.equal(again.answer?.result?.isError, true, again.text);
  assert.equal(again.answer.result.structuredContent.error, 'not_found', again.text);
  assert.match(again.answer.result.structuredContent.message, /no held call|already resumed|expired/);
});

test('a client that never resumes: the held call holds a max_in_flight slot, then is cancelled upstream after the ttl', async () => {
  const before = callsFile().split('\n').filter((l) => l.startsWith('cancelled')).length;
  const started = Date.now();
  const { key, state } = await ask('anyone?');
  // max_in_flight 1: the held call keeps the slot, so this echo waits for the cancel.
  const echo = rawCall('fk__echo', { message: 'after' }).then((r) => ({ ...r, cancelsThen: callsFile() }));
  const e = await echo;
  assert.equal(e.answer?.result?.content?.[0]?.text, 'Echo: after', e.text);
  const cancels = e.cancelsThen.split('\n').filter((l) => l.startsWith('cancelled'));
  assert.equal(cancels.length, before + 1, `the held call was cancelled upstream before the echo ran: ${e.cancelsThen}`);
  assert.ok(Date.now() - started >= TTL_MS - 100, 'not before the state lifetime');
  assert.equal(events(srv, 'held_call_expired', { upstream: 'fk', why: 'not_resumed' }).length, 1);
  // A late resume: refused (the engine's state expired with it).
  const late = await resume('anyone?', key, state, { name: 'late' });
  assert.ok(late.answer?.error || late.answer?.result?.isError, late.text);
  assert.doesNotMatch(late.text, /answer:/);
});

test('a held call not resumed within the upstream\'s timeout (1 s, shorter than the state\'s) is cancelled upstream then', async () => {
  const started = Date.now();
  await ask('quick?', null, 'fkt__ask');
  await until(() => cancelLines(callsT).length === 1, 'the upstream got notifications/cancelled', 5000);
  assert.ok(Date.now() - started < TTL_MS, 'by the call\'s timeout, before the state lifetime');
  // The gateway logs after it sends the cancel: the line may reach us after the upstream's record.
  const held = await waitEvent(srv, 'held_call_expired', { upstream: 'fkt', tool: 'ask', why: 'timeout' }, { ms: 5000 });
  assert.match(held.line, /reached its timeout \(1 s\): cancelled upstream/);
});

test('SDK v2: the resumed request owns the call: its hang-up cancels the upstream call', async () => {
  const before = cancelLines().length;
  const aborter = new AbortController();
  const client = await connectV2('v2-cancel', {
    sampling: () => { throw new Error('not asked'); },
    // Answer, and hang up 300 ms into the retry (the upstream answers only after 10 s).
    elicitation: () => { setTimeout(() => aborter.abort(), 300); return { action: 'accept', content: { name: 'quitter' } }; },
  });
  try {
    await client.listTools();
    const res = client.callTool({ name: 'fk__ask', arguments: { message: 'wait', ms: 10000 } }, { signal: aborter.signal });
    await assert.rejects(res);
    await until(() => cancelLines().length === before + 1, 'the upstream got notifications/cancelled', 5000);
    assert.equal(client.wire.length, 2, 'the retry carried the answer before the hang-up');
    assert.doesNotMatch(srv.proc.stderrText, /v2-cancel.*not resumed/);
  } finally { await client.close(); }
});

test('a call still held when the server stops is freed (a clean exit, sanitizers included)', async () => {
  await ask('still there?');
  const stopping = srv;
  srv = null; // after() has nothing left to stop, whatever happens here
  assert.equal(await stopping.stop(), 0, stopping.proc.stderrText);
});
