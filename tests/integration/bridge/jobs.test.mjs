// Jobs across a reload that drops their agent, hermes_reset with runs in flight, and
// hermes_cancel of a running sync task by id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, chmodSync, mkdtempSync, mkdirSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHermes, startFake, agentEnv, until, connectClient } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

const connect = (srv) => connectClient(srv, { name: 'jobs-it', version: '1', listTools: true });
const call = (client, name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });
const chats = (fake) => fake.received().filter((r) => r.path === '/v1/chat/completions');

// A registry with agents alpha and beta at the same fake; rewrite() drops agents from it.
function registry(fake) {
  const dir = mkdtempSync(join(tmpdir(), 'hm-jobs-'));
  const keyFile = join(dir, 'key');
  writeFileSync(keyFile, fake.key + '\n');
  chmodSync(keyFile, 0o600);
  const file = join(dir, 'agents.yaml');
  const write = (names) => {
    writeFileSync(file, `default: ${names[0]}\nagents:\n` + names.map((n) =>
      `  - name: ${n}\n    base_url: http://127.0.0.1:${fake.port}\n    key_file: ${keyFile}\n`).join(''));
    chmodSync(file, 0o600);
  };
  write(['alpha', 'beta']);
  return { file, write, keyFile };
}

// The agent goes away in two ways that take different paths: its registry entry is removed
// (picked up from the file's change before the next use, no signal), or its key file is emptied
// (the registry file is unchanged, so only SIGHUP re-reads it).
for (const how of ['registry file changed', 'key emptied, SIGHUP']) {
  test(`a reload that drops an agent (${how}): its running task finishes, its queued task fails cleanly, the server lives`, async () => {
    const fake = await startFake();
    const reg = registry(fake);
    const srv = await startHermes({ AGENTS_FILE: reg.file, HERMES_POLL_MS: '50' });
    const c = await connect(srv);
    const byFile = how === 'registry file changed';
    try {
      // A running sync task of alpha, a second queued behind it in the same session, an async run
      // of alpha being followed.
      const running = call(c, 'hermes_task', { task: 'first [delay=1500]', mode: 'sync', id: 'rl-run', session: 's1', agent: 'alpha' });
      await until(() => chats(fake).length === 1, 'the first task reached the agent');
      const queued = call(c, 'hermes_task', { task: 'second', mode: 'sync', id: 'rl-queued', session: 's1', agent: 'alpha' });
      const accepted = await call(c, 'hermes_task', { task: 'async [delay=1500]', mode: 'async', id: 'rl-async', agent: 'alpha' });
      assert.equal(accepted.structuredContent.status, 'accepted');
      const runId = accepted.structuredContent.run_id;
      if (byFile) {
        reg.write(['beta']);
      } else {
        writeFileSync(reg.keyFile, '');
        srv.proc.kill('SIGHUP');
        await waitEvent(srv, 'agents_reloaded');
      }
      const la = await call(c, 'list_agents', {});
      if (byFile) {
        assert.deepEqual(la.structuredContent.agents.map((a) => a.name), ['beta']);
      } else {
        const alpha = la.structuredContent.agents.find((a) => a.name === 'alpha');
        assert.equal(alpha.available, false);
        assert.equal(alpha.unavailable_reason, 'missing_credentials');
      }
      // status and cancel of a task whose agent was removed: clean answers, no crash.
      const st = await call(c, 'hermes_status', { run_id: runId });
      assert.equal(st.isError, true);
      assert.match(st.structuredContent.error, byFile ? /^(unknown_agent|agent_unavailable)$/ : /^agent_unavailable$/);
      const first = await running;
      assert.equal(first.isError, false, JSON.stringify(first));
      assert.equal(first.structuredContent.status, 'completed', 'the task in flight finished at the old agent');
      const second = await queued;
      assert.equal(second.isError, true);
      assert.equal(second.structuredContent.error, 'agent_unavailable');
      assert.match(second.structuredContent.message, byFile ? /alpha.*removed from the registry/ : /alpha.*missing_credentials/);
      assert.equal(chats(fake).length, 1, 'the queued task never reached an agent');
      const cancel = await call(c, 'hermes_cancel', { id: 'rl-async' });
      assert.equal(cancel.isError, true);
      assert.equal(cancel.structuredContent.error, 'agent_unavailable');
      // The agent comes back: the followed run is finished and stored, new work goes through.
      if (byFile) {
        reg.write(['alpha', 'beta']);
      } else {
        writeFileSync(reg.keyFile, fake.key + '\n');
        srv.proc.kill('SIGHUP');
      }
      await until(async () => (await call(c, 'hermes_result', { id: 'rl-async' })).isError === false, 'the async result', 10000);
      const again = await call(c, 'hermes_task', { task: 'what is 6 * 7', mode: 'sync', agent: byFile ? 'beta' : 'alpha' });
      assert.equal(again.isError, false);
      assert.match(again.structuredContent.summary, /42/);
    } finally {
      await c.close();
      assert.equal(await srv.stop(), 0, 'no crash: SIGTERM exits 0 (ASan reports would make it 86)');
      await fake.stop();
    }
  });
}

test('a followed run whose agent a reload removed is finished at the agent it started on, not polled for ever', async () => {
  const fake = await startFake();
  const reg = registry(fake);
  const srv = await startHermes({ AGENTS_FILE: reg.file, HERMES_POLL_MS: '50' });
  const c = await connect(srv);
  try {
    const accepted = await call(c, 'hermes_task', { task: 'async [delay=600]', mode: 'async', id: 'gone-async', agent: 'alpha' });
    assert.equal(accepted.structuredContent.status, 'accepted');
    reg.write(['beta']);
    srv.proc.kill('SIGHUP');
    const la = await call(c, 'list_agents', {});
    assert.deepEqual(la.structuredContent.agents.map((a) => a.name), ['beta'], 'alpha is gone');
    await until(async () => (await call(c, 'hermes_result', { id: 'gone-async' })).isError === false, 'the result of the run of the removed agent', 10000);
    const r = await call(c, 'hermes_result', { id: 'gone-async' });
    assert.equal(r.structuredContent.status, 'completed');
    const health = await (await fetch(`${srv.base}/health`)).json();
    assert.equal(health.jobs, 0, 'nothing left polling');
  } finally {
    await c.close();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('hermes_reset never loses a run in flight: its result.json is written without a restart', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' });
  const c = await connect(srv);
  try {
    const acc = await call(c, 'hermes_task', { task: 'long [delay=1000]', mode: 'async', id: 'reset-1' });
    assert.equal(acc.structuredContent.status, 'accepted');
    const reset = await call(c, 'hermes_reset', { confirmed: true });
    assert.equal(reset.isError, false);
    assert.equal(reset.structuredContent.by_status.following, 1, 'the followed run is kept');
    const resultFile = join(srv.dir, 'tasks', 'reset-1', 'result.json');
    await until(() => existsSync(resultFile), 'result.json after the reset', 10000);
    assert.equal(JSON.parse(readFileSync(resultFile, 'utf8')).status, 'completed');
    const res = await call(c, 'hermes_result', { id: 'reset-1' });
    assert.equal(res.structuredContent.status, 'completed');
    // The run index still answers for it.
    const st = await call(c, 'hermes_status', { run_id: acc.structuredContent.run_id });
    assert.equal(st.structuredContent.task_id, 'reset-1');
  } finally {
    await c.close();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('hermes_reset walks a large task directory in steps: other clients are answered meanwhile, a second reset is busy, every run is indexed', async () => {
  const fake = await startFake();
  const tasks = mkdtempSync(join(tmpdir(), 'hm-reset-'));
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), TASKS_DIR: tasks });
  // Made after the start (which indexes what is there): only the reset's walk can index them.
  // The clients connect after: on a loaded machine making 10,000 folders can outlast the
  // server's keep-alive, and a client's next POST would meet a connection already closed.
  const N = 10000;
  for (let i = 0; i < N; i++) {
    const d = join(tasks, `t${i}`);
    mkdirSync(d, { mode: 0o700 });
    writeFileSync(join(d, 'run.json'), JSON.stringify({ run_id: `run_${i}`, task_id: `t${i}`, agent: 'hermes' }), { mode: 0o600 });
    writeFileSync(join(d, 'result.json'), '{"id":"x","status":"completed"}', { mode: 0o600 });
  }
  const a = await connect(srv);
  const b = await connect(srv);
  try {
    const before = await call(b, 'hermes_cancel', { run_id: `run_${N - 1}` });
    assert.match(before.structuredContent.message, /no task of this bridge has run/, 'not indexed before the reset');
    const order = [];
    const reset = call(a, 'hermes_reset', { confirmed: true }).then((r) => { order.push('reset'); return r; });
    await waitEvent(srv, 'reset_started');
    const list = b.listTools().then((r) => { order.push('tools/list'); return r; });
    const again = call(b, 'hermes_reset', { confirmed: true }).then((r) => { order.push('second reset'); return r; });
    const [r, l, second] = await Promise.all([reset, list, again]);
    assert.equal(l.tools.length, 8);
    assert.equal(second.isError, true);
    assert.equal(second.structuredContent.error, 'busy', 'one reset at a time');
    assert.deepEqual(order.slice(-1), ['reset'], `the other client was answered while the walk went on: ${order}`);
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.by_status.indexed_runs, N, 'every run on disk is indexed');
    const st = await call(b, 'hermes_status', { run_id: `run_${N - 1}` });
    assert.equal(st.structuredContent.task_id, `t${N - 1}`, JSON.stringify(st));
  } finally {
    await a.close();
    await b.close();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
    rmSync(tasks, { recursive: true, force: true });
  }
});

test('hermes_cancel of a running sync task by id: the agent is interrupted, the call answered, result.json says cancelled', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  const a = await connect(srv);
  const b = await connect(srv);
  try {
    const pending = call(a, 'hermes_task', { task: 'slow [delay=20000]', mode: 'sync', id: 'cx-1' });
    await until(() => chats(fake).length === 1, 'the agent got the task');
    const t0 = Date.now();
    const stop = await call(b, 'hermes_cancel', { id: 'cx-1' });
    assert.equal(stop.isError, false);
    assert.equal(stop.structuredContent.status, 'cancelled');
    const res = await pending;
    assert.equal(res.structuredContent.error, 'cancelled');
    assert.ok(Date.now() - t0 < 5000, 'answered at once, not after the agent\'s 20 s');
    const stored = JSON.parse(readFileSync(join(srv.dir, 'tasks', 'cx-1', 'result.json'), 'utf8'));
    assert.equal(stored.status, 'cancelled');
    // The fake records work whose client hung up as interrupted: the agent really stopped.
    await until(() => fake.received().some((x) => x.event === 'interrupted' && x.reason === 'client disconnected'),
      'the agent work to be interrupted');
    const again = await call(b, 'hermes_result', { id: 'cx-1' });
    assert.equal(again.structuredContent.status, 'cancelled');
  } finally {
    await a.close();
    await b.close();
    assert.equal(await srv.stop(), 0, 'no crash: SIGTERM exits 0');
    await fake.stop();
  }
});

test('one projection: the first sync answer, a retry and hermes_result give the same fields, details included', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  const c = await connect(srv);
  try {
    const answer = '{"status":"completed","summary":"done","artifacts":["a.txt"\\],"next_steps":[\\],"rows":3,"note":"kept"}';
    const args = { task: `report [text=${answer}]`, mode: 'sync', id: 'proj-1' };
    const first = await call(c, 'hermes_task', args);
    assert.equal(first.isError, false, JSON.stringify(first));
    // Fields beyond the contract's go to details (contract.c).
    assert.deepEqual(first.structuredContent.details, { rows: 3, note: 'kept' }, 'the first answer carries details');
    const retry = await call(c, 'hermes_task', args);
    const stored = await call(c, 'hermes_result', { id: 'proj-1' });
    assert.deepEqual(retry.structuredContent, first.structuredContent);
    assert.deepEqual(stored.structuredContent, first.structuredContent);
    assert.deepEqual(Object.keys(first.structuredContent).sort(), ['artifacts', 'details', 'id', 'next_steps', 'status', 'summary']);
  } finally {
    await c.close();
    await srv.stop();
    await fake.stop();
  }
});

test('a long sync task names its id in the first progress notification; the description says to pass an id', async () => {
  const fake = await startFake();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  const c = await connect(srv);
  try {
    const { tools } = await c.listTools();
    assert.match(tools.find((t) => t.name === 'hermes_task').description, /pass your own id.*hermes_result/s);
    const seen = [];
    const res = await c.callTool({ name: 'hermes_task', arguments: { task: 'work [delay=300] [progress=2]', mode: 'sync', id: 'prog-1' } },
      undefined, { onprogress: (p) => seen.push(p), timeout: 30000 });
    assert.equal(res.isError, false);
    assert.ok(seen.length >= 3, `the id note and the tool progress (${seen.length})`);
    assert.match(seen[0].message, /task prog-1 accepted.*hermes_result with id "prog-1"/);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'strictly increasing');
    // Without an id, the generated one is named.
    seen.length = 0;
    const gen = await c.callTool({ name: 'hermes_task', arguments: { task: 'what is 6 * 7', mode: 'sync' } },
      undefined, { onprogress: (p) => seen.push(p) });
    assert.match(seen[0].message, new RegExp(`task ${gen.structuredContent.id} accepted`));
    // A call the full session queue refuses announces nothing: the note would name an id that
    // hermes_result then does not know.
    const held = [];
    for (let i = 0; i < 9; i++) // one running, eight waiting: the queue is full
      held.push(c.callTool({ name: 'hermes_task', arguments: { task: `hold ${i} [delay=400]`, mode: 'sync', session: 'full' } }, undefined, { timeout: 60000 }));
    await until(() => chats(fake).length >= 3, 'the first of the session reached the agent');
    seen.length = 0;
    const refused = await c.callTool({ name: 'hermes_task', arguments: { task: 'one too many', mode: 'sync', session: 'full', id: 'too-many' } },
      undefined, { onprogress: (p) => seen.push(p) });
    assert.equal(refused.isError, true);
    assert.equal(refused.structuredContent.error, 'busy');
    assert.deepEqual(seen, [], 'no progress note for a refused call');
    const r = await c.callTool({ name: 'hermes_result', arguments: { id: 'too-many' } });
    assert.match(r.structuredContent.message, /no task with id/);
    await Promise.all(held);
  } finally {
    await c.close();
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});
