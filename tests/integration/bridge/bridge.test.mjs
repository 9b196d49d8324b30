// The Hermes bridge end to end: the official SDK client → build/hermes-mcp → the fake agent
// (tests/fakes/, behaving like the documented Hermes Agent API). Checks what the client gets,
// what lands on disk, and exactly what the agent received.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, existsSync, statSync, mkdirSync, symlinkSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { startHermes, restartHermes, startFake, agentEnv, sleep, until, connectClient } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

const connect = (srv) => connectClient(srv, { name: 'bridge-it', version: '1', capabilities: {} });

// A fake agent plus a bridge wired to it; extra: more env keys for the bridge.
async function rig(extra = {}, fakeArgs = []) {
  const fake = await startFake(fakeArgs);
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', ...extra });
  const client = await connect(srv);
  const tasksDir = join(srv.dir, 'tasks');
  return {
    fake, srv, client, tasksDir,
    call: (name, args, opts) => client.callTool({ name, arguments: args }, undefined, opts),
    async close() {
      await client.close().catch(() => {});
      assert.equal(await srv.stop(), 0);
      await fake.stop();
    },
  };
}

const chats = (fake) => fake.received().filter((r) => r.path === '/v1/chat/completions');
const runs = (fake) => fake.received().filter((r) => r.path === '/v1/runs' && r.method === 'POST');

test('sync task: contract in, contract JSON out, result.json written, exact request sent', async () => {
  const r = await rig();
  try {
    const res = await r.call('hermes_task', { task: 'Write a haiku about C [json]', mode: 'sync', id: 'haiku-1',
      context: 'for a README', deliverable: 'three lines', constraints: ['no rhymes', 'English'] });
    assert.equal(res.isError, false, JSON.stringify(res));
    const sc = res.structuredContent;
    assert.equal(sc.id, 'haiku-1');
    assert.equal(sc.status, 'completed');
    assert.equal(typeof sc.summary, 'string');
    assert.ok(Array.isArray(sc.artifacts) && Array.isArray(sc.next_steps));
    assert.deepEqual(JSON.parse(res.content[0].text), sc);
    const stored = JSON.parse(readFileSync(join(r.tasksDir, 'haiku-1', 'result.json'), 'utf8'));
    assert.equal(stored.status, 'completed');
    assert.equal(stored.summary, sc.summary);
    assert.equal(statSync(join(r.tasksDir, 'haiku-1', 'result.json')).mode & 0o777, 0o600);
    const got = await r.call('hermes_result', { id: 'haiku-1' });
    assert.deepEqual(got.structuredContent.summary, sc.summary);

    const [req] = chats(r.fake);
    assert.equal(req.body.stream, true);
    assert.equal(req.headers.authorization_ok, true);
    assert.equal(req.headers['x-hermes-session-id'], 'gb-task-haiku-1');
    assert.ok(!req.headers.origin, 'no Origin header is sent');
    const sys = req.body.messages.find((m) => m.role === 'system');
    assert.match(sys.content, /answer with exactly one JSON object/);
    const user = req.body.messages.find((m) => m.role === 'user').content;
    for (const part of ['Write a haiku about C', '## Context\nfor a README', '## Deliverable\nthree lines', '- no rhymes\n- English'])
      assert.ok(user.includes(part), part);
  } finally {
    await r.close();
  }
});

test('sync task: agent progress becomes MCP progress; plain text becomes the summary', async () => {
  const r = await rig();
  try {
    const seen = [];
    const res = await r.call('hermes_task', { task: 'Look around [progress=3] [delay=300] [text=All good here.]', mode: 'sync' },
      { onprogress: (p) => seen.push(p.progress) });
    assert.equal(res.structuredContent.summary, 'All good here.');
    assert.match(res.structuredContent.id, /^t-\d{8}-\d{6}-[0-9a-f]{8}$/, 'generated id');
    assert.ok(seen.length >= 3, `progress events: ${seen}`);
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], 'strictly increasing');
  } finally {
    await r.close();
  }
});

test('contract file is sent as system instructions and re-read when it changes', async () => {
  const fake = await startFake();
  const dir = (await import('node:fs')).mkdtempSync(join((await import('node:os')).tmpdir(), 'hm-contract-'));
  const contract = join(dir, 'contract.md');
  writeFileSync(contract, 'CONTRACT VERSION ONE');
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_CONTRACT_PATH: contract });
  const client = await connect(srv);
  try {
    await client.callTool({ name: 'hermes_task', arguments: { task: 'one', mode: 'sync' } });
    writeFileSync(contract, 'CONTRACT VERSION TWO, longer');
    await client.callTool({ name: 'hermes_task', arguments: { task: 'two', mode: 'sync' } });
    const sys = chats(fake).map((c) => c.body.messages.find((m) => m.role === 'system').content);
    assert.deepEqual(sys, ['CONTRACT VERSION ONE', 'CONTRACT VERSION TWO, longer']);
  } finally {
    await client.close();
    await srv.stop();
    await fake.stop();
  }
});

test('async task: accepted with a run_id, run.json, Idempotency-Key, result.json without asking', async () => {
  const r = await rig();
  try {
    const res = await r.call('hermes_task', { task: 'Long job [delay=400] [json]', mode: 'async', id: 'job-1', session: 'work' });
    const sc = res.structuredContent;
    assert.equal(sc.status, 'accepted');
    assert.match(sc.run_id, /^run_[0-9a-f]{32}$/);
    const run = JSON.parse(readFileSync(join(r.tasksDir, 'job-1', 'run.json'), 'utf8'));
    assert.deepEqual(Object.keys(run).sort(), ['agent', 'agent_base_url', 'created_at', 'run_id', 'session_id', 'task_id']);
    assert.equal(run.run_id, sc.run_id);
    assert.equal(run.session_id, 'gb-sess-hermes-work');
    const [sent] = runs(r.fake);
    assert.equal(sent.headers['idempotency-key'], 'job-1');
    assert.equal(sent.body.session_id, 'gb-sess-hermes-work');
    assert.match(sent.body.instructions, /JSON object/);
    const st = await r.call('hermes_status', { run_id: sc.run_id });
    assert.equal(st.structuredContent.task_id, 'job-1');
    assert.ok(['queued', 'running', 'completed'].includes(st.structuredContent.status));
    await until(() => existsSync(join(r.tasksDir, 'job-1', 'result.json')), 'result.json');
    const done = await r.call('hermes_status', { run_id: sc.run_id });
    assert.equal(done.structuredContent.status, 'completed');
    assert.equal(done.structuredContent.result_updated, true);
    const result = await r.call('hermes_result', { id: 'job-1' });
    assert.equal(result.structuredContent.status, 'completed');
    assert.equal(result.structuredContent.run_id, sc.run_id);
  } finally {
    await r.close();
  }
});

test('task ids: same request is a retry, a different one is duplicate_id', async () => {
  const r = await rig();
  try {
    const args = { task: 'Once [json]', mode: 'sync', id: 'dup-1' };
    const a = await r.call('hermes_task', args);
    const b = await r.call('hermes_task', args);
    assert.deepEqual(b.structuredContent, a.structuredContent);
    assert.equal(chats(r.fake).length, 1, 'the retry did not reach the agent');
    const c = await r.call('hermes_task', { ...args, task: 'Something else' });
    assert.equal(c.isError, true);
    assert.equal(c.structuredContent.error, 'duplicate_id');
    const async1 = await r.call('hermes_task', { task: 'A run [delay=200]', mode: 'async', id: 'dup-run' });
    const async2 = await r.call('hermes_task', { task: 'A run [delay=200]', mode: 'async', id: 'dup-run' });
    assert.equal(async2.structuredContent.run_id, async1.structuredContent.run_id, 'the same run');
    assert.equal(runs(r.fake).length, 1);
  } finally {
    await r.close();
  }
});

test('invalid arguments name the field; unknown agents fail before any upstream call', async () => {
  const r = await rig();
  try {
    const cases = [
      [{ mode: 'sync' }, /'task' is required/],
      [{ task: 'x' }, /'mode' is required/],
      [{ task: 'x', mode: 'later' }, /'mode' must be/],
      [{ task: 5, mode: 'sync' }, /'task' must be a string/],
      [{ task: 'x', mode: 'sync', extra: 1 }, /unknown field 'extra'/],
      [{ task: 'x', mode: 'sync', id: '../etc' }, /'id' must match/],
      [{ task: 'x', mode: 'sync', id: 'a'.repeat(129) }, /'id' is longer/],
      [{ task: 'x', mode: 'sync', session: 'Bad Session' }, /'session' must match/],
      [{ task: 'x', mode: 'sync', constraints: 'no' }, /'constraints' must be an array/],
      [{ task: 'x', mode: 'sync', constraints: Array(21).fill('c') }, /at most 20/],
      [{ task: 'x', mode: 'sync', constraints: [1] }, /items must be strings/],
      [{ task: 'x'.repeat(65537), mode: 'sync' }, /'task' is longer/],
      [{ task: '', mode: 'sync' }, /'task' must not be empty/],
    ];
    for (const [args, why] of cases) {
      const res = await r.call('hermes_task', args);
      assert.equal(res.isError, true, JSON.stringify(args).slice(0, 80));
      assert.equal(res.structuredContent.error, 'invalid_arguments');
      assert.match(res.structuredContent.message, why);
    }
    const u = await r.call('hermes_task', { task: 'x', mode: 'sync', agent: 'nobody' });
    assert.equal(u.structuredContent.error, 'unknown_agent');
    assert.equal(r.fake.received().filter((x) => x.path.startsWith('/v1/')).length, 0, 'nothing reached the agent');
    const nf = await r.call('hermes_result', { id: 'never-ran' });
    assert.equal(nf.structuredContent.error, 'not_found');
    const rs = await r.call('hermes_reset', {});
    assert.equal(rs.structuredContent.error, 'confirmation_required');
    const ok = await r.call('hermes_reset', { confirmed: true });
    assert.equal(ok.isError, false);
    assert.equal(typeof ok.structuredContent.cleared, 'number');
  } finally {
    await r.close();
  }
});

test('agent errors map to codes without echoing the agent body', async () => {
  const fake = await startFake(['--max-concurrent', '1']);
  const bad = await startHermes({ HERMES_ENV_PATH: agentEnv(fake, 'wrong-key-wrong-key-wrong') });
  const good = await startHermes({ HERMES_ENV_PATH: agentEnv(fake) });
  const cb = await connect(bad);
  const cg = await connect(good);
  try {
    const auth = await cb.callTool({ name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(auth.structuredContent.error, 'upstream_auth');
    assert.ok(!JSON.stringify(auth).includes('gateway_auth'), 'agent body not echoed');
    await waitEvent(bad, 'agent_key_rejected');
    // Fill the agent's single slot, then the next call is "busy" with a retry hint.
    const slow = cg.callTool({ name: 'hermes_task', arguments: { task: 'slow [delay=1500]', mode: 'sync' } });
    await until(() => chats(fake).length >= 2, 'the slow call to reach the agent');
    const busy = await cg.callTool({ name: 'hermes_task', arguments: { task: 'y', mode: 'sync' } });
    assert.equal(busy.structuredContent.error, 'busy');
    assert.ok(busy.structuredContent.retry_after >= 1);
    await slow;
    const nf = await cg.callTool({ name: 'hermes_status', arguments: { run_id: 'run_' + '0'.repeat(32) } });
    assert.equal(nf.structuredContent.error, 'not_found');
  } finally {
    await cb.close(); await cg.close();
    await bad.stop(); await good.stop(); await fake.stop();
  }
});

// In session mode: a stateless notifications/cancelled cannot be attributed and is ignored
// (proxy.test.mjs shows both sides).
test('cancel: a sync call cancelled by the client interrupts the agent and is recorded', async () => {
  const r = await rig({ MCP_SESSIONS: '1' });
  try {
    const ctl = new AbortController();
    const p = r.call('hermes_task', { task: 'forever [delay=20000]', mode: 'sync', id: 'cx-1' }, { signal: ctl.signal });
    await until(() => chats(r.fake).length === 1, 'the stream to start');
    ctl.abort();
    await assert.rejects(p);
    await until(() => r.fake.received().some((x) => x.event === 'interrupted'), 'the agent to be interrupted');
    const stored = await until(() => existsSync(join(r.tasksDir, 'cx-1', 'result.json')) &&
      JSON.parse(readFileSync(join(r.tasksDir, 'cx-1', 'result.json'), 'utf8')), 'result.json');
    assert.equal(stored.status, 'cancelled');
  } finally {
    await r.close();
  }
});

test('hermes_cancel stops an async run at the agent and follows it to its end', async () => {
  const r = await rig();
  try {
    const a = await r.call('hermes_task', { task: 'long [delay=20000]', mode: 'async', id: 'stop-1' });
    const run_id = a.structuredContent.run_id;
    const c = await r.call('hermes_cancel', { run_id });
    assert.equal(c.isError, false, JSON.stringify(c));
    assert.equal(c.structuredContent.already_finished, false);
    assert.ok(r.fake.received().some((x) => x.path === `/v1/runs/${run_id}/stop`));
    const stored = await until(() => existsSync(join(r.tasksDir, 'stop-1', 'result.json')) &&
      JSON.parse(readFileSync(join(r.tasksDir, 'stop-1', 'result.json'), 'utf8')), 'result.json');
    assert.equal(stored.status, 'cancelled');
    const again = await r.call('hermes_cancel', { id: 'stop-1' });
    assert.equal(again.structuredContent.already_finished, true);
    const none = await r.call('hermes_cancel', { id: 'no-such-task' });
    assert.equal(none.structuredContent.error, 'not_found');
  } finally {
    await r.close();
  }
});

test('sessions: calls in one session run one at a time; other sessions run alongside', async () => {
  const r = await rig();
  try {
    const t0 = Date.now();
    await Promise.all([
      r.call('hermes_task', { task: 'a [delay=600]', mode: 'sync', session: 's1' }),
      r.call('hermes_task', { task: 'b [delay=600]', mode: 'sync', session: 's1' }),
    ]);
    const serial = Date.now() - t0;
    const t1 = Date.now();
    await Promise.all([
      r.call('hermes_task', { task: 'c [delay=600]', mode: 'sync', session: 's2' }),
      r.call('hermes_task', { task: 'd [delay=600]', mode: 'sync', session: 's3' }),
    ]);
    const parallel = Date.now() - t1;
    assert.ok(serial >= 1200, `same session serialized (${serial} ms)`);
    assert.ok(parallel < serial, `different sessions overlap (${parallel} ms vs ${serial} ms)`);
    const ids = chats(r.fake).map((c) => c.headers['x-hermes-session-id']);
    assert.deepEqual(ids.slice(0, 2), ['gb-sess-hermes-s1', 'gb-sess-hermes-s1']);
  } finally {
    await r.close();
  }
});

test('durability: after kill -9 and a restart, accepted runs are followed and answered', async () => {
  const fake = await startFake();
  const extra = { HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50' };
  const srv = await startHermes(extra);
  const client = await connect(srv);
  const a = await client.callTool({ name: 'hermes_task', arguments: { task: 'survive [delay=800] [json]', mode: 'async', id: 'dur-1' } });
  const run_id = a.structuredContent.run_id;
  srv.proc.kill('SIGKILL');
  await new Promise((res) => srv.proc.on('close', res));
  // Same env file and task directory, new process.
  const srv2 = await restartHermes(srv);
  const client2 = await connect(srv2);
  try {
    const st = await client2.callTool({ name: 'hermes_status', arguments: { run_id } });
    assert.equal(st.structuredContent.task_id, 'dur-1', 'run_id → task resolved from disk');
    await until(() => existsSync(join(srv.dir, 'tasks', 'dur-1', 'result.json')), 'the restarted bridge to write result.json');
    const res = await client2.callTool({ name: 'hermes_result', arguments: { id: 'dur-1' } });
    assert.equal(res.structuredContent.status, 'completed');
  } finally {
    await client2.close();
    assert.equal(await srv2.stop(), 0);
    await fake.stop();
  }
});

test('a task outlives the MCP connection that started it', async () => {
  const r = await rig();
  const a = await r.call('hermes_task', { task: 'orphan [delay=500] [json]', mode: 'async', id: 'orphan-1' });
  assert.equal(a.structuredContent.status, 'accepted');
  await r.client.close();
  try {
    await until(() => existsSync(join(r.tasksDir, 'orphan-1', 'result.json')), 'result.json with no client');
  } finally {
    assert.equal(await r.srv.stop(), 0);
    await r.fake.stop();
  }
});

test('hermes_files: listing, reading, and every path escape refused', async () => {
  const r = await rig();
  try {
    await r.call('hermes_task', { task: 'files [json]', mode: 'sync', id: 'files-1' });
    const dir = join(r.tasksDir, 'files-1');
    mkdirSync(join(dir, 'out'));
    writeFileSync(join(dir, 'out', 'report.md'), '# Report\nhello\n');
    writeFileSync(join(dir, 'big.txt'), 'x'.repeat(200 * 1024 + 1));
    writeFileSync(join(dir, 'bin.dat'), Buffer.from([0, 1, 2, 3]));
    symlinkSync('/etc/passwd', join(dir, 'escape'));
    const list = (await r.call('hermes_files', { id: 'files-1' })).structuredContent;
    const paths = list.entries.map((e) => e.path).sort();
    assert.ok(paths.includes('out/report.md') && paths.includes('result.json'));
    assert.ok(!paths.includes('escape'), 'symlinks are not listed');
    assert.equal(list.count, list.entries.length);
    assert.equal(list.truncated, false);
    const f = (await r.call('hermes_files', { id: 'files-1', path: 'out/report.md' })).structuredContent;
    assert.equal(f.content, '# Report\nhello\n');
    assert.equal(f.encoding, 'utf-8');
    assert.equal(f.size, 15);
    const refused = ['../files-1/result.json', '/etc/passwd', 'out\\report.md', '%2e%2e/x', 'escape', 'big.txt', 'bin.dat'];
    for (const path of refused) {
      const res = await r.call('hermes_files', { id: 'files-1', path });
      assert.equal(res.isError, true, path);
      assert.ok(['invalid_arguments', 'not_found'].includes(res.structuredContent.error), path);
      assert.ok(!JSON.stringify(res).includes('root:'), 'nothing leaked');
    }
    const missing = await r.call('hermes_files', { id: 'files-1', path: 'nope.txt' });
    assert.equal(missing.structuredContent.error, 'not_found');
  } finally {
    await r.close();
  }
});

test('agents registry: key_file and key_env, profiles, hot reload, invalid file keeps the last good state', async () => {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const alphaKey = 'alpha-key-' + 'a'.repeat(20);
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-reg-'));
  const keyFile = join(dir, 'alpha.key');
  writeFileSync(keyFile, fake.key + '\n');
  chmodSync(keyFile, 0o600);
  const reg = join(dir, 'agents.yaml');
  const yaml = (extra = '') => `default: alpha\nagents:\n  - name: alpha\n    description: Research\n    capabilities: [code, research]\n    kind: local\n    base_url: http://127.0.0.1:${fake.port}\n    key_file: ${keyFile}\n  - name: beta\n    description: Writing\n    kind: remote\n    base_url: http://127.0.0.1:${fake.port}\n    key_env: BETA_KEY_FOR_TEST\n${extra}`;
  writeFileSync(reg, yaml());
  chmodSync(reg, 0o600);
  const srv = await startHermes({ AGENTS_FILE: reg });
  const client = await connect(srv);
  try {
    let la = (await client.callTool({ name: 'list_agents', arguments: {} })).structuredContent;
    assert.equal(la.default, 'alpha');
    assert.equal(la.count, 2);
    assert.equal(la.degraded, undefined);
    const beta = la.agents.find((a) => a.name === 'beta');
    assert.equal(beta.available, false);
    assert.equal(beta.unavailable_reason, 'missing_credentials');
    assert.ok(!JSON.stringify(la).includes(fake.key), 'no credentials in list_agents');
    const un = await client.callTool({ name: 'hermes_task', arguments: { task: 'x', mode: 'sync', agent: 'beta' } });
    assert.equal(un.structuredContent.error, 'agent_unavailable');
    const ok = await client.callTool({ name: 'hermes_task', arguments: { task: 'hi [json]', mode: 'sync', agent: 'alpha', id: 'reg-1' } });
    assert.equal(ok.isError, false);
    const other = await client.callTool({ name: 'hermes_task', arguments: { task: 'hi [json]', mode: 'sync', agent: 'beta', id: 'reg-1' } });
    assert.equal(other.structuredContent.error, 'agent_unavailable');
    // Hot reload: a third agent appears.
    await sleep(20);
    writeFileSync(reg, yaml(`  - name: gamma\n    base_url: http://127.0.0.1:${fake.port}\n    key_file: ${keyFile}\n`));
    la = (await client.callTool({ name: 'list_agents', arguments: {} })).structuredContent;
    assert.equal(la.count, 3);
    const dupAgent = await client.callTool({ name: 'hermes_task', arguments: { task: 'hi [json]', mode: 'sync', agent: 'gamma', id: 'reg-1' } });
    assert.equal(dupAgent.structuredContent.error, 'duplicate_id', 'an id belongs to its agent');
    // An invalid file keeps the last good state and says why in /health.
    writeFileSync(reg, 'agents:\n  - name: x\n    base_url: http://10.0.0.1\n');
    la = (await client.callTool({ name: 'list_agents', arguments: {} })).structuredContent;
    assert.equal(la.count, 3);
    assert.match(la.registry_error, /loopback or Tailscale/);
    const health = await (await fetch(`${srv.base}/health`)).json();
    assert.match(health.registry_error, /loopback or Tailscale/);
    assert.equal(health.agents.count, 3);
  } finally {
    await client.close();
    await srv.stop();
    await fake.stop();
  }
  assert.ok(alphaKey);
});

test('no registry: a synthetic default agent and degraded: no_registry', async () => {
  const r = await rig();
  try {
    const la = (await r.call('list_agents', {})).structuredContent;
    assert.equal(la.count, 1);
    assert.equal(la.degraded, 'no_registry');
    assert.equal(la.agents[0].available, true);
    const health = await (await fetch(`${r.srv.base}/health`)).json();
    assert.equal(health.degraded, 'no_registry');
    assert.equal(health.agents.available, 1);
  } finally {
    await r.close();
  }
});

test('a sync task past HERMES_TIMEOUT_S is upstream_timeout and the agent is interrupted', async () => {
  const r = await rig({ HERMES_TIMEOUT_S: '1' });
  try {
    const res = await r.call('hermes_task', { task: 'slow [delay=5000]', mode: 'sync', id: 'to-1' });
    assert.equal(res.structuredContent.error, 'upstream_timeout');
    await until(() => r.fake.received().some((x) => x.event === 'interrupted'), 'the agent to be interrupted');
    const stored = JSON.parse(readFileSync(join(r.tasksDir, 'to-1', 'result.json'), 'utf8'));
    assert.equal(stored.status, 'failed');
  } finally {
    await r.close();
  }
});

test('hermes_status answers from result.json once the agent forgot the run', async () => {
  // Idempotent runs (ours are) are kept longer than plain ones; shorten both.
  const r = await rig({}, ['--retention-ms', '300', '--idempotency-retention-ms', '300']);
  try {
    const a = await r.call('hermes_task', { task: 'quick [json]', mode: 'async', id: 'forgot-1' });
    await until(() => existsSync(join(r.tasksDir, 'forgot-1', 'result.json')), 'result.json');
    await until(async () => {
      const res = await fetch(`${r.fake.base}/v1/runs/${a.structuredContent.run_id}`, { headers: { Authorization: `Bearer ${r.fake.key}` } });
      return res.status === 404;
    }, 'the agent to forget the run');
    const st = await r.call('hermes_status', { run_id: a.structuredContent.run_id });
    assert.equal(st.isError, false, JSON.stringify(st));
    assert.equal(st.structuredContent.status, 'completed');
    assert.equal(st.structuredContent.source, 'result.json');
    assert.equal(st.structuredContent.task_id, 'forgot-1');
  } finally {
    await r.close();
  }
});

test('a session queue is bounded: the overflow gets busy', async () => {
  const r = await rig();
  try {
    const calls = Array.from({ length: 12 }, (_, i) => r.call('hermes_task', { task: `q${i} [delay=400]`, mode: 'sync', session: 'crowded' }));
    const res = await Promise.all(calls);
    const busy = res.filter((x) => x.structuredContent?.error === 'busy');
    const done = res.filter((x) => x.isError === false);
    assert.equal(busy.length, 3, '1 running + 8 waiting; the rest are told to come back');
    assert.equal(done.length, 9);
    assert.ok(busy.every((x) => x.structuredContent.retry_after >= 1));
  } finally {
    await r.close();
  }
});

test('hermes_files truncates long listings', async () => {
  const r = await rig();
  try {
    await r.call('hermes_task', { task: 'many files [json]', mode: 'sync', id: 'many-1' });
    const dir = join(r.tasksDir, 'many-1', 'lots');
    mkdirSync(dir);
    for (let i = 0; i < 600; i++) writeFileSync(join(dir, `f${i}.txt`), 'x');
    const list = (await r.call('hermes_files', { id: 'many-1' })).structuredContent;
    assert.equal(list.truncated, true);
    assert.equal(list.count, 500);
    assert.equal(list.entries.length, 500);
  } finally {
    await r.close();
  }
});

test('registry: /p/<profile> base URLs, and a registry readable by others is refused', async () => {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'hm-prof-'));
  const profKey = join(dir, 'alpha.key');
  writeFileSync(profKey, 'alpha-profile-key-0123456789\n');
  chmodSync(profKey, 0o600);
  const fake = await startFake(['--profile', `alpha=${profKey}`]);
  const reg = join(dir, 'agents.yaml');
  writeFileSync(reg, `default: alpha\nagents:\n  - name: alpha\n    profile: alpha\n    base_url: http://127.0.0.1:${fake.port}/p/alpha\n    key_file: ${profKey}\n`);
  chmodSync(reg, 0o600);
  const srv = await startHermes({ AGENTS_FILE: reg });
  const client = await connect(srv);
  try {
    const res = await client.callTool({ name: 'hermes_task', arguments: { task: 'via profile [json]', mode: 'sync' } });
    assert.equal(res.isError, false, JSON.stringify(res));
    const req = fake.received().find((x) => x.path.endsWith('/v1/chat/completions'));
    assert.equal(req.path, '/p/alpha/v1/chat/completions');
    assert.equal(req.profile, 'alpha');
    assert.equal(req.headers.authorization_ok, true);
    const la = (await client.callTool({ name: 'list_agents', arguments: {} })).structuredContent;
    assert.equal(la.agents[0].local_profile, 'alpha');
    chmodSync(reg, 0o644);
    writeFileSync(reg, readFileSync(reg, 'utf8') + '# touched\n');
    const health = await (await fetch(`${srv.base}/health`)).json();
    assert.match(health.registry_error, /readable by others/);
    assert.equal(health.agents.count, 1, 'the last good state is kept');
  } finally {
    await client.close();
    await srv.stop();
    await fake.stop();
  }
});

test('an agent that fails, or cannot be reached, gives a failed result or upstream_error', async () => {
  const r = await rig();
  try {
    const failed = await r.call('hermes_task', { task: 'break [fail]', mode: 'sync', id: 'fail-1' });
    assert.equal(failed.isError, false, 'the agent answered: a result, with status failed');
    assert.equal(failed.structuredContent.status, 'failed');
    const stored = JSON.parse(readFileSync(join(r.tasksDir, 'fail-1', 'result.json'), 'utf8'));
    assert.equal(stored.status, 'failed');
    assert.ok(stored.error);
    const afail = await r.call('hermes_task', { task: 'break later [fail]', mode: 'async', id: 'fail-2' });
    assert.equal(afail.structuredContent.status, 'accepted');
    await until(() => existsSync(join(r.tasksDir, 'fail-2', 'result.json')), 'result.json');
    assert.equal((await r.call('hermes_result', { id: 'fail-2' })).structuredContent.status, 'failed');
    await r.fake.stop();
    const down = await r.call('hermes_task', { task: 'anyone there?', mode: 'sync', id: 'down-1' });
    assert.equal(down.structuredContent.error, 'upstream_error');
    assert.ok(!existsSync(join(r.tasksDir, 'down-1')), 'nothing left behind: a retry starts clean');
  } finally {
    await r.client.close().catch(() => {});
    assert.equal(await r.srv.stop(), 0);
  }
});

test('SIGHUP re-reads the agent key from HERMES_ENV_PATH', async () => {
  const fake = await startFake();
  const envPath = agentEnv(fake, 'not-the-right-key-at-all');
  const srv = await startHermes({ HERMES_ENV_PATH: envPath });
  const client = await connect(srv);
  try {
    const before = await client.callTool({ name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(before.structuredContent.error, 'upstream_auth');
    writeFileSync(envPath, `API_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT=${fake.port}\nAPI_SERVER_KEY=${fake.key}\n`);
    srv.proc.kill('SIGHUP');
    await waitEvent(srv, 'agents_reloaded');
    const after = await client.callTool({ name: 'hermes_task', arguments: { task: 'y [json]', mode: 'sync' } });
    assert.equal(after.isError, false, JSON.stringify(after));
    assert.equal(srv.proc.stderrText.includes(fake.key), false, 'the key is never logged');
  } finally {
    await client.close();
    await srv.stop();
    await fake.stop();
  }
});

test('list_agents: availability comes from the /health probe', async () => {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const net = await import('node:net');
  // A port nobody listens on.
  const closed = await new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
  const dir = mkdtempSync(join(tmpdir(), 'hm-probe-'));
  const keyFile = join(dir, 'k');
  writeFileSync(keyFile, 'some-key-0123456789abcdef\n');
  chmodSync(keyFile, 0o600);
  const reg = join(dir, 'agents.yaml');
  writeFileSync(reg, `agents:\n  - name: ghost\n    base_url: http://127.0.0.1:${closed}\n    key_file: ${keyFile}\n`);
  chmodSync(reg, 0o600);
  const srv = await startHermes({ AGENTS_FILE: reg });
  const client = await connect(srv);
  try {
    const la = await until(async () => {
      const x = (await client.callTool({ name: 'list_agents', arguments: {} })).structuredContent;
      return x.agents[0].available === false ? x : null;
    }, 'the probe to fail');
    assert.equal(la.agents[0].unavailable_reason, 'unreachable');
    const t = await client.callTool({ name: 'hermes_task', arguments: { task: 'x', mode: 'sync' } });
    assert.equal(t.structuredContent.error, 'agent_unavailable');
  } finally {
    await client.close();
    await srv.stop();
  }
});

test('SIGTERM with tasks in flight in session mode exits 0 and cleanly', async () => {
  const fake = await startFake();
  // A short drain grace: the 20 s tasks are still running when it ends, so they are cut off.
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), MCP_SESSIONS: '1', MCP_DRAIN_GRACE_S: '1' });
  const client = await connect(srv);
  let progressed = 0;
  const onprogress = () => { progressed++; };
  // With a progress token the call answers as a (resumable) SSE stream: SIGTERM must not leave
  // it to the engine after the bridge is gone.
  const calls = [
    client.callTool({ name: 'hermes_task', arguments: { task: 'long [delay=20000] [progress=100]', mode: 'sync', session: 'a' } }, undefined, { onprogress }),
    client.callTool({ name: 'hermes_task', arguments: { task: 'queued [delay=20000]', mode: 'sync', session: 'a' } }, undefined, { onprogress }),
    client.callTool({ name: 'hermes_task', arguments: { task: 'other [delay=20000] [progress=100]', mode: 'sync', session: 'b' } }, undefined, { onprogress }),
  ].map((p) => p.catch((e) => e));
  await until(() => progressed >= 2, 'progress to flow on the streams');
  assert.equal(await srv.stop('SIGTERM'), 0);
  await Promise.all(calls);
  await client.close().catch(() => {});
  await fake.stop();
});

test('size caps: an agent answer past 1 MiB and a result.json past 200 KiB are clear errors', async () => {
  const r = await rig();
  try {
    // 1 MiB + : the sync answer cap.
    const big = await r.call('hermes_task', { task: 'flood [text=0123456789abcdef] [repeat=70000]', mode: 'sync', id: 'big-1' });
    assert.equal(big.structuredContent.status, 'failed', JSON.stringify(big).slice(0, 300));
    assert.match(JSON.parse(readFileSync(join(r.tasksDir, 'big-1', 'result.json'), 'utf8')).error, /larger than the cap/);
    // Within the cap it is a normal answer.
    const ok = await r.call('hermes_task', { task: 'fine [text=0123456789abcdef] [repeat=1000]', mode: 'sync', id: 'big-2' });
    assert.equal(ok.structuredContent.summary.length, 16000);
    // result.json over 200 KiB: refused, not truncated.
    mkdirSync(join(r.tasksDir, 'huge-result'));
    writeFileSync(join(r.tasksDir, 'huge-result', 'result.json'), JSON.stringify({ id: 'huge-result', status: 'completed', summary: 'x'.repeat(210 * 1024) }));
    const res = await r.call('hermes_result', { id: 'huge-result' });
    assert.equal(res.isError, true);
    assert.match(res.structuredContent.message, /larger than 200 KiB/);
  } finally {
    await r.close();
  }
});

test('a contract file that is not UTF-8 falls back to the built-in contract instead of crashing', async () => {
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(join(tmpdir(), 'hm-contract-'));
  const contract = join(dir, 'contract.md');
  writeFileSync(contract, Buffer.from([0x62, 0x61, 0x64, 0x20, 0xff, 0xfe, 0x0a]));
  const r = await rig({ HERMES_CONTRACT_PATH: contract });
  try {
    const res = await r.call('hermes_task', { task: 'one', mode: 'sync' });
    assert.equal(res.isError, false, JSON.stringify(res));
    const sys = chats(r.fake)[0].body.messages.find((m) => m.role === 'system').content;
    assert.match(sys, /answer with exactly one JSON object/, 'the built-in contract was sent');
    assert.match(r.srv.proc.stderrText, /HERMES_CONTRACT_PATH .*not UTF-8 text/);
    // Fixed on disk: picked up on the next call.
    writeFileSync(contract, 'FIXED CONTRACT');
    await r.call('hermes_task', { task: 'two', mode: 'sync' });
    assert.equal(chats(r.fake)[1].body.messages.find((m) => m.role === 'system').content, 'FIXED CONTRACT');
  } finally {
    await r.close();
  }
});

// Task files are written by a writer thread; an answer goes out only once what it reports is on
// disk, and a write that fails turns into an error instead of an answer nobody could read again.
test('durable answers: files are in place when the answer comes; a result that cannot be stored is an error', async () => {
  const r = await rig();
  try {
    const calls = [];
    for (let i = 0; i < 8; i++) calls.push(r.call('hermes_task', { task: `n${i} [json]`, mode: 'sync', id: `wd-${i}` }));
    const answers = await Promise.all(calls);
    for (let i = 0; i < 8; i++) {
      assert.equal(answers[i].isError, false, JSON.stringify(answers[i]));
      const dir = join(r.tasksDir, `wd-${i}`);
      assert.equal(JSON.parse(readFileSync(join(dir, 'result.json'), 'utf8')).summary, answers[i].structuredContent.summary);
      assert.equal(JSON.parse(readFileSync(join(dir, 'request.json'), 'utf8')).id, `wd-${i}`);
    }
    const accepted = await r.call('hermes_task', { task: 'later [delay=300]', mode: 'async', id: 'wd-run' });
    assert.equal(JSON.parse(readFileSync(join(r.tasksDir, 'wd-run', 'run.json'), 'utf8')).run_id, accepted.structuredContent.run_id);

    // result.json is a directory: the agent answers, but the result cannot be stored.
    mkdirSync(join(r.tasksDir, 'wd-bad', 'result.json'), { recursive: true });
    const bad = await r.call('hermes_task', { task: 'done [json]', mode: 'sync', id: 'wd-bad' });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.error, 'upstream_error');
    assert.match(bad.structuredContent.message, /could not be stored/);
    assert.equal(chats(r.fake).length, 9, 'the agent did run');
    assert.match(r.srv.proc.stderrText, /task wd-bad: cannot replace result\.json/);

    // A task id whose path is a plain file is refused before the agent is asked.
    writeFileSync(join(r.tasksDir, 'wd-file'), 'x');
    const blocked = await r.call('hermes_task', { task: 'nope', mode: 'sync', id: 'wd-file' });
    assert.equal(blocked.structuredContent.error, 'invalid_arguments');
    assert.equal(chats(r.fake).length, 9);
  } finally {
    await r.close();
  }
});
