// The Hermes agent's own approvals. First the fake agent's approval
// states, over its HTTP API (waiting_for_approval, POST /approval once|deny, 409, 400), then the
// bridge: a run a hermes_task follows that waits for approval is in the operator's queue
// (`hermes-mcp approvals`), and `approve`/`deny` answer the agent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFake, startHermes, restartHermes, agentEnv, sdkClient, gatewayFile, modernMeta, modernHeaders, HERMES, until, parseSse, tokensFile } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

const authed = (fake) => ({ authorization: `Bearer ${fake.key}`, 'content-type': 'application/json' });

async function startRun(fake, input) {
  const r = await fetch(`${fake.base}/v1/runs`, { method: 'POST', headers: authed(fake), body: JSON.stringify({ input }) });
  assert.equal(r.status, 202);
  return (await r.json()).run_id;
}
const runStatus = async (fake, id) => (await (await fetch(`${fake.base}/v1/runs/${id}`, { headers: authed(fake) })).json());
const answer = (fake, id, body) => fetch(`${fake.base}/v1/runs/${id}/approval`, { method: 'POST', headers: authed(fake), body: JSON.stringify(body) });

// Reads a run's event stream to its end, calling onFrame for each event as it arrives.
async function readEvents(fake, id, onFrame) {
  const r = await fetch(`${fake.base}/v1/runs/${id}/events`, { headers: authed(fake) });
  assert.equal(r.status, 200);
  const dec = new TextDecoder();
  let buf = '';
  const events = [];
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, cut + 2);
      buf = buf.slice(cut + 2);
      for (const ev of parseSse(frame).filter((e) => e.data)) {
        const j = JSON.parse(ev.data);
        events.push(j);
        await onFrame?.(j);
      }
    }
  }
  return events;
}

test('fake agent: [approval] waits for approval; once continues the run to its answer', async (t) => {
  const fake = await startFake();
  t.after(() => fake.stop());
  const id = await startRun(fake, 'clean up [approval=rm -rf /tmp/x] [text=all clean]');
  const st = await until(async () => { const s = await runStatus(fake, id); return s.status === 'waiting_for_approval' && s; }, 'waiting');
  assert.equal(st.approval.command, 'rm -rf /tmp/x');
  assert.equal(typeof st.approval.description, 'string');
  assert.deepEqual(st.approval.choices, ['once', 'session', 'always', 'deny']);
  const events = await readEvents(fake, id, async (ev) => {
    if (ev.event !== 'approval.request') return;
    assert.equal(ev.command, 'rm -rf /tmp/x');
    const r = await answer(fake, id, { choice: 'once' });
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { resolved: 1 });
  });
  const names = events.map((e) => e.event);
  assert.ok(names.indexOf('approval.request') < names.indexOf('approval.responded'), names.join());
  assert.deepEqual(events.find((e) => e.event === 'approval.responded').choice, 'once');
  assert.equal(names.at(-1), 'run.completed');
  const done = await runStatus(fake, id);
  assert.equal(done.status, 'completed');
  assert.equal(done.output, 'all clean');
  assert.equal(done.approval, undefined);
  // Answered once: nothing is pending any more.
  const again = await answer(fake, id, { choice: 'once' });
  assert.equal(again.status, 409);
  assert.equal((await again.json()).error.code, 'approval_not_pending');
});

test('fake agent: deny ends the run failed; 409 when nothing waits; 400 for a bad choice', async (t) => {
  const fake = await startFake();
  t.after(() => fake.stop());
  const plain = await startRun(fake, 'no approval here [delay=3000]');
  const r409 = await answer(fake, plain, { choice: 'once' });
  assert.equal(r409.status, 409);
  assert.equal((await r409.json()).error.code, 'approval_not_pending');
  const id = await startRun(fake, 'deploy [approval=git push --force]');
  await until(async () => (await runStatus(fake, id)).status === 'waiting_for_approval', 'waiting');
  for (const bad of [{ choice: 'maybe' }, {}, { choice: 7 }]) {
    const r = await answer(fake, id, bad);
    assert.equal(r.status, 400, JSON.stringify(bad));
    assert.equal((await r.json()).error.type, 'invalid_request_error');
  }
  assert.equal((await runStatus(fake, id)).status, 'waiting_for_approval');
  const r = await answer(fake, id, { choice: 'deny' });
  assert.equal(r.status, 200);
  const st = await until(async () => { const s = await runStatus(fake, id); return s.status === 'failed' && s; }, 'failed');
  assert.match(st.error, /denied.*git push --force/);
  assert.equal(st.approval, undefined);
  const gone = await fetch(`${fake.base}/v1/runs/nope/approval`, { method: 'POST', headers: authed(fake), body: '{"choice":"once"}' });
  assert.equal(gone.status, 404);
});

test('fake agent: a stop while waiting cancels the run', async (t) => {
  const fake = await startFake();
  t.after(() => fake.stop());
  const id = await startRun(fake, 'x [approval]');
  await until(async () => (await runStatus(fake, id)).status === 'waiting_for_approval', 'waiting');
  const r = await fetch(`${fake.base}/v1/runs/${id}/stop`, { method: 'POST', headers: authed(fake) });
  assert.equal(r.status, 200);
  const st = await until(async () => { const s = await runStatus(fake, id); return s.status === 'cancelled' && s; }, 'cancelled');
  assert.equal(st.approval, undefined);
});

// ---- the bridge: a followed run's approval in the operator's queue ----

// A server whose "worker" principal may delegate; the agent is the fake.
async function rig(extra = {}) {
  const fake = await startFake();
  const worker = randomBytes(32).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'hm-agentappr-'));
  const tokens = tokensFile(dir, { worker: [worker, 'hermes:read, hermes:task'] });
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', TOKENS_FILE: tokens, ...extra });
  const { client } = await sdkClient({ ...srv, auth: { Authorization: `Bearer ${worker}` } }, 'agentappr-it');
  const call = async (name, args) => (await client.callTool({ name, arguments: args })).structuredContent;
  const cli = (...args) => spawnSync(HERMES, [...args, '--env-file', srv.envFile], { encoding: 'utf8' });
  const pending = () => { const r = cli('approvals', '--json'); assert.equal(r.status, 0, r.stderr); return JSON.parse(r.stdout); };
  return { fake, srv, client, call, cli, pending,
    async close() { await client.close().catch(() => {}); await this.srv.stop(); await fake.stop(); rmSync(dir, { recursive: true, force: true }); } };
}

const SECRET = 'ghp_9fK2xQ7LmZ4rT8vB1nW6yH3cJ5dP0sAe';
const waitingEntry = async (r, runId) => until(() => r.pending().find((p) => p.tool.includes(runId)), `the run in the queue: ${JSON.stringify(r.pending())} ${r.srv.proc.stderrText.slice(-1500)}`);
const resultOf = (r, id) => until(async () => { const x = await r.call('hermes_result', { id }); return ['completed', 'failed', 'cancelled', 'interrupted'].includes(x?.status) && x; }, 'the result');

test('bridge: an async task waiting for approval is queued with its caller; approve completes it', async (t) => {
  const r = await rig();
  t.after(() => r.close());
  const task = await r.call('hermes_task', { task: `tidy [approval=git push https://x:${SECRET}@example.org] [text=pushed it]`, mode: 'async', id: 'appr-1' });
  assert.equal(task.status, 'accepted');
  const entry = await waitingEntry(r, task.run_id);
  assert.equal(entry.principal, 'worker');
  assert.equal(entry.tool, `agent hermes run ${task.run_id}: dangerous command needs approval`);
  assert.match(entry.summary, /git push/);
  assert.match(entry.summary, /appr-1/);
  assert.ok(!JSON.stringify(r.pending()).includes(SECRET), 'the token in the command is masked');
  assert.match(entry.summary, /x:\*\*\*@example/);
  // hermes_status says the run waits for the operator, and which approval answers it.
  const st = await r.client.callTool({ name: 'hermes_status', arguments: { run_id: task.run_id } });
  assert.equal(st.structuredContent.status, 'waiting_for_approval');
  assert.equal(st.structuredContent.waiting_for, 'operator');
  assert.equal(st.structuredContent.approval_id, entry.id);
  assert.match(st.content[0].text, new RegExp(`approve ${entry.id}`));
  const ok = r.cli('approve', entry.id);
  assert.equal(ok.status, 0, ok.stderr);
  const res = await resultOf(r, 'appr-1');
  assert.equal(res.status, 'completed');
  assert.equal(res.summary, 'pushed it');
  assert.deepEqual(r.pending(), []);
  const posted = r.fake.received().filter((x) => x.path.endsWith('/approval'));
  assert.deepEqual(posted.map((x) => x.body), [{ choice: 'once' }]);
});

test('bridge: deny answers the agent with deny; the task ends as the agent reports it', async (t) => {
  const r = await rig();
  t.after(() => r.close());
  const task = await r.call('hermes_task', { task: 'drop it [approval=PGPASSWORD=hunter2 dropdb -U admin prod]', mode: 'async', id: 'appr-2' });
  const entry = await waitingEntry(r, task.run_id);
  assert.ok(!JSON.stringify(r.pending()).includes('hunter2'), 'the password on the command line is masked');
  assert.match(entry.summary, /PGPASSWORD=\*\*\* dropdb -U admin prod/);
  const no = r.cli('deny', entry.id, '--reason', 'not today');
  assert.equal(no.status, 0, no.stderr);
  const res = await resultOf(r, 'appr-2');
  assert.equal(res.status, 'failed');
  assert.match(res.summary, /denied.*dropdb -U admin prod/);
  assert.deepEqual(r.fake.received().filter((x) => x.path.endsWith('/approval')).map((x) => x.body), [{ choice: 'deny' }]);
  assert.deepEqual(r.pending(), []);
});

test('bridge: cancel, or an answer given at the agent, withdraws the entry', async (t) => {
  const r = await rig();
  t.after(() => r.close());
  const a = await r.call('hermes_task', { task: 'one [approval=rm -rf a]', mode: 'async', id: 'appr-3' });
  const b = await r.call('hermes_task', { task: 'two [approval=rm -rf b] [text=done b]', mode: 'async', id: 'appr-4' });
  await waitingEntry(r, a.run_id);
  await waitingEntry(r, b.run_id);
  await r.call('hermes_cancel', { id: 'appr-3' });
  assert.equal((await resultOf(r, 'appr-3')).status, 'cancelled');
  await until(() => !r.pending().some((p) => p.tool.includes(a.run_id)), 'the cancelled run withdrawn');
  // Someone answers at the agent itself: the bridge sees the run go on and withdraws.
  const direct = await answer(r.fake, b.run_id, { choice: 'once' });
  assert.equal(direct.status, 200);
  assert.equal((await resultOf(r, 'appr-4')).summary, 'done b');
  await until(() => r.pending().length === 0, 'the answered run withdrawn');
  assert.equal(r.fake.received().filter((x) => x.path.endsWith('/approval')).length, 1, 'only the test answered the agent');
});

test('bridge: a run that goes on to ask for another command gets a new entry; the old one can no longer approve it', async (t) => {
  const r = await rig();
  t.after(() => r.close());
  const task = await r.call('hermes_task', { task: 'two steps [approval=rm -rf first] [approval2=rm -rf second] [text=both done]', mode: 'async', id: 'appr-swap' });
  const first = await waitingEntry(r, task.run_id);
  assert.match(first.summary, /rm -rf first/);
  // Answered at the agent itself; the run now waits for the second command.
  assert.equal((await answer(r.fake, task.run_id, { choice: 'once' })).status, 200);
  const second = await until(() => r.pending().find((p) => /rm -rf second/.test(p.summary)), 'the second command queued');
  assert.notEqual(second.id, first.id);
  assert.ok(!r.pending().some((p) => p.id === first.id), 'the entry for the first command withdrawn');
  assert.equal(r.cli('approve', first.id).status, 1, 'the old entry approves nothing');
  assert.equal(r.fake.received().filter((x) => x.path.endsWith('/approval')).length, 1, 'only the test answered so far');
  assert.equal(r.cli('approve', second.id).status, 0);
  assert.equal((await resultOf(r, 'appr-swap')).summary, 'both done');
});

test('bridge: a decision is sent only if the run still waits for what was decided (checked just before)', async (t) => {
  const r = await rig({ HERMES_POLL_MS: '3000' }); // the bridge's next look at the run is far off
  t.after(() => r.close());
  const task = await r.call('hermes_task', { task: 'two steps [approval=rm -rf one] [approval2=rm -rf two] [text=fine]', mode: 'async', id: 'appr-late' });
  const first = await waitingEntry(r, task.run_id);
  assert.equal((await answer(r.fake, task.run_id, { choice: 'once' })).status, 200); // now it waits for "two"
  assert.equal(r.cli('approve', first.id).status, 0); // decided on what the operator saw: "one"
  const unsent = await waitEvent(r.srv, 'approval_decision_unsent', { task: 'appr-late', run: task.run_id });
  assert.match(unsent.line, /it no longer waits for the approval that was decided/);
  assert.equal(r.fake.received().filter((x) => x.path.endsWith('/approval')).length, 1, '"two" was not approved by the decision on "one"');
  const second = await until(() => r.pending().find((p) => /rm -rf two/.test(p.summary)), 'the second command queued', 15000);
  assert.equal(r.cli('approve', second.id).status, 0);
  assert.equal((await resultOf(r, 'appr-late')).summary, 'fine');
});

// A 2026-07-28 client of the tasks extension: its sync hermes_task runs as an agent run (an MCP
// task), which the bridge follows; unanswered, the queue's timeout (approvals.timeout_s) denies.
test('bridge: a sync task run as an MCP task is queued too; the queue timeout denies it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hm-agentappr-gw-'));
  const gw = gatewayFile(dir, 'upstreams: {}\napprovals: {timeout_s: 1}\n');
  const r = await rig({ GATEWAY_FILE: gw });
  t.after(async () => { await r.close(); rmSync(dir, { recursive: true, force: true }); });
  const EXT = 'io.modelcontextprotocol/tasks';
  let n = 100;
  const rpc = async (method, params) => {
    const res = await fetch(r.srv.url, { method: 'POST',
      headers: { ...r.srv.auth, ...modernHeaders(method, params.name ?? params.taskId) },
      body: JSON.stringify({ jsonrpc: '2.0', id: n++, method,
        params: { ...params, _meta: modernMeta({ extensions: { [EXT]: {} } }, 'agentappr-it') } }) });
    return res.json();
  };
  const created = (await rpc('tools/call', { name: 'hermes_task',
    arguments: { task: 'sync one [approval=shutdown -h now]', mode: 'sync', id: 'appr-sync' } })).result;
  assert.equal(created.resultType, 'task');
  const entry = await until(() => r.pending().find((p) => p.summary.includes('appr-sync')), 'the MCP task in the queue');
  assert.equal(entry.principal, 'owner');
  assert.match(entry.summary, /shutdown -h now/);
  // Nobody answers: after timeout_s the bridge denies at the agent.
  const done = await until(async () => {
    const g = (await rpc('tasks/get', { taskId: 'appr-sync' })).result;
    return ['completed', 'failed', 'cancelled'].includes(g.status) && g;
  }, 'the task to end', 10000);
  assert.equal(done.result.structuredContent.status, 'failed', JSON.stringify(done));
  assert.match(done.result.structuredContent.summary, /denied.*shutdown -h now/);
  assert.deepEqual(r.fake.received().filter((x) => x.path.endsWith('/approval')).map((x) => x.body), [{ choice: 'deny' }]);
  assert.deepEqual(r.pending(), []);
});

// A stopping server is nobody's decision: the run keeps waiting at the agent, and the next
// process follows it and queues it again.
test('bridge: a restart sends no decision; the run is queued again and can be approved', async (t) => {
  const r = await rig();
  t.after(() => r.close());
  const task = await r.call('hermes_task', { task: 'later [approval=make deploy] [text=deployed]', mode: 'async', id: 'appr-5' });
  const before = await waitingEntry(r, task.run_id);
  await r.client.close();
  const first = r.srv.proc;
  const exited = new Promise((res) => first.once('exit', (code) => res(code)));
  first.kill('SIGTERM');
  assert.equal(await exited, 0, first.stderrText);
  assert.doesNotMatch(first.stderrText, /Sanitizer|runtime error:/);
  assert.equal(r.fake.received().filter((x) => x.path.endsWith('/approval')).length, 0, 'no decision at shutdown');
  const again = await restartHermes(r.srv);
  r.srv = again; // close() stops the new process
  const cli = (...args) => spawnSync(HERMES, [...args, '--env-file', again.envFile], { encoding: 'utf8' });
  const entry = await until(() => JSON.parse(cli('approvals', '--json').stdout).find((p) => p.tool.includes(task.run_id)), 'queued again');
  assert.notEqual(entry.id, before.id);
  assert.equal(entry.principal, 'worker');
  assert.equal(cli('approve', entry.id).status, 0);
  const done = await until(async () => {
    const x = await runStatus(r.fake, task.run_id);
    return x.status === 'completed' && x;
  }, 'the run to complete');
  assert.equal(done.output, 'deployed');
});
