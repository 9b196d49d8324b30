// Approvals out of band: a gateway tool guarded `approve` waits, the
// connection held, until the operator answers on the control socket with the CLI
// (`hermes-mcp approvals [--json] | approve ID | deny ID --reason TEXT`, same --env-file).
// Approve: the call goes upstream as an unguarded one. Deny: approval_denied with the reason.
// No answer within approvals.timeout_s: approval_denied. A caller that asked for progress hears
// that it waits (HERMES_TEST_APPROVAL_NUDGE_MS shortens the 15 s interval). A client that hangs
// up or cancels (MCP_SESSIONS=1: a cancel names a call of its session) withdraws the request.
// A server stopped while a call waits answers it.
// `confirmed: true` approves nothing. Each decision is one audit line (who asked, the tool,
// who decided, the outcome). The upstream is tests/fakes/fake-upstream.mjs, which writes the
// name of each call it receives to a file: a call not approved never reaches it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { ROOT, HERMES, startHermes, until, jsonLines, gatewayFile, sdkClient,
  hermesCli, pendingApprovals, waitApprovals, tokensFile } from '../../lib/lib.mjs';

const FAKE = join(ROOT, 'tests/fakes/fake-upstream.mjs');
let dir, srv;

const cli = hermesCli;
const pending = (s = srv) => pendingApprovals(s);
const waitListed = (n = 1, s = srv) => waitApprovals(s, n);
const audited = () => (existsSync(join(dir, 'audit.jsonl'))
  ? jsonLines(readFileSync(join(dir, 'audit.jsonl'), 'utf8')) : []).filter((l) => l.event === 'approval');
const upstreamCalls = () => (existsSync(join(dir, 'calls'))
  ? readFileSync(join(dir, 'calls'), 'utf8').split('\n').filter((l) => l === 'echo') : []);

async function startWith(timeout) {
  dir = mkdtempSync(join(tmpdir(), 'hm-approvals-'));
  const gw = gatewayFile(dir, `approvals: {timeout_s: ${timeout}}\nupstreams:\n  fake:\n` +
    `    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--calls', join(dir, 'calls')])}\n` +
    '    tools: {include: [echo, slow], guard: {"ech*": approve}}\n');
  return startHermes({ GATEWAY_FILE: gw, AUDIT_LOG_PATH: join(dir, 'audit.jsonl'), MCP_SESSIONS: '1' },
    { env: { HERMES_TEST_APPROVAL_NUDGE_MS: '200' } });
}

before(async () => { srv = await startWith(600); });
after(async () => {
  if (srv) assert.equal(await srv.stop(), 0);
  rmSync(dir, { recursive: true, force: true });
});

test('the start warns that a process of the same uid outside the server can approve, naming the docs page and anchor', () => {
  assert.match(srv.proc.stderrText, /approve guards: `hermes-mcp approve` is heard from uid \d+ outside this server's process tree.*\(see docs\/guides\/gateway\.md#approvals-who-can-decide\)/);
});

test('an unguarded tool does not wait; the queue is empty', async () => {
  const { client } = await sdkClient(srv, 'approvals-it');
  const r = await client.callTool({ name: 'fake__slow', arguments: { ms: 1 } });
  assert.equal(r.content[0].text, 'slow done');
  assert.deepEqual(await pending(), []);
  await client.close();
});

test('approve: the waiting call is listed (secrets masked), progress names its id, then it goes upstream', async () => {
  const { client } = await sdkClient(srv, 'approvals-it');
  const progress = [];
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'hi', api_key: 'sk-live-123' } },
    undefined, { onprogress: (p) => progress.push(p), timeout: 60000 });
  const [p] = await waitListed(1);
  assert.equal(p.tool, 'fake__echo');
  assert.equal(p.principal, 'owner'); // MCP_AUTH_TOKEN's principal
  assert.match(p.id, /^[0-9a-f]{16}$/);
  assert.match(p.summary, /"message":"hi"/);
  assert.doesNotMatch(p.summary, /sk-live/);
  const table = await cli(srv, 'approvals');
  assert.match(table.stdout, new RegExp(`${p.id} .*fake__echo`));
  await until(() => progress.length >= 2, 'two progress notifications while waiting');
  assert.match(progress[0].message, /waiting for the operator/);
  assert.match(progress[1].message, new RegExp(`approve ${p.id}`));
  assert.equal(upstreamCalls().length, 0, 'not upstream before the approval');
  const ok = await cli(srv, 'approve', p.id);
  assert.equal(ok.code, 0, ok.stderr);
  const r = await call;
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal(r.content[0].text, 'Echo: hi');
  assert.equal(upstreamCalls().length, 1);
  assert.deepEqual(await pending(), []);
  const again = await cli(srv, 'approve', p.id);
  assert.equal(again.code, 1);
  const line = await until(() => audited().find((l) => l.status === 'approved'), 'the approved audit line');
  assert.equal(line.tool, 'fake__echo');
  assert.equal(line.principal, 'owner');
  assert.match(line.decided_by, /^uid \d+/);
  assert.ok(line.ts || line.time, 'the line has its time');
  await client.close();
});

test('confirmed: true approves nothing: the call waits, then deny with a reason answers approval_denied', async () => {
  const { client } = await sdkClient(srv, 'approvals-it');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'no', confirmed: true } });
  const [p] = await waitListed(1);
  assert.equal(upstreamCalls().length, 1, 'only the approved call of the previous test went upstream');
  const d = await cli(srv, 'deny', p.id, '--reason', 'not on a friday');
  assert.equal(d.code, 0, d.stderr);
  const r = await call;
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error, 'approval_denied');
  assert.match(r.content[0].text, /not on a friday/);
  assert.equal(upstreamCalls().length, 1);
  const line = await until(() => audited().find((l) => l.status === 'denied'), 'the denied audit line');
  assert.equal(line.tool, 'fake__echo');
  assert.match(line.decided_by, /^uid \d+/);
  await client.close();
});

test('the client cancelling (notifications/cancelled) withdraws its request', async () => {
  const { client } = await sdkClient(srv, 'approvals-it');
  const ac = new AbortController();
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'cancel me' } }, undefined,
    { signal: ac.signal });
  const [p] = await waitListed(1);
  ac.abort();
  await assert.rejects(call);
  await waitListed(0);
  const late = await cli(srv, 'approve', p.id);
  assert.equal(late.code, 1);
  await until(() => audited().find((l) => l.status === 'withdrawn'), 'the withdrawn audit line');
  assert.equal(upstreamCalls().length, 1);
  await client.close();
});

test('the client hanging up (the HTTP connection closed) withdraws its request', async () => {
  const { client } = await sdkClient(srv, 'approvals-it');
  const t = client.transport;
  const headers = { ...srv.auth, 'content-type': 'application/json',
    accept: 'application/json, text/event-stream', 'mcp-protocol-version': t.protocolVersion ?? '2025-11-25' };
  if (t.sessionId) headers['mcp-session-id'] = t.sessionId;
  const req = http.request(srv.url, { method: 'POST', headers });
  req.on('error', () => {});
  req.end(JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call',
    params: { name: 'fake__echo', arguments: { message: 'hang up' } } }));
  const [p] = await waitListed(1);
  const withdrawn = audited().filter((l) => l.status === 'withdrawn').length;
  req.destroy();
  await waitListed(0);
  const line = await until(() => audited().filter((l) => l.status === 'withdrawn')[withdrawn], 'the audit line of the hang-up');
  assert.equal(line.decided_by, 'withdrawn');
  assert.equal(line.tool, 'fake__echo');
  const late = await cli(srv, 'approve', p.id);
  assert.equal(late.code, 1);
  assert.equal(upstreamCalls().length, 1);
  await client.close();
});

test('a server stopped while a call waits answers it approval_denied and exits cleanly', async () => {
  const { client } = await sdkClient(srv, 'approvals-it');
  const call = client.callTool({ name: 'fake__echo', arguments: { message: 'stop' } }).then(
    (r) => ({ r }), (e) => ({ e }));
  await waitListed(1);
  const stopped = srv.stop();
  srv = null;
  const out = await call;
  assert.equal(out.r?.structuredContent?.error, 'approval_denied', JSON.stringify(out.r ?? String(out.e)));
  assert.match(out.r.content[0].text, /server is stopping/);
  assert.equal(await stopped, 0);
  const line = audited().find((l) => l.decided_by === 'shutdown');
  assert.equal(line?.status, 'denied');
  assert.equal(upstreamCalls().length, 1);
  await client.close().catch(() => {});
});

test('no answer within approvals.timeout_s: approval_denied saying it timed out', async () => {
  rmSync(dir, { recursive: true, force: true });
  srv = await startWith(2);
  const { client } = await sdkClient(srv, 'approvals-it');
  const r = await client.callTool({ name: 'fake__echo', arguments: { message: 'late' } });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.error, 'approval_denied');
  assert.match(r.content[0].text, /timed out/);
  assert.deepEqual(await pending(), []);
  assert.equal(upstreamCalls().length, 0);
  const line = await until(() => audited().find((l) => l.status === 'timed_out'), 'the timed_out audit line');
  assert.equal(line.decided_by, 'timeout');
  await client.close();
});

test('without a server the CLI says so', async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-approvals-none-'));
  writeFileSync(join(d, 'env'), 'MCP_PORT=0\n');
  const r = await cli({ envFile: join(d, 'env') }, 'approvals');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no server is running/);
  rmSync(d, { recursive: true, force: true });
});

test('with approve guards, approvals.timeout_s not shorter than MCP_CALL_TIMEOUT_S refuses the start, naming both; without guards it does not matter', async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-approvals-limit-'));
  try {
    const bare = await startHermes({ MCP_CALL_TIMEOUT_S: '300', GATEWAY_FILE: gatewayFile(d,
      `upstreams:\n  fake:\n    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([FAKE])}\n    tools: {include: [echo]}\n`, 'bare.yaml') });
    assert.equal(await bare.stop(), 0, 'no guards: the default 600 s beside a 300 s call timeout is fine');
    const gw = gatewayFile(d, 'approvals: {timeout_s: 120}\nupstreams:\n  fake:\n' +
      `    command: ${JSON.stringify(process.execPath)}\n    args: ${JSON.stringify([FAKE])}\n` +
      '    tools: {include: [echo], guard: {echo: approve}}\n');
    const env = join(d, 'limit.env');
    writeFileSync(env, `MCP_PORT=1\nMCP_AUTH_TOKEN=${'a'.repeat(64)}\nGATEWAY_FILE=${gw}\nMCP_CALL_TIMEOUT_S=60\nAGENTS_FILE=${join(d, 'agents.yaml')}\n`);
    chmodSync(env, 0o600);
    const r = spawnSync(HERMES, ['serve', '--env-file', env], { encoding: 'utf8', timeout: 10000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /approvals\.timeout_s \(120 s\) must be shorter than MCP_CALL_TIMEOUT_S \(60 s\)/);
  } finally { rmSync(d, { recursive: true, force: true }); }
});

test('one principal cannot fill the operator\'s queue: past 16 waiting its calls are denied at once, another principal still queues', async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-approvals-share-'));
  const other = 'b'.repeat(64);
  const tokens = tokensFile(d, { other: [other, 'gateway:fake'] });
  const gw = gatewayFile(d, `upstreams:\n  fake:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--calls', join(d, 'calls')])}\n` +
    '    tools: {include: [echo], guard: {echo: approve}}\n');
  const s = await startHermes({ GATEWAY_FILE: gw, TOKENS_FILE: tokens });
  const { client: mine } = await sdkClient(s, 'approvals-share');
  const { client: theirs } = await sdkClient({ ...s, auth: { Authorization: `Bearer ${other}` } }, 'approvals-share-2');
  try {
    const held = Array.from({ length: 16 }, (_, i) =>
      mine.callTool({ name: 'fake__echo', arguments: { message: `m${i}` } }, undefined, { timeout: 60000 }).catch((e) => e));
    await waitListed(16, s);
    const over = await mine.callTool({ name: 'fake__echo', arguments: { message: 'one too many' } });
    assert.equal(over.structuredContent?.error, 'approval_denied', JSON.stringify(over));
    assert.match(over.structuredContent.message, /too many of your calls wait for the operator/);
    const waiting = theirs.callTool({ name: 'fake__echo', arguments: { message: 'theirs' } }, undefined, { timeout: 60000 }).catch((e) => e);
    const list = await waitListed(17, s);
    assert.equal(list.filter((p) => p.principal === 'other').length, 1);
    assert.equal(list.filter((p) => p.principal === 'owner').length, 16);
    assert.equal(await s.stop(), 0); // SIGTERM denies them all
    for (const r of [...await Promise.all(held), await waiting])
      assert.ok(r instanceof Error || r.structuredContent?.error === 'approval_denied', JSON.stringify(r));
    assert.ok(!existsSync(join(d, 'calls')) || !readFileSync(join(d, 'calls'), 'utf8').includes('echo'), 'none reached the upstream');
  } finally {
    await mine.close().catch(() => {});
    await theirs.close().catch(() => {});
    rmSync(d, { recursive: true, force: true });
  }
});

test('approved while its upstream is down: answered upstream_unavailable at once, never left hanging', async () => {
  const d = mkdtempSync(join(tmpdir(), 'hm-approvals-down-'));
  const gw = gatewayFile(d, `upstreams:\n  fake:\n    command: ${JSON.stringify(process.execPath)}\n` +
    `    args: ${JSON.stringify([FAKE, '--starts', join(d, 'starts'), '--fail-starts', '50', '--calls', join(d, 'calls')])}\n` +
    '    tools: {include: [echo, crash], guard: {echo: approve}}\n');
  const s = await startHermes({ GATEWAY_FILE: gw });
  const { client } = await sdkClient(s, 'approvals-down');
  try {
    const waiting = client.callTool({ name: 'fake__echo', arguments: { message: 'later' } }, undefined, { timeout: 60000 });
    const [p] = await waitListed(1, s);
    await client.callTool({ name: 'fake__crash', arguments: {} }); // it fails every start from now on
    await until(async () => (await (await fetch(`${s.base}/readyz`)).json()).upstreams.fake.state !== 'ready', 'the upstream down');
    const t0 = Date.now();
    assert.equal((await cli(s, 'approve', p.id)).code, 0);
    const r = await waiting;
    assert.ok(Date.now() - t0 < 5000, `answered after ${Date.now() - t0} ms`);
    assert.equal(r.structuredContent?.error, 'upstream_unavailable', JSON.stringify(r));
    assert.ok(!readFileSync(join(d, 'calls'), 'utf8').split('\n').includes('echo'), 'never sent');
  } finally {
    await client.close().catch(() => {});
    assert.equal(await s.stop(), 0);
    rmSync(d, { recursive: true, force: true });
  }
});
