// Retention: TASKS_MAX and TASKS_RETENTION_DAYS prune finished tasks (those with a
// result.json), oldest first, at start and at reload (SIGHUP), never one in flight; a pruned id
// is then unknown to hermes_result; `hermes-mcp tasks list|prune` shows and applies the same rule.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, utimesSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HERMES, startHermes, startFake, agentEnv, post, until, connectClient } from '../../lib/lib.mjs';
import { events } from '../../lib/events.mjs';

const HOUR = 3600;
const DAY = 24 * HOUR;
const now = () => Date.now() / 1000;

// A finished task as the server writes it, its result.json dated ageS seconds back.
function finishedTask(dir, id, ageS, extra = {}) {
  mkdirSync(join(dir, id), { mode: 0o700 });
  writeFileSync(join(dir, id, 'request.json'), JSON.stringify({ id, agent: 'default' }));
  const result = join(dir, id, 'result.json');
  writeFileSync(result, JSON.stringify({ id, status: 'completed', summary: `done ${id}`,
    artifacts: [], next_steps: [], ...extra }));
  const t = now() - ageS;
  utimesSync(result, t, t);
}

// A task that never finished (no result.json), its directory dated ageS seconds back.
function unfinishedTask(dir, id, ageS) {
  mkdirSync(join(dir, id), { mode: 0o700 });
  writeFileSync(join(dir, id, 'request.json'), JSON.stringify({ id, agent: 'default' }));
  const t = now() - ageS;
  utimesSync(join(dir, id), t, t);
}

function tasksDir() {
  const root = mkdtempSync(join(tmpdir(), 'hm-retention-'));
  const dir = join(root, 'tasks');
  mkdirSync(dir, { mode: 0o700 });
  return { root, dir };
}

const connect = (srv) => connectClient(srv, { name: 'hm-retention', listTools: true });

// The first retention_pruned event's fields (pruned, kept, failed, ms), or null before it.
const pruned = (srv) => events(srv, 'retention_pruned')[0]?.fields ?? null;

test('at start: tasks over TASKS_MAX go oldest first, unfinished ones stay; a pruned id is not_found', async () => {
  const { root, dir } = tasksDir();
  finishedTask(dir, 'a1', 5 * HOUR);
  finishedTask(dir, 'a2', 4 * HOUR);
  finishedTask(dir, 'a3', 3 * HOUR);
  finishedTask(dir, 'a4', 2 * HOUR);
  finishedTask(dir, 'a5', 1 * HOUR);
  unfinishedTask(dir, 'q1', 90 * DAY); // oldest of all, but not finished: never pruned
  const srv = await startHermes({ TASKS_DIR: dir, TASKS_MAX: '3', TASKS_RETENTION_DAYS: '0' });
  try {
    const m = await until(() => pruned(srv), 'the start-up prune to report');
    assert.equal(m.pruned, '2');
    for (const id of ['a1', 'a2']) assert.equal(existsSync(join(dir, id)), false, `${id} pruned`);
    for (const id of ['a3', 'a4', 'a5', 'q1']) assert.equal(existsSync(join(dir, id)), true, `${id} kept`);
    // Their files are deleted afterwards, from TASKS_DIR/.pruned, by a low-priority thread.
    await until(() => readdirSync(join(dir, '.pruned')).length === 0, 'the pruned files to be deleted');

    const client = await connect(srv);
    const gone = await client.callTool({ name: 'hermes_result', arguments: { id: 'a1' } });
    assert.equal(gone.isError, true);
    assert.equal(gone.structuredContent.error, 'not_found');
    assert.match(gone.structuredContent.message, /no task with id 'a1'/);
    const kept = await client.callTool({ name: 'hermes_result', arguments: { id: 'a3' } });
    assert.equal(kept.isError, false);
    assert.equal(kept.structuredContent.summary, 'done a3');
    await client.close();
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('at reload: TASKS_RETENTION_DAYS prunes old tasks; a task in flight is never pruned', async () => {
  const fake = await startFake();
  const { root, dir } = tasksDir();
  finishedTask(dir, 'old', 40 * DAY);
  finishedTask(dir, 'recent', 2 * DAY);
  // A leftover result.json 40 days old in a directory whose id a new task takes: on disk it looks
  // finished and old, but the task is running.
  finishedTask(dir, 'busy', 40 * DAY);
  rmSync(join(dir, 'busy', 'request.json'));
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), TASKS_DIR: dir,
    TASKS_MAX: '0', TASKS_RETENTION_DAYS: '0' });
  try {
    const held = post(srv, { jsonrpc: '2.0', id: 7, method: 'tools/call',
      params: { name: 'hermes_task', arguments: { task: 'hold on [delay=3000]', mode: 'sync', id: 'busy' } } });
    await until(() => fake.received().some((r) => r.path === '/v1/chat/completions'), 'the task to reach the agent');
    assert.equal(pruned(srv), null, 'nothing is pruned while both limits are off');

    writeFileSync(srv.envFile, readFileSync(srv.envFile, 'utf8').replace('TASKS_RETENTION_DAYS=0', 'TASKS_RETENTION_DAYS=30'));
    srv.proc.kill('SIGHUP');
    const m = await until(() => pruned(srv), 'the reload prune to report');
    assert.equal(m.pruned, '1');
    assert.equal(m.kept, '1', 'the task in flight was kept');
    assert.equal(existsSync(join(dir, 'old')), false, 'the 40-day-old task is pruned');
    assert.equal(existsSync(join(dir, 'recent')), true);
    assert.equal(existsSync(join(dir, 'busy', 'result.json')), true, 'the task in flight is kept');

    const r = await held;
    assert.equal(r.status, 200);
    assert.match(r.text, /"isError":\s*false/);
  } finally {
    await srv.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

function cli(args, env) {
  return spawnSync(HERMES, ['tasks', ...args, ...(env ? ['--env-file', env] : [])], { encoding: 'utf8' });
}

test('hermes-mcp tasks list and prune [--dry-run]: oldest first, exit codes, clear errors', () => {
  const { root, dir } = tasksDir();
  const env = join(root, 'env');
  writeFileSync(env, `TASKS_DIR=${dir}\nTASKS_MAX=2\nTASKS_RETENTION_DAYS=30\n`);
  chmodSync(env, 0o600);
  finishedTask(dir, 'b1', 3 * HOUR);
  finishedTask(dir, 'b2', 2 * HOUR, { status: 'failed' });
  finishedTask(dir, 'b3', 1 * HOUR);
  finishedTask(dir, 'b0', 31 * DAY);
  unfinishedTask(dir, 'q9', 60 * DAY);
  try {
    let r = cli(['list'], env);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n').map((l) => l.split(' '));
    assert.deepEqual(lines.map((l) => l[0]), ['q9', 'b0', 'b1', 'b2', 'b3']);
    assert.deepEqual(lines.map((l) => l[1]), ['queued', 'completed', 'completed', 'failed', 'completed']);
    assert.match(lines[1][2], /^31d/);
    assert.match(lines[2][2], /^(2h5\dm|3h0\dm)$/);
    assert.equal(Number(lines[2][3]), readFileSync(join(dir, 'b1', 'request.json')).length +
      readFileSync(join(dir, 'b1', 'result.json')).length);

    r = cli(['list', '--json'], env);
    assert.equal(r.status, 0, r.stderr);
    const list = JSON.parse(r.stdout);
    assert.deepEqual(list.map((t) => t.id), ['q9', 'b0', 'b1', 'b2', 'b3']);
    assert.ok(list[1].age_s >= 31 * DAY && list[1].age_s < 31 * DAY + 60);

    r = cli(['prune', '--dry-run'], env);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'),
      ['would remove b0', 'would remove b1', 'would prune 2 of 5 tasks (TASKS_RETENTION_DAYS=30, TASKS_MAX=2)']);
    for (const id of ['b0', 'b1']) assert.equal(existsSync(join(dir, id)), true, 'a dry run removes nothing');

    r = cli(['prune'], env);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'),
      ['removed b0', 'removed b1', 'pruned 2 of 5 tasks (TASKS_RETENTION_DAYS=30, TASKS_MAX=2)']);
    for (const id of ['b0', 'b1']) assert.equal(existsSync(join(dir, id)), false);
    for (const id of ['b2', 'b3', 'q9']) assert.equal(existsSync(join(dir, id)), true);
    assert.deepEqual(readdirSync(join(dir, '.pruned')), [], 'their files are deleted too');

    r = cli(['prune', '--bogus'], env);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /unknown argument '--bogus'/);
    r = cli(['list', '--dry-run'], env);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /unknown argument '--dry-run'/);
    r = cli(['purge'], env);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /unknown command .*'purge'/);
    r = cli([]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /say list or prune/);
    r = cli(['list', '--env-file', join(root, 'missing')]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /env file .*missing not found/);
    writeFileSync(env, `TASKS_DIR=${dir}\nTASKS_MAX=lots\n`);
    r = cli(['prune', '--dry-run'], env);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /TASKS_MAX must be a number/);
    r = cli(['--help']);
    assert.equal(r.status, 0);
    assert.match(r.stdout, /usage: hermes-mcp tasks list/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a pruned async task leaves the run index: hermes_cancel by its run_id is not_found', async () => {
  const fake = await startFake(['--delay-scale', '0']);
  const { root, dir } = tasksDir();
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), TASKS_DIR: dir,
    TASKS_MAX: '0', TASKS_RETENTION_DAYS: '0' });
  try {
    const client = await connect(srv);
    const acc = await client.callTool({ name: 'hermes_task', arguments: { task: 'quick', mode: 'async', id: 'r1' } });
    assert.equal(acc.isError, false, acc.content[0].text);
    const runId = acc.structuredContent.run_id;
    assert.match(runId, /^run_/);
    await until(() => existsSync(join(dir, 'r1', 'result.json')), 'the followed run to finish', 10000);
    finishedTask(dir, 'newer', -HOUR); // finished "later" than r1: TASKS_MAX=1 keeps it, prunes r1

    writeFileSync(srv.envFile, readFileSync(srv.envFile, 'utf8').replace('TASKS_MAX=0', 'TASKS_MAX=1'));
    srv.proc.kill('SIGHUP');
    const m = await until(() => pruned(srv), 'the reload prune to report');
    assert.equal(m.pruned, '1');
    assert.equal(existsSync(join(dir, 'r1')), false);
    const res = await client.callTool({ name: 'hermes_cancel', arguments: { run_id: runId } });
    assert.equal(res.isError, true);
    assert.equal(res.structuredContent.error, 'not_found');
    assert.match(res.structuredContent.message, /no task of this bridge has run/);
    await client.close();
  } finally {
    await srv.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

test('tasks prune beside a running server leaves the task it is running alone', async () => {
  const fake = await startFake();
  const { root, dir } = tasksDir();
  finishedTask(dir, 'old', 40 * DAY);
  const srv = await startHermes({ HERMES_ENV_PATH: agentEnv(fake), TASKS_DIR: dir,
    TASKS_MAX: '0', TASKS_RETENTION_DAYS: '0' });
  try {
    const held = post(srv, { jsonrpc: '2.0', id: 9, method: 'tools/call',
      params: { name: 'hermes_task', arguments: { task: 'hold on [delay=1500]', mode: 'sync', id: 'running' } } });
    await until(() => fake.received().some((r) => r.path === '/v1/chat/completions'), 'the task to reach the agent');
    // The operator prunes with every finished task over the limit, the server not reloaded.
    writeFileSync(srv.envFile, readFileSync(srv.envFile, 'utf8').replace('TASKS_MAX=0', 'TASKS_MAX=1')
      .replace('TASKS_RETENTION_DAYS=0', 'TASKS_RETENTION_DAYS=1'));
    const r = cli(['prune'], srv.envFile);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n'), ['removed old', 'pruned 1 of 2 tasks (TASKS_RETENTION_DAYS=1, TASKS_MAX=1)']);
    assert.equal(existsSync(join(dir, 'running', 'request.json')), true);
    const res = await held;
    assert.match(res.text, /"isError":\s*false/);
    assert.equal(existsSync(join(dir, 'running', 'result.json')), true, 'the running task finished in place');
  } finally {
    await srv.stop();
    await fake.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
