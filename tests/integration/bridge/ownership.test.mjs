// Task ownership: every task and run belongs to the principal that created
// it. Two TOKENS_FILE roles, alice and bob, share the default agent, each with the official SDK
// client (tools listed before calling, as real clients do), both connected at once. Bob gets
// from hermes_result, hermes_files, hermes_status and hermes_cancel the answer an id that does
// not exist gets (same error code, same text), cannot take alice's id over with hermes_task or
// learn anything of her task from it, and alice's async run is not stopped; the owner token and
// a hermes:admin principal see everything. A task written before owners were recorded (no
// "owner" in its request.json) is reached only by the owner token and hermes:admin. All of it
// again after a restart. An OAuth client is a principal like the roles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { startHermes, restartHermes, startFake, agentEnv, until, post, hermesCli,
  startOAuth, OAUTH_PASS, connectClient, tokensFile } from '../../lib/lib.mjs';
import { waitEvent } from '../../lib/events.mjs';

const sha = (t) => createHash('sha256').update(t).digest('hex');
const hex = (n) => randomBytes(n).toString('hex');
// The roles of tok (alice, bob, admin) for tokensFile: two task roles and an auditor.
const threeRoles = (tok) => ({ alice: [tok.alice, 'hermes:read, hermes:task'], bob: [tok.bob, 'hermes:read, hermes:task'],
  auditor: [tok.admin, 'hermes:read, hermes:task, hermes:admin'] });

async function connect(srv, token, name) {
  const client = await connectClient(srv, { name, headers: { Authorization: `Bearer ${token}` }, listTools: true });
  return {
    client,
    call: (tool, args) => client.callTool({ name: tool, arguments: args }),
    close: () => client.close(),
  };
}

// What a caller can tell from an answer: error or not, its code and its text, with the id asked
// about written as <id> (so the answer for alice's id compares with the one for a random id).
function seen(r, ...ids) {
  let text = JSON.stringify({ isError: r.isError, error: r.structuredContent?.error,
    message: r.structuredContent?.message, content: r.content });
  for (const id of ids) text = text.split(id).join('<id>');
  return text;
}

// A task as this server wrote them before owners were enforced: request.json without an owner,
// a result, and (runs) run.json.
function legacyTask(tasks, id, runId) {
  const d = join(tasks, id);
  mkdirSync(d, { recursive: true, mode: 0o700 });
  const put = (name, obj) => writeFileSync(join(d, name), JSON.stringify(obj), { mode: 0o600 });
  put('request.json', { id, agent: 'hermes', mode: 'async', fingerprint: '0'.repeat(64),
    created_at: '2026-01-01T00:00:00Z' });
  put('run.json', { run_id: runId, task_id: id, agent: 'hermes' });
  put('result.json', { id, status: 'completed', summary: 'the legacy answer', artifacts: [],
    next_steps: [], run_id: runId, agent: 'hermes', completed_at: '2026-01-01T00:01:00Z' });
}

test('a principal reaches only its own tasks and runs; owner and hermes:admin reach all; unowned tasks only they', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-own-'));
  const tasks = join(dir, 'tasks');
  mkdirSync(tasks, { mode: 0o700 });
  legacyTask(tasks, 'legacy-1', 'run_legacy0001');
  const tok = { alice: hex(32), bob: hex(32), admin: hex(32) };
  const tokens = tokensFile(dir, threeRoles(tok));
  let srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', TOKENS_FILE: tokens,
    TASKS_DIR: tasks });
  try {
    const [alice, bob] = await Promise.all([connect(srv, tok.alice, 'alice'), connect(srv, tok.bob, 'bob')]);

    // Alice: a sync task (done), an async run that keeps running, and a sync task in flight.
    const syncArgs = { task: 'what is 6 * 7', mode: 'sync', id: 'alice-sync' };
    const done = await alice.call('hermes_task', syncArgs);
    assert.equal(done.isError, false, JSON.stringify(done));
    const asyncArgs = { task: 'a long job [delay=60000]', mode: 'async', id: 'alice-async' };
    const accepted = await alice.call('hermes_task', asyncArgs);
    assert.equal(accepted.structuredContent.status, 'accepted', JSON.stringify(accepted));
    const runId = accepted.structuredContent.run_id;
    const slow = alice.call('hermes_task', { task: 'slowly [delay=2500]', mode: 'sync', id: 'alice-slow' });
    await until(() => fake.received().some((q) => q.path === '/v1/chat/completions' &&
      JSON.stringify(q.body).includes('slowly')), 'the slow sync task to reach the agent');
    const resultBefore = (await alice.call('hermes_result', { id: 'alice-sync' })).structuredContent;
    const requestBefore = readFileSync(join(tasks, 'alice-sync', 'request.json'), 'utf8');
    assert.equal(JSON.parse(requestBefore).owner, 'p:alice', 'the owner is in the task record');

    // Bob, at the same time, asks about each of them as about an id that does not exist.
    const probes = async (who, ids, run) => {
      const nobody = `nobody-${hex(4)}`;
      const noRun = `run_${hex(8)}`;
      for (const id of ids) {
        for (const [tool, args] of [['hermes_result', (x) => ({ id: x })], ['hermes_files', (x) => ({ id: x })],
          ['hermes_files', (x) => ({ id: x, path: 'result.json' })], ['hermes_cancel', (x) => ({ id: x })]]) {
          const theirs = await who.call(tool, args(id));
          const none = await who.call(tool, args(nobody));
          assert.equal(theirs.isError, true, `${tool} ${id}: ${JSON.stringify(theirs)}`);
          assert.equal(theirs.structuredContent.error, 'not_found', `${tool} ${id}`);
          assert.equal(seen(theirs, id), seen(none, nobody), `${tool} ${id}: as an unknown id`);
        }
      }
      for (const [tool, args] of [['hermes_status', (x) => ({ run_id: x })], ['hermes_cancel', (x) => ({ run_id: x })]]) {
        const theirs = await who.call(tool, args(run));
        const none = await who.call(tool, args(noRun));
        assert.equal(theirs.isError, true, `${tool} ${run}: ${JSON.stringify(theirs)}`);
        assert.equal(theirs.structuredContent.error, 'not_found', `${tool} ${run}`);
        assert.equal(seen(theirs, run), seen(none, noRun), `${tool} ${run}: as an unknown run`);
      }
    };
    await probes(bob, ['alice-sync', 'alice-async', 'alice-slow'], runId);
    // The same request re-sent under her id returns nothing of hers and changes nothing; a
    // different request gets the very same answer (not even "same request" is told).
    const again = await bob.call('hermes_task', syncArgs);
    assert.equal(again.isError, true, JSON.stringify(again));
    assert.equal(again.structuredContent.error, 'duplicate_id');
    const other = await bob.call('hermes_task', { ...syncArgs, task: 'something else' });
    assert.equal(seen(again), seen(other), 'a re-send tells nothing of the request');
    assert.ok(!JSON.stringify(again).includes('42'), 'not her answer');
    const reAsync = await bob.call('hermes_task', asyncArgs);
    assert.equal(reAsync.structuredContent.error, 'duplicate_id', JSON.stringify(reAsync));
    assert.ok(!JSON.stringify(reAsync).includes(runId), 'not her run');

    // Alice's work is untouched: the slow task finishes, the run was never stopped, her
    // result and her task record are as they were.
    const slowDone = await slow;
    assert.equal(slowDone.isError, false, JSON.stringify(slowDone));
    assert.equal(slowDone.structuredContent.status, 'completed');
    assert.equal(fake.received().filter((q) => q.path.endsWith('/stop')).length, 0, 'no stop reached the agent');
    const st = await alice.call('hermes_status', { run_id: runId });
    assert.equal(st.isError, false, JSON.stringify(st));
    assert.equal(st.structuredContent.status, 'running');
    assert.deepEqual((await alice.call('hermes_result', { id: 'alice-sync' })).structuredContent, resultBefore);
    assert.equal(readFileSync(join(tasks, 'alice-sync', 'request.json'), 'utf8'), requestBefore);
    const files = await alice.call('hermes_files', { id: 'alice-sync' });
    assert.equal(files.isError, false, JSON.stringify(files));

    // A task with no recorded owner: neither alice nor bob reaches it, nor can take its id.
    await probes(alice, ['legacy-1'], 'run_legacy0001');
    await probes(bob, ['legacy-1'], 'run_legacy0001');
    const takeLegacy = await alice.call('hermes_task', { task: 'x', mode: 'async', id: 'legacy-1' });
    assert.equal(takeLegacy.structuredContent.error, 'duplicate_id', JSON.stringify(takeLegacy));

    // The owner token and a hermes:admin principal see every task and run.
    const owner = await connect(srv, srv.token, 'owner');
    const admin = await connect(srv, tok.admin, 'auditor');
    for (const who of [owner, admin]) {
      assert.deepEqual((await who.call('hermes_result', { id: 'alice-sync' })).structuredContent, resultBefore);
      assert.equal((await who.call('hermes_files', { id: 'alice-async' })).isError, false);
      const s = await who.call('hermes_status', { run_id: runId });
      assert.equal(s.structuredContent.status, 'running', JSON.stringify(s));
      const legacy = await who.call('hermes_result', { id: 'legacy-1' });
      assert.equal(legacy.structuredContent.summary, 'the legacy answer', JSON.stringify(legacy));
      const ls = await who.call('hermes_status', { run_id: 'run_legacy0001' });
      assert.equal(ls.structuredContent.status, 'completed', JSON.stringify(ls));
    }
    await Promise.all([alice.close(), bob.close(), owner.close(), admin.close()]);

    // The operator sees whose each task is.
    const list = await hermesCli(srv, 'tasks', 'list');
    assert.equal(list.code, 0, list.stderr);
    const owners = Object.fromEntries(list.stdout.trim().split('\n').map((l) => l.split(' ')).map((f) => [f[0], f[4]]));
    assert.deepEqual(owners, { 'legacy-1': '-', 'alice-sync': 'alice', 'alice-async': 'alice', 'alice-slow': 'alice' });
    const json = JSON.parse((await hermesCli(srv, 'tasks', 'list', '--json')).stdout);
    assert.equal(json.find((t) => t.id === 'alice-sync').owner, 'alice');

    // After a restart the owner comes from the task record: the same answers.
    srv.proc.kill('SIGKILL');
    await new Promise((res) => srv.proc.on('close', res));
    srv = await restartHermes(srv);
    const [alice2, bob2] = await Promise.all([connect(srv, tok.alice, 'alice'), connect(srv, tok.bob, 'bob')]);
    await probes(bob2, ['alice-sync', 'alice-async'], runId);
    assert.deepEqual((await alice2.call('hermes_result', { id: 'alice-sync' })).structuredContent, resultBefore);
    // Her own run she may stop.
    const stop = await alice2.call('hermes_cancel', { run_id: runId });
    assert.equal(stop.isError, false, JSON.stringify(stop));
    await Promise.all([alice2.close(), bob2.close()]);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

// An OAuth client is a principal like any other: its tasks are its own, and a role's are not its.
const REDIRECT = 'http://127.0.0.1:7777/callback';
async function oauthToken(issuer) {
  const reg = await (await fetch(`${issuer}/register`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'ownership-it', token_endpoint_auth_method: 'none' }) })).json();
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const u = new URL(`${issuer}/authorize`);
  for (const [k, v] of Object.entries({ response_type: 'code', client_id: reg.client_id, redirect_uri: REDIRECT,
    state: 's', code_challenge_method: 'S256', code_challenge: challenge, scope: 'hermes:read hermes:task' })) u.searchParams.set(k, v);
  const html = await (await fetch(u, { redirect: 'manual' })).text();
  const csrf = /name="csrf" value="([0-9a-f]{64})"/.exec(html)?.[1];
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
  const res = await fetch(`${issuer}/authorize`, { method: 'POST', redirect: 'manual', headers: { ...form, Origin: issuer },
    body: new URLSearchParams({ csrf, passphrase: OAUTH_PASS, action: 'approve' }).toString() });
  assert.equal(res.status, 302, 'the owner allows the client');
  const code = new URL(res.headers.get('location')).searchParams.get('code');
  const tok = await (await fetch(`${issuer}/token`, { method: 'POST', headers: form,
    body: new URLSearchParams({ grant_type: 'authorization_code', client_id: reg.client_id, code, code_verifier: verifier,
      redirect_uri: REDIRECT }).toString() })).json();
  assert.ok(tok.access_token, JSON.stringify(tok));
  return tok.access_token;
}

test('an OAuth client and a role do not reach each other\'s tasks', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-own-'));
  const alice = hex(32);
  const tokens = tokensFile(dir, { alice: [alice, 'hermes:read, hermes:task'] });
  const { srv, issuer } = await startOAuth({ HERMES_ENV_PATH: agentEnv(fake), TOKENS_FILE: tokens });
  try {
    const [a, o] = await Promise.all([connect(srv, alice, 'alice'), connect(srv, await oauthToken(issuer), 'connector')]);
    assert.equal((await a.call('hermes_task', { task: 'what is 6 * 7', mode: 'sync', id: 'alice-1' })).isError, false);
    assert.equal((await o.call('hermes_task', { task: 'what is 2 + 2', mode: 'sync', id: 'oauth-1' })).isError, false);
    for (const [who, theirs, own] of [[o, 'alice-1', 'oauth-1'], [a, 'oauth-1', 'alice-1']]) {
      const r = await who.call('hermes_result', { id: theirs });
      const none = await who.call('hermes_result', { id: 'nobody-1' });
      assert.equal(seen(r, theirs), seen(none, 'nobody-1'));
      assert.equal((await who.call('hermes_result', { id: own })).structuredContent.status, 'completed');
    }
    const mine = JSON.parse(readFileSync(join(srv.dir, 'tasks', 'oauth-1', 'request.json'), 'utf8'));
    // The client's authorization, as the engine names callers (a long name as its digest).
    assert.ok(typeof mine.owner === 'string' && mine.owner.length > 8 && mine.owner !== 'p:alice', mine.owner);
    // The operator's list reads the owner as the server does and shows a digest as one, never
    // as a name: a request.json that names two owners is nobody's ("-").
    mkdirSync(join(srv.dir, 'tasks', 'dup-1'), { mode: 0o700 });
    writeFileSync(join(srv.dir, 'tasks', 'dup-1', 'request.json'),
      '{"id":"dup-1","agent":"hermes","owner":"p:alice","owner":"p:bob"}', { mode: 0o600 });
    const list = await hermesCli(srv, 'tasks', 'list', '--json');
    assert.equal(list.code, 0, list.stderr);
    const shown = Object.fromEntries(JSON.parse(list.stdout).map((t) => [t.id, t.owner]));
    assert.deepEqual(shown, { 'alice-1': 'alice', 'oauth-1': `#${mine.owner.slice(0, 12)}`, 'dup-1': '-' });
    assert.equal((await a.call('hermes_result', { id: 'dup-1' })).structuredContent.error, 'not_found',
      'the server agrees: nobody\'s');
    await Promise.all([a.close(), o.close()]);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

// Two roles with a tokens file, and a server with a task directory of its own.
async function twoRoles(fake, more = '') {
  const dir = mkdtempSync(join(tmpdir(), 'hm-own-'));
  const tasks = join(dir, 'tasks');
  mkdirSync(tasks, { mode: 0o700 });
  const tok = { alice: hex(32), bob: hex(32), admin: hex(32) };
  const tokens = tokensFile(dir, threeRoles(tok), more);
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '50', TOKENS_FILE: tokens,
    TASKS_DIR: tasks });
  return { srv, tasks, tok };
}

test('a session is its principal\'s: bob\'s "work" is another conversation and another queue at the agent', async () => {
  const fake = await startFake();
  const { srv, tok } = await twoRoles(fake);
  try {
    const [alice, bob, owner] = await Promise.all([connect(srv, tok.alice, 'alice'), connect(srv, tok.bob, 'bob'),
      connect(srv, srv.token, 'owner')]);
    const chats = () => fake.received().filter((q) => q.path === '/v1/chat/completions');
    const chatWith = (text) => chats().find((q) => JSON.stringify(q.body).includes(text));
    // Alice's "work" is busy; bob's "work" does not wait behind it (it is not her queue).
    let aliceDone = false;
    const slow = alice.call('hermes_task', { task: 'alice secret [delay=3000]', mode: 'sync', session: 'work' })
      .then((r) => { aliceDone = true; return r; });
    await until(() => chatWith('alice secret'), 'alice\'s call to reach the agent');
    const bobs = bob.call('hermes_task', { task: 'bob asks', mode: 'sync', session: 'work' });
    await until(() => chatWith('bob asks'), 'bob\'s call to reach the agent while alice\'s runs', 2500);
    assert.equal(aliceDone, false, 'bob\'s call did not wait for alice\'s');
    for (const r of await Promise.all([slow, bobs])) assert.equal(r.isError, false, JSON.stringify(r));
    // The owner token's session keeps the name it always had (its conversation goes on).
    assert.equal((await owner.call('hermes_task', { task: 'owner asks', mode: 'sync', session: 'work' })).isError, false);
    const hdr = (text) => chatWith(text).headers['x-hermes-session-id'];
    const [ha, hb] = [hdr('alice secret'), hdr('bob asks')];
    assert.equal(hdr('owner asks'), 'gb-sess-hermes-work');
    assert.notEqual(ha, hb, 'alice and bob are two conversations at the agent');
    for (const h of [ha, hb]) {
      assert.match(h, /^gb-sess-hermes-[0-9a-f]{16}-work$/);
      assert.ok(h.length <= 256, 'within the agent\'s header limit');
    }
    // Her next call continues her conversation, async runs too.
    const again = await alice.call('hermes_task', { task: 'alice again', mode: 'sync', session: 'work' });
    assert.equal(again.isError, false);
    assert.equal(hdr('alice again'), ha);
    const run = await alice.call('hermes_task', { task: 'alice runs', mode: 'async', session: 'work' });
    assert.equal(run.structuredContent.status, 'accepted', JSON.stringify(run));
    const post = fake.received().find((q) => q.path === '/v1/runs' && JSON.stringify(q.body).includes('alice runs'));
    assert.equal(post.body.session_id, ha);
    await Promise.all([alice.close(), bob.close(), owner.close()]);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('a task id used again after its task is gone is another run at the agent for another principal, the same for its owner', async () => {
  const fake = await startFake();
  const { srv, tasks, tok } = await twoRoles(fake);
  try {
    const [alice, bob] = await Promise.all([connect(srv, tok.alice, 'alice'), connect(srv, tok.bob, 'bob')]);
    const args = { task: 'what is 6 * 7', mode: 'async', id: 'shared-1' };
    const runOf = (r) => { assert.equal(r.structuredContent?.status, 'accepted', JSON.stringify(r)); return r.structuredContent.run_id; };
    // Its result is stored, then the task is gone (pruned, or never written for good).
    const settleAndDrop = async (who) => {
      await until(async () => (await who.call('hermes_result', { id: 'shared-1' })).structuredContent?.status === 'completed',
        'the run to end');
      rmSync(join(tasks, 'shared-1'), { recursive: true });
    };
    const ra = runOf(await alice.call('hermes_task', args));
    await settleAndDrop(alice);
    const rb = runOf(await bob.call('hermes_task', args));
    assert.notEqual(rb, ra, 'bob does not get alice\'s run replayed');
    const res = await until(async () => {
      const r = (await bob.call('hermes_result', { id: 'shared-1' })).structuredContent;
      return r?.status === 'completed' && r;
    }, 'bob\'s run to end');
    assert.notEqual(res.run_id, ra);
    await settleAndDrop(bob);
    // Alice's retry of her own task is her run again: the agent deduplicates it.
    assert.equal(runOf(await alice.call('hermes_task', args)), ra, 'alice\'s retry is her run');
    const posts = fake.received().filter((q) => q.path === '/v1/runs' && q.method === 'POST');
    assert.equal(posts.length, 3);
    const [ka, kb, ka2] = posts.map((q) => q.headers['idempotency-key']);
    assert.equal(ka, ka2, 'the same owner and id: the same key');
    assert.notEqual(ka, kb);
    assert.notEqual(posts[0].body.session_id, posts[1].body.session_id, 'another conversation');
    assert.match(ka, /^[0-9a-f]{16}-shared-1$/);
    await Promise.all([alice.close(), bob.close()]);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

// The pid of the one child of pid (the server strace started), or 0 when there is none.
function childOf(pid) {
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const kids = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim();
      if (kids) return Number(kids.split(' ')[0]);
    }
  } catch { /* strace is gone already */ }
  return 0;
}

test('while her request.json is still being written, the owner is told her task is running, not that it does not exist', async () => {
  const fake = await startFake();
  const dir = mkdtempSync(join(tmpdir(), 'hm-own-'));
  const alice = hex(32);
  const tokens = tokensFile(dir, { alice: [alice, 'hermes:read, hermes:task'] });
  // A slow disk: every fsync of the server takes 1 s, so the task's files stay queued long after
  // the agent answered and its job ended.
  // LeakSanitizer cannot work under ptrace (an ASan build): leaks are checked by the other tests.
  const asan = [process.env.ASAN_OPTIONS, 'detect_leaks=0'].filter(Boolean).join(':');
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), TOKENS_FILE: tokens }, {
    env: { ASAN_OPTIONS: asan },
    prefix: ['strace', '-f', '-qq', '-o', '/dev/null', '-e', 'trace=fsync,fdatasync',
      '-e', 'inject=fsync,fdatasync:delay_enter=1000000'] });
  const agentAnswered = async () => /^hermes_mcp_agent_requests_in_flight 0$/m.test(
    await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text());
  try {
    const a = await connect(srv, alice, 'alice');
    const args = { task: 'what is 6 * 7', mode: 'sync', id: 'slow-disk-1' };
    const call = a.call('hermes_task', args);
    await until(() => fake.received().some((q) => q.path === '/v1/chat/completions'), 'the task to reach the agent');
    // The agent has answered (nothing in flight to it); request.json is still queued.
    await until(agentAnswered, 'the agent to have answered');
    const r = await a.call('hermes_result', { id: 'slow-disk-1' });
    assert.equal(r.structuredContent.error, 'not_found', JSON.stringify(r));
    assert.match(r.structuredContent.message, /still running/, 'her task, not an unknown one');
    const retry = await a.call('hermes_task', args);
    assert.equal(retry.structuredContent.error, 'busy', `a retry may come back later: ${JSON.stringify(retry)}`);
    const done = await call;
    assert.equal(done.structuredContent.status, 'completed', JSON.stringify(done));
    // An async task: its submission hands over to the job that follows the run.
    const run = a.call('hermes_task', { task: 'what is 6 * 7', mode: 'async', id: 'slow-disk-2' });
    await until(() => fake.received().some((q) => q.path === '/v1/runs'), 'the run to reach the agent');
    await until(agentAnswered, 'the agent to have answered the run');
    const r2 = await a.call('hermes_result', { id: 'slow-disk-2' });
    assert.match(r2.structuredContent.message, /still running/, JSON.stringify(r2));
    assert.equal((await run).structuredContent.status, 'accepted');
    await a.close();
  } finally {
    const pid = childOf(srv.proc.pid);
    if (pid > 0) process.kill(pid, 'SIGTERM'); // strace then exits with the server's status
    try {
      assert.equal(await srv.stop(), 0);
    } finally {
      await fake.stop();
    }
  }
});

test('an administrator redoing a task that was cut short keeps it its owner\'s (her record, her agent session)', async () => {
  const fake = await startFake();
  let { srv, tasks, tok } = await twoRoles(fake);
  try {
    // Alice's sync task reaches the agent, then the server dies before the answer: only
    // request.json is left, a task "accepted but nothing came of it".
    const args = { task: 'cut short [delay=5000]', mode: 'sync', id: 'redo-1' };
    post(srv, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hermes_task', arguments: args } },
      { Authorization: `Bearer ${tok.alice}` }).catch(() => {}); // the server dies under it
    // The requests (the fake also records the first one's interruption, under the same path).
    const chats = () => fake.received().filter((q) => q.path === '/v1/chat/completions' && q.method === 'POST');
    await until(() => chats().length === 1, 'the task to reach the agent');
    await until(() => { try { return readFileSync(join(tasks, 'redo-1', 'request.json'), 'utf8'); } catch { return false; } },
      'request.json');
    srv.proc.kill('SIGKILL');
    await new Promise((res) => srv.proc.on('close', res));
    srv = await restartHermes(srv);
    // The auditor sends the same request again: it is redone, and stays alice's.
    const admin = await connect(srv, tok.admin, 'auditor');
    const redone = await admin.call('hermes_task', args);
    assert.equal(redone.structuredContent?.status, 'completed', JSON.stringify(redone));
    assert.equal(chats().length, 2, 'redone at the agent (the first call never got its answer)');
    assert.equal(JSON.parse(readFileSync(join(tasks, 'redo-1', 'request.json'), 'utf8')).owner, 'p:alice');
    const [first, again] = chats();
    assert.equal(again.headers['x-hermes-session-id'], first.headers['x-hermes-session-id'], 'her agent session');
    const alice = await connect(srv, tok.alice, 'alice');
    const r = await alice.call('hermes_result', { id: 'redo-1' });
    assert.equal(r.structuredContent.status, 'completed', `hers: ${JSON.stringify(r)}`);
    await Promise.all([admin.close(), alice.close()]);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});

test('a run id the agent reports for a second task keeps reaching the first task\'s owner (logged, not taken over)', async () => {
  const fake = await startFake();
  const { srv, tok } = await twoRoles(fake);
  try {
    const [alice, owner] = await Promise.all([connect(srv, tok.alice, 'alice'), connect(srv, srv.token, 'owner')]);
    const args = { task: 'a long job [delay=60000]', mode: 'async' };
    const mine = await alice.call('hermes_task', { ...args, id: 'y-1' });
    const runId = mine.structuredContent.run_id;
    // The owner token's names carry no tag, so its task "<alice's tag>-y-1" sends the agent
    // alice's Idempotency-Key and session: the agent answers with her run again.
    const tag = sha('p:alice').slice(0, 16);
    const theirs = await owner.call('hermes_task', { ...args, id: `${tag}-y-1` });
    assert.equal(theirs.structuredContent.run_id, runId, JSON.stringify(theirs));
    const st = await alice.call('hermes_status', { run_id: runId });
    assert.equal(st.isError, false, `still hers by run id: ${JSON.stringify(st)}`);
    assert.equal(st.structuredContent.task_id, 'y-1');
    assert.equal((await alice.call('hermes_cancel', { run_id: runId })).isError, false);
    await waitEvent(srv, 'run_claimed_twice', { run: runId, task: 'y-1', other: `${tag}-y-1` });
    await Promise.all([alice.close(), owner.close()]);
  } finally {
    assert.equal(await srv.stop(), 0);
    await fake.stop();
  }
});
