// With STORE_URL the task records are every replica's: a task started on replica A is read,
// followed and cancelled through B and C; a replica killed while following a run has the run
// taken over by another within 10 s, and the result arrives once. Real PostgreSQL 15, three
// real servers on one database and one fake agent, official SDK clients of both eras (each
// lists the tools before calling them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, startFake, agentEnv, connectClient, connectV2Client, until, sleep, modernMeta, tokensFile,
  modernHeaders } from '../../lib/lib.mjs';
import { startPostgres } from '../../lib/pg.mjs';

let pg, dir, fake, a, b, c;
const token = randomBytes(32).toString('hex'); // one deployment: one owner token
const call = (client, name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 60000 });

async function replica() {
  const s = await startHermes({ STORE_URL: pg.url, MCP_AUTH_TOKEN: token, HERMES_ENV_PATH: agentEnv(fake),
    HERMES_POLL_MS: '100' });
  s.token = token;
  s.auth = { Authorization: `Bearer ${token}` };
  return s;
}
const sql = (q) => pg.psql(q);

before(async () => {
  pg = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'hm-storetasks-'));
  const env = join(dir, 'init.env');
  writeFileSync(env, `STORE_URL=${pg.url}\n`, { mode: 0o600 });
  const init = spawnSync(HERMES, ['store', 'init', '--env-file', env], { encoding: 'utf8' });
  assert.equal(init.status, 0, init.stderr);
  fake = await startFake();
  [a, b, c] = await Promise.all([replica(), replica(), replica()]);
});
after(async () => {
  await Promise.all([a, b, c].map((s) => s?.stop()));
  await fake?.stop();
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('an async task started on A: status and result through B (2026-07-28), cancel of another through C', async () => {
  const ca = await connectClient(a, { name: 'on-a', listTools: true });
  const cb = await connectV2Client(b, 'on-b');
  await cb.listTools();
  const cc = await connectClient(c, { name: 'on-c', listTools: true });
  const acc = await call(ca, 'hermes_task', { task: 'shared [delay=800]', mode: 'async', id: 'shared-1' });
  assert.notEqual(acc.isError, true, JSON.stringify(acc));
  const runId = acc.structuredContent.run_id;
  assert.ok(runId);
  // B has never seen the task: it reads it from the database, by run id and by task id.
  const st = await call(cb, 'hermes_status', { run_id: runId });
  assert.notEqual(st.isError, true, JSON.stringify(st));
  assert.equal(st.structuredContent.task_id, 'shared-1');
  const early = await call(cb, 'hermes_result', { id: 'shared-1' });
  assert.equal(early.isError, true);
  assert.match(early.structuredContent.message, /still running/);
  // A follows the run and writes the result; B reads it.
  await until(async () => (await call(cb, 'hermes_result', { id: 'shared-1' })).isError !== true, 'the result through B', 10000);
  const r = await call(cb, 'hermes_result', { id: 'shared-1' });
  assert.equal(r.structuredContent.status, 'completed');
  assert.equal((await sql("SELECT count(*) FROM hm_task WHERE id = 'shared-1' AND result IS NOT NULL AND follower IS NULL")).trim(), '1');

  const acc2 = await call(ca, 'hermes_task', { task: 'long [delay=20000]', mode: 'async', id: 'shared-2' });
  assert.notEqual(acc2.isError, true, JSON.stringify(acc2));
  const cancel = await call(cc, 'hermes_cancel', { id: 'shared-2' });
  assert.notEqual(cancel.isError, true, JSON.stringify(cancel));
  await until(async () => {
    const res = await call(cb, 'hermes_result', { id: 'shared-2' });
    return res.isError !== true && res.structuredContent.status === 'cancelled';
  }, 'the cancelled result through B', 10000);
  // The same task id again with another request is refused on any replica: the id is taken.
  const dup = await call(cc, 'hermes_task', { task: 'something else', mode: 'async', id: 'shared-1' });
  assert.equal(dup.isError, true);
  assert.equal(dup.structuredContent.error, 'duplicate_id');
  await Promise.all([ca.close(), cb.close(), cc.close()]);
});

test('a retry of a running sync task sent to another replica waits for the first, then gets its result', async () => {
  const ca = await connectClient(a, { name: 'retry-a', listTools: true });
  const cb = await connectClient(b, { name: 'retry-b', listTools: true });
  const args = { task: 'once only [delay=1500]', mode: 'sync', id: 'retry-1' };
  const first = call(ca, 'hermes_task', args);
  await until(async () => (await sql("SELECT count(*) FROM hm_task WHERE id = 'retry-1'")).trim() === '1', 'the request stored');
  const again = await call(cb, 'hermes_task', args);
  assert.equal(again.isError, true, JSON.stringify(again));
  assert.equal(again.structuredContent.error, 'busy');
  const r1 = await first;
  assert.notEqual(r1.isError, true, JSON.stringify(r1));
  const r2 = await call(cb, 'hermes_task', args);
  assert.notEqual(r2.isError, true, JSON.stringify(r2));
  assert.equal(r2.structuredContent.summary, r1.structuredContent.summary);
  assert.equal(fake.received().filter((q) => q.method === 'POST' && /once only/.test(JSON.stringify(q.body))).length, 1,
    'the agent was asked once');
  await Promise.all([ca.close(), cb.close()]);
});

test('SQL in a task\'s text and id travels as data', async () => {
  const ca = await connectClient(a, { name: 'sql-a', listTools: true });
  const cb = await connectClient(b, { name: 'sql-b', listTools: true });
  const text = "x'); DROP TABLE hm_task; -- \\\" $1 $$";
  const r = await call(ca, 'hermes_task', { task: text, mode: 'sync', id: 'sql-1' });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const bad = await call(cb, 'hermes_result', { id: "sql-1' OR '1'='1" });
  assert.equal(bad.isError, true);
  const got = await call(cb, 'hermes_result', { id: 'sql-1' });
  assert.notEqual(got.isError, true, JSON.stringify(got));
  assert.ok(got.structuredContent.summary.includes(text), 'read back through B as the agent said it');
  const stored = JSON.parse(await sql("SELECT result FROM hm_task WHERE id = 'sql-1'"));
  assert.ok(stored.summary.includes(text), 'kept as data in the database');
  assert.equal((await sql("SELECT to_regclass('hm_task') IS NOT NULL")).trim(), 't');
  await Promise.all([ca.close(), cb.close()]);
});

test('kill -9 of the replica following a run: another takes it over within 10 s and the result arrives once', async () => {
  const victim = await replica();
  const cv = await connectClient(victim, { name: 'victim', listTools: true });
  const acc = await call(cv, 'hermes_task', { task: 'orphan [delay=1500]', mode: 'async', id: 'orphan-1' });
  assert.notEqual(acc.isError, true, JSON.stringify(acc));
  const follower = (await sql("SELECT follower FROM hm_task WHERE id = 'orphan-1'")).trim();
  assert.ok(follower.length > 0, 'the submitting replica follows the run');
  const gone = new Promise((r) => victim.proc.once('close', r));
  victim.proc.kill('SIGKILL');
  await gone;
  const t0 = Date.now();
  await until(async () => {
    const f = (await sql("SELECT coalesce(follower, '') || '|' || (result IS NOT NULL) FROM hm_task WHERE id = 'orphan-1'")).trim();
    return f !== `${follower}|false`;
  }, 'a new follower', 12000);
  const took = Date.now() - t0;
  assert.ok(took < 10000, `taken over after ${took} ms`);
  const cb = await connectClient(b, { name: 'after', listTools: true });
  await until(async () => (await call(cb, 'hermes_result', { id: 'orphan-1' })).isError !== true, 'the result after the takeover', 10000);
  const r = await call(cb, 'hermes_result', { id: 'orphan-1' });
  assert.equal(r.structuredContent.status, 'completed');
  await sleep(600); // a second follower would write again: the row's version says how often
  assert.equal((await sql("SELECT follower IS NULL FROM hm_task WHERE id = 'orphan-1'")).trim(), 't');
  const taken = [a, b, c].map((s) => (s.proc.stderrText.match(/task orphan-1: its follower is gone/g) || []).length);
  assert.equal(taken.reduce((x, y) => x + y, 0), 1, `taken over once: ${taken}`);
  await cb.close();
  await victim.stop();
});

test('the database away: a task call is refused 503 with the seconds to wait, nothing crashes; then it serves again', async () => {
  const ca = await connectClient(a, { name: 'down', listTools: true });
  await pg.kill();
  try {
    // HTTP 503 with Retry-After, which the SDK raises (unavail.test.mjs checks the wire).
    await assert.rejects(call(ca, 'hermes_result', { id: 'shared-1' }),
      (e) => e.code === 503 && /-32004/.test(e.message) && /"retryAfter":[1-9]/.test(e.message));
    const w = await call(ca, 'list_agents', {});
    assert.notEqual(w.isError, true, 'a call that needs no task is answered');
  } finally {
    await pg.restart();
  }
  // Until each of its connections is back, a call may still be refused 503.
  await until(async () => (await call(ca, 'hermes_result', { id: 'shared-1' }).catch(() => ({ isError: true }))).isError !== true,
    'served again', 15000);
  await ca.close();
});

test('a run that ends while the database is away keeps its result: stored once it is back, though the agent forgot the run', async () => {
  const ca = await connectClient(a, { name: 'kept', listTools: true });
  // The outcome's text looks like SQL: the write tried again binds it as data too.
  const text = "kept outcome 42'); DELETE FROM hm_task; -- $1 $$";
  const acc = await call(ca, 'hermes_task', { task: `kept [delay=1200] [forget] [text=${text}]`, mode: 'async', id: 'kept-1' });
  assert.notEqual(acc.isError, true, JSON.stringify(acc));
  const runId = acc.structuredContent.run_id;
  const runPolls = () => fake.received().filter((q) => q.method === 'GET' && q.path === `/v1/runs/${runId}`).length;
  await pg.kill();
  let polled;
  try {
    await until(() => /task kept-1: run \S+ ended but its result could not be stored/.test(a.proc.stderrText),
      'the follower to fail to store the result', 15000);
    // The agent answered the run's end once, and knows it no more.
    const gone = await fetch(`${fake.base}/v1/runs/${runId}`, { headers: { Authorization: `Bearer ${fake.key}` } });
    assert.equal(gone.status, 404);
    polled = runPolls();
    await sleep(700); // the follower keeps the result: it does not ask the agent again
  } finally {
    await pg.restart();
  }
  const r = await until(async () => {
    const x = await call(ca, 'hermes_result', { id: 'kept-1' }).catch(() => null);
    return x && x.isError !== true ? x : null;
  }, 'the kept result', 20000);
  assert.equal(r.structuredContent.status, 'completed', JSON.stringify(r.structuredContent));
  assert.ok(r.structuredContent.summary.includes(text), r.structuredContent.summary);
  assert.ok(Number(await sql('SELECT count(*) FROM hm_task')) > 1, 'nothing else went');
  assert.equal(runPolls(), polled, 'the agent was not asked about the run again');
  // Stored once, and every replica reads the same result.
  assert.equal((a.proc.stderrText.match(/task kept-1: its result is stored now/g) || []).length, 1);
  const cb = await connectClient(b, { name: 'kept-b', listTools: true });
  const rb = await call(cb, 'hermes_result', { id: 'kept-1' });
  assert.deepEqual(rb.structuredContent, r.structuredContent);
  await Promise.all([ca.close(), cb.close()]);
});

test('retention in the database: TASKS_RETENTION_DAYS at a reload, TASKS_MAX at a start, finished tasks only', async () => {
  const finished = async () => (await sql('SELECT id FROM hm_task WHERE result IS NOT NULL ORDER BY finished_at, id'))
    .split('\n').map((l) => l.trim()).filter(Boolean);
  const before = await finished();
  assert.ok(before.length >= 3, before.join());
  // One task finished 40 days ago (default TASKS_RETENTION_DAYS=30): a reload prunes it.
  await sql(`UPDATE hm_task SET finished_at = now() - interval '40 days' WHERE id = '${before[0]}'`);
  await sql("INSERT INTO hm_task (id, request, run, run_id, follower) VALUES ('open-1', '{}', '{}', 'r-open', 'nobody')");
  await sql("UPDATE hm_task SET created_at = now() - interval '90 days' WHERE id = 'open-1'");
  a.proc.kill('SIGHUP');
  await until(async () => !(await finished()).includes(before[0]), 'the old task pruned', 8000);
  assert.deepEqual(await finished(), before.slice(1));
  // TASKS_MAX=1 at a replica's start: only the newest finished task stays; a task without a
  // result is never pruned, whatever its age.
  const small = await startHermes({ STORE_URL: pg.url, MCP_AUTH_TOKEN: token, HERMES_ENV_PATH: agentEnv(fake), TASKS_MAX: '1' });
  try {
    await until(async () => (await finished()).length === 1, 'pruned to TASKS_MAX', 8000);
    assert.deepEqual(await finished(), before.slice(-1));
    assert.equal((await sql("SELECT count(*) FROM hm_task WHERE id = 'open-1'")).trim(), '1');
    const cb = await connectClient(b, { name: 'pruned', listTools: true });
    const gone = await call(cb, 'hermes_result', { id: before[1] });
    assert.equal(gone.isError, true);
    assert.equal(gone.structuredContent.error, 'not_found');
    await cb.close();
  } finally {
    await small.stop();
    await sql("DELETE FROM hm_task WHERE id = 'open-1'");
  }
});

test('hermes-mcp tasks list and prune read and prune the database with STORE_URL', async () => {
  const cb = await connectClient(b, { name: 'cli', listTools: true });
  for (const id of ['cli-old', 'cli-new']) {
    const r = await call(cb, 'hermes_task', { task: `cli ${id}`, mode: 'sync', id });
    assert.notEqual(r.isError, true, JSON.stringify(r));
  }
  await cb.close();
  const tasksCli = (...args) => spawnSync(HERMES, ['tasks', ...args, '--env-file', b.envFile], { encoding: 'utf8' });
  let r = tasksCli('list', '--json');
  assert.equal(r.status, 0, r.stderr);
  const listed = JSON.parse(r.stdout);
  const mine = listed.filter((t) => t.id.startsWith('cli-'));
  assert.deepEqual(mine.map((t) => [t.id, t.state, t.owner]), [['cli-old', 'completed', 'owner'], ['cli-new', 'completed', 'owner']]);
  assert.ok(mine.every((t) => t.size > 100), JSON.stringify(mine));
  r = tasksCli('list');
  assert.match(r.stdout, /^cli-old completed \d+s \d+ owner$/m);
  // Finished 40 days ago: the default TASKS_RETENTION_DAYS=30 removes it, the rest stays.
  await sql("UPDATE hm_task SET finished_at = now() - interval '40 days' WHERE id = 'cli-old'");
  r = tasksCli('prune', '--dry-run');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^would remove cli-old$/m);
  assert.equal((await sql("SELECT count(*) FROM hm_task WHERE id = 'cli-old'")).trim(), '1');
  r = tasksCli('prune');
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^removed cli-old$/m);
  assert.match(r.stdout, /pruned 1 task from the store/);
  assert.equal((await sql("SELECT count(*) FROM hm_task WHERE id IN ('cli-old', 'cli-new')")).trim(), '1');
});

// A figure of /metrics (the first sample of name), as a number.
async function metric(srv, name) {
  const text = await (await fetch(`${srv.base}/metrics`, { headers: srv.auth })).text();
  const m = text.match(new RegExp(`^${name}(?:\\{\\})? (\\S+)$`, 'm'));
  assert.ok(m, `${name} in /metrics`);
  return Number(m[1]);
}

test('lookups of many distinct runs by run id leave the run index the size of the runs followed', async () => {
  const n = 300;
  await sql(`INSERT INTO hm_task (id, request, run, run_id, result, finished_at) SELECT 'many-' || g, '{}',
    '{"run_id": "run_many_' || g || '"}', 'run_many_' || g, '{"status": "completed", "summary": "many ' || g || '"}', now()
    FROM generate_series(1, ${n}) g`);
  const cc = await connectClient(c, { name: 'many', listTools: true });
  try {
    const before = await metric(c, 'hermes_mcp_run_index_entries');
    for (let i = 1; i <= n; i++) {
      const st = await call(cc, 'hermes_status', { run_id: `run_many_${i}` });
      assert.notEqual(st.isError, true, JSON.stringify(st));
      assert.equal(st.structuredContent.task_id, `many-${i}`); // found through the database
    }
    assert.equal(await metric(c, 'hermes_mcp_run_index_entries'), before, 'no entry stays per lookup');
    // Asked again, the run is found again (through the database).
    const again = await call(cc, 'hermes_status', { run_id: 'run_many_7' });
    assert.equal(again.structuredContent.task_id, 'many-7', JSON.stringify(again));
  } finally {
    await cc.close();
    await sql("DELETE FROM hm_task WHERE id LIKE 'many-%'");
  }
});

const EXT = 'io.modelcontextprotocol/tasks';
// hermes_task as an MCP task (the tasks extension), created through srv: its CreateTaskResult.
async function createTask(srv, args) {
  const r = await fetch(srv.url, { method: 'POST', headers: { ...srv.auth, ...modernHeaders('tools/call', 'hermes_task') },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'hermes_task', arguments: args, _meta: modernMeta({ extensions: { [EXT]: {} } }) } }) });
  const json = await r.json();
  assert.equal(json.result?.resultType, 'task', JSON.stringify(json));
  return json.result;
}

test('a 2026-07-28 client listening on A hears of a task whose result B stored, once', async () => {
  // Plain fetch: the recording one reads every answer whole, which an aborted stream rejects.
  const la = await connectV2Client(a, 'listen-a', { capabilities: { extensions: { [EXT]: {} } }, record: () => fetch });
  const heard = [];
  la.fallbackNotificationHandler = async (n) => { heard.push(n); };
  const ids = ['watched-1', 'watched-2'];
  const sub = await la.listen({ taskIds: ids });
  assert.ok(sub.honoredFilter, 'acknowledged');
  // Both tasks are created and followed on B: A never sees them but through the database.
  const ended = createTask(b, { task: 'watched [delay=600] [text=heard on A]', mode: 'sync', id: 'watched-1' });
  const long = await createTask(b, { task: 'watched long [delay=20000]', mode: 'sync', id: 'watched-2' });
  assert.equal(long.taskId, 'watched-2');
  await ended;
  const tasksHeard = (id) => heard.filter((n) => n.method === 'notifications/tasks' && n.params.taskId === id);
  const note = (await until(() => tasksHeard('watched-1')[0], 'notifications/tasks on A', 10000)).params;
  assert.equal(note.status, 'completed');
  assert.match(note.result.structuredContent.summary, /heard on A/);
  // A cancel through C: B stops following it; A hears it cancelled.
  const cancel = await fetch(c.url, { method: 'POST', headers: { ...c.auth, ...modernHeaders('tasks/cancel', 'watched-2') },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/cancel',
      params: { taskId: 'watched-2', _meta: modernMeta({ extensions: { [EXT]: {} } }) } }) });
  assert.equal(cancel.status, 200, await cancel.clone().text());
  const note2 = (await until(() => tasksHeard('watched-2')[0], 'the cancel heard on A', 10000)).params;
  assert.equal(note2.status, 'cancelled');
  await sleep(500);
  assert.equal(tasksHeard('watched-1').length, 1, 'told once');
  assert.equal(tasksHeard('watched-2').length, 1, 'told once');
  await sub.close();
  await la.close();
});

test('hermes_reset with a database drops the copies held here and follows again a run of this replica left unfollowed', async () => {
  const cb = await connectClient(b, { name: 'reset-b', listTools: true });
  try {
    // B's replica id: the follower of a run it submitted.
    const acc = await call(cb, 'hermes_task', { task: 'whose [delay=50]', mode: 'async', id: 'reset-own' });
    assert.notEqual(acc.isError, true, JSON.stringify(acc));
    const me = (await sql("SELECT follower FROM hm_task WHERE id = 'reset-own'")).trim();
    assert.ok(me, 'B follows its run');
    // A run of B's that B does not follow (its follow lost): B is alive, so nobody takes it over.
    const sub = await fetch(`${fake.base}/v1/runs`, { method: 'POST',
      headers: { Authorization: `Bearer ${fake.key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: 'lost follow [text=found again by reset]' }) });
    const runId = (await sub.json()).run_id;
    await sql(`INSERT INTO hm_task (id, request, run, run_id, follower, created_by) VALUES ('reset-lost', '{}',
      '{"run_id": "${runId}"}', '${runId}', '${me}', '${me}')`);
    await sleep(2500); // a takeover round passes: the run stays B's
    assert.equal((await sql("SELECT result IS NULL FROM hm_task WHERE id = 'reset-lost'")).trim(), 't');
    const r = await call(cb, 'hermes_reset', { confirmed: true });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent.store, 'database');
    assert.equal(r.structuredContent.followed, 1, JSON.stringify(r.structuredContent));
    assert.equal(typeof r.structuredContent.dropped, 'number');
    assert.ok(r.structuredContent.dropped >= 1, 'the copies held were dropped');
    assert.match(r.structuredContent.message, /database/);
    const got = await until(async () => {
      const x = await call(cb, 'hermes_result', { id: 'reset-lost' });
      return x.isError !== true ? x : null;
    }, 'the result of the run followed again', 10000);
    assert.equal(got.structuredContent.status, 'completed');
    assert.match(got.structuredContent.summary, /found again by reset/);
    // A second reset finds nothing more to follow.
    const again = await call(cb, 'hermes_reset', { confirmed: true });
    assert.equal(again.structuredContent.followed, 0);
  } finally {
    await cb.close();
  }
});

// A TCP relay to PostgreSQL that the test can cut: the replica behind it loses the database
// while the others keep it. cut() drops every connection and refuses new ones until restore();
// admit(n) lets only the next n new connections through until restore().
async function pgRelay() {
  let open = true, allow = Infinity;
  const socks = new Set();
  const srv = net.createServer((c) => {
    if (!open || allow-- <= 0) { c.destroy(); return; }
    const u = net.connect(pg.port, '127.0.0.1');
    for (const x of [c, u]) socks.add(x);
    const done = () => { for (const x of [c, u]) { x.destroy(); socks.delete(x); } };
    c.on('error', done); u.on('error', done); c.on('close', done); u.on('close', done);
    c.pipe(u); u.pipe(c);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: pg.url.replace(`:${pg.port}/`, `:${srv.address().port}/`),
    cut() { open = false; for (const x of socks) x.destroy(); socks.clear(); },
    restore() { open = true; allow = Infinity; },
    admit(n) { allow = n; },
    close() { open = false; for (const x of socks) x.destroy(); srv.close(); },
  };
}

test('a replica cut from the database while a watched task ended tells its stream once it is back', async () => {
  const relay = await pgRelay();
  const d = await startHermes({ STORE_URL: relay.url, MCP_AUTH_TOKEN: token, HERMES_ENV_PATH: agentEnv(fake),
    HERMES_POLL_MS: '100' });
  d.auth = { Authorization: `Bearer ${token}` };
  const ld = await connectV2Client(d, 'listen-d', { capabilities: { extensions: { [EXT]: {} } }, record: () => fetch });
  const heard = [];
  ld.fallbackNotificationHandler = async (n) => { heard.push(n); };
  try {
    await until(async () => (await fetch(`${d.base}/readyz`)).status === 200, 'd connected to the database', 15000);
    const sub = await ld.listen({ taskIds: ['catch-1'] });
    const ended = createTask(b, { task: 'catch up [delay=800] [text=told after the outage]', mode: 'sync', id: 'catch-1' });
    relay.cut(); // d hears no announcement from now on
    await ended; // created: B follows the run
    await until(async () => (await sql("SELECT result IS NOT NULL FROM hm_task WHERE id = 'catch-1'")).trim() === 't',
      'B to store the result', 15000);
    await sleep(300);
    const told = () => heard.filter((n) => n.method === 'notifications/tasks' && n.params.taskId === 'catch-1');
    assert.equal(told().length, 0, 'nothing heard while cut off');
    relay.restore();
    const note = (await until(() => told()[0], 'the stream told once d is back', 15000)).params;
    assert.equal(note.status, 'completed');
    assert.match(note.result.structuredContent.summary, /told after the outage/);
    await sleep(500);
    assert.equal(told().length, 1, 'told once');
    await sub.close();
  } finally {
    await ld.close();
    await d.stop();
    relay.close();
  }
});

// A replica behind a relay, with the deployment's token.
async function relayed(relay, env = {}) {
  const d = await startHermes({ STORE_URL: relay.url, MCP_AUTH_TOKEN: token, HERMES_ENV_PATH: agentEnv(fake),
    HERMES_POLL_MS: '100', ...env });
  d.auth = { Authorization: `Bearer ${token}` };
  return d;
}
const resultOf = (client, id, ms) => until(async () => {
  const x = await call(client, 'hermes_result', { id }).catch(() => null);
  return x && x.isError !== true ? x : null;
}, `the result of ${id}`, ms);

test('an outage of the whole database longer than a heartbeat is judged: the kept result wins over a takeover', async () => {
  const relay = await pgRelay();
  const d = await relayed(relay);
  const cd = await connectClient(d, { name: 'long-outage', listTools: true });
  try {
    await until(async () => (await fetch(`${d.base}/readyz`)).status === 200, 'd connected to the database', 15000);
    const acc = await until(() => call(cd, 'hermes_task', { task: 'long outage [delay=1200] [forget] [text=kept through a long outage]',
      mode: 'async', id: 'long-1' }).catch(() => null), 'the task store connected', 15000);
    assert.notEqual(acc.isError, true, JSON.stringify(acc));
    await pg.kill();
    relay.cut(); // d's way back is slower than the others'
    try {
      await until(() => /task long-1: run \S+ ended but its result could not be stored/.test(d.proc.stderrText),
        'the follower to keep the result', 15000);
      await sleep(7000); // longer than a heartbeat is judged (6 s): every replica looks gone at first
    } finally {
      await pg.restart();
    }
    await sleep(4000); // the others are back before d: a takeover now would find the agent forgot the run
    relay.restore();
    const r = await resultOf(cd, 'long-1', 30000);
    assert.equal(r.structuredContent.status, 'completed', JSON.stringify(r.structuredContent));
    assert.match(r.structuredContent.summary, /kept through a long outage/);
    const taken = [a, b, c].map((s) => /task long-1: its follower is gone/.test(s.proc.stderrText));
    assert.deepEqual(taken, [false, false, false], 'nobody took the run over');
  } finally {
    await cd.close();
    await d.stop();
    relay.close();
  }
});

test('a kept result that another result came before is dropped, and logged so', async () => {
  const relay = await pgRelay();
  const d = await relayed(relay);
  const cd = await connectClient(d, { name: 'lost', listTools: true });
  try {
    await until(async () => (await fetch(`${d.base}/readyz`)).status === 200, 'd connected to the database', 15000);
    const acc = await until(() => call(cd, 'hermes_task', { task: 'lost [delay=300] [text=second]', mode: 'async',
      id: 'lost-1' }).catch(() => null), 'the task store connected', 15000);
    assert.notEqual(acc.isError, true, JSON.stringify(acc));
    relay.cut();
    try {
      await until(() => /task lost-1: run \S+ ended but its result could not be stored/.test(d.proc.stderrText),
        'd to keep the result', 10000);
      await sql(`UPDATE hm_task SET result = '{"status": "completed", "summary": "first"}', finished_at = now()
        WHERE id = 'lost-1'`);
    } finally {
      relay.restore();
    }
    await until(() => /task lost-1: another replica's result for it was stored first/.test(d.proc.stderrText),
      'the drop logged', 15000);
    assert.doesNotMatch(d.proc.stderrText, /task lost-1: its result is stored now/);
    assert.match(await sql("SELECT result FROM hm_task WHERE id = 'lost-1'"), /"first"/);
  } finally {
    await cd.close();
    await d.stop();
    relay.close();
  }
});

test('a listener on the replica that stores the result is told once; so are listeners whose connection drops as tasks end', async () => {
  const lb = await connectV2Client(b, 'listen-b', { capabilities: { extensions: { [EXT]: {} } }, record: () => fetch });
  const heardB = [];
  lb.fallbackNotificationHandler = async (n) => { heardB.push(n); };
  const told = (heard, id) => heard.filter((n) => n.method === 'notifications/tasks' && n.params.taskId === id);
  const subB = await lb.listen({ taskIds: ['once-b'] });
  await createTask(b, { task: 'told once [delay=300] [text=once on b]', mode: 'sync', id: 'once-b' });
  const note = (await until(() => told(heardB, 'once-b')[0], 'the writer\'s stream told', 10000)).params;
  assert.equal(note.status, 'completed');
  await sleep(800);
  assert.equal(told(heardB, 'once-b').length, 1, 'told once on the replica that stored it');
  await subB.close();
  await lb.close();

  const relay = await pgRelay();
  const d = await relayed(relay);
  const ld = await connectV2Client(d, 'listen-race', { capabilities: { extensions: { [EXT]: {} } }, record: () => fetch });
  const heard = [];
  ld.fallbackNotificationHandler = async (n) => { heard.push(n); };
  try {
    await until(async () => (await fetch(`${d.base}/readyz`)).status === 200, 'd connected to the database', 15000);
    const ids = Array.from({ length: 6 }, (_, i) => `race-${i}`);
    const sub = await ld.listen({ taskIds: ids });
    await Promise.all(ids.map((id, i) => createTask(b, { task: `race [delay=${400 + i * 200}]`, mode: 'sync', id })));
    for (let k = 0; k < 8; k++) { // the connection drops and comes back while the tasks end
      await sleep(150 + 40 * k);
      relay.cut();
      await sleep(30);
      relay.restore();
    }
    for (const id of ids) await until(() => told(heard, id)[0], `${id} told`, 15000);
    await sleep(1500); // a reconnection's catch-up has run since
    relay.cut();
    relay.restore();
    await sleep(1500);
    for (const id of ids) assert.equal(told(heard, id).length, 1, `${id} told once`);
    await sub.close();
  } finally {
    await ld.close();
    await d.stop();
    relay.close();
  }
});

test('a replica whose first connection to the database fails tells its stream of a task that ended before it connected', async () => {
  const relay = await pgRelay();
  // The start's own checks (the schema, the state key) only: the server's connections are refused.
  relay.admit(2);
  let d, ld;
  const heard = [];
  try {
    d = await relayed(relay);
    ld = await connectV2Client(d, 'listen-first', { capabilities: { extensions: { [EXT]: {} } }, record: () => fetch });
    ld.fallbackNotificationHandler = async (n) => { heard.push(n); };
    const sub = await ld.listen({ taskIds: ['first-1'] });
    await createTask(b, { task: 'first [delay=200] [text=told at the first connection]', mode: 'sync', id: 'first-1' });
    await until(async () => (await sql("SELECT result IS NOT NULL FROM hm_task WHERE id = 'first-1'")).trim() === 't',
      'B to store the result', 15000);
    relay.restore();
    const told = () => heard.filter((n) => n.method === 'notifications/tasks' && n.params.taskId === 'first-1');
    const note = (await until(() => told()[0], 'the stream told once d connected', 15000)).params;
    assert.equal(note.status, 'completed');
    assert.match(note.result.structuredContent.summary, /told at the first connection/);
    assert.match(d.proc.stderrText, /store: PostgreSQL connection down/, 'its first connection failed');
    await sub.close();
  } finally {
    await ld?.close();
    await d?.stop();
    relay.close();
  }
});

test('one principal listening on a replica for another principal\'s task hears nothing of it', async () => {
  const alice = randomBytes(32).toString('hex'), bob = randomBytes(32).toString('hex');
  const tdir = mkdtempSync(join(tmpdir(), 'hm-storeprinc-'));
  const tokens = tokensFile(tdir, { alice: [alice, 'hermes:read, hermes:task'], bob: [bob, 'hermes:read, hermes:task'] });
  const env = { STORE_URL: pg.url, TOKENS_FILE: tokens, HERMES_ENV_PATH: agentEnv(fake), HERMES_POLL_MS: '100' };
  const [e, f] = await Promise.all([startHermes(env), startHermes(env)]);
  const as = (s, tok) => ({ url: s.url, base: s.base, auth: { Authorization: `Bearer ${tok}` } });
  const listener = async (who) => {
    const l = await connectV2Client(as(f, who), `listen-${who.slice(0, 4)}`,
      { capabilities: { extensions: { [EXT]: {} } }, record: () => fetch });
    const heard = [];
    l.fallbackNotificationHandler = async (n) => { heard.push(n); };
    return { l, heard, sub: await l.listen({ taskIds: ['alice-1'] }) };
  };
  try {
    const [la, lbob] = [await listener(alice), await listener(bob)];
    // Until e's task store is connected, a call is refused 503.
    const created = await until(() => createTask(as(e, alice), { task: 'alice\'s [delay=300] [text=for alice only]',
      mode: 'sync', id: 'alice-1' }).catch(() => null), 'the task created on e', 15000);
    assert.equal(created.taskId, 'alice-1');
    const note = (await until(() => la.heard.find((n) => n.method === 'notifications/tasks'), 'alice told on f', 10000)).params;
    assert.equal(note.taskId, 'alice-1');
    await sleep(800);
    assert.deepEqual(lbob.heard.filter((n) => n.method === 'notifications/tasks'), [], 'bob hears nothing');
    for (const x of [la, lbob]) { await x.sub.close(); await x.l.close(); }
  } finally {
    await Promise.all([e.stop(), f.stop()]);
    rmSync(tdir, { recursive: true, force: true });
  }
});

test('a kept result whose write keeps timing out is given up after 3 attempts: its run is asked of the agent again', async () => {
  const e = await replica();
  const ce = await connectClient(e, { name: 'timeouts', listTools: true });
  let holder;
  try {
    const acc = await until(() => call(ce, 'hermes_task', { task: 'slow store [delay=1500] [text=after the timeouts]',
      mode: 'async', id: 'timeout-1' }).catch(() => null), 'the task store connected', 15000);
    assert.notEqual(acc.isError, true, JSON.stringify(acc));
    const runId = acc.structuredContent.run_id;
    const runPolls = () => fake.received().filter((q) => q.method === 'GET' && q.path === `/v1/runs/${runId}`).length;
    // The row stays locked: every write of the result waits until its request times out.
    holder = sql("BEGIN; SELECT id FROM hm_task WHERE id = 'timeout-1' FOR UPDATE; SELECT pg_sleep(120); COMMIT;")
      .catch(() => null);
    await until(() => /task timeout-1: run \S+ ended but its result could not be stored/.test(e.proc.stderrText),
      'the result kept after the first timeout', 30000);
    const polled = runPolls();
    await until(() => /task timeout-1: storing its result timed out 3 times/.test(e.proc.stderrText),
      'the attempts given up', 60000);
    await until(() => runPolls() > polled, 'the run asked of the agent again', 10000);
    await sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(120)%' AND pid <> pg_backend_pid()");
    const r = await resultOf(ce, 'timeout-1', 40000);
    assert.equal(r.structuredContent.status, 'completed', JSON.stringify(r.structuredContent));
    assert.match(r.structuredContent.summary, /after the timeouts/);
  } finally {
    await sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(120)%' AND pid <> pg_backend_pid()");
    await holder;
    await ce.close();
    await e.stop();
  }
});
